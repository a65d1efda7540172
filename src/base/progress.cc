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

void ProgressBar::Finish() {
  if (finished_) return;
  finished_ = true;
  done_ = total_;
  Draw(true);
}

void ProgressBar::Draw(bool final) {
  if (!enabled_) return;
  const double fraction = total_ ? static_cast<double>(done_) / static_cast<double>(total_) : 1.0;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  auto amount = [&](uint64_t v) { return unit_ == "B" ? HumanBytes(v) : StrCat(v, " ", unit_); };
  if (!tty_) {
    // Non-interactive output: one line per 10% so logs stay readable.
    const int decile = static_cast<int>(fraction * 10.0);
    if (decile == last_decile_ && !final) return;
    if (final && last_decile_ == 10) return;
    last_decile_ = decile;
    std::fprintf(stderr, "[mtplx] %s: %3.0f%% (%s of %s, %.1fs)\n", label_.c_str(), fraction * 100,
                 amount(done_).c_str(), amount(total_).c_str(), seconds);
    return;
  }
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(fraction * kWidth);
  std::string bar(filled, '#');
  bar.append(kWidth - filled, '.');
  const double rate = seconds > 0 ? static_cast<double>(done_) / seconds : 0.0;
  std::fprintf(stderr, "\r[mtplx] %s [%s] %3.0f%% %s/%s %s/s   ", label_.c_str(), bar.c_str(),
               fraction * 100, amount(done_).c_str(), amount(total_).c_str(),
               amount(static_cast<uint64_t>(rate)).c_str());
  if (final) std::fputc('\n', stderr);
  std::fflush(stderr);
}

}  // namespace mtplx
