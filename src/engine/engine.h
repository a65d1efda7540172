// The engine: one loaded model (weights, tokenizer, chat template, generation defaults, MTP
// decision, prefix cache) that runs generation requests one at a time on its own thread. Callers
// on any thread submit typed requests and receive typed events; the terminal commands and the
// HTTP server drive the same engine.
//
//   MTPLX_ASSIGN_OR_RETURN(auto engine, Engine::Open(options));
//   Request request = engine->NewRequest();
//   request.conversation = ...;
//   MTPLX_ASSIGN_OR_RETURN(Completion done, engine->Run(std::move(request), on_event));
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"
#include "base/timer.h"
#include "chat/chat_template.h"
#include "chat/conversation.h"
#include "engine/generator.h"
#include "engine/session_bank.h"
#include "engine/speculative.h"
#include "engine/step_plan.h"
#include "grammar/grammar.h"
#include "grammar/vocabulary.h"
#include "io/generation_config.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace mtplx::engine {

struct EngineOptions {
  EngineOptions();  // the product defaults below, and int8 activations with a 4-bit draft head
  std::string model_dir;
  model::LoadOptions load;
  // Speculation: off (--no-mtp), forced past the acceptance check, or at a fixed depth
  // (0: the pack's default).
  bool no_mtp = false;
  bool skip_mtp_check = false;
  // The load check's acceptance from an earlier start (io::LoadMtpCheck): judged as if measured,
  // without running the probe.
  std::optional<double> known_mtp_acceptance;
  int depth = 0;
  // Each cycle's depth follows live acceptance (up to `depth`); false pins it (--depth).
  bool adaptive_depth = true;
  // What a cycle of each depth d = 0, 1, ... costs in plain steps (from `mtplx tune`); empty:
  // estimated from the model's shape.
  std::vector<double> cycle_costs;
  bool pre_norm_hidden = false;
  // Draft sampler overrides (negative: the pack's recommended_draft_sampler value, else the
  // target's).
  double draft_temperature = -1, draft_top_p = -1;
  int draft_top_k = -1;
  // The longest prompt + completion served (0: the model's max_position_embeddings).
  int64_t context_window = 0;
  // Requests waiting beyond the one running; more are refused (Submit: ResourceExhausted).
  int max_queue = 16;
  // The prefix cache's byte budget (0: no prefix cache).
  uint64_t cache_bytes = 0;
  // Its disk tier (engine/bank_store.h): a directory ("" : none) and its byte budget. Files carry
  // a fingerprint of the model folder, the numerics and `engine_version`, so a restart reuses
  // them only for the same weights and engine.
  std::string cache_dir;
  uint64_t cache_dir_bytes = uint64_t{8} << 30;
  std::string engine_version;
  // Requests decoded at once (continuous batching): each has its own states; every step runs one
  // batched forward for all of them.
  int parallel = 1;
  // Verify rows one step may carry before the drafts of requests whose output cannot depend on
  // it (greedy, or sampled without a client seed) are cut, deepest first, down to plain steps:
  // past the point where a forward turns compute-bound, drafting costs more than it wins.
  // 0: no limit.
  int max_step_rows = 16;
  // What batched steps cost on this machine (`mtplx tune` measures them): with them, a step of
  // several requests also cuts drafts whose odds no longer pay for their rows
  // (engine/step_plan.h). Empty: only max_step_rows applies.
  StepCosts step_costs;
  // The memory budget in bytes (0: what is free at start and the cgroup limit decide). A request
  // whose projected state does not fit, even after evicting cached prefixes, is refused before
  // its prefill (StatusCode::kOutOfMemory, HTTP 507).
  uint64_t memory_budget = 0;
};

// How to turn a request into prompt tokens.
enum class PromptKind {
  kChat,    // conversation rendered by the model's chat template
  kText,    // text continued as it is (special-token text stays plain text)
  kTokens,  // token ids as given
};

struct Request {
  PromptKind kind = PromptKind::kChat;
  chat::Conversation conversation;
  chat::RenderOptions render;  // add_generation_prompt is always set for chat requests
  // Template text appended after the generation prompt: the reply starts with it (a forced tool
  // call's opening markup). It is part of the prompt, not of the completion's text.
  std::string assistant_prefix;
  std::string text;
  std::vector<int32_t> tokens;
  bool reasoning_open = false;  // kTokens: the prompt ends inside a <think> block

