#include "cli/interrupt.h"

#include <signal.h>
#include <unistd.h>

namespace mtplx::cli {
namespace {

std::atomic<bool> g_interrupted{false};
std::atomic<int> g_signal{0};
std::atomic<bool> g_exit_now{false};
std::atomic<int> g_count{0};

// Async-signal-safe: atomics, write(2) and _exit(2) only.
void OnSignal(int signo) {
  if (g_exit_now.load()) {
    const char newline = '\n';
    [[maybe_unused]] const ssize_t n = write(STDOUT_FILENO, &newline, 1);
    _exit(128 + signo);
  }
  g_signal.store(signo);
  g_count.fetch_add(1);
  g_interrupted.store(true);
}

}  // namespace

void InstallInterruptHandlers() {
  struct sigaction action = {};
  action.sa_handler = OnSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // a write to the terminal in progress must not fail with EINTR
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

std::shared_ptr<std::atomic<bool>> InterruptFlag() {
  return std::shared_ptr<std::atomic<bool>>(&g_interrupted, [](std::atomic<bool>*) {});
}
bool Interrupted() { return g_interrupted.load(); }
int InterruptSignal() { return g_signal.load(); }
int InterruptCount() { return g_count.load(); }

void ClearInterrupt() {
  g_interrupted.store(false);
  g_signal.store(0);
}

void SetExitOnInterrupt(bool exit_now) { g_exit_now.store(exit_now); }

}  // namespace mtplx::cli
