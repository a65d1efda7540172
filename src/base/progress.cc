#include "base/progress.h"

#include <unistd.h>

#include <cstdio>

#include "base/strings.h"

namespace mtplx {

ProgressBar::ProgressBar(std::string label, uint64_t total, std::string unit, bool enabled)
    : label_(std::move(label)),
      total_(total),
      unit_(std::move(unit)),
      enabled_(enabled),
      tty_(isatty(STDERR_FILENO) != 0),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

ProgressBar::~ProgressBar() { Finish(); }

void ProgressBar::Add(uint64_t amount) { Set(done_ + amount); }

void ProgressBar::Set(uint64_t done) {
  done_ = done > total_ ? total_ : done;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_draw_ >= std::chrono::milliseconds(100) || done_ == total_) {
    last_draw_ = now;
    Draw(false);
  }
}

void ProgressBar::SetTotal(uint64_t total) {
  total_ = total;
  if (done_ > total_) done_ = total_;
}

void ProgressBar::Finish() {
  if (finished_) return;
  finished_ = true;
  done_ = total_;
  Draw(true);
}

namespace {

// "45s", "3m05s", "2h10m".
std::string Duration(double seconds) {
  const long s = seconds < 0 ? 0 : static_cast<long>(seconds + 0.5);
  char text[32];
  if (s < 60)
    std::snprintf(text, sizeof text, "%lds", s);
  else if (s < 3600)
    std::snprintf(text, sizeof text, "%ldm%02lds", s / 60, s % 60);
  else
    std::snprintf(text, sizeof text, "%ldh%02ldm", s / 3600, s % 3600 / 60);
  return text;
}

}  // namespace

void ProgressBar::Draw(bool final) {
  if (!enabled_) return;
  const double fraction = total_ ? static_cast<double>(done_) / static_cast<double>(total_) : 1.0;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  auto amount = [&](uint64_t v) { return unit_ == "B" ? HumanBytes(v) : StrCat(v, " ", unit_); };
  const double rate = seconds > 0 ? static_cast<double>(done_) / seconds : 0.0;
  // Speed and time left once there is a rate to tell them from; the elapsed time at the end.
  std::string timing;
  if (final || done_ >= total_) {
    timing = StrCat(", ", Duration(seconds));
  } else if (rate > 0 && seconds >= 0.5) {
    timing = StrCat(", ", amount(static_cast<uint64_t>(rate)), "/s, ",
                    Duration(static_cast<double>(total_ - done_) / rate), " left");
  }
  if (!tty_) {
    // Non-interactive output: one line per 10% so logs stay readable.
    const int decile = static_cast<int>(fraction * 10.0);
    if (decile == last_decile_ && !final) return;
    if (final && last_decile_ == 10) return;
    last_decile_ = decile;
    std::fprintf(stderr, "[mtplx] %s: %3.0f%% (%s of %s%s)\n", label_.c_str(), fraction * 100,
                 amount(done_).c_str(), amount(total_).c_str(), timing.c_str());
    return;
  }
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(fraction * kWidth);
  std::string bar(filled, '#');
  bar.append(kWidth - filled, '.');
  std::fprintf(stderr, "\r[mtplx] %s [%s] %3.0f%% %s/%s%s   ", label_.c_str(), bar.c_str(),
               fraction * 100, amount(done_).c_str(), amount(total_).c_str(), timing.c_str());
  if (final) std::fputc('\n', stderr);
  std::fflush(stderr);
}

}  // namespace mtplx
