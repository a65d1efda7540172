#include "api/chat_call.h"

#include <chrono>
#include <random>

#include "base/strings.h"

namespace mtplx::api {
namespace {

using Json = nlohmann::json;

const Json kEmptyArray = Json::array();

// Content as a string: a string, or the text of a list of text parts.
MaybeError ContentText(const Json& content, const std::string& path, bool allow_null,
                       std::optional<std::string>& out) {
  if (content.is_null()) {
    if (!allow_null) return InvalidRequest(StrCat("'", path, "' is missing"), path);
    return std::nullopt;
  }
  if (content.is_string()) {
    out = content.get<std::string>();
    return std::nullopt;
  }
  if (!content.is_array())
    return InvalidRequest(StrCat("'", path, "' must be a string or an array of content parts, not ",
                                 JsonTypeName(content)),
                          path);
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const Json& part = content[i];
    const std::string where = StrCat(path, "[", i, "]");
    if (!part.is_object())
      return InvalidRequest(StrCat("'", where, "' must be a content part object"), where);
    const auto type = part.find("type");
    if (type == part.end() || !type->is_string())
      return InvalidRequest(StrCat("'", where, ".type' must be a string"), where + ".type");
    const std::string kind = type->get<std::string>();
    if (kind == "image_url" || kind == "image" || kind == "input_audio" || kind == "file")
      return InvalidRequest(
          StrCat("'", where, "' is ", kind, " input, which this model does not take (text only)"),
          where, "unsupported_content");
    if (kind != "text")
      return InvalidRequest(StrCat("'", where, ".type' \"", kind, "\" is not a known part type"),
                            where + ".type");
    const auto t = part.find("text");
    if (t == part.end() || !t->is_string())
      return InvalidRequest(StrCat("'", where, ".text' must be a string"), where + ".text");
    if (!text.empty()) text += "\n";
    text += t->get<std::string>();
  }
  out = std::move(text);
  return std::nullopt;
}

MaybeError CheckToolCalls(const Json& calls, const std::string& path) {
  if (!calls.is_array()) return InvalidRequest(StrCat("'", path, "' must be an array"), path);
  for (size_t i = 0; i < calls.size(); ++i) {
    const std::string where = StrCat(path, "[", i, "]");
    const Json& call = calls[i];
    const Json* function =
        call.is_object() && call.contains("function") ? &call["function"] : nullptr;
    if (!function || !function->is_object() || !function->contains("name") ||
        !(*function)["name"].is_string())
      return InvalidRequest(StrCat("'", where,
                                   "' must be {\"id\", \"type\": \"function\", "
                                   "\"function\": {\"name\", \"arguments\"}}"),
                            where);
    if (function->contains("arguments") && !(*function)["arguments"].is_string() &&
        !(*function)["arguments"].is_object())
      return InvalidRequest(StrCat("'", where,
                                   ".function.arguments' must be a JSON string or "
                                   "an object"),
                            where + ".function.arguments");
  }
  return std::nullopt;
}

MaybeError CheckTools(const Json& tools) {
  if (!tools.is_array()) return InvalidRequest("'tools' must be an array", "tools");
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string where = StrCat("tools[", i, "]");
    const Json& tool = tools[i];
    const Json* function =
        tool.is_object() && tool.contains("function") ? &tool["function"] : nullptr;
    if (!function || !function->is_object() || !function->contains("name") ||
        !(*function)["name"].is_string() || (*function)["name"].get<std::string>().empty())
      return InvalidRequest(StrCat("'", where,
                                   "' must be {\"type\": \"function\", \"function\": "
                                   "{\"name\", \"description\", \"parameters\"}}"),
                            where);
    if (function->contains("parameters") && !(*function)["parameters"].is_object() &&
        !(*function)["parameters"].is_null())
      return InvalidRequest(StrCat("'", where,
                                   ".function.parameters' must be a JSON schema "
                                   "object"),
                            where + ".function.parameters");
  }
  return std::nullopt;
}

