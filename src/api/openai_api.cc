#include "api/openai_api.h"

#include <limits>

#include "api/structured.h"
#include "base/strings.h"
#include "chat/json_value.h"

namespace mtplx::api {
namespace {

using Json = nlohmann::json;

constexpr int64_t kMaxTokensLimit = int64_t{1} << 30;
constexpr int kMaxTopLogprobs = 20;
constexpr size_t kMaxStops = 16;

MaybeError ReadSampling(const FieldReader& f, SamplingFields& s) {
  MTPLX_API_TRY(f.Number("temperature", 0.0, 2.0, s.temperature));
  MTPLX_API_TRY(f.Number("top_p", 0.0, 1.0, s.top_p));
  if (!f.Has("top_p")) MTPLX_API_TRY(f.Number("topP", 0.0, 1.0, s.top_p));
  MTPLX_API_TRY(f.Integer("top_k", -1, 1 << 30, s.top_k));
  if (!f.Has("top_k")) MTPLX_API_TRY(f.Integer("topK", -1, 1 << 30, s.top_k));
  MTPLX_API_TRY(f.Number("min_p", 0.0, 1.0, s.min_p));
  MTPLX_API_TRY(f.Number("presence_penalty", -2.0, 2.0, s.presence_penalty));
  MTPLX_API_TRY(f.Number("frequency_penalty", -2.0, 2.0, s.frequency_penalty));
  MTPLX_API_TRY(f.Integer("seed", std::numeric_limits<int64_t>::min(),
                          std::numeric_limits<int64_t>::max(), s.seed));
  return std::nullopt;
}

// Fields shared by chat and legacy completions: limits, stops, streaming, generation mode.
MaybeError ReadCommon(const FieldReader& f, const engine::Engine& engine,
                      const ServeDefaults& defaults, ChatCall& call) {
  std::optional<std::string> model;
  MTPLX_API_TRY(f.String("model", model));
  call.model = model.value_or(defaults.model_id);
  SamplingFields sampling;
  MTPLX_API_TRY(ReadSampling(f, sampling));
  ApplySampling(sampling, defaults, call.request);
  std::optional<int64_t> max_tokens;
  MTPLX_API_TRY(f.Integer("max_completion_tokens", 0, kMaxTokensLimit, max_tokens));
  if (!max_tokens) MTPLX_API_TRY(f.Integer("max_tokens", 0, kMaxTokensLimit, max_tokens));
  int64_t limit = max_tokens.value_or(engine.context_window());
  if (defaults.max_tokens_cap > 0) limit = std::min(limit, defaults.max_tokens_cap);
  call.request.max_tokens = static_cast<int>(std::min<int64_t>(limit, kMaxTokensLimit));
  std::optional<int64_t> n;
  MTPLX_API_TRY(f.Integer("n", 1, 128, n));
  if (n && *n != 1)
    return InvalidRequest("'n' must be 1: one choice per request is supported", "n");
  MTPLX_API_TRY(f.StringList("stop", kMaxStops, call.request.stop));
  std::optional<bool> stream, ignore_eos;
  MTPLX_API_TRY(f.Bool("stream", stream));
  call.stream = stream.value_or(false);
  const Json* options = nullptr;
  MTPLX_API_TRY(f.Object("stream_options", options));
  if (options) {
    std::optional<bool> usage;
    MTPLX_API_TRY(FieldReader(*options, "stream_options.").Bool("include_usage", usage));
    call.include_usage = usage.value_or(false);
  }
  MTPLX_API_TRY(f.Bool("ignore_eos", ignore_eos));
  std::optional<bool> token_ids;
  MTPLX_API_TRY(f.Bool("return_token_ids", token_ids));
  call.return_token_ids = token_ids.value_or(false);
  call.request.ignore_eos = ignore_eos.value_or(false);
  std::optional<std::string> mode;
  MTPLX_API_TRY(f.String("generation_mode", mode));
  if (mode && *mode != "mtp" && *mode != "ar")
    return InvalidRequest("'generation_mode' must be \"mtp\" or \"ar\"", "generation_mode");
  call.request.speculate = mode.value_or("mtp") == "mtp";
  return std::nullopt;
}

MaybeError ReadToolChoice(const FieldReader& f, const Json& tools, ToolChoice& choice) {
  std::optional<bool> parallel;
  MTPLX_API_TRY(f.Bool("parallel_tool_calls", parallel));
  choice.parallel = parallel.value_or(false);
  const Json* v = f.Get("tool_choice");
  if (!v) return std::nullopt;
  if (v->is_string()) {
    const std::string mode = v->get<std::string>();
    if (mode == "auto")
      choice.mode = ToolChoice::Mode::kAuto;
    else if (mode == "none")
      choice.mode = ToolChoice::Mode::kNone;
    else if (mode == "required")
      choice.mode = ToolChoice::Mode::kRequired;
    else
      return InvalidRequest(
          "'tool_choice' must be \"none\", \"auto\", \"required\" or "
          "{\"type\": \"function\", \"function\": {\"name\"}}",
          "tool_choice");
  } else if (v->is_object() && v->contains("function") && (*v)["function"].is_object() &&
             (*v)["function"].contains("name") && (*v)["function"]["name"].is_string()) {
    choice.mode = ToolChoice::Mode::kNamed;
    choice.name = (*v)["function"]["name"].get<std::string>();
  } else {
    return InvalidRequest(
        "'tool_choice' must be \"none\", \"auto\", \"required\" or "
        "{\"type\": \"function\", \"function\": {\"name\"}}",
        "tool_choice");
  }
  if (choice.mode == ToolChoice::Mode::kRequired || choice.mode == ToolChoice::Mode::kNamed) {
    if (!tools.is_array() || tools.empty())
      return InvalidRequest("'tool_choice' asks for a tool call but 'tools' is empty",
                            "tool_choice");
  }
  // "Required" with one tool is that tool: the call can be forced by name.
  if (choice.mode == ToolChoice::Mode::kRequired && tools.size() == 1)
    choice.name = ToolName(tools[0]);
  if (choice.mode == ToolChoice::Mode::kNamed) {
    for (const Json& tool : tools)
      if (ToolName(tool) == choice.name) return std::nullopt;
    return InvalidRequest(
        "'tool_choice' names the function \"" + choice.name + "\", which is not in 'tools'",
        "tool_choice.function.name");
  }
  return std::nullopt;
}

// enable_thinking, chat_template_kwargs, reasoning_effort.
MaybeError ReadReasoning(const FieldReader& f, engine::Request& request) {
  std::optional<bool> enable;
  MTPLX_API_TRY(f.Bool("enable_thinking", enable));
  std::optional<std::string> effort;
  MTPLX_API_TRY(f.String("reasoning_effort", effort));
  if (effort) enable = *effort != "none" && *effort != "minimal";
  const Json* kwargs = nullptr;
  MTPLX_API_TRY(f.Object("chat_template_kwargs", kwargs));
  if (kwargs) {
    for (const auto& [key, value] : kwargs->items()) {
      if (key == "enable_thinking") {
        if (!value.is_boolean())
          return InvalidRequest("'chat_template_kwargs.enable_thinking' must be a boolean",
                                "chat_template_kwargs.enable_thinking");
        enable = value.get<bool>();
        continue;
      }
      auto parsed = chat::ParseJson(DumpJson(value), /*from_user=*/true);
      if (!parsed.ok())
        return InvalidRequest("'chat_template_kwargs." + key + "': " + parsed.status().message(),
                              "chat_template_kwargs");
      request.render.extra_variables.emplace_back(key, std::move(parsed).value());
    }
  }
  if (enable) request.render.enable_thinking = *enable;
  return std::nullopt;
}

Json LogprobEntry(const engine::Engine& engine, int32_t token, double logprob) {
  const std::string text = engine.tokenizer().Decode(std::vector<int32_t>{token});
  const std::string_view bytes = engine.tokenizer().TokenBytes(token);
  Json byte_list = Json::array();
  for (unsigned char c : bytes) byte_list.push_back(static_cast<int>(c));
  return {{"token", text}, {"logprob", logprob}, {"bytes", byte_list}};
}

Json ChatLogprobs(const engine::Engine& engine, const engine::Completion& done) {
  Json content = Json::array();
  for (const engine::TokenLogprob& lp : done.logprobs) {
    Json entry = LogprobEntry(engine, lp.token, lp.logprob);
    Json top = Json::array();
    for (const auto& [id, value] : lp.top) top.push_back(LogprobEntry(engine, id, value));
    entry["top_logprobs"] = std::move(top);
    content.push_back(std::move(entry));
  }
  return {{"content", content}};
}

// A reply cut by max_tokens says so even when it holds a (repaired) call.
std::string ChatFinishReason(const engine::Completion& done, bool tool_calls) {
  if (done.finish_reason == "length") return "length";
  return tool_calls ? "tool_calls" : "stop";
}

class ChatFormatter : public ResponseFormatter {
 public:
  ChatFormatter(const ChatCall& call, const engine::Engine& engine, std::string prefix)
      : call_(call),
        engine_(engine),
        prefix_(std::move(prefix)),
        id_(RandomId("chatcmpl-")),
        created_(UnixTime()) {}