  sample::SamplingParams sampling;
  uint64_t seed = 0;
  // The seed was chosen by the client: a sampled reply must be the same however busy the engine
  // is, so its draft depth never follows occupancy (greedy replies are the same at any depth).
  bool reproducible = true;
  int max_tokens = 256;  // clamped to what the context window leaves
  std::vector<std::string> stop;
  bool ignore_eos = false;
  bool speculate = true;  // false: plain decoding even when the engine speculates
  // Structured output: the reply is a sentence of this grammar (JSON schema, tool call, GBNF),
  // exactly sampled from the masked distributions, with or without speculation.
  std::shared_ptr<const grammar::Grammar> grammar;
  // Log-probabilities of each generated token and its `top_logprobs` best alternatives
  // (-1: none). Requests that ask for them decode plainly.
  int top_logprobs = -1;
  // Log-probabilities of the prompt tokens too (each given the tokens before it).
  bool prompt_logprobs = false;
  // Set by any thread to stop the request: queued, it never starts; running, it stops at the next
  // step with finish_reason "cancelled".
  std::shared_ptr<std::atomic<bool>> cancel = std::make_shared<std::atomic<bool>>(false);
};

struct Completion {
  std::string text;  // decoded, special tokens dropped, cut before a matched stop string
  std::vector<int32_t> tokens;
  // "stop" (end token or stop string), "length" (max_tokens or the context window), "cancelled"
  std::string finish_reason;
  std::string stop_string;  // the stop string that matched, if any
  // With a grammar: whether the reply is a complete sentence of it (false when max_tokens, the
  // context window, a stop string or a cancellation ended it first).
  std::optional<bool> grammar_complete;
  int64_t prompt_tokens = 0;
  int64_t cached_tokens = 0;  // prompt tokens restored from the prefix cache
  std::string cache_miss_reason;
  int effective_max_tokens = 0;
  double ttft_seconds = 0.0;  // from the start of the request's work to its first token
  GenerateStats stats;
  int depth = 0;  // 0: plain decoding
  SpeculativeStats speculative;
  std::vector<TokenLogprob> logprobs;
  std::vector<TokenLogprob> prompt_logprobs;  // one per prompt token but the first
};

// What a running request reports, in order: kStarted once, kText any number of times, then
// kFinished or kFailed. Delivered on the engine thread: keep handlers short.
struct Event {
  enum class Type { kStarted, kText, kFinished, kFailed };
  Type type = Type::kText;
  // kStarted
  int64_t prompt_tokens = 0;
  int64_t cached_tokens = 0;
  bool reasoning_open = false;  // the prompt ends inside a <think> block the template opened
  // kText
  std::string text;
  std::vector<int32_t> tokens;
  // kFinished
  const Completion* completion = nullptr;
  // kFailed
  Status error;
};
using EventSink = std::function<void(const Event&)>;

// Sizes the server prints and checks requests against.
struct MemoryPlan {
  uint64_t weight_bytes = 0;
  uint64_t kv_bytes_per_token = 0;      // every attention layer's keys and values (KV type)
  uint64_t recurrent_bytes = 0;         // DeltaNet states of one sequence
  uint64_t state_bytes_at_context = 0;  // one sequence at the full context window
  uint64_t cache_budget_bytes = 0;
  int64_t context_window = 0;
  // The memory governor: what the process may use (the smallest of --memory-budget, what was
  // free at start plus what the process held, and the cgroup limit) and what it held once the
  // model was loaded.
  uint64_t budget_bytes = 0;
  uint64_t base_bytes = 0;
  // A request's reservation with a short prompt and kDecodeReserveTokens to generate.
  uint64_t request_bytes = 0;
};

// A request reserves the state of its prompt and of at most this many generated tokens (a larger
// max_tokens does not block admission; the context window still bounds the reply).
inline constexpr int64_t kDecodeReserveTokens = 4096;

