#include "engine/engine.h"

#include <algorithm>
#include <future>
#include <limits>

#include "base/file.h"
#include "base/process_stats.h"
#include "base/strings.h"
#include "base/timer.h"
#include "engine/depth_controller.h"
#include "engine/mtp_check.h"
#include "engine/prompt.h"
#include "engine/sequence.h"
#include "engine/text_stream.h"
#include "io/checkpoint.h"
#include "io/runtime_contract.h"
#include "io/tuning_store.h"
#include "kernels/matmul.h"
#include "kernels/panels.h"

namespace mtplx::engine {
namespace {

// Recurrent-state checkpoints land on this grid (a multiple of kPrefillChunk, so every grid
// point is a cut) and on the last few turn boundaries of a prompt.
constexpr int64_t kCheckpointGrid = 4 * kPrefillChunk;
constexpr size_t kTurnCheckpoints = 3;

struct PromptInfo {
  std::vector<int32_t> tokens;
  bool reasoning_open = false;
};

// The assistant turn the template opened still has an open <think> (Qwen 3.5 pre-opens it).
bool EndsInsideThink(const std::string& rendered) {
  const size_t open = rendered.rfind("<think>");
  if (open == std::string::npos) return false;
  const size_t close = rendered.rfind("</think>");
  const size_t turn = rendered.rfind("<|im_start|>");
  return (close == std::string::npos || close < open) && (turn == std::string::npos || turn < open);
}

}  // namespace

EngineOptions::EngineOptions() {
  // What `run` and `serve` use unless told otherwise (the model library's own default is the
  // exact f32 reference numerics).
  load.activations = kernels::Activations::kInt8;
  load.draft_head_bits = 4;
  load.draft_layer_bits = 4;
  load.draft_vocab = model::kAutoDraftVocab;
  load.kv_type = kernels::KvType::kBf16;
}

Result<std::unique_ptr<Engine>> Engine::Open(const EngineOptions& options) {
  std::unique_ptr<Engine> e(new Engine());
  e->options_ = options;
  const std::string& dir = options.model_dir;
  MTPLX_RETURN_IF_ERROR(io::CheckModelFolder(dir, /*need_tokenizer=*/true));
  MTPLX_ASSIGN_OR_RETURN(tokenizer::Tokenizer tok,
                         tokenizer::Tokenizer::FromJsonFile(JoinPath(dir, "tokenizer.json")));
  e->tokenizer_ = std::make_unique<tokenizer::Tokenizer>(std::move(tok));
  MTPLX_ASSIGN_OR_RETURN(chat::ChatTemplate tmpl, chat::ChatTemplate::FromModelDir(dir));
  e->template_ = std::make_unique<chat::ChatTemplate>(std::move(tmpl));
  MTPLX_ASSIGN_OR_RETURN(e->defaults_, io::LoadGenerationDefaults(dir));
  MTPLX_ASSIGN_OR_RETURN(e->model_, model::Model::Load(dir, options.load));
  e->end_ids_ = e->defaults_.stop_ids;
  for (const char* end : {"<|im_end|>", "<|endoftext|>"})
    if (auto id = e->tokenizer_->AddedTokenId(end)) e->end_ids_.push_back(*id);
  e->turn_start_id_ = e->tokenizer_->AddedTokenId("<|im_start|>");
  const int64_t model_max = e->model_->config().max_position_embeddings;
  e->context_window_ =
      options.context_window > 0 ? std::min(options.context_window, model_max) : model_max;
  e->ChooseMode();
  e->SetMemoryBudget();
  if (options.cache_bytes > 0) {
    e->bank_ = std::make_unique<SessionBank>(std::min(options.cache_bytes, e->BankRoom()));
    MTPLX_RETURN_IF_ERROR(e->OpenCacheDir());
  }
  e->worker_ = std::thread([engine = e.get()] { engine->Loop(); });
  return e;
}

Engine::~Engine() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    for (Job& job : queue_) job.request.cancel->store(true);
    for (auto& cancel : running_cancels_) cancel->store(true);
  }
  wake_.notify_all();
  if (worker_.joinable()) worker_.join();
}

