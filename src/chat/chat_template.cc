#include "chat/chat_template.h"

#include <nlohmann/json.hpp>

#include "base/file.h"
#include "base/strings.h"
#include "chat/json_value.h"

namespace mtplx::chat {
namespace {

using Json = nlohmann::json;

Result<Json> ParseJsonObject(std::string_view text, std::string_view what) {
  try {
    Json json = Json::parse(text.begin(), text.end());
    if (!json.is_object()) return InvalidArgument(StrCat(what, ": expected a JSON object"));
    return json;
  } catch (const Json::exception& e) {
    return InvalidArgument(StrCat(what, ": invalid JSON: ", e.what()));
  }
}

// "chat_template" as a string, or the "default" entry of a list of {"name", "template"}.
Result<std::string> SelectTemplate(const Json& config, std::string_view what) {
  const auto it = config.find("chat_template");
  if (it == config.end() || it->is_null()) {
    return NotFound(StrCat(what, ": no \"chat_template\""));
  }
  if (it->is_string()) return it->get<std::string>();
  if (!it->is_array()) {
    return InvalidArgument(StrCat(what, ": \"chat_template\" must be a string or a list"));
  }
  std::string names;
  for (const Json& entry : *it) {
    if (!entry.is_object() || !entry.contains("name") || !entry.contains("template")) continue;
    if (!entry["name"].is_string() || !entry["template"].is_string()) continue;
    if (entry["name"] == "default") return entry["template"].get<std::string>();
    names += StrCat(names.empty() ? "" : ", ", entry["name"].get<std::string>());
  }
  return NotFound(StrCat(what, ": no chat template named \"default\" (have: ", names, ")"));
}

// A special token in tokenizer_config.json: a string or an AddedToken {"content": ...}.
std::optional<std::string> TokenString(const Json& config, const char* key) {
  const auto it = config.find(key);
  if (it == config.end()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) {
    return (*it)["content"].get<std::string>();
  }
  return std::nullopt;
}

// Marks the strings of the input-bearing context entries as user text.
Result<Value> ContextFromJson(std::string_view json_text) {
  MTPLX_ASSIGN_OR_RETURN(const Value trusted, ParseJson(json_text, /*from_user=*/false));
  if (!trusted.is_dict()) return InvalidArgument("chat template context: expected a JSON object");
  MTPLX_ASSIGN_OR_RETURN(const Value user, ParseJson(json_text, /*from_user=*/true));
  auto data = std::make_shared<DictData>();
  for (size_t i = 0; i < trusted.AsDict().entries.size(); ++i) {
    const auto& [key, value] = trusted.AsDict().entries[i];
    const bool is_input =
        key.text() == "messages" || key.text() == "tools" || key.text() == "documents";
    data->entries.emplace_back(key, is_input ? user.AsDict().entries[i].second : value);
  }
  return Value::Dict(std::move(data));
}

void SetToken(const std::optional<std::string>& option, const std::optional<std::string>& fallback,
              const char* name, DictData* context) {
  const std::optional<std::string>& token = option ? option : fallback;
  if (token) context->Set(MarkedString(name), Value::String(*token));
}

}  // namespace

RenderedPrompt RenderedPrompt::FromMarked(const MarkedString& marked) {
  RenderedPrompt prompt;
  prompt.text = marked.text();
  prompt.user_spans = marked.user_spans();
  size_t pos = 0;
  for (const ByteSpan& span : marked.user_spans()) {
    if (span.begin > pos)
      prompt.segments.push_back({prompt.text.substr(pos, span.begin - pos), false});
    prompt.segments.push_back({prompt.text.substr(span.begin, span.end - span.begin), true});
    pos = span.end;
  }
  if (pos < prompt.text.size()) prompt.segments.push_back({prompt.text.substr(pos), false});
  return prompt;
}

Result<ChatTemplate> ChatTemplate::FromString(std::string source) {
  MTPLX_ASSIGN_OR_RETURN(Template parsed, Template::Parse(source));
  return ChatTemplate(std::move(source), std::move(parsed));
}

Result<ChatTemplate> ChatTemplate::FromTokenizerConfig(std::string_view json_text) {
  MTPLX_ASSIGN_OR_RETURN(const Json config, ParseJsonObject(json_text, "tokenizer_config.json"));
  MTPLX_ASSIGN_OR_RETURN(std::string source, SelectTemplate(config, "tokenizer_config.json"));
  MTPLX_ASSIGN_OR_RETURN(ChatTemplate chat_template, FromString(std::move(source)));
  MTPLX_RETURN_IF_ERROR(chat_template.ReadSpecialTokens(json_text));
  return chat_template;
}

Status ChatTemplate::ReadSpecialTokens(std::string_view tokenizer_config_json) {
  MTPLX_ASSIGN_OR_RETURN(const Json config,
                         ParseJsonObject(tokenizer_config_json, "tokenizer_config.json"));
  bos_token_ = TokenString(config, "bos_token");
  eos_token_ = TokenString(config, "eos_token");
  pad_token_ = TokenString(config, "pad_token");
  unk_token_ = TokenString(config, "unk_token");
  return Status::Ok();
}

Result<ChatTemplate> ChatTemplate::FromModelDir(const std::string& dir) {
  const std::string jinja_path = JoinPath(dir, "chat_template.jinja");
  const std::string json_path = JoinPath(dir, "chat_template.json");
  const std::string config_path = JoinPath(dir, "tokenizer_config.json");
  std::optional<std::string> config_text;
  if (FileExists(config_path)) {
    MTPLX_ASSIGN_OR_RETURN(config_text, ReadTextFile(config_path));
  }
  Result<ChatTemplate> loaded = NotFound(StrCat(dir,
                                                ": no chat_template.jinja, chat_template.json"
                                                " or tokenizer_config.json"));
  if (FileExists(jinja_path)) {
    MTPLX_ASSIGN_OR_RETURN(std::string source, ReadTextFile(jinja_path));
    loaded = FromString(std::move(source));
  } else if (FileExists(json_path)) {
    MTPLX_ASSIGN_OR_RETURN(const std::string text, ReadTextFile(json_path));
    MTPLX_ASSIGN_OR_RETURN(const Json json, ParseJsonObject(text, json_path));
    MTPLX_ASSIGN_OR_RETURN(std::string source, SelectTemplate(json, json_path));
    loaded = FromString(std::move(source));
  } else if (config_text) {
    loaded = FromTokenizerConfig(*config_text);
  }
  if (!loaded.ok()) return loaded.status().WithContext(dir);
  if (config_text) MTPLX_RETURN_IF_ERROR(loaded->ReadSpecialTokens(*config_text));
  return loaded;
}

Result<RenderedPrompt> ChatTemplate::Render(const Conversation& conversation,
                                            const RenderOptions& options) const {
  auto context = std::make_shared<DictData>();
  context->Set(MarkedString("messages"), conversation.MessagesValue());
  context->Set(MarkedString("tools"), conversation.ToolsValue());
  context->Set(MarkedString("documents"), Value::None());
  context->Set(MarkedString("add_generation_prompt"), Value::Bool(options.add_generation_prompt));
  SetToken(options.bos_token, bos_token_, "bos_token", context.get());
  SetToken(options.eos_token, eos_token_, "eos_token", context.get());
  SetToken(options.pad_token, pad_token_, "pad_token", context.get());
  SetToken(options.unk_token, unk_token_, "unk_token", context.get());
  if (options.enable_thinking) {
    context->Set(MarkedString("enable_thinking"), Value::Bool(*options.enable_thinking));
  }
  if (options.preserve_thinking) {
    context->Set(MarkedString("preserve_thinking"), Value::Bool(*options.preserve_thinking));
  }
  for (const auto& [name, value] : options.extra_variables) context->Set(MarkedString(name), value);
  return RenderContext(Value::Dict(std::move(context)), options.limits);
}

Result<RenderedPrompt> ChatTemplate::RenderContext(const Value& context,
                                                   const RenderLimits& limits) const {
  MTPLX_ASSIGN_OR_RETURN(const MarkedString text, template_.Render(context, limits));
  return RenderedPrompt::FromMarked(text);
}

Result<RenderedPrompt> ChatTemplate::RenderJson(std::string_view context_json,
                                                const RenderLimits& limits) const {
  MTPLX_ASSIGN_OR_RETURN(const Value context, ContextFromJson(context_json));
  return RenderContext(context, limits);
}

}  // namespace mtplx::chat
