#include "engine/tune.h"

#include <algorithm>

#include "base/median.h"
#include "base/strings.h"

namespace mtplx::engine {
namespace {

constexpr double kNearTie = 0.02;
constexpr double kCollapsedAcceptance = 0.05;

void Accumulate(TuneMeasurement& m, const GenerateResult& r) {
  m.tokens += r.stats.completion_tokens;
  m.seconds += r.stats.decode_seconds;
  m.prompt_tok_s.push_back(
      r.stats.decode_seconds > 0 ? r.stats.completion_tokens / r.stats.decode_seconds : 0.0);
}

// The order of the modes on prompt p: as given on even prompts, reversed on odd ones, so a
// machine that speeds up or slows down through a pair of prompts favours no mode.
std::vector<size_t> ModeOrder(size_t modes, size_t p) {
  std::vector<size_t> order(modes);
  for (size_t i = 0; i < modes; ++i) order[i] = p % 2 ? modes - 1 - i : i;
  return order;
}

}  // namespace

const std::vector<std::string>& TunePrompts() {
  static const std::vector<std::string> prompts = {
      "Write a Python function that reads a CSV file and returns its rows as dictionaries.",
      "def binary_search(items, target):",
      "Implement a class Stack in Python with push, pop, peek and is_empty methods.",
      "Write a function that counts the words in a text file and prints the ten most common.",
  };
  return prompts;
}

std::vector<int> ThreadCandidates(int hardware) {
  std::vector<int> candidates;
  for (int t : {hardware, hardware * 3 / 4, hardware / 2})
    if (t >= 1 && std::find(candidates.begin(), candidates.end(), t) == candidates.end())
      candidates.push_back(t);
  return candidates;
}

int ChooseThreads(const std::vector<ThreadMeasurement>& results) {
  double fastest = 0.0;
  for (const ThreadMeasurement& m : results) fastest = std::max(fastest, m.tok_s);
  int best = 0;
  for (const ThreadMeasurement& m : results)
    if (m.tok_s > 0 && m.tok_s >= fastest * (1.0 - kNearTie) && (best == 0 || m.threads < best))
      best = m.threads;
  return best;
}

double MedianPairedSpeedup(const std::vector<double>& mode_tok_s,
                           const std::vector<double>& plain_tok_s) {
  if (mode_tok_s.empty() || mode_tok_s.size() != plain_tok_s.size()) return 0.0;
  std::vector<double> ratios;
  for (size_t p = 0; p < mode_tok_s.size(); ++p) {
    if (mode_tok_s[p] <= 0 || plain_tok_s[p] <= 0) return 0.0;
    ratios.push_back(mode_tok_s[p] / plain_tok_s[p]);
  }
  return Median(std::move(ratios));
}

int ChooseDepth(const std::vector<TuneMeasurement>& results, std::string* verdict) {
  const auto plain = std::find_if(results.begin(), results.end(),
                                  [](const TuneMeasurement& m) { return m.depth == 0; });
  if (plain == results.end()) {
    if (verdict) *verdict = "plain decoding was not measured";
    return 0;
  }
  const auto candidate = [](const TuneMeasurement& m) {
    return m.depth > 0 && m.speedup > 1.0 && m.deepest_acceptance() > kCollapsedAcceptance;
  };
  double fastest = 0.0;
  for (const TuneMeasurement& m : results)
    if (candidate(m)) fastest = std::max(fastest, m.speedup);
  int best = 0;
  for (const TuneMeasurement& m : results)
    if (candidate(m) && m.speedup >= fastest * (1.0 - kNearTie)) best = std::max(best, m.depth);
  if (verdict) {
    if (best == 0) {
      *verdict = "No MTP depth beat plain decoding on this machine: plain decoding is used";
    } else {
      const auto it = std::find_if(results.begin(), results.end(),
                                   [&](const TuneMeasurement& m) { return m.depth == best; });
      *verdict = StrFormat("Best for this machine: D%d, %.2fx plain decoding", best, it->speedup);
    }
  }
  return best;
}

int NextClimbDepth(const std::vector<TuneMeasurement>& results, int best_depth, int climb_to) {
  int deepest = 0;
  for (const TuneMeasurement& m : results) deepest = std::max(deepest, m.depth);
  return deepest > 0 && best_depth == deepest && deepest < climb_to ? deepest + 1 : 0;
}

namespace {

// Adds one speculative run's counts to `total`.
void AddSpeculativeStats(SpeculativeStats& total, const SpeculativeStats& run) {
  total.depth = run.depth;
  total.proposed_by_depth.resize(run.proposed_by_depth.size());
  total.accepted_by_depth.resize(run.accepted_by_depth.size());
  for (size_t k = 0; k < total.proposed_by_depth.size(); ++k) {
    total.proposed_by_depth[k] += run.proposed_by_depth[k];
    total.accepted_by_depth[k] += run.accepted_by_depth[k];
  }
  total.cycles += run.cycles;
  total.tokens_per_cycle.resize(run.tokens_per_cycle.size());
  for (size_t k = 0; k < total.tokens_per_cycle.size(); ++k)
    total.tokens_per_cycle[k] += run.tokens_per_cycle[k];
}

// One round: every prompt runs each mode of `depths` (0: plain decoding, which must come first)
// back to back; each mode's speedup is paired with this round's plain decoding.
Result<std::vector<TuneMeasurement>> MeasureRound(const Engine& engine,
                                                  const std::vector<int>& depths,
                                                  const std::vector<std::string>& prompts,
                                                  const TuneOptions& options,
                                                  const std::function<void()>& run_done) {
  const model::Model& model = engine.model();
  std::vector<TuneMeasurement> results(depths.size());
  for (size_t i = 0; i < depths.size(); ++i) results[i].depth = depths[i];
  std::vector<SpeculativeStats> spec(depths.size());
  for (size_t p = 0; p < prompts.size(); ++p) {
    Request request = engine.NewRequest();
    chat::Message user;
    user.role = "user";
    user.content = prompts[p];
    request.conversation.messages = {user};
    MTPLX_ASSIGN_OR_RETURN(std::vector<int32_t> prompt, engine.PromptTokens(request));
    GenerateRequest g;
    g.prompt = std::move(prompt);
    g.sampling = request.sampling;
    g.seed = options.seed;
    g.max_tokens = options.max_tokens;  // no stop ids: every run generates max_tokens
    for (size_t i : ModeOrder(depths.size(), p)) {
      if (depths[i] == 0) {
        MTPLX_ASSIGN_OR_RETURN(GenerateResult r, GeneratePlain(model, g, nullptr));
        Accumulate(results[i], r);
      } else {
        SpeculativeOptions o;
        o.depth = depths[i];
        o.pre_norm_hidden = engine.options().pre_norm_hidden;
        MTPLX_ASSIGN_OR_RETURN(SpeculativeResult r, GenerateSpeculative(model, g, o, nullptr));
        Accumulate(results[i], r.result);
        AddSpeculativeStats(spec[i], r.speculative);
      }
      if (run_done) run_done();
    }
  }
  for (size_t i = 0; i < depths.size(); ++i) {
    TuneMeasurement& m = results[i];
    m.tok_s = m.seconds > 0 ? static_cast<double>(m.tokens) / m.seconds : 0.0;
    m.speedup = MedianPairedSpeedup(m.prompt_tok_s, results.front().prompt_tok_s);
    if (depths[i] > 0) {
      m.acceptance_by_depth = spec[i].AcceptanceByDepth();
      m.tokens_per_cycle = spec[i].MeanTokensPerCycle();
    }
  }
  return results;
}

}  // namespace

Result<TuneReport> RunTune(const Engine& engine, const TuneOptions& options,
                           const std::function<void(int, int)>& progress) {
  if (!engine.model().has_mtp())
    return FailedPrecondition("this model has no MTP head: nothing to tune");
  for (int d : options.depths)
    if (d < 1 || d > engine.max_depth())
      return InvalidArgument(StrCat("depth ", d, " is outside 1..", engine.max_depth(),
                                    " (this pack's mtp_depth_max)"));
  const std::vector<std::string>& prompts =
      options.prompts.empty() ? TunePrompts() : options.prompts;
  const int climb_to = std::min(options.climb_to, engine.max_depth());
  std::vector<int> depths = options.depths;
  depths.insert(depths.begin(), 0);
  int total = static_cast<int>(prompts.size() * depths.size());
  int done = 0;
  const auto run_done = [&] {
    if (progress) progress(++done, total);
  };
  TuneReport report;
  MTPLX_ASSIGN_OR_RETURN(report.results, MeasureRound(engine, depths, prompts, options, run_done));
  report.best_depth = ChooseDepth(report.results, &report.verdict);
  // Climbing: plain decoding is measured again beside each deeper depth, so the new depth's
  // ratio is paired within its own round like the others'.
  for (int next = NextClimbDepth(report.results, report.best_depth, climb_to); next > 0;
       next = NextClimbDepth(report.results, report.best_depth, climb_to)) {
    total += static_cast<int>(prompts.size() * 2);
    MTPLX_ASSIGN_OR_RETURN(std::vector<TuneMeasurement> round,
                           MeasureRound(engine, {0, next}, prompts, options, run_done));
    TuneMeasurement& plain = report.results.front();
    plain.tokens += round.front().tokens;
    plain.seconds += round.front().seconds;
    plain.tok_s = plain.seconds > 0 ? static_cast<double>(plain.tokens) / plain.seconds : 0.0;
    report.results.push_back(std::move(round.back()));
    report.best_depth = ChooseDepth(report.results, &report.verdict);
  }
  return report;
}

}  // namespace mtplx::engine