// --no-mtp, a checkpoint without an MTP head, or a head that fails the acceptance check all mean
// plain decoding, with a notice saying why.
void Engine::ChooseMode() {
  // The pack's mtp_depth_max caps every depth: pinned, tuned, and the ones adaptive depth tries.
  max_depth_ = defaults_.mtp_depth_max;
  if (options_.no_mtp) return;
  if (!model_->has_mtp()) {
    notice_ = "this checkpoint has no MTP head: plain decoding";
    return;
  }
  if (!options_.skip_mtp_check) {
    MtpCheck check;
    if (options_.known_mtp_acceptance) {
      check = JudgeMtpAcceptance(*model_, *options_.known_mtp_acceptance);
    } else {
      const auto probe =
          tokenizer_->Encode("The quick brown fox jumps over the lazy dog.\ndef main():\n", false);
      auto measured = CheckMtp(*model_, probe);
      if (!measured.ok()) {
        notice_ = "MTP check failed (" + measured.status().message() + "): plain decoding";
        return;
      }
      check = *measured;
      measured_mtp_acceptance_ = check.acceptance;
    }
    if (!check.usable) {
      notice_ = "MTP disabled: " + check.reason + "; decoding without speculation";
      return;
    }
  }
  depth_ = std::min(options_.depth > 0 ? options_.depth : defaults_.mtp_depth, max_depth_);
  if (options_.depth > max_depth_)
    notice_ = StrCat("MTP depth ", options_.depth, " capped at ", max_depth_,
                     ", this pack's mtp_depth_max (mtplx_runtime.json)");
  speculate_ = true;
  cycle_costs_ = options_.cycle_costs;
  if (cycle_costs_.empty()) {
    const double decode = static_cast<double>(std::max<uint64_t>(model_->DecodeWeightBytes(), 1));
    const CostRegime regime =
        CostRegimeOf(kernels::WeightsStreamFromMemory(model_->DecodeWeightBytes()),
                     kernels::QuantKernelHasDotProduct(), kernels::QuantKernelSplitsWideVectors());
    cycle_costs_ = EstimateCycleCosts(static_cast<double>(model_->DraftWeightBytes()) / decode,
                                      regime, max_depth_);
  }
}

Request Engine::NewRequest() const {
  Request r;
  r.sampling.temperature = defaults_.temperature;
  r.sampling.top_p = defaults_.top_p;
  r.sampling.top_k = defaults_.top_k;
  r.sampling.min_p = defaults_.min_p;
  r.sampling.presence_penalty = defaults_.presence_penalty;
  r.sampling.frequency_penalty = defaults_.frequency_penalty;
  return r;
}

std::optional<sample::SamplingParams> Engine::DraftSampling(
    const sample::SamplingParams& target) const {
  const io::DraftSamplerDefaults& pack = defaults_.draft;
  const std::optional<double> temperature =
      options_.draft_temperature >= 0 ? options_.draft_temperature : pack.temperature;
  const std::optional<double> top_p = options_.draft_top_p >= 0 ? options_.draft_top_p : pack.top_p;
  const std::optional<int> top_k = options_.draft_top_k >= 0 ? options_.draft_top_k : pack.top_k;
  if (!temperature && !top_p && !top_k) return std::nullopt;
  sample::SamplingParams draft = target;
  if (temperature) draft.temperature = *temperature;
  if (top_p) draft.top_p = *top_p;
  if (top_k) draft.top_k = *top_k;
  return draft;
}

Result<std::vector<int32_t>> Engine::PromptTokens(const Request& request) const {
  switch (request.kind) {
    case PromptKind::kChat: {
      MTPLX_ASSIGN_OR_RETURN(chat::RenderedPrompt rendered, Render(request));
      return EncodeRendered(*tokenizer_, rendered);
    }
    case PromptKind::kText:
      return tokenizer_->Encode(request.text, /*allow_special=*/false);
    case PromptKind::kTokens:
      for (int32_t id : request.tokens)
        if (id < 0 || id >= model_->config().vocab_size)
          return InvalidArgument(StrCat("token id ", id, " is outside the vocabulary (0..",
                                        model_->config().vocab_size - 1, ")"));
      return request.tokens;
  }
  return InvalidArgument("unknown prompt kind");
}

Result<chat::RenderedPrompt> Engine::Render(const Request& request) const {
  chat::RenderOptions render = request.render;
  render.add_generation_prompt = true;
  MTPLX_ASSIGN_OR_RETURN(chat::RenderedPrompt rendered,
                         template_->Render(request.conversation, render));
  if (!request.assistant_prefix.empty()) {  // template text: no user span
    rendered.text += request.assistant_prefix;
    rendered.segments.push_back({request.assistant_prefix, false});
  }
  return rendered;
}