  bool streaming() const override { return call_.stream; }

  std::string OnStarted(const engine::Event& started) override {
    assembler_ = std::make_unique<ReplyAssembler>(call_, started.reasoning_open, prefix_);
    if (!call_.stream) return "";
    return SseData(Chunk({{"role", "assistant"}, {"content", ""}}));
  }

  std::string OnText(const engine::Event& text) override {
    return Stream(assembler_->Push(text.text, text.tokens.size()));
  }

  std::string OnFinished(const engine::Completion& done) override {
    std::string out = Stream(assembler_->Finish());
    const bool calls = !assembler_->tool_calls().empty();
    const Json usage = UsageJson(done, assembler_->reasoning_tokens());
    if (!call_.stream) return DumpJson(WholeResponse(done, calls, usage));
    Json last = Chunk(Json::object(), ChatFinishReason(done, calls));
    if (call_.logprobs) last["choices"][0]["logprobs"] = ChatLogprobs(engine_, done);
    if (call_.return_token_ids) last["choices"][0]["token_ids"] = done.tokens;
    last["mtplx_stats"] = StatsJson(done);
    out += SseData(last);
    if (call_.include_usage) {
      Json tail = Chunk(Json::object());
      tail["choices"] = Json::array();
      tail["usage"] = usage;
      out += SseData(tail);
    }
    return out + "data: [DONE]\n\n";
  }

