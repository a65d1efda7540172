// The terminal chat shared by `mtplx chat` (a model loaded in this process) and `mtplx start` (a
// running server, over its OpenAI API): history, streaming replies, /stats /reset /mtp /exit,
// and Ctrl-C that stops a reply and returns to the prompt.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "base/status.h"
#include "chat/conversation.h"

namespace mtplx::cli {

struct ChatTurn {
  std::string text;
  std::string finish_reason;  // "interrupted" when Ctrl-C stopped it
  std::string stats_line;     // "[mtplx] mode=... tok/s=..."
  nlohmann::json stats;       // what /stats prints
};

class ChatBackend {
 public:
  virtual ~ChatBackend() = default;
  // "MTP speculation, depth 2" / "plain decoding"
  virtual std::string ModeText() const = 0;
  // Returns a note when speculation cannot be turned on.
  virtual std::string SetSpeculation(bool on) = 0;
  virtual Result<ChatTurn> Reply(const chat::Conversation& conversation,
                                 const std::function<void(std::string_view)>& on_text) = 0;
};

// Runs the chat on stdin/stdout until /exit, end of input or Ctrl-C at the prompt; returns the
// exit code.
int RunChatLoop(ChatBackend& backend, const std::string& system_prompt, bool quiet);

}  // namespace mtplx::cli