Status Engine::Prepare(Request& request) const {
  if (request.kind == PromptKind::kChat) {
    MTPLX_ASSIGN_OR_RETURN(chat::RenderedPrompt rendered, Render(request));
    request.tokens = EncodeRendered(*tokenizer_, rendered);
    request.reasoning_open = EndsInsideThink(rendered.text);
  } else if (request.kind == PromptKind::kText) {
    request.tokens = tokenizer_->Encode(request.text, /*allow_special=*/false);
  } else {
    MTPLX_ASSIGN_OR_RETURN(request.tokens, PromptTokens(request));
  }
  request.kind = PromptKind::kTokens;
  return CheckPromptFits(static_cast<int64_t>(request.tokens.size()));
}

Status Engine::CheckPromptFits(int64_t n) const {
  if (n == 0) return InvalidArgument("the prompt encodes to no tokens");
  if (n + 1 > context_window_)
    return OutOfRange(StrCat("the prompt has ", n, " tokens but the context window is ",
                             context_window_, " tokens (with at least 1 to generate)"));
  return Status::Ok();
}

Status Engine::Submit(Request request, EventSink sink) {
  // A prepared request that could not fit even alone is refused now (HTTP 507 before any reply
  // starts); one that fits waits in the queue until the running requests leave it room.
  if (request.kind == PromptKind::kTokens && !request.tokens.empty()) {
    const int64_t n = static_cast<int64_t>(request.tokens.size());
    const int64_t max_tokens = std::clamp<int64_t>(request.max_tokens, 0, context_window_ - n);
    const uint64_t need = RequestBytes(n, n, max_tokens);
    if (base_bytes_ + need > memory_budget_) {
      std::lock_guard<std::mutex> lock(mutex_);
      ++metrics_.refused_memory;
    }
    if (base_bytes_ + need > memory_budget_)
      return OutOfMemory(StrCat(
          "insufficient memory: this request needs about ", HumanBytes(need), " (", n,
          " prompt tokens and up to ", std::min(max_tokens, kDecodeReserveTokens),
          " to generate) but the memory budget is ", HumanBytes(memory_budget_), " and the model ",
          "holds ", HumanBytes(base_bytes_), "; use a shorter prompt or raise --memory-budget"));
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return FailedPrecondition("the engine is shutting down");
    if (static_cast<int>(queue_.size()) >= options_.max_queue)
      return ResourceExhausted(StrCat("the request queue is full (", queue_.size(),
                                      " requests waiting); retry shortly"));
    queue_.push_back(Job{std::move(request), std::move(sink)});
  }
  wake_.notify_one();
  return Status::Ok();
}

Result<Completion> Engine::Run(Request request, const EventSink& sink) {
  auto done = std::make_shared<std::promise<Result<Completion>>>();
  auto future = done->get_future();
  MTPLX_RETURN_IF_ERROR(Submit(std::move(request), [sink, done](const Event& event) {
    if (sink) sink(event);
    if (event.type == Event::Type::kFinished) done->set_value(*event.completion);
    if (event.type == Event::Type::kFailed) done->set_value(event.error);
  }));
  return future.get();
}

// A request being decoded: its job, its sequence and what its completion collects.
struct Engine::Active {
  Job job;
  uint64_t reserved = 0;  // bytes the memory governor holds for it
  Completion done;
  Timer clock;  // since the request's work started (TTFT)
  std::unique_ptr<TextStream> stream;
  Event text;
  bool first_token = true;
  std::unique_ptr<Sequence> sequence;
};

void Engine::Loop() {
  std::vector<std::unique_ptr<Active>> running;
  std::vector<Job> admitted;
  while (TakeJobs(running.size(), admitted)) {
    for (size_t i = 0; i < admitted.size(); ++i) {
      Job& job = admitted[i];
      auto active = Admit(job);
      if (!active.ok() && active.status().code() == StatusCode::kOutOfMemory && !running.empty()) {
        // It fits once running requests finish: back to the head of the queue, in order.
        std::lock_guard<std::mutex> lock(mutex_);
        for (size_t j = admitted.size(); j-- > i;) queue_.push_front(std::move(admitted[j]));
        break;
      }
      if (!active.ok()) {
        {
          std::lock_guard<std::mutex> lock(mutex_);
          ++done_;
          running_ = std::max(running_ - 1, 0);
          ++metrics_.failed;
          if (active.status().code() == StatusCode::kOutOfMemory) ++metrics_.refused_memory;
        }
        Event failed;
        failed.type = Event::Type::kFailed;
        failed.error = active.status();
        if (job.sink) job.sink(failed);
        continue;
      }
      running.push_back(std::move(active).value());
    }
    admitted.clear();
    StepAll(running);
    SampleThroughput();
    std::lock_guard<std::mutex> lock(mutex_);
    running_cancels_.clear();
    for (const auto& a : running) running_cancels_.push_back(a->job.request.cancel);
    running_ = static_cast<int>(running.size());
    if (bank_) {
      bank_bytes_ = bank_->bytes();
      bank_entries_ = bank_->size();
    }
  }
}

