#include "api/anthropic_api.h"

#include "base/strings.h"

namespace mtplx::api {
namespace {

using Json = nlohmann::json;

constexpr int64_t kMaxTokensLimit = int64_t{1} << 30;
constexpr size_t kMaxStops = 64;

std::string BlockType(const Json& block) {
  if (!block.is_object()) return "";
  const auto type = block.find("type");
  return type != block.end() && type->is_string() ? type->get<std::string>() : "";
}

MaybeError BlockString(const Json& block, const char* key, const std::string& path,
                       std::string& out) {
  const auto it = block.find(key);
  if (it == block.end() || !it->is_string())
    return InvalidRequest(StrCat("'", path, ".", key, "' must be a string"),
                          StrCat(path, ".", key));
  out = it->get<std::string>();
  return std::nullopt;
}

void Append(std::string& to, const std::string& text) {
  if (!to.empty() && !text.empty()) to += "\n";
  to += text;
}

// The text of a tool_result's content: a string, or text blocks (other blocks are named, since
// this model reads text only).
MaybeError ToolResultText(const Json& block, const std::string& path, std::string& out) {
  const auto content = block.find("content");
  if (content == block.end() || content->is_null()) return std::nullopt;
  if (content->is_string()) {
    out = content->get<std::string>();
    return std::nullopt;
  }
  if (!content->is_array())
    return InvalidRequest(StrCat("'", path, ".content' must be a string or an array of blocks"),
                          path + ".content");
  for (size_t i = 0; i < content->size(); ++i) {
    const Json& part = (*content)[i];
    const std::string type = BlockType(part);
    if (type == "text") {
      std::string text;
      MTPLX_API_TRY(BlockString(part, "text", StrCat(path, ".content[", i, "]"), text));
      Append(out, text);
    } else {
      Append(out, "[" + (type.empty() ? std::string("unknown") : type) +
                      " content omitted: this model reads text only]");
    }
  }
  return std::nullopt;
}

// One Anthropic message as OpenAI messages (a user turn with tool results becomes tool messages,
// then the user's text).
MaybeError ConvertMessage(const Json& m, size_t index, Json& out) {
  const std::string path = StrCat("messages[", index, "]");
  if (!m.is_object()) return InvalidRequest(StrCat("'", path, "' must be an object"), path);
  FieldReader fields(m, path + ".");
  std::optional<std::string> role;
  MTPLX_API_TRY(fields.String("role", role));
  if (!role || (*role != "user" && *role != "assistant" && *role != "system"))
    return InvalidRequest(StrCat("'", path, ".role' must be \"user\" or \"assistant\""),
                          path + ".role");
  const auto content = m.find("content");
  if (content == m.end() || content->is_null())
    return InvalidRequest(StrCat("'", path, ".content' is missing"), path + ".content");
  if (content->is_string()) {
    out.push_back({{"role", *role}, {"content", content->get<std::string>()}});
    return std::nullopt;
  }
  if (!content->is_array())
    return InvalidRequest(StrCat("'", path, ".content' must be a string or an array of blocks"),
                          path + ".content");
  std::string text, thinking;
  Json calls = Json::array();
  for (size_t i = 0; i < content->size(); ++i) {
    const Json& block = (*content)[i];
    const std::string where = StrCat(path, ".content[", i, "]");
    const std::string type = BlockType(block);
    if (type == "text") {
      std::string t;
      MTPLX_API_TRY(BlockString(block, "text", where, t));
      Append(text, t);
    } else if (type == "thinking" && *role == "assistant") {
      std::string t;
      MTPLX_API_TRY(BlockString(block, "thinking", where, t));
      Append(thinking, t);
    } else if (type == "redacted_thinking") {
      continue;
    } else if (type == "tool_use" && *role == "assistant") {
      std::string id, name;
      MTPLX_API_TRY(BlockString(block, "id", where, id));
      MTPLX_API_TRY(BlockString(block, "name", where, name));
      const auto input = block.find("input");
      const Json arguments = input != block.end() && input->is_object() ? *input : Json::object();
      calls.push_back({{"id", id},
                       {"type", "function"},
                       {"function", {{"name", name}, {"arguments", arguments}}}});
    } else if (type == "tool_result" && *role == "user") {
      std::string id, result;
      MTPLX_API_TRY(BlockString(block, "tool_use_id", where, id));
      MTPLX_API_TRY(ToolResultText(block, where, result));
      out.push_back({{"role", "tool"}, {"tool_call_id", id}, {"content", result}});
    } else if (type == "image" || type == "document") {
      return InvalidRequest(
          StrCat("'", where, "' is ", type, " input, which this model does not take (text only)"),
          where, "unsupported_content");
    } else {
      return InvalidRequest(StrCat("'", where, ".type' \"", type, "\" is not a block type a ",
                                   *role, " message may hold"),
                            where + ".type");
    }
  }
  if (*role == "assistant") {
    Json message = {{"role", "assistant"}, {"content", text}};
    if (!thinking.empty()) message["reasoning_content"] = thinking;
    if (!calls.empty()) message["tool_calls"] = std::move(calls);
    out.push_back(std::move(message));
  } else if (!text.empty() || out.empty() || out.back()["role"] != "tool") {
    out.push_back({{"role", *role}, {"content", text}});
  }
  return std::nullopt;
}

MaybeError SystemText(const FieldReader& f, std::string& out) {
  const Json* system = f.Get("system");
  if (!system) return std::nullopt;
  if (system->is_string()) {
    out = system->get<std::string>();
    return std::nullopt;
  }
  if (!system->is_array())
    return InvalidRequest("'system' must be a string or an array of text blocks", "system");
  for (size_t i = 0; i < system->size(); ++i) {
    std::string text;
    MTPLX_API_TRY(BlockString((*system)[i], "text", StrCat("system[", i, "]"), text));
    if (!IsVolatileSystemBlock(text)) Append(out, text);
  }
  return std::nullopt;
}

MaybeError ConvertTools(const FieldReader& f, Json& out) {
  const Json* tools = nullptr;
  MTPLX_API_TRY(f.Array("tools", tools));
  out = Json::array();
  if (!tools) return std::nullopt;
  for (size_t i = 0; i < tools->size(); ++i) {
    const Json& tool = (*tools)[i];
    const std::string where = StrCat("tools[", i, "]");
    if (!tool.is_object()) return InvalidRequest(StrCat("'", where, "' must be an object"), where);
    std::string name;
    MTPLX_API_TRY(BlockString(tool, "name", where, name));
    const auto schema = tool.find("input_schema");
    if (schema == tool.end()) continue;  // a server tool (web search, ...): nothing to call here
    if (!schema->is_object())
      return InvalidRequest(StrCat("'", where, ".input_schema' must be a JSON schema object"),
                            where + ".input_schema");
    Json function = {{"name", name}, {"parameters", *schema}};
    const auto description = tool.find("description");
    if (description != tool.end() && description->is_string())
      function["description"] = *description;
    out.push_back({{"type", "function"}, {"function", std::move(function)}});
  }
  return std::nullopt;
}

MaybeError ReadToolChoice(const FieldReader& f, const Json& tools, ToolChoice& choice) {
  const Json* v = nullptr;
  MTPLX_API_TRY(f.Object("tool_choice", v));
  if (!v) return std::nullopt;
  const std::string type = BlockType(*v);
  const auto disable = v->find("disable_parallel_tool_use");
  if (disable != v->end() && !disable->is_null()) {
    if (!disable->is_boolean())
      return InvalidRequest("'tool_choice.disable_parallel_tool_use' must be a boolean",
                            "tool_choice.disable_parallel_tool_use");
    choice.parallel = !disable->get<bool>();
  }
  if (type == "auto")
    choice.mode = ToolChoice::Mode::kAuto;
  else if (type == "none")
    choice.mode = ToolChoice::Mode::kNone;
  else if (type == "any")
    choice.mode = ToolChoice::Mode::kRequired;
  else if (type == "tool") {
    choice.mode = ToolChoice::Mode::kNamed;
    MTPLX_API_TRY(BlockString(*v, "name", "tool_choice", choice.name));
  } else {
    return InvalidRequest("'tool_choice.type' must be \"auto\", \"any\", \"tool\" or \"none\"",
                          "tool_choice.type");
  }
  if ((choice.mode == ToolChoice::Mode::kRequired || choice.mode == ToolChoice::Mode::kNamed) &&
      tools.empty())
    return InvalidRequest("'tool_choice' asks for a tool call but 'tools' is empty", "tool_choice");
  // "Required" with one tool is that tool: the call can be forced by name.
  if (choice.mode == ToolChoice::Mode::kRequired && tools.size() == 1)
    choice.name = ToolName(tools[0]);
  if (choice.mode == ToolChoice::Mode::kNamed) {
    for (const Json& tool : tools)
      if (ToolName(tool) == choice.name) return std::nullopt;
    return InvalidRequest("'tool_choice.name' \"" + choice.name + "\" is not in 'tools'",
                          "tool_choice.name");
  }
  return std::nullopt;
}

MaybeError ReadThinking(const FieldReader& f, engine::Request& request) {
  const Json* thinking = nullptr;
  MTPLX_API_TRY(f.Object("thinking", thinking));
  if (!thinking) return std::nullopt;
  const std::string type = BlockType(*thinking);
  if (type == "enabled" || type == "adaptive")
    request.render.enable_thinking = true;
  else if (type == "disabled")
    request.render.enable_thinking = false;
  else
    return InvalidRequest("'thinking.type' must be \"enabled\", \"adaptive\" or \"disabled\"",
                          "thinking.type");
  return std::nullopt;
}

// Builds the call's conversation and tools: the part count_tokens shares.
MaybeError ReadPrompt(const FieldReader& f, const engine::Engine& engine,
                      const ServeDefaults& defaults, ChatCall& out) {
  out.request = engine.NewRequest();
  out.request.kind = engine::PromptKind::kChat;
  Json tools;
  MTPLX_API_TRY(ConvertTools(f, tools));
  MTPLX_API_TRY(ReadToolChoice(f, tools, out.tool_choice));
  const bool use_tools = out.tool_choice.mode != ToolChoice::Mode::kNone;
  const Json* messages = nullptr;
  MTPLX_API_TRY(f.Array("messages", messages));
  if (!messages) return InvalidRequest("'messages' is missing", "messages");
  if (messages->empty())
    return InvalidRequest("'messages' is empty: send at least one message", "messages");
  Json converted = Json::array();
  std::string system;
  MTPLX_API_TRY(SystemText(f, system));
  if (!system.empty()) converted.push_back({{"role", "system"}, {"content", system}});
  for (size_t i = 0; i < messages->size(); ++i)
    MTPLX_API_TRY(ConvertMessage((*messages)[i], i, converted));
  MTPLX_API_TRY(ConversationFromOpenAI(converted, use_tools ? tools : Json::array(), defaults,
                                       out.request.conversation));
  if (use_tools) {
    out.tools = tools;
    if (out.tool_choice.mode == ToolChoice::Mode::kNamed) {
      out.tools = Json::array();
      for (const Json& tool : tools)
        if (ToolName(tool) == out.tool_choice.name) out.tools.push_back(tool);
    }
  }
  MTPLX_API_TRY(ReadThinking(f, out.request));
  return std::nullopt;
}

std::string StopReason(const engine::Completion& done, bool tool_calls) {
  if (done.finish_reason == "length") return "max_tokens";
  if (!done.stop_string.empty()) return "stop_sequence";
  if (tool_calls) return "tool_use";
  return "end_turn";
}

Json Usage(const engine::Completion* done, int64_t prompt, int64_t cached) {
  return {{"input_tokens", prompt - cached},
          {"cache_creation_input_tokens", 0},
          {"cache_read_input_tokens", cached},
          {"output_tokens", done ? done->stats.completion_tokens : 0}};
}

Json ParsedInput(const std::string& arguments) {
  Json input = Json::parse(arguments, nullptr, false);
  return input.is_object() ? input : Json::object();
}

class MessagesFormatter : public ResponseFormatter {
 public:
  MessagesFormatter(const ChatCall& call, std::string prefix)
      : call_(call), prefix_(std::move(prefix)), id_(RandomId("msg_")) {}