  std::string OnFailed(const ApiError& error) override {
    if (!call_.stream) return DumpJson(OpenAIErrorBody(error));
    return SseData(OpenAIErrorBody(error)) + "data: [DONE]\n\n";
  }

  std::string KeepAlive() override { return call_.stream ? ": keep-alive\n\n" : ""; }

 private:
  Json Chunk(Json delta, const std::string& finish = "") const {
    Json choice = {{"index", 0}, {"delta", std::move(delta)}, {"logprobs", nullptr}};
    choice["finish_reason"] = finish.empty() ? Json(nullptr) : Json(finish);
    return {{"id", id_},
            {"object", "chat.completion.chunk"},
            {"created", created_},
            {"model", call_.model},
            {"choices", Json::array({std::move(choice)})}};
  }

  std::string Stream(const std::vector<ReplyDelta>& deltas) {
    if (!call_.stream) return "";
    std::string out;
    for (const ReplyDelta& d : deltas) {
      Json delta;
      switch (d.kind) {
        case ReplyDelta::Kind::kReasoning:
          delta = {{"reasoning_content", d.text}};
          break;
        case ReplyDelta::Kind::kContent:
          delta = {{"content", d.text}};
          break;
        case ReplyDelta::Kind::kToolStart:
          delta = {{"tool_calls",
                    Json::array({{{"index", d.index},
                                  {"id", d.call.id},
                                  {"type", "function"},
                                  {"function", {{"name", d.call.name}, {"arguments", ""}}}}})}};
          break;
        case ReplyDelta::Kind::kToolArguments:
          delta = {{"tool_calls",
                    Json::array({{{"index", d.index}, {"function", {{"arguments", d.text}}}}})}};
          break;
        case ReplyDelta::Kind::kToolEnd:
          continue;
      }
      out += SseData(Chunk(std::move(delta)));
    }
    return out;
  }