// One OpenAI message, checked and normalised (developer -> system, parts -> text).
MaybeError NormaliseMessage(const Json& m, size_t index, bool first, const ServeDefaults& defaults,
                            Json& out) {
  const std::string path = StrCat("messages[", index, "]");
  if (!m.is_object()) return InvalidRequest(StrCat("'", path, "' must be an object"), path);
  FieldReader fields(m, path + ".");
  std::optional<std::string> role;
  MTPLX_API_TRY(fields.String("role", role));
  if (!role) return InvalidRequest(StrCat("'", path, ".role' is missing"), path + ".role");
  if (*role == "developer") role = "system";
  static const char* const kRoles[] = {"system", "user", "assistant", "tool"};
  bool known = false;
  for (const char* r : kRoles) known = known || *role == r;
  if (!known)
    return InvalidRequest(StrCat("'", path, ".role' \"", *role,
                                 "\" is not one of system, developer, user, assistant, tool"),
                          path + ".role");
  const Json content = m.contains("content") ? m["content"] : Json(nullptr);
  std::optional<std::string> text;
  const bool has_calls = m.contains("tool_calls") && !m["tool_calls"].is_null();
  MTPLX_API_TRY(ContentText(content, path + ".content", *role == "assistant", text));
  out = Json::object();
  if (*role == "system" && !first && defaults.mid_system_as_user) {
    out["role"] = "user";
    out["content"] = "<system-reminder>\n" + text.value_or("") + "\n</system-reminder>";
    return std::nullopt;
  }
  out["role"] = *role;
  if (text) out["content"] = *text;
  if (*role == "assistant") {
    if (has_calls) {
      MTPLX_API_TRY(CheckToolCalls(m["tool_calls"], path + ".tool_calls"));
      out["tool_calls"] = m["tool_calls"];
    }
    std::optional<std::string> reasoning;
    MTPLX_API_TRY(fields.String("reasoning_content", reasoning));
    if (!reasoning) MTPLX_API_TRY(fields.String("reasoning", reasoning));
    if (reasoning) out["reasoning_content"] = *reasoning;
  }
  if (*role == "tool") {
    std::optional<std::string> id;
    MTPLX_API_TRY(fields.String("tool_call_id", id));
    if (id) out["tool_call_id"] = *id;
  }
  std::optional<std::string> name;
  MTPLX_API_TRY(fields.String("name", name));
  if (name) out["name"] = *name;
  return std::nullopt;
}

}  // namespace

MaybeError ConversationFromOpenAI(const Json& messages, const Json& tools,
                                  const ServeDefaults& defaults, chat::Conversation& out) {
  if (!messages.is_array())
    return InvalidRequest("'messages' must be an array of messages", "messages");
  if (messages.empty())
    return InvalidRequest("'messages' is empty: send at least one message", "messages");
  Json normalised = Json::array();
  for (size_t i = 0; i < messages.size(); ++i) {
    Json m;
    MTPLX_API_TRY(NormaliseMessage(messages[i], i, i == 0, defaults, m));
    normalised.push_back(std::move(m));
  }
  Json request = {{"messages", std::move(normalised)}};
  if (!tools.is_null() && !tools.empty()) {
    MTPLX_API_TRY(CheckTools(tools));
    request["tools"] = tools;
  }
  auto conversation =
      chat::Conversation::FromJson(request.dump(-1, ' ', false, Json::error_handler_t::replace));
  if (!conversation.ok()) return InvalidRequest(conversation.status().message(), "messages");
  out = std::move(conversation).value();
  out.ParseStringArguments();
  return std::nullopt;
}

void ApplySampling(const SamplingFields& f, const ServeDefaults& d, engine::Request& request) {
  sample::SamplingParams& p = request.sampling;
  if (d.temperature) p.temperature = *d.temperature;
  if (d.top_p) p.top_p = *d.top_p;
  if (d.top_k) p.top_k = static_cast<int>(*d.top_k);
  if (d.presence_penalty) p.presence_penalty = *d.presence_penalty;
  if (d.frequency_penalty) p.frequency_penalty = *d.frequency_penalty;
  if (f.temperature) p.temperature = *f.temperature;
  if (f.top_p) p.top_p = *f.top_p;
  if (f.top_k) p.top_k = static_cast<int>(*f.top_k);
  if (f.min_p) p.min_p = *f.min_p;
  if (f.presence_penalty) p.presence_penalty = *f.presence_penalty;
  if (f.frequency_penalty) p.frequency_penalty = *f.frequency_penalty;
  request.seed = f.seed   ? static_cast<uint64_t>(*f.seed)
                 : d.seed ? static_cast<uint64_t>(*d.seed)
                          : std::random_device{}();
  request.reproducible = f.seed.has_value() || d.seed.has_value();
}

std::string ForceToolCall(const ToolChoice& choice, const ServeDefaults& defaults,
                          engine::Request& request) {
  if (choice.mode != ToolChoice::Mode::kRequired && choice.mode != ToolChoice::Mode::kNamed)
    return "";
  const bool named = choice.mode == ToolChoice::Mode::kNamed || !choice.name.empty();
  std::string prefix;
  if (defaults.tool_dialect == "hermes") {
    prefix = named ? "<tool_call>\n{\"name\": " + Json(choice.name).dump() + ", \"arguments\": "
                   : "<tool_call>\n{\"name\": \"";
  } else {
    prefix = named ? "<tool_call>\n<function=" + choice.name + ">\n" : "<tool_call>\n<function=";
  }
  request.render.enable_thinking = false;
  request.assistant_prefix = prefix;
  return prefix;
}

void DetectTemplateTraits(const engine::Engine& engine, ServeDefaults& defaults) {
  const std::string& source = engine.chat_template().source();
  defaults.tool_dialect = source.find("<function=") != std::string::npos    ? "xml"
                          : source.find("<tool_call>") != std::string::npos ? "hermes"
                                                                            : "xml";
  engine::Request probe = engine.NewRequest();
  chat::Message user, system;
  user.role = "user";
  user.content = "a";
  system.role = "system";
  system.content = "b";
  probe.conversation.messages = {user, system};
  defaults.mid_system_as_user = !engine.Render(probe).ok();
}

