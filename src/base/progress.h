// A terminal progress bar for long work (loading, converting, writing checkpoints).
// Draws on stderr only when it is a terminal; otherwise prints a few plain lines.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace mtplx {

class ProgressBar {
 public:
  ProgressBar(std::string label, uint64_t total, std::string unit = "B", bool enabled = true);
  ~ProgressBar();

  void Add(uint64_t amount);
  void Set(uint64_t done);
  // When the work turns out longer (or shorter) than announced.
  void SetTotal(uint64_t total);
  void Finish();

 private:
  void Draw(bool final);

  std::string label_;
  uint64_t total_;
  uint64_t done_ = 0;
  std::string unit_;
  bool enabled_;
  bool tty_;
  bool finished_ = false;
  int last_decile_ = -1;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace mtplx