bool Engine::TakeJobs(size_t running, std::vector<Job>& admitted) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (running == 0) wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
  if (running == 0 && queue_.empty()) return false;  // stopping, nothing left
  const size_t slots = static_cast<size_t>(std::max(options_.parallel, 1));
  while (running + admitted.size() < slots && !queue_.empty()) {
    admitted.push_back(std::move(queue_.front()));
    queue_.pop_front();
    if (stopping_) admitted.back().request.cancel->store(true);
    running_cancels_.push_back(admitted.back().request.cancel);
  }
  running_ = static_cast<int>(running + admitted.size());
  return true;
}

void Engine::StepAll(std::vector<std::unique_ptr<Active>>& running) {
  std::vector<Sequence*> stepping;
  for (const auto& a : running)
    if (!a->sequence->finished()) stepping.push_back(a->sequence.get());
  if (!stepping.empty()) {
    const Status stepped = Step(*model_, stepping, options_.max_step_rows, options_.step_costs);
    if (!stepped.ok()) {
      // A forward refused the batch: nothing sensible can continue from these states.
      for (auto& a : running) Fail(*a, stepped);
      running.clear();
      return;
    }
  }
  for (auto& a : running)
    if (a->sequence->finished()) {
      Complete(*a);
      a.reset();
    }
  std::erase(running, nullptr);
}

void Engine::Fail(Active& active, const Status& error) {
  Release(active.reserved);
  active.reserved = 0;
  {
    // Counted before the client hears, so what it asks next already shows it.
    std::lock_guard<std::mutex> lock(mutex_);
    ++metrics_.failed;
    if (error.code() == StatusCode::kOutOfMemory) ++metrics_.refused_memory;
    ++done_;
    running_ = std::max(running_ - 1, 0);
  }
  Event failed;
  failed.type = Event::Type::kFailed;
  failed.error = error;
  if (active.job.sink) active.job.sink(failed);
}

// What the process may use: the smallest of --memory-budget, what it holds now plus what the
// system has free, and its cgroup's limit. Measured once the model is loaded, so base_bytes_
// holds the weights and every copy the load made.
void Engine::SetMemoryBudget() {
  base_bytes_ = ReadProcessStats().resident_bytes;
  uint64_t budget = std::numeric_limits<uint64_t>::max();
  if (const uint64_t free = AvailableMemoryBytes()) budget = base_bytes_ + free;
  if (const uint64_t cgroup = CgroupMemoryLimitBytes()) budget = std::min(budget, cgroup);
  if (options_.memory_budget > 0) budget = std::min(budget, options_.memory_budget);
  memory_budget_ = budget;
}

// The disk tier. The fingerprint names everything a cached state depends on: the weights (folder
// identity and file stamps), the activation numerics, the KV cache's type, the MTP layer's bits
// (its history) and the engine version; not the CPU (every kernel family computes the same bits).
Status Engine::OpenCacheDir() {
  if (options_.cache_dir.empty()) return Status::Ok();
  MTPLX_ASSIGN_OR_RETURN(std::string model, io::TuningModelId(options_.model_dir));
  MTPLX_ASSIGN_OR_RETURN(std::string files, io::WeightFilesStamp(options_.model_dir));
  const std::string fingerprint =
      StrCat(model, " | files ", files, " | activations ",
             options_.load.activations == kernels::Activations::kInt8 ? "int8" : "f32", " | kv ",
             kernels::KvTypeName(options_.load.kv_type), " | draft layer ",
             model_->draft_layer_bits(), " bits | mtplx ", options_.engine_version);
  CaptureShapes shapes;
  shapes.trunk = model_->NewState()->layout();
  shapes.head_dim = model_->config().head_dim;
  shapes.hidden_size = model_->config().hidden_size;
  shapes.has_mtp = model_->has_mtp();
  if (shapes.has_mtp) shapes.mtp = model_->NewMtpState()->layout();
  MTPLX_ASSIGN_OR_RETURN(store_, BankStore::Open(options_.cache_dir, fingerprint,
                                                 options_.cache_dir_bytes, std::move(shapes)));
  bank_->AttachStore(store_.get());
  return Status::Ok();
}

