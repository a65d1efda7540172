#include "engine/bench.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <type_traits>
#include <utility>

#include "base/median.h"
#include "base/process_stats.h"
#include "base/progress.h"
#include "base/rng.h"
#include "base/strings.h"
#include "base/timer.h"
#include "engine/generator.h"
#include "kernels/affine_quant.h"
#include "kernels/hardware.h"
#include "kernels/matmul.h"
#include "model/draft_head.h"

namespace mtplx::engine {
namespace {

// Arbitrary valid ids: the cost of a step does not depend on which tokens it runs.
std::vector<int32_t> BenchTokens(int64_t first, int64_t count, int64_t vocab) {
  std::vector<int32_t> tokens(count);
  for (int64_t i = 0; i < count; ++i)
    tokens[i] = static_cast<int32_t>(((first + i) * 7919 + 11) % vocab);
  return tokens;
}

// Seconds of each call of `call(i)`, calling it until `min_seconds` of calls were timed (at least
// once, at most max_calls times); `reset(i)` runs untimed before each call (and may return a
// Status).
template <typename Reset, typename Call>
Result<std::vector<double>> SecondsOfCalls(double min_seconds, int64_t max_calls,
                                           const Reset& reset, const Call& call) {
  std::vector<double> seconds;
  double total = 0.0;
  do {
    const auto i = static_cast<int64_t>(seconds.size());
    if constexpr (std::is_void_v<std::invoke_result_t<const Reset&, int64_t>>) {
      reset(i);
    } else {
      MTPLX_RETURN_IF_ERROR(reset(i));
    }
    Timer timer;
    MTPLX_RETURN_IF_ERROR(call(i));
    seconds.push_back(timer.Seconds());
    total += seconds.back();
  } while (total < min_seconds && static_cast<int64_t>(seconds.size()) < max_calls);
  return seconds;
}

// Mean seconds per call of SecondsOfCalls.
template <typename Reset, typename Call>
Result<double> SecondsPerCall(double min_seconds, int64_t max_calls, const Reset& reset,
                              const Call& call) {
  MTPLX_ASSIGN_OR_RETURN(const std::vector<double> seconds,
                         SecondsOfCalls(min_seconds, max_calls, reset, call));
  double total = 0.0;
  for (double s : seconds) total += s;
  return total / static_cast<double>(seconds.size());
}

// Bytes of sequence state one step reads: every cached K and V row of each attention layer, and
// each DeltaNet layer's conv window and recurrent matrix.
uint64_t StateBytesRead(const state::StateLayout& layout, int64_t position) {
  uint64_t bytes = 0;
  for (bool attention : layout.is_attention)
    bytes += attention ? static_cast<uint64_t>(position * layout.kv_bytes_per_position())
                       : static_cast<uint64_t>(layout.conv_history * layout.conv_channels +
                                               layout.recurrent_size) *
                             sizeof(float);
  return bytes;
}

// One bench over one model: the states at the measured context and their snapshots, the
// samplers, and the order they run in.
class BenchRun {
 public:
  BenchRun(const model::Model& model, const BenchOptions& options, int64_t context)
      : model_(model),
        options_(options),
        context_(context),
        vocab_(model.config().vocab_size),
        window_(model.config().max_position_embeddings) {}

  Result<BenchReport> Run();

 private:
  int64_t ProgressSteps() const;
  void Tick() {
    if (progress_) progress_->Add(1);
  }
  Status PrepareContext();
  Status MeasureRound(std::vector<double>& decode, std::vector<double>& draft,
                      std::vector<std::vector<double>>& verify);
  Status MeasureSteps(BenchReport& report);
  Status MeasurePrefill(BenchReport& report);
  Result<std::vector<double>> DecodeSeconds();
  Result<double> DraftSeconds();
  Result<double> VerifySeconds(int rows);
  Result<double> PrefillSeconds(int64_t tokens);

