// ChatTemplate: a model's Jinja chat template, rendered the way transformers'
// apply_chat_template renders it, with the user-supplied parts of the prompt marked.
//
//   MTPLX_ASSIGN_OR_RETURN(ChatTemplate tmpl, ChatTemplate::FromModelDir(dir));
//   MTPLX_ASSIGN_OR_RETURN(Conversation chat, Conversation::FromJson(request_json));
//   RenderOptions options;
//   options.add_generation_prompt = true;
//   MTPLX_ASSIGN_OR_RETURN(RenderedPrompt prompt, tmpl.Render(chat, options));
//
// Tokenize prompt.text as one string, but let added tokens match only where the text is not
// from the user (prompt.segments / prompt.user_spans): encoding segments separately would change
// BPE merges at their boundaries.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "chat/conversation.h"
#include "chat/interpreter.h"
#include "chat/marked_string.h"
#include "chat/template.h"
#include "chat/value.h"

namespace mtplx::chat {

struct PromptSegment {
  std::string text;
  bool from_user = false;  // came from message contents, tool calls, tools or other input
};

struct RenderedPrompt {
  std::string text;
  // Consecutive pieces of `text` alternating between template text and user text; their
  // concatenation is `text`.
  std::vector<PromptSegment> segments;
  std::vector<ByteSpan> user_spans;  // the same information as byte ranges of `text`

  static RenderedPrompt FromMarked(const MarkedString& marked);
};

struct RenderOptions {
  bool add_generation_prompt = false;
  std::optional<bool> enable_thinking;    // unset: the variable is undefined in the template
  std::optional<bool> preserve_thinking;  // Qwen 3.6: keep reasoning of all past turns
  // Special tokens; unset ones fall back to the values in tokenizer_config.json (if the template
  // came from a model directory), and are undefined otherwise.
  std::optional<std::string> bos_token;
  std::optional<std::string> eos_token;
  std::optional<std::string> pad_token;
  std::optional<std::string> unk_token;
  // Further template variables (add_vision_id, custom kwargs); they override the above.
  std::vector<std::pair<std::string, Value>> extra_variables;
  RenderLimits limits;
};

class ChatTemplate {
 public:
  // Reads <dir>/chat_template.jinja, else <dir>/chat_template.json ({"chat_template": ...}),
  // else the "chat_template" of <dir>/tokenizer_config.json: a string, or a list of
  // {"name", "template"} of which "default" is used. Special tokens come from
  // tokenizer_config.json when it exists.
  static Result<ChatTemplate> FromModelDir(const std::string& dir);
  static Result<ChatTemplate> FromString(std::string source);
  // The template of tokenizer_config.json text (string or named list, see above).
  static Result<ChatTemplate> FromTokenizerConfig(std::string_view json_text);

  // Renders like transformers' apply_chat_template(conversation, tools=..., tokenize=False,
  // add_generation_prompt=..., **kwargs): `messages` in normalized form, `tools` (None when
  // empty), `documents` None, `add_generation_prompt`, special tokens and options.
  Result<RenderedPrompt> Render(const Conversation& conversation,
                                const RenderOptions& options) const;
  // Renders with an arbitrary context (a dict Value) as the template's variables.
  Result<RenderedPrompt> RenderContext(const Value& context, const RenderLimits& limits = {}) const;
  // The same from a JSON object; strings under "messages", "tools" and "documents" are marked as
  // user input, the rest (flags, special tokens) is trusted.
  Result<RenderedPrompt> RenderJson(std::string_view context_json,
                                    const RenderLimits& limits = {}) const;

  const std::string& source() const { return source_; }

 private:
  ChatTemplate(std::string source, Template parsed)
      : source_(std::move(source)), template_(std::move(parsed)) {}
  Status ReadSpecialTokens(std::string_view tokenizer_config_json);

  std::string source_;
  Template template_;
  std::optional<std::string> bos_token_;
  std::optional<std::string> eos_token_;
  std::optional<std::string> pad_token_;
  std::optional<std::string> unk_token_;
};

}  // namespace mtplx::chat