uint64_t Engine::BankRoom() const {
  const uint64_t held = base_bytes_ + reserved_bytes_;
  const uint64_t room = memory_budget_ > held ? memory_budget_ - held : 0;
  return std::min(options_.cache_bytes, room);
}

namespace {

// A request's projected bytes (see Engine::RequestBytes) from the per-sequence state sizes.
uint64_t ProjectRequest(const MemoryPlan& plan, const io::ModelConfig& c, int64_t prompt_tokens,
                        int64_t uncached_tokens, int64_t max_tokens) {
  const int64_t tokens = prompt_tokens + std::min(max_tokens, kDecodeReserveTokens);
  // Key/value caches grow by half their capacity at a time, so they may hold 1.5x the rows.
  const uint64_t kv = plan.kv_bytes_per_token * static_cast<uint64_t>(tokens) * 3 / 2;
  // A prefill chunk's activations, and a verify pass's DeltaNet tape and checkpoints.
  const int64_t rows = std::clamp<int64_t>(uncached_tokens, 1, kPrefillChunk);
  const int64_t per_row = 10 * c.hidden_size + 3 * c.ConvDim() + 2 * c.ValueDim() +
                          3 * std::max({c.intermediate_size, c.moe_intermediate_size,
                                        c.shared_expert_intermediate_size});
  const uint64_t transient = static_cast<uint64_t>(rows * per_row) * sizeof(float);
  return kv + transient + 6 * plan.recurrent_bytes;
}

}  // namespace

uint64_t Engine::RequestBytes(int64_t prompt_tokens, int64_t uncached_tokens,
                              int64_t max_tokens) const {
  return ProjectRequest(memory_plan(), model_->config(), prompt_tokens, uncached_tokens,
                        max_tokens);
}

Status Engine::Reserve(uint64_t bytes, int64_t prompt_tokens, int64_t uncached_tokens,
                       int64_t max_tokens) {
  auto held = [&] { return base_bytes_ + reserved_bytes_ + (bank_ ? bank_->bytes() : 0); };
  if (held() + bytes > memory_budget_ && bank_) {
    // Cached prefixes are the first thing to give way.
    const uint64_t others = base_bytes_ + reserved_bytes_ + bytes;
    bank_->ShrinkTo(memory_budget_ > others ? memory_budget_ - others : 0);
  }
  if (held() + bytes > memory_budget_) {
    const uint64_t free = memory_budget_ > held() ? memory_budget_ - held() : 0;
    return OutOfMemory(StrCat(
        "insufficient memory: this request needs about ", HumanBytes(bytes), " (", prompt_tokens,
        " prompt tokens, ", uncached_tokens, " of them not cached, and up to ",
        std::min(max_tokens, kDecodeReserveTokens), " to generate) but only ", HumanBytes(free),
        " of the ", HumanBytes(memory_budget_), " memory budget is free (model ",
        HumanBytes(base_bytes_), ", running requests ", HumanBytes(reserved_bytes_),
        ", prefix cache ", HumanBytes(bank_ ? bank_->bytes() : 0),
        "); retry with a shorter prompt or when other requests finish, or raise --memory-budget"));
  }
  reserved_bytes_ += bytes;
  std::lock_guard<std::mutex> lock(mutex_);
  reserved_mirror_ = reserved_bytes_;
  return Status::Ok();
}

void Engine::Release(uint64_t bytes) {
  reserved_bytes_ -= std::min(bytes, reserved_bytes_);
  std::lock_guard<std::mutex> lock(mutex_);
  reserved_mirror_ = reserved_bytes_;
}