  const model::Model& model_;
  const BenchOptions& options_;
  const int64_t context_, vocab_;
  const int64_t window_;  // max_position_embeddings
  std::unique_ptr<ProgressBar> progress_;
  std::unique_ptr<state::SequenceState> trunk_, mtp_;
  state::SequenceSnapshot trunk_at_context_, mtp_at_context_;
  std::vector<float> last_hidden_;  // trunk hidden of the last context row (fed to the draft)
  // The verify passes' tape and outputs, kept from pass to pass as a sequence keeps its own: a
  // fresh set would time the first touch of its pages (on the 9B shape ~10 ms for one row and
  // ~30 ms for four, a pass or two a sample), which the engine pays once.
  state::VerifyCapture verify_capture_;
  model::ForwardOutput verify_out_;
};

int64_t BenchRun::ProgressSteps() const {
  const int64_t per_round = 1 + (model_.has_mtp() ? 1 : 0) + options_.max_verify_rows;
  const int64_t prefills =
      std::count_if(options_.prefill_sizes.begin(), options_.prefill_sizes.end(),
                    [&](int64_t size) { return size <= window_; });
  if (options_.steps_only) return options_.rounds * per_round;
  return 2 + options_.rounds * (per_round + prefills);  // + the two bandwidth probes
}

// Trunk at `context` tokens; the MTP history holds the (hidden, next token) pairs of that prefix,
// as after a prefill in speculative decoding.
Status BenchRun::PrepareContext() {
  const int64_t h = model_.config().hidden_size;
  const std::vector<int32_t> tokens = BenchTokens(0, context_ + 1, vocab_);
  // Positions a synthetic context stands in for with zero rows; the rest are run.
  const int64_t skipped = options_.synthetic_context ? context_ - 1 : 0;
  trunk_ = model_.NewState();
  trunk_->ReserveKv(skipped);
  trunk_->Advance(skipped);
  model::ForwardOptions history;
  history.no_logits = true;
  model::ForwardOutput out;
  MTPLX_RETURN_IF_ERROR(
      model_.Forward(*trunk_, std::span<const int32_t>(tokens.data() + skipped, context_ - skipped),
                     history, &out));
  trunk_at_context_ = trunk_->Snapshot();
  last_hidden_.assign(out.hidden.end() - h, out.hidden.end());
  if (!model_.has_mtp()) return Status::Ok();
  mtp_ = model_.NewMtpState();
  // The drafter's history, (hidden p, token p + 1) for p < context - 1: all zero rows in a
  // synthetic context.
  mtp_->ReserveKv(skipped);
  mtp_->Advance(skipped);
  if (skipped == 0 && context_ > 1) {
    model::ForwardOutput mtp_out;
    history.mtp_output_rows = 0;
    MTPLX_RETURN_IF_ERROR(
        model_.ForwardMtp(*mtp_, std::span<const int32_t>(tokens.data() + 1, context_ - 1),
                          out.hidden.data(), history, &mtp_out));
  }
  mtp_at_context_ = mtp_->Snapshot();
  return Status::Ok();
}

// Plain decoding: one row with its logits, the state growing step by step from `context` and
// rewound to it every `run` steps, until the sample has lasted decode_sample_seconds. The seconds
// of each step.
Result<std::vector<double>> BenchRun::DecodeSeconds() {
  const int64_t room = window_ - context_;
  const int64_t run = std::clamp<int64_t>(room, 1, 256);
  const std::vector<int32_t> tokens = BenchTokens(context_, run, vocab_);
  model::ForwardOptions step;
  model::ForwardOutput out;
  // The KV caches are grown for every step first (untimed): growth re-lays a long context's
  // cache out once per 1.5x of positions, a cost a decode step at that context rarely pays, and
  // timing it would make a long context look orders of magnitude slower than it decodes.
  return SecondsOfCalls(
      std::max(options_.min_sample_seconds, options_.decode_sample_seconds), INT64_MAX,
      [&](int64_t i) {
        if (i % run > 0) return;
        trunk_->Restore(trunk_at_context_);
        trunk_->ReserveKv(context_ + run);
      },
      [&](int64_t i) {
        return model_.Forward(*trunk_, std::span<const int32_t>(&tokens[i % run], 1), step, &out);
      });
}

// Draft steps as a cycle runs them: right after a trunk step has streamed the model's weights
// through the caches (as the verify before a cycle's drafts has), a chain of kDraftChain steps,
// each from the head's own output for the draft before it, with logits from the drafter's head.
// The first steps read the drafter's weights from memory and later ones partly from the last-level
// cache. Repeating one step alone kept them cached and understated c: 0.048 on the x8 widened
// model (Intel Xeon, 2 threads), where the draft rounds of a run's depth-4 cycles cost 2.0, 1.8,
// 1.2 and 1.1 ms against a 20.7 ms plain step (c about 0.07). The median seconds of a chain's
// step.
Result<double> BenchRun::DraftSeconds() {
  constexpr int kDraftChain = 4;
  const std::vector<int32_t> tokens = BenchTokens(context_, kDraftChain + 1, vocab_);
  const int64_t h = model_.config().hidden_size;
  model::ForwardOptions last_row;
  last_row.all_logits = false;
  model::ForwardOutput trunk_out, out;
  const auto after_trunk_step = [&](int64_t) -> Status {
    trunk_->Restore(trunk_at_context_);
    mtp_->Restore(mtp_at_context_);
    return model_.Forward(*trunk_, std::span<const int32_t>(tokens.data(), 1), last_row,
                          &trunk_out);
  };
  model::ForwardOptions draft_row = last_row;
  draft_row.draft_head = true;
  std::vector<float> hidden;
  const auto chain = [&](int64_t) -> Status {
    hidden = last_hidden_;
    for (int j = 0; j < kDraftChain; ++j) {
      MTPLX_RETURN_IF_ERROR(model_.ForwardMtp(*mtp_, std::span<const int32_t>(&tokens[j + 1], 1),
                                              hidden.data(), draft_row, &out));
      hidden.assign(out.hidden.end() - h, out.hidden.end());
    }
    return Status::Ok();
  };
  MTPLX_ASSIGN_OR_RETURN(
      const std::vector<double> seconds,
      SecondsOfCalls(options_.min_sample_seconds, INT64_MAX, after_trunk_step, chain));
  return Median(seconds) / kDraftChain;  // the median, as the decode step it is compared with
}

// The verify pass of speculative decoding: `rows` rows, logits for all, per-row capture. Passes
// follow each other with the state advancing, as decode steps do: restoring the snapshot before
// each pass would leave the state it reads warm in cache, which a real cycle never sees (every
// forward streams the weights through the caches), and understate v(m).
Result<double> BenchRun::VerifySeconds(int rows) {
  const int64_t room = window_ - context_;
  const int64_t max_passes = std::clamp<int64_t>(room / rows, 1, 128);
  const std::vector<int32_t> tokens = BenchTokens(context_, max_passes * rows, vocab_);
  model::ForwardOptions verify;
  verify.capture = &verify_capture_;
  return SecondsPerCall(
      options_.min_sample_seconds, max_passes,
      [&](int64_t i) {
        if (i > 0) return;
        trunk_->Restore(trunk_at_context_);
        trunk_->ReserveKv(context_ + max_passes * rows);  // as DecodeSeconds
      },
      [&](int64_t i) {
        return model_.Forward(*trunk_, std::span<const int32_t>(&tokens[i * rows], rows), verify,
                              &verify_out_);
      });
}

// A fresh prompt of `tokens`, prefilled as GeneratePlain does: the body in chunks, then the last
// token alone.
Result<double> BenchRun::PrefillSeconds(int64_t tokens) {
  const std::vector<int32_t> prompt = BenchTokens(0, tokens, vocab_);
  std::unique_ptr<state::SequenceState> state;
  model::ForwardOptions body;
  body.all_logits = false;
  model::ForwardOutput out;
  return SecondsPerCall(
      0.0, 1, [&](int64_t) { state = model_.NewState(); },
      [&](int64_t) -> Status {
        for (const RowRange& r : PrefillPartition(0, tokens)) {
          MTPLX_RETURN_IF_ERROR(model_.Forward(
              *state, std::span<const int32_t>(prompt.data() + r.begin, r.count), body, &out));
        }
        return Status::Ok();
      });
}

// One sample of everything the ratios need, each ratio's two sides measured back to back.
Status BenchRun::MeasureRound(std::vector<double>& decode, std::vector<double>& draft,
                              std::vector<std::vector<double>>& verify) {
  MTPLX_ASSIGN_OR_RETURN(const std::vector<double> steps, DecodeSeconds());
  decode.insert(decode.end(), steps.begin(), steps.end());
  const double ar = Median(steps);
  Tick();
  if (model_.has_mtp()) {
    MTPLX_ASSIGN_OR_RETURN(const double d, DraftSeconds());
    draft.push_back(d / ar);
    Tick();
  }
  verify[0].push_back(1.0);  // v(1) = 1 by definition
  Tick();
  for (int m = 2; m <= options_.max_verify_rows; ++m) {
    MTPLX_ASSIGN_OR_RETURN(const double one, VerifySeconds(1));
    MTPLX_ASSIGN_OR_RETURN(const double many, VerifySeconds(m));
    verify[m - 1].push_back(many / one);
    Tick();
  }
  return Status::Ok();
}

// Decode, verify and draft at `context`, in interleaved rounds.
Status BenchRun::MeasureSteps(BenchReport& report) {
  MTPLX_RETURN_IF_ERROR(PrepareContext());
  // One untimed pass of the widest verify sizes the kept tape and outputs, as a sequence's first
  // cycle does.
  MTPLX_RETURN_IF_ERROR(VerifySeconds(options_.max_verify_rows).status());
  report.weight_bytes_per_token = model_.DecodeWeightBytes();
  report.state_bytes_per_token = StateBytesRead(trunk_->layout(), context_);
  std::vector<double> decode, draft;
  std::vector<std::vector<double>> verify(options_.max_verify_rows);
  for (int r = 0; r < options_.rounds; ++r)
    MTPLX_RETURN_IF_ERROR(MeasureRound(decode, draft, verify));
  // The median step of all rounds: a bus shared with other tenants slows some steps by half, and
  // a mean would follow how many of those a run happened to meet.
  report.decode_tok_s = 1.0 / Median(decode);
  for (const auto& samples : verify) report.verify_cost.push_back(Median(samples));
  if (model_.has_mtp())
    report.draft_cost_ratio = Median(draft);
  else
    report.notices.push_back("the checkpoint has no MTP head: no draft cost or projection");
  trunk_.reset();
  mtp_.reset();
  return Status::Ok();
}

Status BenchRun::MeasurePrefill(BenchReport& report) {
  for (int64_t size : options_.prefill_sizes) {
    if (size > window_) {
      report.notices.push_back(
          StrCat("prefill of ", size, " tokens skipped: the context window is ", window_));
      continue;
    }
    std::vector<double> seconds;
    for (int r = 0; r < options_.rounds; ++r) {
      MTPLX_ASSIGN_OR_RETURN(const double s, PrefillSeconds(size));
      seconds.push_back(s);
      Tick();
    }
    report.prefill_tok_s.emplace_back(size, static_cast<double>(size) / Median(seconds));
  }
  return Status::Ok();
}

// A quantized matrix of the model that every decoder layer has (the first MLP's up projection,
// else the output head), or nullptr.
const Matrix* RepresentativeMatrix(const model::Model& model) {
  for (const model::LayerWeights& layer : model.weights().layers)
    if (!layer.is_moe && layer.mlp.up.quantized) return &layer.mlp.up;
  const Matrix& head = model.weights().lm_head;
  return head.quantized ? &head : nullptr;
}

// The first `rows` rows of `source`, dequantized and quantized again as the model holds them (a
// panelled matrix has no row slices).
Result<std::unique_ptr<model::DraftHead>> MatrixSlice(const model::Model& model,
                                                      const Matrix& source, int64_t rows) {
  std::vector<float> dense(static_cast<size_t>(rows * source.cols));
  for (int64_t r = 0; r < rows; ++r)
    kernels::DequantizeRow(source, r, dense.data() + r * source.cols);
  MTPLX_ASSIGN_OR_RETURN(
      auto slice,
      model::DraftHead::Quantize(Matrix::Dense(rows, source.cols, DType::kF32, dense.data()),
                                 source.quant.bits, source.quant.group_size, model.pool()));
  if (model.activations() == kernels::Activations::kInt8 && kernels::PanelKernelAvailable())
    slice->RepackToPanels(model.pool(), /*streamed=*/false);
  return slice;
}

// Seconds of one matmul of m = 1..max_rows rows on `w`: the median call of each, since a call is
// short enough (0.1-1 ms) for one preemption of a worker to double it.
Result<std::vector<double>> SliceSeconds(const model::Model& model, const Matrix& w, int max_rows,
                                         double min_seconds) {
  SplitMix64 rng(7);
  std::vector<float> x(static_cast<size_t>(max_rows * w.cols)), y(max_rows * w.rows);
  for (float& v : x) v = static_cast<float>(rng.Uniform(-1.0, 1.0));
  std::vector<double> out;
  for (int m = 1; m <= max_rows; ++m) {
    MTPLX_ASSIGN_OR_RETURN(const std::vector<double> seconds,
                           SecondsOfCalls(
                               min_seconds, INT64_MAX, [](int64_t) {},
                               [&](int64_t) {
                                 kernels::MatMul(w, x.data(), m, y.data(), model.pool(),
                                                 model.activations());
                                 return Status::Ok();
                               }));
    out.push_back(Median(seconds));
  }
  return out;
}

// A(m) for m = 1..max_rows (see BenchReport::verify_bound): the kernel's time on a slice of the
// weights held in cache, scaled to the decode weights. A call also pays a fixed cost (waking the
// workers, preparing the activations, one thread's last panels while the other waits) that the
// scaling counts once per slice-sized piece of the weights, where the model pays it once per
// matrix, so the slice is as large as the caches allow: 4 MiB a thread when that fills at most
// half the last-level cache, else 1 MiB (a thread's L2). On the 9B 6-bit shape (2 threads, 32
// MiB L3) the 1 MiB slice gave A(4) 148 ms, the 4 MiB one 124 ms, and a 4-row verify of the whole
// model measured ~1.15 plain steps of 120 ms, below what the smaller slice put as its floor.
Result<std::vector<double>> MatmulArithmeticSeconds(const model::Model& model, int max_rows,
                                                    double min_seconds) {
  const Matrix* source = RepresentativeMatrix(model);
  if (!source) return std::vector<double>{};
  const int64_t threads = model.pool()->size();
  const uint64_t row_bytes = std::max<uint64_t>(source->StorageBytes() / source->rows, 1);
  const uint64_t cache = kernels::LastLevelCacheBytes();
  const uint64_t per_thread = cache > 0 && (uint64_t{4} << 20) * threads <= cache / 2
                                  ? uint64_t{4} << 20
                                  : uint64_t{1} << 20;
  const auto wanted = static_cast<int64_t>(per_thread * threads / row_bytes);
  const int64_t rows = std::min(source->rows, std::max<int64_t>(16, wanted / 16 * 16));
  MTPLX_ASSIGN_OR_RETURN(auto slice, MatrixSlice(model, *source, rows));
  MTPLX_ASSIGN_OR_RETURN(std::vector<double> seconds,
                         SliceSeconds(model, slice->matrix(), max_rows, min_seconds));
  const double scale = static_cast<double>(model.DecodeWeightBytes()) /
                       static_cast<double>(slice->matrix().StorageBytes());
  for (double& s : seconds) s *= scale;
  return seconds;
}

Result<BenchReport> BenchRun::Run() {
  BenchReport report;
  report.threads = model_.pool()->size();
  report.context = context_;
  report.synthetic_context = options_.synthetic_context;
  report.resident_bytes = ReadProcessStats().resident_bytes;  // before any bench allocation
  if (options_.show_progress)
    progress_ = std::make_unique<ProgressBar>("bench", ProgressSteps(), "steps");
  if (options_.steps_only) {
    MTPLX_RETURN_IF_ERROR(MeasureSteps(report));
    if (progress_) progress_->Finish();
    return report;
  }
  BandwidthOptions bandwidth;
  bandwidth.bytes = options_.bandwidth_bytes;
  report.bandwidth = MeasureMemoryBandwidth(*model_.pool(), bandwidth);
  Tick();
  MTPLX_RETURN_IF_ERROR(MeasureSteps(report));
  bandwidth.triad = false;  // the second probe compares read rates only
  report.read_gbs_after_steps = MeasureMemoryBandwidth(*model_.pool(), bandwidth).read_gbs;
  Tick();
  if (auto notice = BandwidthMovedNotice(report.bandwidth.read_gbs, report.read_gbs_after_steps))
    report.notices.push_back(*notice);
  MTPLX_ASSIGN_OR_RETURN(
      report.arithmetic_seconds,
      MatmulArithmeticSeconds(model_, options_.max_verify_rows, options_.min_sample_seconds));
  report.verify_bound = VerifyBound(report);
  MTPLX_RETURN_IF_ERROR(MeasurePrefill(report));
  if (progress_) progress_->Finish();
  return report;
}

}  // namespace

std::vector<double> VerifyBound(const BenchReport& report) {
  std::vector<double> bound;
  if (report.arithmetic_seconds.empty() || report.bandwidth.read_gbs <= 0) return bound;
  const double stream =
      static_cast<double>(report.weight_bytes_per_token) / (report.bandwidth.read_gbs * 1e9);
  const double one = std::max(stream, report.arithmetic_seconds[0]);
  for (double a : report.arithmetic_seconds) bound.push_back(std::max(stream, a) / one);
  return bound;
}

std::optional<std::string> BandwidthMovedNotice(double before_gbs, double after_gbs) {
  if (before_gbs <= 0 || after_gbs <= 0) return std::nullopt;
  if (std::abs(after_gbs - before_gbs) <= kBandwidthMovedFraction * before_gbs) return std::nullopt;
  return StrFormat(
      "the memory read rate moved during the run (%.1f GB/s before the step samples, %.1f after): "
      "the step times may mix two rates, so compare runs whose probes agree",
      before_gbs, after_gbs);
}

double BenchReport::bandwidth_utilization() const {
  return bandwidth.read_gbs > 0
             ? static_cast<double>(bytes_per_token()) * decode_tok_s / (bandwidth.read_gbs * 1e9)
             : 0.0;
}

Result<BenchReport> RunBench(const model::Model& model, const BenchOptions& options) {
  if (options.rounds < 1) return InvalidArgument("bench: rounds must be at least 1");
  if (options.max_verify_rows < 1) return InvalidArgument("bench: verify rows must be at least 1");
  for (int64_t size : options.prefill_sizes)
    if (size < 1) return InvalidArgument(StrCat("bench: prefill size ", size, " is not positive"));
  // The verify rows must fit after the context; a small window shrinks the context.
  const int64_t window = model.config().max_position_embeddings;
  const int64_t context = std::min(options.context, window - options.max_verify_rows);
  if (context < 1)
    return OutOfRange(StrCat("bench: the context window (", window, ") cannot hold ",
                             options.max_verify_rows, " verify rows"));
  BenchRun run(model, options, context);
  return run.Run();
}

Result<StepCosts> MeasureStepCosts(const model::Model& model, int max_rows, int rounds,
                                   double decode_seconds) {
  BenchOptions bench;
  bench.max_verify_rows = max_rows;
  bench.rounds = rounds;
  bench.min_sample_seconds = 0.02;
  bench.decode_sample_seconds = decode_seconds;
  bench.prefill_sizes.clear();
  bench.steps_only = true;
  MTPLX_ASSIGN_OR_RETURN(const BenchReport report, RunBench(model, bench));
  StepCosts costs;
  costs.verify = report.verify_cost;
  for (size_t i = 1; i < costs.verify.size(); ++i)
    costs.verify[i] = std::max(costs.verify[i], costs.verify[i - 1]);
  costs.draft = report.draft_cost_ratio.value_or(0.0);
  return costs;
}

std::optional<double> ProjectedSpeedup(std::span<const double> acceptance,
                                       std::span<const double> verify_cost, double draft_cost_ratio,
                                       int depth) {
  if (depth < 1 || acceptance.empty() || static_cast<int>(verify_cost.size()) < depth + 1)
    return std::nullopt;
  double expected = 1.0, reach = 1.0;
  for (int d = 0; d < depth; ++d) {
    reach *= acceptance[std::min<size_t>(d, acceptance.size() - 1)];
    expected += reach;
  }
  return expected / (verify_cost[depth] + depth * draft_cost_ratio);
}

}  // namespace mtplx::engine