  bool streaming() const override { return call_.stream; }

  std::string OnStarted(const engine::Event& started) override {
    assembler_ = std::make_unique<ReplyAssembler>(call_, started.reasoning_open, prefix_);
    prompt_ = started.prompt_tokens;
    cached_ = started.cached_tokens;
    if (!call_.stream) return "";
    Json message = {{"id", id_},
                    {"type", "message"},
                    {"role", "assistant"},
                    {"model", call_.model},
                    {"content", Json::array()},
                    {"stop_reason", nullptr},
                    {"stop_sequence", nullptr},
                    {"usage", Usage(nullptr, prompt_, cached_)}};
    return SseEvent("message_start", {{"type", "message_start"}, {"message", message}}) +
           KeepAlive();
  }

  std::string OnText(const engine::Event& text) override {
    return Stream(assembler_->Push(text.text, text.tokens.size()));
  }

  std::string OnFinished(const engine::Completion& done) override {
    std::string out = Stream(assembler_->Finish());
    const bool calls = !assembler_->tool_calls().empty();
    const Json stop_sequence = done.stop_string.empty() ? Json(nullptr) : Json(done.stop_string);
    if (!call_.stream) {
      return DumpJson({{"id", id_},
                       {"type", "message"},
                       {"role", "assistant"},
                       {"model", call_.model},
                       {"content", Blocks()},
                       {"stop_reason", StopReason(done, calls)},
                       {"stop_sequence", stop_sequence},
                       {"usage", Usage(&done, prompt_, cached_)},
                       {"mtplx_stats", StatsJson(done)}});
    }
    out += CloseBlock();
    out += SseEvent(
        "message_delta",
        {{"type", "message_delta"},
         {"delta", {{"stop_reason", StopReason(done, calls)}, {"stop_sequence", stop_sequence}}},
         {"usage", {{"output_tokens", done.stats.completion_tokens}}},
         {"mtplx_stats", StatsJson(done)}});
    return out + SseEvent("message_stop", {{"type", "message_stop"}});
  }