struct EngineStatus {
  uint64_t reserved_bytes = 0;  // what the running requests reserved
  int64_t queued = 0;
  bool busy = false;
  int running = 0;  // requests decoding now (at most EngineOptions::parallel)
  uint64_t cache_bytes = 0;
  size_t cache_entries = 0;
  int64_t requests_done = 0;
};

// What the engine has done since it opened, for /metrics, /v1/mtplx/stats and the dashboard.
struct EngineMetrics {
  // Upper bounds (seconds) of the time-to-first-token histogram buckets; +Inf is implied.
  static constexpr double kTtftBuckets[] = {0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
  static constexpr int kTtftBucketCount = 10;

  std::map<std::string, int64_t> finished;  // requests by finish reason
  int64_t failed = 0;                       // requests that ended in an error
  int64_t refused_memory = 0;               // 507: could not fit the memory budget
  int64_t prompt_tokens = 0, cached_prompt_tokens = 0, generated_tokens = 0;
  int64_t ttft_counts[kTtftBucketCount + 1] = {};  // per bucket (not cumulative); last: +Inf
  double ttft_sum = 0.0;
  int64_t ttft_count = 0;
  // Speculation over all requests: drafts proposed / accepted at depth d (index d - 1), cycles
  // and the tokens they committed.
  std::vector<int64_t> proposed_by_depth, accepted_by_depth;
  int64_t cycles = 0, cycle_tokens = 0;
  // Throughput: generated tokens per second over the last few seconds (all streams), and the
  // mean decode rate of the last requests (one stream each).
  double tok_s = 0.0, stream_tok_s = 0.0;
  // (seconds since the engine opened, tok/s) once a second, the last 10 minutes.
  std::vector<std::pair<double, double>> history;
  double uptime_seconds = 0.0;
};

class Engine {
 public:
  static Result<std::unique_ptr<Engine>> Open(const EngineOptions& options);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // A request with the model's default sampler and stop behaviour.
  Request NewRequest() const;

  // Queues a request; `sink` receives its events on the engine thread. ResourceExhausted when
  // the queue is full.
  Status Submit(Request request, EventSink sink);
  // Submits and waits: the completion, or the error that ended the request.
  Result<Completion> Run(Request request, const EventSink& sink = nullptr);

  // The prompt tokens a request would run (template rendered, text encoded).
  Result<std::vector<int32_t>> PromptTokens(const Request& request) const;
  // Renders and encodes the prompt now (on the caller's thread) and checks it fits the context
  // window: the request becomes kTokens, so errors reach the caller before it is queued.
  Status Prepare(Request& request) const;
  // A chat request's prompt text, as the template renders it (with the assistant prefix).
  Result<chat::RenderedPrompt> Render(const Request& request) const;

  const model::Model& model() const { return *model_; }
  const tokenizer::Tokenizer& tokenizer() const { return *tokenizer_; }
  // The vocabulary's bytes laid out for grammar masks (built on first use, then shared).
  std::shared_ptr<const grammar::Vocabulary> vocabulary() const;
  const chat::ChatTemplate& chat_template() const { return *template_; }
  const io::GenerationDefaults& defaults() const { return defaults_; }
  // The draft sampler of a request sampled with `target`: the target's, with each value the
  // options override (draft_temperature, ...) else the pack recommends replaced; nullopt when
  // nothing is replaced. A greedy target still drafts greedily (Sequence).
  std::optional<sample::SamplingParams> DraftSampling(const sample::SamplingParams& target) const;
  const EngineOptions& options() const { return options_; }
  int64_t context_window() const { return context_window_; }
  // The draft depth when speculating (0: plain decoding), and why speculation is off if it is.
  int depth() const { return speculate_ ? depth_ : 0; }
  // The deepest draft any cycle may run: the pack's mtp_depth_max, at most io::kMaxMtpDepth.
  int max_depth() const { return max_depth_; }
  const std::string& notice() const { return notice_; }
  // The acceptance the load check measured in this Open (nullopt: not run, or known beforehand).
  std::optional<double> measured_mtp_acceptance() const { return measured_mtp_acceptance_; }
  // Speculation on or off for later requests (on only works if the head passed its check).
  void SetSpeculation(bool on) { speculate_ = on && depth_ > 0; }
  MemoryPlan memory_plan() const;
  EngineStatus status() const;
  EngineMetrics metrics() const;

