#include "support/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

extern char** environ;

namespace mtplx::testing {
namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

ChildProcess::ChildProcess(const std::vector<std::string>& argv,
                           const std::vector<std::string>& extra_env) {
  int in[2], out[2], err[2];
  if (pipe(in) != 0 || pipe(out) != 0 || pipe(err) != 0) return;
  // The extra entries replace variables of the same name.
  auto name_of = [](const std::string& entry) { return entry.substr(0, entry.find('=')); };
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    bool replaced = false;
    for (const auto& extra : extra_env) replaced = replaced || name_of(extra) == name_of(*e);
    if (!replaced) env.emplace_back(*e);
  }
  env.insert(env.end(), extra_env.begin(), extra_env.end());
  std::vector<char*> args, envp;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  pid_ = fork();
  if (pid_ == 0) {
    dup2(in[0], STDIN_FILENO);
    dup2(out[1], STDOUT_FILENO);
    dup2(err[1], STDERR_FILENO);
    for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1]}) close(fd);
    // The test's own signal dispositions must not leak into the child.
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    execve(args[0], args.data(), envp.data());
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  close(err[1]);
  in_ = in[1];
  out_fd_ = out[0];
  err_fd_ = err[0];
  signal(SIGPIPE, SIG_IGN);  // writing to a child that exited must not kill the test
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0 && exit_code_ == -1) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  for (int fd : {in_, out_fd_, err_fd_})
    if (fd >= 0) close(fd);
}

void ChildProcess::Write(const std::string& text) {
  size_t done = 0;
  while (in_ >= 0 && done < text.size()) {
    const ssize_t n = write(in_, text.data() + done, text.size() - done);
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
}

void ChildProcess::CloseStdin() {
  if (in_ >= 0) close(in_);
  in_ = -1;
}

bool ChildProcess::Pump(double timeout_s) {
  pollfd fds[2] = {{out_fd_, POLLIN, 0}, {err_fd_, POLLIN, 0}};
  int open_fds = (out_fd_ >= 0) + (err_fd_ >= 0);
  if (open_fds == 0) return false;
  if (poll(fds, 2, static_cast<int>(timeout_s * 1000)) <= 0) return true;
  char buffer[65536];
  for (int i = 0; i < 2; ++i) {
    if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    const ssize_t n = read(fds[i].fd, buffer, sizeof(buffer));
    if (n > 0) {
      (i == 0 ? out_ : err_).append(buffer, static_cast<size_t>(n));
    } else {
      close(fds[i].fd);
      (i == 0 ? out_fd_ : err_fd_) = -1;
    }
  }
  return true;
}

bool ChildProcess::WaitFor(const std::string& needle, double timeout_s, bool in_stderr) {
  const double end = Now() + timeout_s;
  const std::string& text = in_stderr ? err_ : out_;
  while (text.find(needle) == std::string::npos) {
    const double left = end - Now();
    if (left <= 0 || !Pump(std::min(left, 0.05))) return text.find(needle) != std::string::npos;
  }
  return true;
}

bool ChildProcess::WaitForBytes(size_t bytes, double timeout_s) {
  const double end = Now() + timeout_s;
  while (out_.size() < bytes) {
    const double left = end - Now();
    if (left <= 0 || !Pump(std::min(left, 0.05))) return out_.size() >= bytes;
  }
  return true;
}

void ChildProcess::Signal(int signo) {
  if (pid_ > 0 && exit_code_ == -1) kill(pid_, signo);
}

int ChildProcess::Wait(double timeout_s) {
  if (pid_ <= 0) return -1;
  if (exit_code_ != -1) return exit_code_;
  const double end = Now() + timeout_s;
  while (Now() < end) {
    Pump(0.05);
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      const double drain_end = Now() + 5;  // what the child wrote before it exited
      while ((out_fd_ >= 0 || err_fd_ >= 0) && Now() < drain_end) Pump(0.05);
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      return exit_code_;
    }
  }
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  exit_code_ = -1;
  pid_ = -1;
  return -1;
}

}  // namespace mtplx::testing
