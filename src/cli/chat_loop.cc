#include "cli/chat_loop.h"

#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <optional>
#include <string>

#include "cli/interrupt.h"
#include "tokenizer/utf8.h"

namespace mtplx::cli {
namespace {

chat::Message Text(std::string role, std::string content) {
  chat::Message message;
  message.role = std::move(role);
  message.content = std::move(content);
  return message;
}

class ChatLoop {
 public:
  ChatLoop(ChatBackend& backend, std::string system_prompt, bool quiet)
      : backend_(backend),
        system_(std::move(system_prompt)),
        quiet_(quiet),
        interactive_(isatty(STDIN_FILENO) != 0) {
    Reset();
  }

  int Run() {
    std::printf("mtplx chat: %s. Commands: /stats /reset /mtp on|off /exit\n",
                backend_.ModeText().c_str());
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
  void Reset() {
    conversation_ = chat::Conversation();
    if (!system_.empty()) conversation_.messages.push_back(Text("system", system_));
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
        std::printf("%s\n%s\n", last_->stats_line.c_str(), last_->stats.dump().c_str());
      }
    } else if (line == "/mtp on" || line == "/mtp off") {
      const std::string note = backend_.SetSpeculation(line == "/mtp on");
      if (!note.empty()) std::printf("(speculation unavailable: %s)\n", note.c_str());
      std::printf("(%s)\n", backend_.ModeText().c_str());
    } else {
      std::printf("(unknown command; try /stats /reset /mtp on|off /exit)\n");
    }
    return true;
  }

  bool Answer(const std::string& text) {
    ClearInterrupt();
    conversation_.messages.push_back(Text("user", text));
    auto turn = backend_.Reply(conversation_, [](std::string_view piece) {
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
    if (!quiet_) std::fprintf(stderr, "%s\n", turn->stats_line.c_str());
    // The partial reply stays in the history: it is what the user saw.
    conversation_.messages.push_back(Text("assistant", turn->text));
    last_ = std::move(turn).value();
    return true;
  }

  ChatBackend& backend_;
  std::string system_;
  bool quiet_;
  bool interactive_;
  chat::Conversation conversation_;
  std::optional<ChatTurn> last_;
};

}  // namespace

int RunChatLoop(ChatBackend& backend, const std::string& system_prompt, bool quiet) {
  InstallInterruptHandlers();
  ChatLoop loop(backend, system_prompt, quiet);
  return loop.Run();
}

}  // namespace mtplx::cli
