// `mtplx chat`: an interactive terminal chat with streaming replies and conversation history, on
// a model loaded in this process. Commands: /stats, /reset, /mtp on|off, /exit.
#include <cstdio>
#include <memory>
#include <string>

#include "base/strings.h"
#include "cli/chat_loop.h"
#include "cli/commands.h"
#include "cli/interrupt.h"
#include "cli/session.h"

namespace mtplx::cli {
namespace {

class LocalBackend : public ChatBackend {
 public:
  explicit LocalBackend(Session& session) : session_(session) {}

  std::string ModeText() const override {
    return session_.speculating() ? StrCat("MTP speculation, depth ", session_.depth())
                                  : std::string("plain decoding");
  }

  std::string SetSpeculation(bool on) override {
    session_.SetSpeculation(on);
    return on && !session_.speculating() ? session_.notice() : "";
  }

  Result<ChatTurn> Reply(const chat::Conversation& conversation,
                         const std::function<void(std::string_view)>& on_text) override {
    MTPLX_ASSIGN_OR_RETURN(Turn turn, session_.Reply(conversation, on_text));
    ChatTurn out;
    out.text = turn.text;
    out.finish_reason = turn.finish_reason;
    out.stats_line = StatsLine(turn);
    out.stats = TurnStatsJson(turn, session_.model());
    return out;
  }

 private:
  Session& session_;
};

}  // namespace

Runner AddChatCommand(CLI::App& app) {
  auto flags = std::make_shared<GenerationFlags>();
  CLI::App* cmd = app.add_subcommand("chat", "Chat in the terminal (/stats /reset /mtp /exit)");
  AddGenerationFlags(cmd, *flags);
  return [flags] {
    auto session = Session::Open(*flags, !flags->quiet);
    if (!session.ok()) return ReportError(session.status().message());
    if (!(*session)->tuned_notice().empty() && !flags->quiet)
      std::fprintf(stderr, "[mtplx] %s\n", (*session)->tuned_notice().c_str());
    if (!(*session)->notice().empty() && !flags->quiet)
      std::fprintf(stderr, "[mtplx] %s\n", (*session)->notice().c_str());
    (*session)->SetInterruptFlag(InterruptFlag());
    LocalBackend backend(**session);
    return RunChatLoop(backend, flags->system, flags->quiet);
  };
}

}  // namespace mtplx::cli
