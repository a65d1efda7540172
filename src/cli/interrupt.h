// Ctrl-C (SIGINT) and SIGTERM in the terminal commands. While a reply is generated, a signal only
// raises a flag: generation stops at the next step, the text so far stays, and the command
// reports it (`run` prints its stats line and exits 128 + signal; `chat` returns to its prompt).
// At chat's prompt nothing is in flight, so a signal there ends the process at once.
#pragma once

#include <atomic>
#include <memory>

namespace mtplx::cli {

// Installs the handlers (idempotent).
void InstallInterruptHandlers();

// Raised by SIGINT / SIGTERM; pass it as a generation request's cancel flag (it is not owned).
std::shared_ptr<std::atomic<bool>> InterruptFlag();
bool Interrupted();
// The signal that raised the flag (0 if none): exit codes are 128 + it.
int InterruptSignal();
// Signals received since the handlers were installed (serve: a second one stops the drain).
int InterruptCount();
// Lowers the flag before the next reply.
void ClearInterrupt();

// While true (chat waiting for a line), a signal ends the process with 128 + signal.
void SetExitOnInterrupt(bool exit_now);

}  // namespace mtplx::cli