ReplyAssembler::ReplyAssembler(const ChatCall& call, bool reasoning_open, const std::string& prefix)
    : reasoning_split_(reasoning_open, call.split_reasoning), tools_(call.tools) {
  // A forced call's opening markup: its call start is sent with the first output.
  if (!prefix.empty()) RouteTools(tools_.Push(prefix), pending_);
}

void ReplyAssembler::RouteTools(std::vector<ToolStreamPiece> pieces, std::vector<ReplyDelta>& out) {
  for (ToolStreamPiece& p : pieces) {
    ReplyDelta d;
    d.index = p.index;
    switch (p.kind) {
      case ToolStreamPiece::Kind::kText:
        if (p.text.empty()) continue;
        d.kind = ReplyDelta::Kind::kContent;
        content_ += p.text;
        d.text = std::move(p.text);
        break;
      case ToolStreamPiece::Kind::kCallStart:
        d.kind = ReplyDelta::Kind::kToolStart;
        d.call = std::move(p.call);
        break;
      case ToolStreamPiece::Kind::kCallArguments:
        d.kind = ReplyDelta::Kind::kToolArguments;
        d.text = std::move(p.text);
        break;
      case ToolStreamPiece::Kind::kCallEnd:
        d.kind = ReplyDelta::Kind::kToolEnd;
        d.call = std::move(p.call);
        break;
    }
    out.push_back(std::move(d));
  }
}

void ReplyAssembler::Route(const ReasoningPiece& piece, std::vector<ReplyDelta>& out) {
  if (!piece.reasoning.empty()) {
    reasoning_ += piece.reasoning;
    out.push_back({ReplyDelta::Kind::kReasoning, piece.reasoning, 0, {}});
  }
  if (!piece.content.empty()) RouteTools(tools_.Push(piece.content), out);
}

std::vector<ReplyDelta> ReplyAssembler::Push(const std::string& text, size_t tokens) {
  if (reasoning_split_.inside()) reasoning_tokens_ += static_cast<int64_t>(tokens);
  std::vector<ReplyDelta> out;
  out.swap(pending_);
  Route(reasoning_split_.Push(text), out);
  return out;
}

std::vector<ReplyDelta> ReplyAssembler::Finish() {
  std::vector<ReplyDelta> out;
  out.swap(pending_);
  Route(reasoning_split_.Finish(), out);
  RouteTools(tools_.Finish(), out);
  return out;
}

std::string ToolName(const Json& tool) {
  if (!tool.is_object()) return "";
  const auto function = tool.find("function");
  if (function == tool.end() || !function->is_object()) return "";
  const auto name = function->find("name");
  return name != function->end() && name->is_string() ? name->get<std::string>() : "";
}

std::string RandomId(const std::string& prefix) {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  return prefix + StrFormat("%016llx%08llx", static_cast<unsigned long long>(rng()),
                            static_cast<unsigned long long>(rng() & 0xffffffffULL));
}

int64_t UnixTime() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Json StatsJson(const engine::Completion& done) {
  const engine::GenerateStats& s = done.stats;
  Json stats = {{"prompt_tokens", done.prompt_tokens},
                {"cached_tokens", done.cached_tokens},
                {"new_prefill_tokens", done.prompt_tokens - done.cached_tokens},
                {"completion_tokens", s.completion_tokens},
                {"ttft_s", done.ttft_seconds},
                {"prefill_s", s.prefill_seconds},
                {"decode_s", s.decode_seconds},
                {"decode_tok_s", s.DecodeTokensPerSecond()},
                {"prefill_tok_s", s.PrefillTokensPerSecond()},
                {"mode", done.depth > 0 ? "MTP" : "AR"},
                {"mtp_depth", done.depth},
                {"finish_reason", done.finish_reason},
                {"effective_max_tokens", done.effective_max_tokens}};
  if (!done.cache_miss_reason.empty()) stats["cache_miss_reason"] = done.cache_miss_reason;
  if (done.grammar_complete)
    stats["structured_output"] = *done.grammar_complete
                                     ? "complete"
                                     : "incomplete: the reply ended (" + done.finish_reason +
                                           ") before the document or call was complete";
  if (done.depth > 0) {
    const engine::SpeculativeStats& p = done.speculative;
    stats["acceptance_by_depth"] = p.AcceptanceByDepth();
    stats["acceptance_unconditional"] = p.AcceptanceUnconditional();
    stats["tokens_per_cycle"] = p.MeanTokensPerCycle();
    stats["mean_depth"] = p.MeanDepth();
    stats["cycles"] = p.cycles;
    stats["verify_calls"] = p.verify_calls;
    stats["bonus_tokens"] = p.bonus_tokens;
    stats["correction_tokens"] = p.corrections;
    stats["early_stops"] = p.early_stops;
  }
  return stats;
}

}  // namespace mtplx::api