Result<std::unique_ptr<Engine::Active>> Engine::Admit(Job& job) {
  auto active = std::make_unique<Active>();
  Active& a = *active;
  Request& request = job.request;
  if (request.kind != PromptKind::kTokens || request.tokens.empty())
    MTPLX_RETURN_IF_ERROR(Prepare(request));
  const std::vector<int32_t>& tokens = request.tokens;
  const int64_t n = static_cast<int64_t>(tokens.size());
  MTPLX_RETURN_IF_ERROR(CheckPromptFits(n));
  Completion& done = a.done;
  done.prompt_tokens = n;
  done.effective_max_tokens =
      static_cast<int>(std::min<int64_t>(std::max(request.max_tokens, 0), context_window_ - n));

  GenerateRequest g;
  g.prompt = tokens;
  g.sampling = request.sampling;
  g.seed = request.seed;
  g.max_tokens = done.effective_max_tokens;
  if (!request.ignore_eos) g.stop_ids = end_ids_;
  g.cancel = request.cancel.get();
  g.top_logprobs = request.top_logprobs;
  g.depth_may_vary = request.sampling.greedy() || !request.reproducible;
  if (request.grammar) {
    g.grammar = request.grammar;
    g.vocabulary = vocabulary();
    g.oracle = OracleFor(request.grammar);
  }
  const bool speculate = speculate_ && request.speculate && request.top_logprobs < 0 &&
                         n + max_depth_ + 1 < model_->config().max_position_embeddings;
  // Turn boundaries cut the prefill; the last few of them and a grid get checkpoints.
  if (turn_start_id_)
    for (int64_t i = 1; i < n - 1; ++i)
      if (tokens[i] == *turn_start_id_) g.prefill_cuts.push_back(i);
  if (bank_) {
    for (int64_t at = kCheckpointGrid; at <= n - 1; at += kCheckpointGrid)
      g.checkpoint_at.push_back(at);
    const size_t turns = g.prefill_cuts.size();
    g.checkpoint_at.insert(g.checkpoint_at.end(),
                           g.prefill_cuts.end() - std::min(turns, kTurnCheckpoints),
                           g.prefill_cuts.end());
    std::sort(g.checkpoint_at.begin(), g.checkpoint_at.end());
    g.checkpoint_at.erase(std::unique(g.checkpoint_at.begin(), g.checkpoint_at.end()),
                          g.checkpoint_at.end());
  }
  // The prefix's states are copied into the sequence when it opens, so the lookup (and the
  // bank's entry) may go away afterwards.
  BankLookup cached;
  if (bank_) {
    cached = bank_->Lookup(tokens, speculate, options_.pre_norm_hidden);
    if (cached.prefix) g.prefix = &*cached.prefix;
  }
  done.cached_tokens = cached.prefix ? cached.prefix->size() : 0;
  done.cache_miss_reason = bank_ ? cached.miss_reason : "cache_off";
  const int64_t uncached = n - done.cached_tokens;
  const uint64_t need = RequestBytes(n, uncached, done.effective_max_tokens);
  MTPLX_RETURN_IF_ERROR(Reserve(need, n, uncached, done.effective_max_tokens));
  a.reserved = need;
  if (request.prompt_logprobs) {
    auto scored = ScorePrompt(*model_, tokens, std::max(request.top_logprobs, 0));
    if (!scored.ok()) {
      Release(need);
      return scored.status();
    }
    done.prompt_logprobs = std::move(scored).value();
  }

  a.stream = std::make_unique<TextStream>(tokenizer_.get(), request.stop);
  a.text.type = Event::Type::kText;
  auto on_token = [this, &a](int32_t token) {
    ++emitted_tokens_;
    if (a.first_token) {
      a.done.ttft_seconds = a.clock.Seconds();
      a.first_token = false;
    }
    a.text.tokens.push_back(token);
    a.text.text = a.stream->Push(token);
    if (!a.text.text.empty()) {
      if (a.job.sink) a.job.sink(a.text);
      a.text.tokens.clear();
    }
    return !a.stream->stopped();
  };
  if (speculate) {
    SpeculativeOptions spec;
    // Adapting, the depth may go past the pack's (or tune's) default, up to the pack's ceiling.
    // It starts from tune's (or the caller's), else from the best under the prior: a pack's
    // default depth predates this machine's costs, and warm-up cycles at too shallow a depth cost
    // a few per cent of a reply.
    spec.depth = options_.adaptive_depth ? max_depth_ : depth_;
    spec.adaptive = options_.adaptive_depth;
    spec.adaptive_start = options_.depth > 0 ? depth_ : PriorBestDepth(spec.depth, cycle_costs_);
    spec.cycle_costs = cycle_costs_;
    spec.pre_norm_hidden = options_.pre_norm_hidden;
    if (std::optional<sample::SamplingParams> draft = DraftSampling(g.sampling)) {
      spec.draft_same_as_target = false;
      spec.draft = *draft;
    }
    MTPLX_ASSIGN_OR_RETURN(a.sequence,
                           Sequence::Speculative(*model_, std::move(g), spec, on_token));
    done.depth = depth_;
  } else {
    MTPLX_ASSIGN_OR_RETURN(a.sequence, Sequence::Plain(*model_, std::move(g), on_token));
  }
  a.job = std::move(job);  // the callbacks reach the sink through `a`

  Event started;
  started.type = Event::Type::kStarted;
  started.prompt_tokens = n;
  started.cached_tokens = done.cached_tokens;
  started.reasoning_open = a.job.request.reasoning_open;
  if (a.job.sink) a.job.sink(started);
  return active;
}

