// `mtplx tune`: measures plain decoding against each draft depth on this machine and stores the
// winner in ~/.mtplx/tuning.json, where run, chat, serve and start find it.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/progress.h"
#include "base/strings.h"
#include "cli/commands.h"
#include "cli/default_model.h"
#include "cli/tuning.h"
#include "engine/bench.h"
#include "engine/tune.h"
#include "io/generation_config.h"
#include "pack/runtime_manifest.h"

namespace mtplx::cli {
namespace {

using Json = nlohmann::json;

struct TuneFlags {
  std::string model_dir;
  std::string depths;         // --depths as given
  bool depths_given = false;  // else 1,2,3 and deeper while the deepest wins (mtp_depth_max)
  int max_tokens = 512;
  int threads = 0;
  bool retune = false;
  bool json = false;
  bool quiet = false;
};

Result<std::vector<int>> ParseDepths(const std::string& text) {
  std::vector<int> depths;
  for (const std::string& part : StrSplit(text, ',')) {
    char* end = nullptr;
    const long d = std::strtol(part.c_str(), &end, 10);
    if (part.empty() || *end != '\0' || d < 1 || d > pack::kMaxMtpDepth)
      return InvalidArgument(
          StrCat("--depths: '", part, "' is not a depth in 1..", pack::kMaxMtpDepth));
    depths.push_back(static_cast<int>(d));
  }
  return depths;
}

std::string JoinInts(const std::vector<int>& values) {
  std::vector<std::string> parts;
  for (int v : values) parts.push_back(std::to_string(v));
  return StrJoin(parts, ",");
}

// Rows a server's batched step verifies at most (--parallel 4 at depth 3): the draft plan's
// prices are measured up to here and extrapolated past it.
constexpr int kStepCostRows = 16;

// What batched steps cost at the engine's thread count, for a server's draft plan.
Result<engine::StepCosts> MeasureStepCosts(const engine::Engine& engine) {
  // The draft's price only: tune times decoding itself.
  return engine::MeasureStepCosts(engine.model(), kStepCostRows, /*rounds=*/2,
                                  /*decode_seconds=*/0.2);
}

io::TuningRecord ToRecord(const engine::TuneReport& report, int max_tokens, int threads,
                          const std::vector<engine::ThreadMeasurement>& thread_results) {
  io::TuningRecord record;
  record.best_depth = report.best_depth;
  record.threads = threads;
  for (const engine::ThreadMeasurement& t : thread_results)
    record.thread_results.push_back({t.threads, t.tok_s});
  record.verdict = report.verdict;
  record.max_tokens = max_tokens;
  record.measured_at = pack::UtcTimestamp();
  for (const engine::TuneMeasurement& m : report.results)
    record.results.push_back(
        {m.depth, m.tok_s, m.deepest_acceptance(), m.depth ? m.tokens_per_cycle : 1.0, m.speedup});
  return record;
}

Json RecordJson(const io::TuningRecord& r, const io::TuningKey& key, bool stored_before) {
  Json results = Json::array();
  for (const io::TuningResult& x : r.results)
    results.push_back({{"depth", x.depth},
                       {"tok_s", x.tok_s},
                       {"speedup", x.speedup},
                       {"acceptance", x.acceptance}});
  Json threads = Json::array();
  for (const io::TuningThreadResult& t : r.thread_results)
    threads.push_back({{"threads", t.threads}, {"tok_s", t.tok_s}});
  return {{"verdict", r.verdict},
          {"best_depth", r.best_depth},
          {"threads", r.threads},
          {"thread_results", threads},
          {"step_verify_costs", r.step_verify_costs},
          {"step_draft_cost", r.step_draft_cost},
          {"results", results},
          {"measured_at", r.measured_at},
          {"key", key.ToString()},
          {"store", io::TuningStorePath()},
          {"from_store", stored_before}};
}

void PrintTable(const engine::TuneReport& report) {
  std::printf("        tok/s     x AR   acceptance by depth   tokens/cycle\n");
  for (const engine::TuneMeasurement& m : report.results) {
    std::string acceptance;
    for (double a : m.acceptance_by_depth)
      acceptance += StrFormat("%s%.2f", acceptance.empty() ? "" : " ", a);
    std::printf("  %-4s %8.2f  %6.2fx   %-20s  %s\n",
                m.depth == 0 ? "AR" : StrCat("D", m.depth).c_str(), m.tok_s, m.speedup,
                acceptance.c_str(), m.depth ? StrFormat("%.2f", m.tokens_per_cycle).c_str() : "");
  }
}

struct DepthSearch {
  std::vector<int> depths;  // measured first
  int climb_to = 0;         // then deeper, one at a time while the deepest wins, up to this
};

// The depths to measure: --depths (those only), else 1, 2, 3 and deeper while the deepest wins;
// none past the pack's mtp_depth_max.
Result<DepthSearch> DepthsToMeasure(const TuneFlags& f) {
  MTPLX_ASSIGN_OR_RETURN(io::GenerationDefaults pack, io::LoadGenerationDefaults(f.model_dir));
  if (!f.depths_given) {
    DepthSearch search;
    for (int d = 1; d <= std::min(3, pack.mtp_depth_max); ++d) search.depths.push_back(d);
    search.climb_to = pack.mtp_depth_max;
    return search;
  }
  MTPLX_ASSIGN_OR_RETURN(std::vector<int> depths, ParseDepths(f.depths));
  for (int d : depths)
    if (d > pack.mtp_depth_max)
      return InvalidArgument(StrCat("--depths: ", d, " is above this pack's mtp_depth_max (",
                                    pack.mtp_depth_max, ", mtplx_runtime.json)"));
  return DepthSearch{depths, 0};
}

int RunTune(TuneFlags f) {
  auto model = ResolveModelDir(f.model_dir);
  if (!model.ok()) return ReportError(model.status().message());
  f.model_dir = *model;
  auto search = DepthsToMeasure(f);
  if (!search.ok()) return ReportError(search.status().message());
  const std::vector<int>& depths = search->depths;
  f.depths = JoinInts(depths);
  if (search->climb_to > depths.back())
    f.depths += StrCat(" (then deeper while the deepest wins, up to ", search->climb_to, ")");
  auto key = TuningKeyFor(f.model_dir, f.threads);
  if (!key.ok()) return ReportError(key.status().message());
  const std::string store = io::TuningStorePath();
  if (!f.retune) {
    if (auto stored = io::LoadTuning(store, *key)) {
      if (f.json) {
        std::printf("%s\n", RecordJson(*stored, *key, true).dump(2).c_str());
      } else {
        std::printf("Already tuned on this machine (%s): %s\n", stored->measured_at.c_str(),
                    stored->verdict.c_str());
        std::printf("mtplx tune --retune measures again.\n");
      }
      return 0;
    }
  }
  // With --threads 0, plain decoding at each candidate count first (fewer prompts and tokens);
  // the depths are then measured at the winner.
  const std::vector<int> candidates =
      f.threads > 0 ? std::vector<int>{f.threads} : engine::ThreadCandidates(ResolvedThreads(0));
  const bool choose_threads = candidates.size() > 1;
  std::vector<std::string> thread_prompts(engine::TunePrompts().begin(),
                                          engine::TunePrompts().begin() + 2);
  const uint64_t runs = (choose_threads ? candidates.size() * thread_prompts.size() : 0) +
                        engine::TunePrompts().size() * (depths.size() + 1) + 1;
  if (!f.json && !f.quiet)
    std::printf(
        "mtplx tune: %s on %s; %splain decoding and depths %s on %zu coding prompts x %d "
        "tokens\n",
        key->model.c_str(), key->cpu.c_str(),
        choose_threads ? StrCat("threads ", JoinInts(candidates), ", then ").c_str()
                       : StrCat(candidates.front(), " threads; ").c_str(),
        f.depths.c_str(), engine::TunePrompts().size(), f.max_tokens);
  std::unique_ptr<engine::Engine> engine;
  int engine_threads = 0;
  bool first_load = true;
  const auto open = [&](int threads) -> Status {
    if (engine && engine_threads == threads) return Status::Ok();
    engine.reset();  // one model in memory at a time
    engine::EngineOptions options;
    options.model_dir = f.model_dir;
    options.load.threads = threads;
    options.load.show_progress = first_load && !f.quiet && !f.json;
    options.skip_mtp_check = true;  // tune measures the head itself: a broken one collapses
    first_load = false;
    MTPLX_ASSIGN_OR_RETURN(engine, engine::Engine::Open(options));
    engine_threads = threads;
    return Status::Ok();
  };
  ProgressBar progress("tuning", runs, "runs", !f.quiet && !f.json);
  uint64_t finished = 0;
  const auto step = [&](int done, int) { progress.Set(finished + static_cast<uint64_t>(done)); };
  // Batched steps are priced at the thread count a server uses (the key's), once.
  engine::StepCosts step_costs;
  bool step_costs_measured = false;
  const auto measure_step_costs = [&]() -> Status {
    if (step_costs_measured || engine_threads != key->threads) return Status::Ok();
    MTPLX_ASSIGN_OR_RETURN(step_costs, MeasureStepCosts(*engine));
    step_costs_measured = true;
    progress.Set(++finished);
    return Status::Ok();
  };
  std::vector<engine::ThreadMeasurement> thread_results;
  if (choose_threads) {
    engine::TuneOptions plain;
    plain.depths = {};
    plain.max_tokens = std::min(f.max_tokens, 128);
    plain.prompts = thread_prompts;
    for (int threads : candidates) {
      if (Status s = open(threads); !s.ok()) return ReportError(s.message());
      auto measured = engine::RunTune(*engine, plain, step);
      if (!measured.ok()) return ReportError(measured.status().message());
      thread_results.push_back({threads, measured->results.front().tok_s});
      finished += thread_prompts.size();
      if (Status s = measure_step_costs(); !s.ok()) return ReportError(s.message());
    }
  }
  const int threads = choose_threads ? engine::ChooseThreads(thread_results) : candidates.front();
  if (Status s = open(threads); !s.ok()) return ReportError(s.message());
  engine::TuneOptions tune;
  tune.depths = depths;
  tune.climb_to = search->climb_to;
  tune.max_tokens = f.max_tokens;
  const uint64_t announced = engine::TunePrompts().size() * (depths.size() + 1);
  uint64_t tune_runs = 0;
  const auto tune_step = [&](int done, int total) {
    tune_runs = static_cast<uint64_t>(done);
    if (static_cast<uint64_t>(total) != announced)
      progress.SetTotal(runs + static_cast<uint64_t>(total) - announced);
    progress.Set(finished + tune_runs);
  };
  auto report = engine::RunTune(*engine, tune, tune_step);
  if (!report.ok()) return ReportError(report.status().message());
  finished += tune_runs;
  if (Status s = measure_step_costs(); !s.ok()) return ReportError(s.message());
  progress.Finish();
  io::TuningRecord record = ToRecord(*report, f.max_tokens, threads, thread_results);
  record.step_verify_costs = step_costs.verify;
  record.step_draft_cost = step_costs.draft;
  if (Status s = io::StoreTuning(store, *key, record); !s.ok()) return ReportError(s.message());
  if (f.json) {
    std::printf("%s\n", RecordJson(record, *key, false).dump(2).c_str());
    return 0;
  }
  if (choose_threads) {
    std::printf("  threads (plain decoding):");
    for (const engine::ThreadMeasurement& t : thread_results)
      std::printf("  %d -> %.2f tok/s", t.threads, t.tok_s);
    std::printf("; keeps %d\n", threads);
  }
  PrintTable(*report);
  if (step_costs.verify.size() >= 16)
    std::printf(
        "  batched steps (%d threads, in plain steps): v(4) %.2f  v(8) %.2f  v(16) %.2f;"
        " draft round %.3f\n",
        key->threads, step_costs.verify[3], step_costs.verify[7], step_costs.verify[15],
        step_costs.draft);
  std::printf("%s\nStored in %s: run, chat, serve and start use it on this machine.\n",
              report->verdict.c_str(), store.c_str());
  return 0;
}

}  // namespace

Runner AddTuneCommand(CLI::App& app) {
  auto f = std::make_shared<TuneFlags>();
  CLI::App* cmd = app.add_subcommand(
      "tune", "Measure plain decoding against each MTP depth here and keep the fastest");
  cmd->add_option("--model", f->model_dir, "Model folder (default: the bundled model)");
  CLI::Option* depths =
      cmd->add_option("--depths", f->depths,
                      StrCat("Depths to measure, each 1..", pack::kMaxMtpDepth,
                             " and at most the pack's mtp_depth_max (default 1,2,3, then deeper "
                             "while the deepest is the fastest)"));
  cmd->add_option("--max-tokens", f->max_tokens, "Tokens per prompt and mode (default 512)")
      ->check(CLI::Range(16, 65536));
  cmd->add_option("--threads", f->threads,
                  "Worker threads (0: measure all, 3/4 and 1/2 of the cores and keep the fastest)")
      ->check(ThreadCount());
  cmd->add_flag("--retune", f->retune, "Measure again even when a result is stored");
  cmd->add_flag("--json", f->json, "One JSON object: verdict, best_depth, results");
  cmd->add_flag("--quiet", f->quiet, "No progress bar");
  return [f, depths] {
    f->depths_given = depths->count() > 0;
    return RunTune(*f);
  };
}

}  // namespace mtplx::cli
