// A child process with pipes on its stdin, stdout and stderr, for tests that must talk to a
// running program: send it signals mid-generation, type into `chat`, start a server and stop it.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace mtplx::testing {

class ChildProcess {
 public:
  // Starts `argv[0]` with `argv` (no shell). `extra_env` entries ("NAME=value") are added to the
  // environment, replacing variables of the same name.
  ChildProcess(const std::vector<std::string>& argv,
               const std::vector<std::string>& extra_env = {});
  ~ChildProcess();  // kills the child if it still runs
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  bool started() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }

  void Write(const std::string& text);
  void CloseStdin();
  // Reads stdout and stderr until `needle` appears in stdout (`in_stderr`: in stderr) or
  // `timeout_s` passes; true if it appeared.
  bool WaitFor(const std::string& needle, double timeout_s, bool in_stderr = false);
  // Reads until stdout holds at least `bytes` bytes or `timeout_s` passes.
  bool WaitForBytes(size_t bytes, double timeout_s);
  void Signal(int signo);
  // Reads everything left and waits for the exit: the exit code, 128 + signal if killed, or -1
  // after `timeout_s` (the child is then killed).
  int Wait(double timeout_s);

  const std::string& out() const { return out_; }
  const std::string& err() const { return err_; }

 private:
  // Reads what is available for up to `timeout_s`; false once both pipes are closed.
  bool Pump(double timeout_s);

  pid_t pid_ = -1;
  int in_ = -1, out_fd_ = -1, err_fd_ = -1;
  std::string out_, err_;
  int exit_code_ = -1;
};

}  // namespace mtplx::testing