  std::string OnFailed(const ApiError& error) override {
    if (!call_.stream) return DumpJson(AnthropicErrorBody(error));
    return SseEvent("error", AnthropicErrorBody(error));
  }

  std::string KeepAlive() override {
    return call_.stream ? SseEvent("ping", {{"type", "ping"}}) : "";
  }

 private:
  enum class Block { kNone, kThinking, kText, kTool };

  std::string OpenBlock(Block kind, Json content_block) {
    std::string out = CloseBlock();
    open_ = kind;
    return out + SseEvent("content_block_start", {{"type", "content_block_start"},
                                                  {"index", index_},
                                                  {"content_block", std::move(content_block)}});
  }

  std::string CloseBlock() {
    if (open_ == Block::kNone) return "";
    std::string out;
    if (open_ == Block::kThinking)
      out = SseEvent("content_block_delta",
                     {{"type", "content_block_delta"},
                      {"index", index_},
                      {"delta", {{"type", "signature_delta"}, {"signature", ""}}}});
    out += SseEvent("content_block_stop", {{"type", "content_block_stop"}, {"index", index_}});
    open_ = Block::kNone;
    ++index_;
    return out;
  }

  std::string Delta(Json delta) {
    return SseEvent("content_block_delta",
                    {{"type", "content_block_delta"}, {"index", index_}, {"delta", delta}});
  }

