// `mtplx start`: uses the server running on the port, or starts one in the background (it keeps
// serving agents after the chat ends), then opens the terminal chat on it over the OpenAI API.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/file.h"
#include "base/strings.h"
#include "cli/chat_loop.h"
#include "cli/commands.h"
#include "cli/interrupt.h"
#include "server/client.h"

namespace mtplx::cli {
namespace {

using Json = nlohmann::json;

struct StartFlags {
  server::Endpoint endpoint;
  std::string model_dir;
  std::string system;
  std::string api_key_file;
  int max_tokens = 1024;
  double temperature = -1;
  bool quiet = false;
};

std::string LogPath(int port) {
  const char* home = std::getenv("HOME");
  const std::string dir = JoinPath(home && *home ? home : "/tmp", ".mtplx");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  return JoinPath(dir, StrFormat("serve-%d.log", port));
}

// Starts `mtplx serve` detached (its own session, output to a log) and waits until it answers.
Result<pid_t> SpawnServer(const StartFlags& f, const std::string& log) {
  std::error_code ec;
  const std::string self = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  if (ec) return Internal("cannot find the mtplx binary: " + ec.message());
  std::vector<std::string> args = {self,
                                   "serve",
                                   "--quiet",
                                   "--host",
                                   f.endpoint.host,
                                   "--port",
                                   std::to_string(f.endpoint.port)};
  if (!f.model_dir.empty()) args.insert(args.end(), {"--model", f.model_dir});
  if (!f.api_key_file.empty()) args.insert(args.end(), {"--api-key-file", f.api_key_file});
  const pid_t pid = fork();
  if (pid < 0) return Internal("cannot start the server: fork failed");
  if (pid == 0) {
    setsid();  // not the terminal's: Ctrl-C in the chat must not reach the server
    const int out = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    const int in = open("/dev/null", O_RDONLY);
    if (out >= 0) {
      dup2(out, STDOUT_FILENO);
      dup2(out, STDERR_FILENO);
    }
    if (in >= 0) dup2(in, STDIN_FILENO);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(self.c_str(), argv.data());
    _exit(127);
  }
  for (int i = 0; i < 1200; ++i) {  // up to 2 minutes to load the model
    if (server::GetJson(f.endpoint, "/health", 1.0).ok()) return pid;
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid)
      return FailedPrecondition("the server exited while starting; see " + log);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  kill(pid, SIGTERM);
  return FailedPrecondition("the server did not start within 2 minutes; see " + log);
}

class RemoteBackend : public ChatBackend {
 public:
  RemoteBackend(const StartFlags& f, std::string model_id, int depth)
      : flags_(f), model_id_(std::move(model_id)), depth_(depth) {}

  std::string ModeText() const override {
    return speculate_ && depth_ > 0
               ? StrCat("MTP speculation, depth ", depth_, " (server at ",
                        flags_.endpoint.BaseUrl(), ")")
               : StrCat("plain decoding (server at ", flags_.endpoint.BaseUrl(), ")");
  }

  std::string SetSpeculation(bool on) override {
    speculate_ = on;
    return on && depth_ == 0 ? "the server does not speculate (started with --no-mtp, or the "
                               "model has no usable MTP head)"
                             : "";
  }