void Engine::Complete(Active& a) {
  auto run = a.sequence->TakeResult();
  if (!run.ok()) {
    Fail(a, run.status());
    return;
  }
  a.sequence.reset();  // its states are freed before the cache takes its capture
  Release(a.reserved);
  a.reserved = 0;
  GenerateResult& result = run->result;
  a.text.text = a.stream->Finish();
  if (!a.text.text.empty() && a.job.sink) a.job.sink(a.text);
  Completion& done = a.done;
  done.text = a.stream->text();
  done.tokens = std::move(result.tokens);
  done.finish_reason = a.stream->stopped() ? "stop" : result.finish_reason;
  done.stop_string = a.stream->matched_stop();
  // A constrained reply ends "stop" only where its grammar is complete (the sequence allows end
  // tokens there and stops when nothing may follow); anything else left it unfinished.
  if (a.job.request.grammar)
    done.grammar_complete = result.finish_reason == "stop" && !a.stream->stopped();
  done.stats = result.stats;
  done.logprobs = std::move(result.logprobs);
  if (done.depth > 0) done.speculative = std::move(run->speculative);
  if (bank_ && result.capture) {
    bank_->SetBudget(BankRoom());
    bank_->Insert(std::move(*result.capture), done.cached_tokens);
  }
  Record(done);  // counted before the client hears, so what it asks next already shows it
  Event finished;
  finished.type = Event::Type::kFinished;
  finished.completion = &done;
  if (a.job.sink) a.job.sink(finished);
}

void Engine::Record(const Completion& done) {
  if (done.stats.decode_seconds > 0 && done.stats.completion_tokens > 1) {
    stream_rates_.push_back(done.stats.DecodeTokensPerSecond());
    if (stream_rates_.size() > 32) stream_rates_.pop_front();
  }
  double stream = 0.0;
  for (double r : stream_rates_) stream += r;
  std::lock_guard<std::mutex> lock(mutex_);
  ++done_;
  running_ = std::max(running_ - 1, 0);
  EngineMetrics& m = metrics_;
  ++m.finished[done.finish_reason];
  m.prompt_tokens += done.prompt_tokens;
  m.cached_prompt_tokens += done.cached_tokens;
  m.generated_tokens += static_cast<int64_t>(done.tokens.size());
  if (!done.tokens.empty()) {
    int bucket = 0;
    while (bucket < EngineMetrics::kTtftBucketCount &&
           done.ttft_seconds > EngineMetrics::kTtftBuckets[bucket])
      ++bucket;
    ++m.ttft_counts[bucket];
    m.ttft_sum += done.ttft_seconds;
    ++m.ttft_count;
  }
  m.stream_tok_s = stream_rates_.empty() ? 0.0 : stream / static_cast<double>(stream_rates_.size());
  const SpeculativeStats& s = done.speculative;
  if (done.depth > 0) {
    const size_t depths = s.proposed_by_depth.empty() ? 0 : s.proposed_by_depth.size() - 1;
    if (m.proposed_by_depth.size() < depths) {
      m.proposed_by_depth.resize(depths, 0);
      m.accepted_by_depth.resize(depths, 0);
    }
    for (size_t d = 1; d <= depths; ++d) {
      m.proposed_by_depth[d - 1] += s.proposed_by_depth[d];
      m.accepted_by_depth[d - 1] += s.accepted_by_depth[d];
    }
    m.cycles += s.cycles;
    for (size_t n = 0; n < s.tokens_per_cycle.size(); ++n)
      m.cycle_tokens += static_cast<int64_t>(n) * s.tokens_per_cycle[n];
  }
}