  std::string Stream(const std::vector<ReplyDelta>& deltas) {
    if (!call_.stream) return "";
    std::string out;
    for (const ReplyDelta& d : deltas) {
      switch (d.kind) {
        case ReplyDelta::Kind::kReasoning:
          if (open_ != Block::kThinking)
            out += OpenBlock(Block::kThinking, {{"type", "thinking"}, {"thinking", ""}});
          out += Delta({{"type", "thinking_delta"}, {"thinking", d.text}});
          break;
        case ReplyDelta::Kind::kContent:
          if (open_ != Block::kText)
            out += OpenBlock(Block::kText, {{"type", "text"}, {"text", ""}});
          out += Delta({{"type", "text_delta"}, {"text", d.text}});
          break;
        case ReplyDelta::Kind::kToolStart:
          out += OpenBlock(Block::kTool, {{"type", "tool_use"},
                                          {"id", d.call.id},
                                          {"name", d.call.name},
                                          {"input", Json::object()}});
          break;
        case ReplyDelta::Kind::kToolArguments:
          out += Delta({{"type", "input_json_delta"}, {"partial_json", d.text}});
          break;
        case ReplyDelta::Kind::kToolEnd:
          out += CloseBlock();
          break;
      }
    }
    return out;
  }

  Json Blocks() const {
    Json blocks = Json::array();
    if (!assembler_->reasoning().empty())
      blocks.push_back(
          {{"type", "thinking"}, {"thinking", assembler_->reasoning()}, {"signature", ""}});
    if (!assembler_->content().empty())
      blocks.push_back({{"type", "text"}, {"text", assembler_->content()}});
    for (const ToolCall& c : assembler_->tool_calls())
      blocks.push_back({{"type", "tool_use"},
                        {"id", c.id},
                        {"name", c.name},
                        {"input", ParsedInput(c.arguments)}});
    return blocks;
  }

