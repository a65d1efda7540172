// Conversation: the messages and tools of a chat request, in OpenAI's message format, and their
// conversion to the values a chat template sees.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "chat/value.h"

namespace mtplx::chat {

struct ContentPart {
  enum class Type { kText, kImage, kVideo };
  Type type = Type::kText;
  std::string text;  // kText
  std::string url;   // kImage / kVideo source; may be empty (templates only count media)
};

struct ToolCall {
  std::string id;
  std::string type = "function";
  std::string name;
  // A dict (a JSON object) or a string (raw JSON text, as OpenAI clients send it). Templates
  // differ: Qwen 3 prints strings as they are, Qwen 3.5 iterates `arguments|items` and so needs
  // a dict. ParseStringArguments converts.
  Value arguments;
};

struct Message {
  std::string role;
  // Text content, or content parts (when content_is_parts); neither means no "content" key.
  std::optional<std::string> content;
  bool content_is_parts = false;
  std::vector<ContentPart> parts;
  std::optional<std::string> reasoning_content;
  std::vector<ToolCall> tool_calls;
  std::optional<std::string> tool_call_id;  // role "tool"
  std::optional<std::string> name;
  // Other keys of the JSON message, passed to the template unchanged.
  std::vector<std::pair<std::string, Value>> extra;
};

struct Conversation {
  std::vector<Message> messages;
  std::vector<Value> tools;  // JSON schemas ({"type": "function", "function": {...}})

  // Accepts a JSON array of messages, or an object {"messages": [...], "tools": [...]}.
  // Content may be a string, null, or a list of parts {"type": "text"|"image"|"image_url"|
  // "video"|"video_url", ...}; tool call arguments may be an object or a JSON string.
  static Result<Conversation> FromJson(std::string_view json_text);

  // Parses string tool-call arguments that hold a JSON object into dicts (what llama.cpp and
  // vLLM do before templating); other strings stay as they are.
  void ParseStringArguments();

  // The template's `messages`: one dict per message in transformers' normalized form (no null
  // values; "thinking" aliased to reasoning_content). Every string is marked as user input.
  Value MessagesValue() const;
  // The template's `tools`: a list, or None when there are no tools.
  Value ToolsValue() const;
};

}  // namespace mtplx::chat
