// What an API request asks of the engine, in the form both adapters (OpenAI, Anthropic) produce:
// an engine request plus what shapes the reply (tools to parse, streaming, reasoning split), and
// the assembly of the reply from the engine's text stream.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/errors.h"
#include "api/fields.h"
#include "api/reasoning.h"
#include "api/tool_calls.h"
#include "engine/engine.h"

namespace mtplx::api {

// What `mtplx serve` sets for every request (flags); request fields override.
struct ServeDefaults {
  std::string model_id;  // the id /v1/models lists
  std::optional<double> temperature, top_p, presence_penalty, frequency_penalty;
  std::optional<int64_t> top_k;
  int64_t max_tokens_cap = 0;   // 0: none (the context window bounds every request)
  std::optional<int64_t> seed;  // for requests that set none (else a fresh random seed)
  // The chat template rejects a system message after the first (Qwen 3.5): later ones are sent
  // as user messages wrapped in <system-reminder> tags.
  bool mid_system_as_user = false;
  std::string tool_dialect = "xml";  // "xml" (Qwen 3.5 / Coder) or "hermes" (Qwen 3)
};

// The tool choice of a request, in the common form of both APIs.
struct ToolChoice {
  enum class Mode { kAuto, kNone, kRequired, kNamed };
  Mode mode = Mode::kAuto;
  std::string name;  // kNamed; kRequired when only one tool is declared
  // A forced call may be followed by more calls: only when the client asks for it in so many
  // words (OpenAI parallel_tool_calls: true, Anthropic disable_parallel_tool_use: false); by
  // default a forced reply is one call.
  bool parallel = false;
};

struct ChatCall {
  engine::Request request;
  nlohmann::json tools = nlohmann::json::array();  // what the reply parser recognises
  ToolChoice tool_choice;
  bool stream = false;
  bool include_usage = false;     // OpenAI stream_options.include_usage
  bool split_reasoning = true;    // reasoning goes to its own field / block
  bool logprobs = false;          // OpenAI chat logprobs
  bool return_token_ids = false;  // the generated ids in choices[0].token_ids (as vLLM does)
  std::string model;              // the model name the client used, echoed back
};

// Builds the conversation from OpenAI-shaped messages (Anthropic requests are converted to them)
// and OpenAI-shaped tools, validating roles and shapes; `path` names the messages field.
MaybeError ConversationFromOpenAI(const nlohmann::json& messages, const nlohmann::json& tools,
                                  const ServeDefaults& defaults, chat::Conversation& out);

// Applies the sampling fields both APIs share (temperature, top_p, top_k, penalties, seed) over
// the engine's and the server's defaults.
struct SamplingFields {
  std::optional<double> temperature, top_p, min_p, presence_penalty, frequency_penalty;
  std::optional<int64_t> top_k, seed;
};
void ApplySampling(const SamplingFields& fields, const ServeDefaults& defaults,
                   engine::Request& request);

// Forced tool calls (required / a named function): the reply is made to start with the opening
// markup of a call in the model's own dialect, and thinking is turned off for the turn, so the
// model stays in distribution. Returns the prefix (also set as the request's assistant_prefix).
std::string ForceToolCall(const ToolChoice& choice, const ServeDefaults& defaults,
                          engine::Request& request);

// The tool dialect and mid-conversation system handling a chat template implies.
void DetectTemplateTraits(const engine::Engine& engine, ServeDefaults& defaults);

// One piece of the reply as both APIs stream it.
struct ReplyDelta {
  enum class Kind { kReasoning, kContent, kToolStart, kToolArguments, kToolEnd };
  Kind kind = Kind::kContent;
  std::string text;  // reasoning / content text, or an arguments fragment
  int index = 0;     // tool call index
  ToolCall call;     // kToolStart: id, name; kToolEnd: all
};

// Splits the engine's text stream into reasoning, content and tool calls.
class ReplyAssembler {
 public:
  // `reasoning_open`: the prompt ends inside <think>; `prefix`: text the reply starts with that
  // the engine does not report (a forced call's opening markup).
  ReplyAssembler(const ChatCall& call, bool reasoning_open, const std::string& prefix);

  std::vector<ReplyDelta> Push(const std::string& text, size_t tokens);
  std::vector<ReplyDelta> Finish();

  const std::string& content() const { return content_; }
  const std::string& reasoning() const { return reasoning_; }
  const std::vector<ToolCall>& tool_calls() const { return tools_.calls(); }
  int64_t reasoning_tokens() const { return reasoning_tokens_; }

 private:
  void Route(const ReasoningPiece& piece, std::vector<ReplyDelta>& out);
  void RouteTools(std::vector<ToolStreamPiece> pieces, std::vector<ReplyDelta>& out);

  ReasoningSplitter reasoning_split_;
  ToolCallParser tools_;
  std::string content_, reasoning_;
  int64_t reasoning_tokens_ = 0;
  std::vector<ReplyDelta> pending_;  // deltas of the prefix, not yet handed out
};

// The function name of an OpenAI-form tool ({"type": "function", "function": {"name"}}), or ""
// for anything else; never throws.
std::string ToolName(const nlohmann::json& tool);

// A random id with a prefix: "chatcmpl-1f3a...", "msg_...".
std::string RandomId(const std::string& prefix);

// Unix time in seconds.
int64_t UnixTime();

// mtplx's own statistics of a completion (the `mtplx_stats` object of every response).
nlohmann::json StatsJson(const engine::Completion& done);

}  // namespace mtplx::api
