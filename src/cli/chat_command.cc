// `mtplx chat`: an interactive terminal chat with streaming replies and conversation history.
// Commands: /stats, /reset, /mtp on|off, /exit.
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "base/strings.h"
#include "cli/commands.h"
#include "cli/interrupt.h"
#include "cli/session.h"
#include "tokenizer/utf8.h"

namespace mtplx::cli {
namespace {

class ChatLoop {
 public:
  ChatLoop(Session& session, const GenerationFlags& flags)
      : session_(session), flags_(flags), interactive_(isatty(STDIN_FILENO) != 0) {
    Reset();
  }

  int Run() {
    std::printf("mtplx chat: %s. Commands: /stats /reset /mtp on|off /exit\n", ModeText().c_str());
    std::string line;
    while (true) {
      if (interactive_) std::printf("\n> ");
      std::fflush(stdout);
      SetExitOnInterrupt(true);  // nothing is in flight while waiting for a line
      const bool got_line = static_cast<bool>(std::getline(std::cin, line));
      SetExitOnInterrupt(false);
      if (!got_line) break;
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      if (!tokenizer::IsValidUtf8(line)) {
        std::printf("(that line is not valid UTF-8 text; not sent)\n");
        continue;
      }
      if (line[0] == '/') {
        if (!Command(line)) break;
        continue;
      }
      if (!Answer(line)) return 1;
    }
    std::printf("\n");
    return 0;
  }

 private:
  std::string ModeText() const {
    return session_.speculating() ? StrCat("MTP speculation, depth ", session_.depth())
                                  : std::string("plain decoding");
  }

  void Reset() {
    conversation_ = chat::Conversation();
    if (!flags_.system.empty())
      conversation_.messages.push_back(TextMessage("system", flags_.system));
  }

  // Returns false to leave the chat.
  bool Command(const std::string& line) {
    if (line == "/exit" || line == "/quit") return false;
    if (line == "/reset") {
      Reset();
      std::printf("(conversation cleared)\n");
    } else if (line == "/stats") {
      if (!last_) {
        std::printf("(no reply yet)\n");
      } else {
        std::printf("%s\n%s\n", StatsLine(*last_).c_str(),
                    TurnStatsJson(*last_, session_.model()).dump().c_str());
      }
    } else if (line == "/mtp on" || line == "/mtp off") {
      session_.SetSpeculation(line == "/mtp on");
      if (line == "/mtp on" && !session_.speculating())
        std::printf("(speculation unavailable: %s)\n", session_.notice().c_str());
      std::printf("(%s)\n", ModeText().c_str());
    } else {
      std::printf("(unknown command; try /stats /reset /mtp on|off /exit)\n");
    }
    return true;
  }

  bool Answer(const std::string& text) {
    ClearInterrupt();
    conversation_.messages.push_back(TextMessage("user", text));
    auto turn = session_.Reply(conversation_, [](std::string_view piece) {
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      std::fflush(stdout);
    });
    if (!turn.ok()) {
      conversation_.messages.pop_back();
      std::fprintf(stderr, "\n[mtplx] error: %s\n", turn.status().message().c_str());
      return interactive_;  // keep chatting after a bad turn when a person is typing
    }
    std::printf("\n");
    if (turn->finish_reason == "interrupted") std::printf("(interrupted)\n");
    std::fflush(stdout);
    if (!flags_.quiet) std::fprintf(stderr, "%s\n", StatsLine(*turn).c_str());
    // The partial reply stays in the history: it is what the user saw.
    conversation_.messages.push_back(TextMessage("assistant", turn->text));
    last_ = std::move(turn).value();
    return true;
  }

  Session& session_;
  const GenerationFlags& flags_;
  bool interactive_;
  chat::Conversation conversation_;
  std::optional<Turn> last_;
};

}  // namespace

Runner AddChatCommand(CLI::App& app) {
  auto flags = std::make_shared<GenerationFlags>();
  CLI::App* cmd = app.add_subcommand("chat", "Chat in the terminal (/stats /reset /mtp /exit)");
  AddGenerationFlags(cmd, *flags);
  return [flags] {
    auto session = Session::Open(*flags, !flags->quiet);
    if (!session.ok()) return ReportError(session.status().message());
    if (!(*session)->notice().empty() && !flags->quiet)
      std::fprintf(stderr, "[mtplx] %s\n", (*session)->notice().c_str());
    InstallInterruptHandlers();
    (*session)->SetInterruptFlag(InterruptFlag());
    ChatLoop loop(**session, *flags);
    return loop.Run();
  };
}

}  // namespace mtplx::cli
