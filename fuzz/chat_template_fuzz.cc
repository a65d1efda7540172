// libFuzzer target for the chat template engine (lexer, parser, interpreter, builtins).
//
// Each input is a template. It is parsed and, when it parses, rendered twice: with a small fixed
// context of plain variables, and through ChatTemplate::Render with a conversation that has a
// system prompt, tools, reasoning, tool calls with dict and string arguments, media parts and a
// tool result, so the chat-specific values reach the template too. Nothing may crash, hang or
// leak: the step, depth and size limits must stop endless loops ({% for %} over ranges, macro
// recursion, string doubling), and every failure must be a Status naming the template.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "chat/chat_template.h"
#include "chat/json_value.h"
#include "chat/template.h"

namespace {

using mtplx::chat::ChatTemplate;
using mtplx::chat::Conversation;
using mtplx::chat::MarkedString;
using mtplx::chat::RenderLimits;
using mtplx::chat::RenderOptions;
using mtplx::chat::Template;
using mtplx::chat::Value;

void Require(bool condition) {
  if (!condition) __builtin_trap();
}

// Small limits keep each run fast; the invariants do not depend on their values.
RenderLimits Limits() {
  RenderLimits limits;
  limits.max_steps = 200000;
  limits.max_call_depth = 40;
  limits.max_output_bytes = size_t{1} << 20;
  return limits;
}

const Value& PlainContext() {
  static const Value* context = new Value(*mtplx::chat::ParseJson(R"({
      "x": "value", "n": 7, "f": 2.5, "t": true, "nothing": null,
      "l": [1, "two", [3], {"k": "v"}], "d": {"b": 1, "a": [1, 2], "c": {"k": "é\n"}},
      "s": "héllo 🎉 <|im_end|>"})",
                                                                  /*from_user=*/true));
  return *context;
}

const Conversation& Chat() {
  static const Conversation* chat = new Conversation(*Conversation::FromJson(R"({
      "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "look"},
                                     {"type": "image", "image": "a.png"},
                                     {"type": "video", "video": "b.mp4"}]},
        {"role": "assistant", "content": "<think>\nr\n</think>\n\nok", "tool_calls": [
          {"id": "c1", "type": "function",
           "function": {"name": "f", "arguments": {"a": 1, "b": ["x", null]}}},
          {"id": "c2", "type": "function", "function": {"name": "g", "arguments": "{\"q\": 2}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "done"},
        {"role": "assistant", "content": "fine", "reasoning_content": "because"},
        {"role": "user", "content": "again <|im_start|>"}],
      "tools": [{"type": "function", "function": {"name": "f", "description": "d",
                 "parameters": {"type": "object", "properties": {"a": {"type": "integer"}},
                                "required": ["a"]}}}]})"));
  return *chat;
}

void CheckMarks(const MarkedString& text) {
  size_t previous_end = 0;
  for (const auto& span : text.user_spans()) {
    Require(span.begin < span.end && span.end <= text.size());
    Require(span.begin >= previous_end);
    previous_end = span.end;
  }
}

void CheckError(const mtplx::Status& status) {
  Require(!status.ok());
  Require(status.message().rfind("chat template: ", 0) == 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string source(reinterpret_cast<const char*>(data), size);
  const mtplx::Result<Template> parsed = Template::Parse(source);
  if (!parsed.ok()) {
    CheckError(parsed.status());
    return 0;
  }
  const mtplx::Result<MarkedString> plain = parsed->Render(PlainContext(), Limits());
  if (plain.ok()) {
    CheckMarks(*plain);
  } else {
    CheckError(plain.status());
  }
  const mtplx::Result<ChatTemplate> chat_template = ChatTemplate::FromString(source);
  Require(chat_template.ok());
  RenderOptions options;
  options.add_generation_prompt = size % 2 == 0;
  options.enable_thinking = size % 3 == 0;
  options.eos_token = "<|im_end|>";
  options.limits = Limits();
  const auto prompt = chat_template->Render(Chat(), options);
  if (!prompt.ok()) {
    CheckError(prompt.status());
    return 0;
  }
  std::string joined;
  for (const auto& segment : prompt->segments) joined += segment.text;
  Require(joined == prompt->text);
  return 0;
}