  Result<ChatTurn> Reply(const chat::Conversation& conversation,
                         const std::function<void(std::string_view)>& on_text) override {
    Json messages = Json::array();
    for (const chat::Message& m : conversation.messages)
      messages.push_back({{"role", m.role}, {"content", m.content.value_or("")}});
    Json body = {{"model", model_id_},
                 {"messages", messages},
                 {"max_tokens", flags_.max_tokens},
                 {"generation_mode", speculate_ ? "mtp" : "ar"}};
    if (flags_.temperature >= 0) body["temperature"] = flags_.temperature;
    const auto flag = InterruptFlag();
    MTPLX_ASSIGN_OR_RETURN(server::RemoteReply reply,
                           server::StreamChat(
                               flags_.endpoint, body,
                               [&](const std::string& content, const std::string&) {
                                 if (!content.empty()) on_text(content);
                               },
                               flag.get()));
    ChatTurn turn;
    turn.text = reply.content;
    turn.finish_reason = reply.finish_reason == "cancelled" ? "interrupted" : reply.finish_reason;
    turn.stats = reply.stats;
    const Json& s = reply.stats;
    turn.stats_line =
        s.is_object()
            ? StrFormat(
                  "[mtplx] mode=%s depth=%d tokens=%lld tok/s=%.2f "
                  "prefill_tok/s=%.1f cached=%lld finish=%s",
                  s.value("mode", "?").c_str(), s.value("mtp_depth", 0),
                  static_cast<long long>(s.value("completion_tokens", 0)),
                  s.value("decode_tok_s", 0.0), s.value("prefill_tok_s", 0.0),
                  static_cast<long long>(s.value("cached_tokens", 0)), turn.finish_reason.c_str())
            : StrCat("[mtplx] finish=", turn.finish_reason);
    return turn;
  }

 private:
  StartFlags flags_;
  std::string model_id_;
  int depth_;
  bool speculate_ = true;
};

int RunStart(StartFlags f) {
  if (!f.api_key_file.empty()) {
    auto key = ReadTextFile(f.api_key_file);
    if (!key.ok()) return ReportError(key.status().message());
    f.endpoint.api_key = *key;
    while (!f.endpoint.api_key.empty() && std::isspace(f.endpoint.api_key.back()))
      f.endpoint.api_key.pop_back();
  }
  auto health = server::GetJson(f.endpoint, "/health", 1.0);
  if (health.ok()) {
    if (!f.quiet)
      std::fprintf(stderr, "[mtplx] using the server at %s\n", f.endpoint.BaseUrl().c_str());
  } else {
    const std::string log = LogPath(f.endpoint.port);
    if (!f.quiet)
      std::fprintf(stderr, "[mtplx] starting mtplx serve on %s (log: %s)\n",
                   f.endpoint.BaseUrl().c_str(), log.c_str());
    auto pid = SpawnServer(f, log);
    if (!pid.ok()) return ReportError(pid.status().message());
    std::fprintf(stderr,
                 "[mtplx] started mtplx serve (pid %d); it keeps serving after this chat: stop "
                 "it with `kill %d`\n",
                 static_cast<int>(*pid), static_cast<int>(*pid));
    health = server::GetJson(f.endpoint, "/health", 5.0);
    if (!health.ok()) return ReportError(health.status().message());
  }
  const Json& h = *health;
  const std::string model = h.is_object() && h.contains("model") && h["model"].is_string()
                                ? h["model"].get<std::string>()
                                : "default";
  int depth = 0;
  if (h.is_object() && h.contains("mtp") && h["mtp"].is_object() && h["mtp"].contains("depth") &&
      h["mtp"]["depth"].is_number_integer())
    depth = h["mtp"]["depth"].get<int>();
  RemoteBackend backend(f, model, depth);
  return RunChatLoop(backend, f.system, f.quiet);
}

}  // namespace

Runner AddStartCommand(CLI::App& app) {
  auto f = std::make_shared<StartFlags>();
  CLI::App* cmd = app.add_subcommand(
      "start", "Chat with the running server, starting one in the background if none answers");
  cmd->add_option("--model", f->model_dir, "Model folder for a server it starts");
  cmd->add_option("--host", f->endpoint.host, "The server's address (default 127.0.0.1)");
  cmd->add_option("--port", f->endpoint.port, "The server's port (default 8000)")
      ->check(CLI::Range(1, 65535));
  cmd->add_option("--api-key-file", f->api_key_file, "The server's key");
  cmd->add_option("--system", f->system, "System prompt");
  cmd->add_option("--max-tokens", f->max_tokens, "Most tokens a reply may have (default 1024)")
      ->check(AtLeastOne());
  cmd->add_option("--temperature", f->temperature, "Sampling temperature (default: the server's)")
      ->check(FiniteNumber())
      ->check(CLI::Range(0.0, 2.0));
  cmd->add_flag("--quiet", f->quiet, "No notices or stats lines");
  return [f] { return RunStart(*f); };
}

}  // namespace mtplx::cli