 private:
  struct Job {
    Request request;
    EventSink sink;
  };

  struct Active;  // a request being decoded (engine.cc)

  Engine() = default;
  void ChooseMode();
  Status CheckPromptFits(int64_t prompt_tokens) const;
  void Loop();
  // Waits for work; moves queued jobs into free slots. False once stopping with nothing left.
  bool TakeJobs(size_t running, std::vector<Job>& admitted);
  // A job's prompt prepared, its prefix looked up and its sequence opened; its kStarted sent.
  Result<std::unique_ptr<Active>> Admit(Job& job);
  // One batched step of every running request; those that finished are completed and removed.
  void StepAll(std::vector<std::unique_ptr<Active>>& running);
  void Complete(Active& active);
  void Fail(Active& active, const Status& error);
  // The memory governor: a request's projected bytes, and reserving them (evicting cached
  // prefixes when that makes room) or refusing with OutOfMemory.
  uint64_t RequestBytes(int64_t prompt_tokens, int64_t uncached_tokens, int64_t max_tokens) const;
  Status Reserve(uint64_t bytes, int64_t prompt_tokens, int64_t uncached_tokens,
                 int64_t max_tokens);
  void Release(uint64_t bytes);
  void SetMemoryBudget();
  Status OpenCacheDir();
  // Metrics bookkeeping (engine thread; the copy under mutex_).
  void Record(const Completion& done);
  void SampleThroughput();
  // What the prefix cache may hold now: its budget, within what the running requests leave.
  uint64_t BankRoom() const;

  EngineOptions options_;
  std::unique_ptr<model::Model> model_;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer_;
  std::unique_ptr<chat::ChatTemplate> template_;
  io::GenerationDefaults defaults_;
  std::vector<int32_t> end_ids_;          // the model's end-of-turn tokens
  std::optional<int32_t> turn_start_id_;  // <|im_start|>: turn boundaries cut the prefill
  int64_t context_window_ = 0;
  int depth_ = 0;
  int max_depth_ = io::kMaxMtpDepth;
  std::vector<double> cycle_costs_;  // for adaptive depth
  std::atomic<bool> speculate_{false};
  std::string notice_;
  std::optional<double> measured_mtp_acceptance_;
  std::unique_ptr<BankStore> store_;   // the bank's disk tier
  std::unique_ptr<SessionBank> bank_;  // touched only on the engine thread

  mutable std::mutex mutex_;
  // The mask oracles of recent grammars, by their text (engine thread only).
  std::shared_ptr<grammar::MaskOracle> OracleFor(const std::shared_ptr<const grammar::Grammar>& g);
  std::vector<std::pair<std::string, std::shared_ptr<grammar::MaskOracle>>> oracles_;
  mutable std::once_flag vocabulary_once_;
  mutable std::shared_ptr<const grammar::Vocabulary> vocabulary_;
  std::condition_variable wake_;
  std::deque<Job> queue_;
  bool stopping_ = false;
  // The running requests' cancel flags (set on shutdown).
  std::vector<std::shared_ptr<std::atomic<bool>>> running_cancels_;
  int running_ = 0;
  uint64_t memory_budget_ = 0, base_bytes_ = 0;
  uint64_t reserved_bytes_ = 0;   // by running requests (engine thread)
  uint64_t reserved_mirror_ = 0;  // its copy for status(), under mutex_
  EngineMetrics metrics_;         // under mutex_
  Timer opened_;
  int64_t emitted_tokens_ = 0;  // engine thread: every token any request emitted
  std::deque<std::pair<double, int64_t>> throughput_;  // (seconds, emitted) samples, engine thread
  std::deque<double> stream_rates_;                    // last requests' decode tok/s
  double last_history_ = -1.0;
  double last_sample_seconds_ = 0.0;  // under mutex_
  int64_t done_ = 0;
  uint64_t bank_bytes_ = 0;  // mirrors of the bank's size, for status() from other threads
  size_t bank_entries_ = 0;
  std::thread worker_;
};

}  // namespace mtplx::engine
