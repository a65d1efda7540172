#include "chat/conversation.h"

#include <algorithm>

#include "base/strings.h"
#include "chat/json_value.h"
#include "chat/value_ops.h"

namespace mtplx::chat {
namespace {

using Entries = std::vector<std::pair<MarkedString, Value>>;

const Value* Field(const Value& dict, std::string_view key) {
  return dict.is_dict() ? dict.AsDict().Find(key) : nullptr;
}

bool IsNull(const Value* value) { return value == nullptr || value->is_none(); }

// An optional string field; null and absent are the same, anything else but a string is refused.
Status OptionalString(const Value& dict, std::string_view key, std::string_view where,
                      std::optional<std::string>* out) {
  const Value* value = Field(dict, key);
  if (IsNull(value)) return Status::Ok();
  if (!value->is_string())
    return InvalidArgument(StrCat(where, ": \"", key, "\" must be a string"));
  *out = value->text();
  return Status::Ok();
}

// The URL of a media part: {"image": "u"}, {"image_url": "u"}, {"image_url": {"url": "u"}}.
std::string MediaUrl(const Value& part, std::string_view kind) {
  for (const std::string& key :
       {std::string(kind), std::string(kind) + "_url", std::string("url")}) {
    const Value* value = Field(part, key);
    if (value == nullptr) continue;
    if (value->is_string()) return value->text();
    if (const Value* url = Field(*value, "url"); url != nullptr && url->is_string()) {
      return url->text();
    }
  }
  return "";
}

Result<ContentPart> ParsePart(const Value& part, const std::string& where) {
  if (!part.is_dict()) return InvalidArgument(where + ": a content part must be an object");
  const Value* type = Field(part, "type");
  const std::string type_name = type != nullptr && type->is_string() ? type->text() : "";
  ContentPart out;
  if (type_name == "image" || type_name == "image_url") {
    out.type = ContentPart::Type::kImage;
    out.url = MediaUrl(part, "image");
  } else if (type_name == "video" || type_name == "video_url") {
    out.type = ContentPart::Type::kVideo;
    out.url = MediaUrl(part, "video");
  } else if (const Value* text = Field(part, "text"); text != nullptr && text->is_string()) {
    out.text = text->text();
  } else {
    return InvalidArgument(StrCat(where, ": unsupported content part type \"", type_name, "\""));
  }
  return out;
}

Result<ToolCall> ParseToolCall(const Value& call, const std::string& where) {
  if (!call.is_dict()) return InvalidArgument(where + ": a tool call must be an object");
  ToolCall out;
  std::optional<std::string> text;
  MTPLX_RETURN_IF_ERROR(OptionalString(call, "id", where, &text));
  out.id = text.value_or("");
  text.reset();
  MTPLX_RETURN_IF_ERROR(OptionalString(call, "type", where, &text));
  out.type = text.value_or("function");
  // OpenAI nests name and arguments in "function"; accept them flat too.
  const Value* function = Field(call, "function");
  const Value& body = IsNull(function) ? call : *function;
  text.reset();
  MTPLX_RETURN_IF_ERROR(OptionalString(body, "name", where, &text));
  if (!text) return InvalidArgument(where + ": a tool call needs a function name");
  out.name = *text;
  if (const Value* arguments = Field(body, "arguments"); !IsNull(arguments)) {
    out.arguments = *arguments;
  }
  return out;
}

Status ParseContent(const Value* content, const std::string& where, Message* message) {
  if (IsNull(content)) return Status::Ok();
  if (content->is_string()) {
    message->content = content->text();
    return Status::Ok();
  }
  if (!content->is_list()) {
    return InvalidArgument(where + ": content must be a string, null or a list of parts");
  }
  message->content_is_parts = true;
  for (size_t i = 0; i < content->items().size(); ++i) {
    MTPLX_ASSIGN_OR_RETURN(ContentPart part,
                           ParsePart(content->items()[i], StrCat(where, " part ", i)));
    message->parts.push_back(std::move(part));
  }
  return Status::Ok();
}

Result<Message> ParseMessage(const Value& value, size_t index) {
  const std::string where = StrCat("message ", index);
  if (!value.is_dict()) return InvalidArgument(where + " must be an object");
  Message message;
  std::optional<std::string> role;
  MTPLX_RETURN_IF_ERROR(OptionalString(value, "role", where, &role));
  if (!role) return InvalidArgument(where + " has no \"role\"");
  message.role = *role;
  MTPLX_RETURN_IF_ERROR(ParseContent(Field(value, "content"), where, &message));
  MTPLX_RETURN_IF_ERROR(
      OptionalString(value, "reasoning_content", where, &message.reasoning_content));
  MTPLX_RETURN_IF_ERROR(OptionalString(value, "tool_call_id", where, &message.tool_call_id));
  MTPLX_RETURN_IF_ERROR(OptionalString(value, "name", where, &message.name));
  if (const Value* calls = Field(value, "tool_calls"); !IsNull(calls)) {
    if (!calls->is_list()) return InvalidArgument(where + ": \"tool_calls\" must be a list");
    for (size_t i = 0; i < calls->items().size(); ++i) {
      MTPLX_ASSIGN_OR_RETURN(ToolCall call,
                             ParseToolCall(calls->items()[i], StrCat(where, " tool call ", i)));
      message.tool_calls.push_back(std::move(call));
    }
  }
  static constexpr std::string_view kKnown[] = {"role",         "content", "reasoning_content",
                                                "tool_call_id", "name",    "tool_calls"};
  for (const auto& [key, item] : value.AsDict().entries) {
    if (item.is_none() ||
        std::find(std::begin(kKnown), std::end(kKnown), key.text()) != std::end(kKnown)) {
      continue;
    }
    message.extra.emplace_back(key.text(), item);
  }
  return message;
}

Value UserString(const std::string& text) { return Value::String(text, /*from_user=*/true); }

Value PartValue(const ContentPart& part) {
  Entries entries;
  switch (part.type) {
    case ContentPart::Type::kText:
      entries.emplace_back(MarkedString("type"), Value::String("text"));
      entries.emplace_back(MarkedString("text"), UserString(part.text));
      break;
    case ContentPart::Type::kImage:
    case ContentPart::Type::kVideo: {
      const char* kind = part.type == ContentPart::Type::kImage ? "image" : "video";
      entries.emplace_back(MarkedString("type"), Value::String(kind));
      entries.emplace_back(MarkedString(kind), UserString(part.url));
      break;
    }
  }
  return Value::Dict(std::move(entries));
}

Value ToolCallValue(const ToolCall& call) {
  Entries function = {{MarkedString("name"), UserString(call.name)}};
  if (!call.arguments.is_undefined())
    function.emplace_back(MarkedString("arguments"), call.arguments);
  Entries entries;
  if (!call.id.empty()) entries.emplace_back(MarkedString("id"), UserString(call.id));
  entries.emplace_back(MarkedString("type"), UserString(call.type));
  entries.emplace_back(MarkedString("function"), Value::Dict(std::move(function)));
  return Value::Dict(std::move(entries));
}

Entries BaseEntries(const Message& message) {
  Entries entries = {{MarkedString("role"), UserString(message.role)}};
  if (message.content_is_parts) {
    std::vector<Value> parts;
    for (const ContentPart& part : message.parts) parts.push_back(PartValue(part));
    entries.emplace_back(MarkedString("content"), Value::List(std::move(parts)));
  } else if (message.content) {
    entries.emplace_back(MarkedString("content"), UserString(*message.content));
  }
  if (message.reasoning_content) {
    entries.emplace_back(MarkedString("reasoning_content"), UserString(*message.reasoning_content));
  }
  if (!message.tool_calls.empty()) {
    std::vector<Value> calls;
    for (const ToolCall& call : message.tool_calls) calls.push_back(ToolCallValue(call));
    entries.emplace_back(MarkedString("tool_calls"), Value::List(std::move(calls)));
  }
  if (message.tool_call_id) {
    entries.emplace_back(MarkedString("tool_call_id"), UserString(*message.tool_call_id));
  }
  if (message.name) entries.emplace_back(MarkedString("name"), UserString(*message.name));
  for (const auto& [key, value] : message.extra) entries.emplace_back(MarkedString(key), value);
  return entries;
}

const Value* FindEntry(const Entries& entries, std::string_view key) {
  for (const auto& [entry_key, value] : entries) {
    if (entry_key.text() == key) return &value;
  }
  return nullptr;
}

// transformers' _alias_reasoning_fields: {"thinking": r, **message, "reasoning_content": r}
// where r is the first non-null of reasoning_content, thinking and reasoning.
Entries AliasReasoning(Entries entries) {
  const Value* reasoning = nullptr;
  for (std::string_view key : {"reasoning_content", "thinking", "reasoning"}) {
    if ((reasoning = FindEntry(entries, key)) != nullptr) break;
  }
  if (reasoning == nullptr) return entries;
  const Value r = *reasoning;
  const Value* own_thinking = FindEntry(entries, "thinking");
  Entries out = {{MarkedString("thinking"), own_thinking ? *own_thinking : r}};
  bool has_reasoning_content = false;
  for (auto& [key, value] : entries) {
    if (key.text() == "thinking") continue;
    has_reasoning_content |= key.text() == "reasoning_content";
    out.emplace_back(key, key.text() == "reasoning_content" ? r : value);
  }
  if (!has_reasoning_content) out.emplace_back(MarkedString("reasoning_content"), r);
  return out;
}

}  // namespace

Result<Conversation> Conversation::FromJson(std::string_view json_text) {
  MTPLX_ASSIGN_OR_RETURN(const Value root, ParseJson(json_text, /*from_user=*/true));
  const Value* messages = root.is_list() ? &root : Field(root, "messages");
  if (messages == nullptr || !messages->is_list()) {
    return InvalidArgument("conversation: expected a list of messages or {\"messages\": [...]}");
  }
  Conversation conversation;
  for (size_t i = 0; i < messages->items().size(); ++i) {
    Result<Message> message = ParseMessage(messages->items()[i], i);
    if (!message.ok()) return message.status().WithContext("conversation");
    conversation.messages.push_back(std::move(message).value());
  }
  if (const Value* tools = Field(root, "tools"); !IsNull(tools)) {
    if (!tools->is_list()) return InvalidArgument("conversation: \"tools\" must be a list");
    conversation.tools = tools->items();
  }
  return conversation;
}

void Conversation::ParseStringArguments() {
  for (Message& message : messages) {
    for (ToolCall& call : message.tool_calls) {
      if (!call.arguments.is_string()) continue;
      Result<Value> parsed = ParseJson(call.arguments.text(), /*from_user=*/true);
      if (parsed.ok() && parsed->is_dict()) call.arguments = std::move(parsed).value();
    }
  }
}

Value Conversation::MessagesValue() const {
  std::vector<Value> out;
  out.reserve(messages.size());
  for (const Message& message : messages) {
    out.push_back(Value::Dict(AliasReasoning(BaseEntries(message))));
  }
  return Value::List(std::move(out));
}

Value Conversation::ToolsValue() const {
  if (tools.empty()) return Value::None();
  return Value::List(tools);
}

}  // namespace mtplx::chat