  ChatCall call_;
  std::string prefix_;
  std::string id_;
  std::unique_ptr<ReplyAssembler> assembler_;
  int64_t prompt_ = 0, cached_ = 0;
  Block open_ = Block::kNone;
  int index_ = 0;
};

}  // namespace

bool IsVolatileSystemBlock(const std::string& text) {
  return text.rfind("x-anthropic-billing-header:", 0) == 0;
}

MaybeError ParseMessages(const Json& body, const engine::Engine& engine,
                         const ServeDefaults& defaults, ChatCall& out) {
  if (!body.is_object()) return InvalidRequest("the request body must be a JSON object");
  const FieldReader f(body);
  MTPLX_API_TRY(ReadPrompt(f, engine, defaults, out));
  std::optional<std::string> model;
  MTPLX_API_TRY(f.String("model", model));
  out.model = model.value_or(defaults.model_id);
  std::optional<int64_t> max_tokens;
  MTPLX_API_TRY(f.Integer("max_tokens", 1, kMaxTokensLimit, max_tokens));
  int64_t limit = max_tokens.value_or(engine.context_window());
  if (defaults.max_tokens_cap > 0) limit = std::min(limit, defaults.max_tokens_cap);
  out.request.max_tokens = static_cast<int>(limit);
  SamplingFields sampling;
  MTPLX_API_TRY(f.Number("temperature", 0.0, 2.0, sampling.temperature));
  MTPLX_API_TRY(f.Number("top_p", 0.0, 1.0, sampling.top_p));
  MTPLX_API_TRY(f.Integer("top_k", -1, 1 << 30, sampling.top_k));
  ApplySampling(sampling, defaults, out.request);
  MTPLX_API_TRY(f.StringList("stop_sequences", kMaxStops, out.request.stop));
  std::optional<bool> stream, ignore_eos;
  MTPLX_API_TRY(f.Bool("stream", stream));
  out.stream = stream.value_or(false);
  MTPLX_API_TRY(f.Bool("ignore_eos", ignore_eos));  // an mtplx extension, as on the OpenAI side
  out.request.ignore_eos = ignore_eos.value_or(false);
  const Json* metadata = nullptr;
  MTPLX_API_TRY(f.Object("metadata", metadata));  // accepted, unused
  return std::nullopt;
}

std::unique_ptr<ResponseFormatter> NewMessagesFormatter(const ChatCall& call,
                                                        const std::string& prefix) {
  return std::make_unique<MessagesFormatter>(call, prefix);
}

MaybeError CountTokens(const Json& body, const engine::Engine& engine,
                       const ServeDefaults& defaults, Json& out) {
  if (!body.is_object()) return InvalidRequest("the request body must be a JSON object");
  ChatCall call;
  MTPLX_API_TRY(ReadPrompt(FieldReader(body), engine, defaults, call));
  auto tokens = engine.PromptTokens(call.request);
  if (!tokens.ok()) return FromStatus(tokens.status());
  out = {{"input_tokens", tokens->size()}};
  return std::nullopt;
}

}  // namespace mtplx::api