// Called after every step: the aggregate rate over the last 5 seconds, and a point of the
// dashboard's chart once a second.
void Engine::SampleThroughput() {
  const double now = opened_.Seconds();
  if (!throughput_.empty() && now - throughput_.back().first < 0.2) return;
  throughput_.emplace_back(now, emitted_tokens_);
  while (throughput_.size() > 2 && now - throughput_.front().first > 5.0) throughput_.pop_front();
  const auto& [t0, n0] = throughput_.front();
  const double rate = now > t0 ? static_cast<double>(emitted_tokens_ - n0) / (now - t0) : 0.0;
  std::lock_guard<std::mutex> lock(mutex_);
  metrics_.tok_s = rate;
  last_sample_seconds_ = now;
  if (now - last_history_ >= 1.0) {
    metrics_.history.emplace_back(now, rate);
    if (metrics_.history.size() > 600) metrics_.history.erase(metrics_.history.begin());
    last_history_ = now;
  }
}

EngineMetrics Engine::metrics() const {
  std::lock_guard<std::mutex> lock(mutex_);
  EngineMetrics m = metrics_;
  m.uptime_seconds = opened_.Seconds();
  // Idle for a while: nothing is being generated now.
  if (running_ == 0 && m.uptime_seconds - last_sample_seconds_ > 5.0) m.tok_s = 0.0;
  return m;
}

MemoryPlan Engine::memory_plan() const {
  MemoryPlan plan;
  plan.weight_bytes = model_->weight_bytes();
  plan.context_window = context_window_;
  plan.cache_budget_bytes = bank_ ? bank_->budget() : 0;
  auto per_state = [&](const state::StateLayout& layout, uint64_t& kv, uint64_t& recurrent) {
    for (bool attention : layout.is_attention) {
      if (attention)
        kv += static_cast<uint64_t>(layout.kv_bytes_per_position());
      else
        recurrent += static_cast<uint64_t>(layout.conv_history * layout.conv_channels +
                                           layout.recurrent_size) *
                     sizeof(float);
    }
  };
  per_state(model_->NewState()->layout(), plan.kv_bytes_per_token, plan.recurrent_bytes);
  if (model_->has_mtp())
    per_state(model_->NewMtpState()->layout(), plan.kv_bytes_per_token, plan.recurrent_bytes);
  plan.state_bytes_at_context =
      plan.kv_bytes_per_token * static_cast<uint64_t>(context_window_) + plan.recurrent_bytes;
  plan.budget_bytes = memory_budget_;
  plan.base_bytes = base_bytes_;
  plan.request_bytes = ProjectRequest(plan, model_->config(), 64, 64, kDecodeReserveTokens);
  return plan;
}

EngineStatus Engine::status() const {
  std::lock_guard<std::mutex> lock(mutex_);
  EngineStatus s;
  s.queued = static_cast<int64_t>(queue_.size());
  s.running = running_;
  s.reserved_bytes = reserved_mirror_;
  s.busy = running_ > 0;
  s.cache_bytes = bank_bytes_;
  s.cache_entries = bank_entries_;
  s.requests_done = done_;
  return s;
}

std::shared_ptr<const grammar::Vocabulary> Engine::vocabulary() const {
  std::call_once(vocabulary_once_, [&] {
    vocabulary_ = grammar::Vocabulary::FromTokenizer(
        *tokenizer_, static_cast<int32_t>(model_->config().vocab_size));
  });
  return vocabulary_;
}

// Most recently used first; agents repeat their schemas and tools, so a few suffice.
std::shared_ptr<grammar::MaskOracle> Engine::OracleFor(
    const std::shared_ptr<const grammar::Grammar>& g) {
  constexpr size_t kOracles = 8;
  std::string key = g->ToString();
  for (auto it = oracles_.begin(); it != oracles_.end(); ++it) {
    if (it->first != key) continue;
    std::rotate(oracles_.begin(), it, it + 1);
    return oracles_.front().second;
  }
  if (oracles_.size() >= kOracles) oracles_.pop_back();
  oracles_.insert(oracles_.begin(),
                  {std::move(key), std::make_shared<grammar::MaskOracle>(g, vocabulary())});
  return oracles_.front().second;
}

}  // namespace mtplx::engine