  Json WholeResponse(const engine::Completion& done, bool calls, const Json& usage) const {
    Json message = {{"role", "assistant"}};
    message["content"] =
        assembler_->content().empty() && calls ? Json(nullptr) : Json(assembler_->content());
    if (!assembler_->reasoning().empty()) message["reasoning_content"] = assembler_->reasoning();
    if (calls) {
      Json list = Json::array();
      for (const ToolCall& c : assembler_->tool_calls())
        list.push_back({{"id", c.id},
                        {"type", "function"},
                        {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
      message["tool_calls"] = std::move(list);
    }
    Json choice = {{"index", 0},
                   {"message", std::move(message)},
                   {"finish_reason", ChatFinishReason(done, calls)}};
    choice["logprobs"] = call_.logprobs ? ChatLogprobs(engine_, done) : Json(nullptr);
    if (call_.return_token_ids) choice["token_ids"] = done.tokens;
    return {{"id", id_},
            {"object", "chat.completion"},
            {"created", created_},
            {"model", call_.model},
            {"choices", Json::array({std::move(choice)})},
            {"usage", usage},
            {"mtplx_stats", StatsJson(done)}};
  }

  ChatCall call_;
  const engine::Engine& engine_;
  std::string prefix_;
  std::string id_;
  int64_t created_;
  std::unique_ptr<ReplyAssembler> assembler_;
};

// Legacy completions: text in, text out; echo and logprobs for prompt scoring.
class CompletionFormatter : public ResponseFormatter {
 public:
  CompletionFormatter(const CompletionCall& call, const engine::Engine& engine)
      : call_(call), engine_(engine), id_(RandomId("cmpl-")), created_(UnixTime()) {}

  bool streaming() const override { return call_.call.stream; }

  std::string OnStarted(const engine::Event&) override {
    if (!call_.call.stream || !call_.echo) return "";
    return SseData(Chunk(EchoText(), ""));
  }

  std::string OnText(const engine::Event& text) override {
    if (!call_.call.stream || text.text.empty()) return "";
    return SseData(Chunk(text.text, ""));
  }

  std::string OnFinished(const engine::Completion& done) override {
    const Json usage = UsageJson(done, 0);
    const std::string finish = done.finish_reason == "length" ? "length" : "stop";
    if (!call_.call.stream) {
      Json choice = {{"index", 0},
                     {"text", (call_.echo ? EchoText() : std::string()) + done.text},
                     {"finish_reason", finish}};
      choice["logprobs"] = call_.logprobs >= 0 ? Logprobs(done) : Json(nullptr);
      if (call_.call.return_token_ids) choice["token_ids"] = done.tokens;
      return DumpJson({{"id", id_},
                       {"object", "text_completion"},
                       {"created", created_},
                       {"model", call_.call.model},
                       {"choices", Json::array({std::move(choice)})},
                       {"usage", usage},
                       {"mtplx_stats", StatsJson(done)}});
    }
    Json last = Chunk("", finish);
    if (call_.logprobs >= 0) last["choices"][0]["logprobs"] = Logprobs(done);
    last["mtplx_stats"] = StatsJson(done);
    std::string out = SseData(last);
    if (call_.call.include_usage) {
      Json tail = Chunk("", "");
      tail["choices"] = Json::array();
      tail["usage"] = usage;
      out += SseData(tail);
    }
    return out + "data: [DONE]\n\n";
  }

  std::string OnFailed(const ApiError& error) override {
    if (!call_.call.stream) return DumpJson(OpenAIErrorBody(error));
    return SseData(OpenAIErrorBody(error)) + "data: [DONE]\n\n";
  }

  std::string KeepAlive() override { return call_.call.stream ? ": keep-alive\n\n" : ""; }

 private:
  std::string EchoText() const {
    const engine::Request& r = call_.call.request;
    return r.text.empty() ? engine_.tokenizer().Decode(r.tokens) : r.text;
  }

  Json Chunk(const std::string& text, const std::string& finish) const {
    Json choice = {{"index", 0}, {"text", text}, {"logprobs", nullptr}};
    choice["finish_reason"] = finish.empty() ? Json(nullptr) : Json(finish);
    return {{"id", id_},
            {"object", "text_completion"},
            {"created", created_},
            {"model", call_.call.model},
            {"choices", Json::array({std::move(choice)})}};
  }

  // {tokens, token_logprobs, top_logprobs, text_offset} over the echoed prompt (when echo) and
  // the completion; the first prompt token has no log-probability.
  Json Logprobs(const engine::Completion& done) const {
    Json tokens = Json::array(), values = Json::array(), tops = Json::array(),
         offsets = Json::array();
    size_t offset = 0;
    auto add = [&](int32_t token, const engine::TokenLogprob* lp) {
      const std::string text = engine_.tokenizer().Decode(std::vector<int32_t>{token});
      tokens.push_back(text);
      offsets.push_back(offset);
      offset += text.size();
      values.push_back(lp ? Json(lp->logprob) : Json(nullptr));
      if (!lp) {
        tops.push_back(nullptr);
        return;
      }
      Json top = Json::object();
      for (const auto& [id, value] : lp->top)
        top[engine_.tokenizer().Decode(std::vector<int32_t>{id})] = value;
      tops.push_back(std::move(top));
    };
    if (call_.echo) {
      const std::vector<int32_t>& prompt = call_.call.request.tokens;
      for (size_t i = 0; i < prompt.size(); ++i)
        add(prompt[i], i == 0 || i - 1 >= done.prompt_logprobs.size()
                           ? nullptr
                           : &done.prompt_logprobs[i - 1]);
    }
    for (size_t i = 0; i < done.tokens.size(); ++i)
      add(done.tokens[i], i < done.logprobs.size() ? &done.logprobs[i] : nullptr);
    return {{"tokens", tokens},
            {"token_logprobs", values},
            {"top_logprobs", tops},
            {"text_offset", offsets}};
  }

  CompletionCall call_;
  const engine::Engine& engine_;
  std::string id_;
  int64_t created_;
};

}  // namespace

Json UsageJson(const engine::Completion& done, int64_t reasoning_tokens) {
  const int64_t completion = done.stats.completion_tokens;
  return {{"prompt_tokens", done.prompt_tokens},
          {"completion_tokens", completion},
          {"total_tokens", done.prompt_tokens + completion},
          {"prompt_tokens_details", {{"cached_tokens", done.cached_tokens}}},
          {"completion_tokens_details", {{"reasoning_tokens", reasoning_tokens}}}};
}

MaybeError ParseChatCompletion(const Json& body, const engine::Engine& engine,
                               const ServeDefaults& defaults, ChatCall& out) {
  if (!body.is_object()) return InvalidRequest("the request body must be a JSON object");
  const FieldReader f(body);
  out.request = engine.NewRequest();
  out.request.kind = engine::PromptKind::kChat;
  MTPLX_API_TRY(ReadCommon(f, engine, defaults, out));
  const Json* tools = nullptr;
  MTPLX_API_TRY(f.Array("tools", tools));
  const Json tool_list = tools ? *tools : Json::array();
  MTPLX_API_TRY(ReadToolChoice(f, tool_list, out.tool_choice));
  const bool use_tools = out.tool_choice.mode != ToolChoice::Mode::kNone;
  const Json* messages = f.Get("messages");
  if (!messages) return InvalidRequest("'messages' is missing", "messages");
  MTPLX_API_TRY(ConversationFromOpenAI(*messages, use_tools ? tool_list : Json::array(), defaults,
                                       out.request.conversation));
  if (use_tools) {
    out.tools = tool_list;
    if (out.tool_choice.mode == ToolChoice::Mode::kNamed) {
      out.tools = Json::array();
      for (const Json& tool : tool_list)
        if (ToolName(tool) == out.tool_choice.name) out.tools.push_back(tool);
    }
  }
  MTPLX_API_TRY(ReadReasoning(f, out.request));
  MTPLX_API_TRY(CheckResponseFormat(f));
  std::optional<bool> logprobs;
  MTPLX_API_TRY(f.Bool("logprobs", logprobs));
  std::optional<int64_t> top;
  MTPLX_API_TRY(f.Integer("top_logprobs", 0, kMaxTopLogprobs, top));
  out.logprobs = logprobs.value_or(false);
  if (out.logprobs) out.request.top_logprobs = static_cast<int>(top.value_or(0));
  return std::nullopt;
}

MaybeError ParseCompletion(const Json& body, const engine::Engine& engine,
                           const ServeDefaults& defaults, CompletionCall& out) {
  if (!body.is_object()) return InvalidRequest("the request body must be a JSON object");
  const FieldReader f(body);
  out.call.request = engine.NewRequest();
  // The legacy endpoint's default is 16 tokens.
  ChatCall& call = out.call;
  MTPLX_API_TRY(ReadCommon(f, engine, defaults, call));
  if (!f.Has("max_tokens") && !f.Has("max_completion_tokens")) call.request.max_tokens = 16;
  const Json* prompt = f.Get("prompt");
  if (!prompt) return InvalidRequest("'prompt' is missing", "prompt");
  const Json* single = prompt;
  if (prompt->is_array() && !prompt->empty() &&
      (prompt->front().is_array() || prompt->front().is_string())) {
    if (prompt->size() != 1)
      return InvalidRequest("'prompt' holds several prompts; send one per request", "prompt");
    single = &prompt->front();
  }
  if (single->is_string()) {
    call.request.kind = engine::PromptKind::kText;
    call.request.text = single->get<std::string>();
  } else if (single->is_array()) {
    call.request.kind = engine::PromptKind::kTokens;
    for (const Json& id : *single) {
      if (!id.is_number_integer())
        return InvalidRequest("'prompt' token ids must be integers", "prompt");
      const int64_t v = id.get<int64_t>();
      if (v < 0 || v >= engine.model().config().vocab_size)
        return InvalidRequest(StrCat("'prompt' token id ", v, " is outside the vocabulary (0..",
                                     engine.model().config().vocab_size - 1, ")"),
                              "prompt");
      call.request.tokens.push_back(static_cast<int32_t>(v));
    }
  } else {
    return InvalidRequest(
        "'prompt' must be a string, an array of token ids, or a one-item "
        "array of either",
        "prompt");
  }
  std::optional<std::string> suffix;
  MTPLX_API_TRY(f.String("suffix", suffix));
  if (suffix && !suffix->empty())
    return InvalidRequest("'suffix' (fill in the middle) is not supported", "suffix");
  std::optional<bool> echo;
  MTPLX_API_TRY(f.Bool("echo", echo));
  out.echo = echo.value_or(false);
  std::optional<int64_t> logprobs;
  MTPLX_API_TRY(f.Integer("logprobs", 0, kMaxTopLogprobs, logprobs));
  if (logprobs) {
    out.logprobs = static_cast<int>(*logprobs);
    call.request.top_logprobs = out.logprobs;
    call.request.prompt_logprobs = out.echo;
  }
  call.split_reasoning = false;
  return std::nullopt;
}

std::unique_ptr<ResponseFormatter> NewChatFormatter(const ChatCall& call,
                                                    const engine::Engine& engine,
                                                    const std::string& prefix) {
  return std::make_unique<ChatFormatter>(call, engine, prefix);
}

std::unique_ptr<ResponseFormatter> NewCompletionFormatter(const CompletionCall& call,
                                                          const engine::Engine& engine) {
  return std::make_unique<CompletionFormatter>(call, engine);
}

Json ModelJson(const engine::Engine& engine, const ServeDefaults& defaults) {
  return {{"id", defaults.model_id},
          {"object", "model"},
          {"created", UnixTime()},
          {"owned_by", "mtplx"},
          {"context_length", engine.context_window()},
          {"max_model_len", engine.context_window()},
          {"mtp_depth", engine.depth()}};
}

Json ModelsJson(const engine::Engine& engine, const ServeDefaults& defaults) {
  return {{"object", "list"}, {"data", Json::array({ModelJson(engine, defaults)})}};
}

MaybeError Tokenize(const Json& body, const engine::Engine& engine, const ServeDefaults& defaults,
                    Json& out) {
  if (!body.is_object()) return InvalidRequest("the request body must be a JSON object");
  const FieldReader f(body);
  std::optional<std::string> text;
  for (const char* key : {"prompt", "content", "text"})
    if (!text) MTPLX_API_TRY(f.String(key, text));
  std::optional<bool> special, pieces;
  MTPLX_API_TRY(f.Bool("add_special", special));
  MTPLX_API_TRY(f.Bool("with_pieces", pieces));
  std::vector<int32_t> ids;
  if (const Json* messages = f.Get("messages")) {
    engine::Request request = engine.NewRequest();
    MTPLX_API_TRY(ConversationFromOpenAI(*messages, Json::array(), defaults, request.conversation));
    auto tokens = engine.PromptTokens(request);
    if (!tokens.ok()) return FromStatus(tokens.status());
    ids = std::move(tokens).value();
  } else if (text) {
    ids = engine.tokenizer().Encode(*text, special.value_or(false));
  } else {
    return InvalidRequest("send 'prompt' (text) or 'messages' to tokenize", "prompt");
  }
  out = {{"tokens", ids}, {"count", ids.size()}, {"max_model_len", engine.context_window()}};
  if (pieces.value_or(false)) {
    Json list = Json::array();
    for (int32_t id : ids)
      list.push_back({{"id", id}, {"piece", engine.tokenizer().Decode(std::vector<int32_t>{id})}});
    out["pieces"] = std::move(list);
  }
  return std::nullopt;
}

MaybeError Detokenize(const Json& body, const engine::Engine& engine, Json& out) {
  if (!body.is_object()) return InvalidRequest("the request body must be a JSON object");
  const Json* tokens = nullptr;
  MTPLX_API_TRY(FieldReader(body).Array("tokens", tokens));
  if (!tokens) return InvalidRequest("'tokens' is missing", "tokens");
  std::vector<int32_t> ids;
  for (const Json& id : *tokens) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 ||
        id.get<int64_t>() >= engine.tokenizer().vocab_size())
      return InvalidRequest(
          StrCat("'tokens' must hold token ids in 0..", engine.tokenizer().vocab_size() - 1),
          "tokens");
    ids.push_back(static_cast<int32_t>(id.get<int64_t>()));
  }
  const std::string text = engine.tokenizer().Decode(ids);
  out = {{"prompt", text}, {"content", text}};
  return std::nullopt;
}

std::string DumpJson(const Json& value) {
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string SseData(const Json& payload) { return "data: " + DumpJson(payload) + "\n\n"; }

std::string SseEvent(const std::string& name, const Json& payload) {
  return "event: " + name + "\ndata: " + DumpJson(payload) + "\n\n";
}

}  // namespace mtplx::api
