// `mtplx bench`: memory bandwidth, decode cost, verify and draft cost ratios, prefill speed, and
// the speedup speculation would give at an acceptance profile. The measuring is in engine/bench.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/strings.h"
#include "cli/commands.h"
#include "cli/default_model.h"
#include "cli/session.h"
#include "engine/bench.h"
#include "model/model.h"

namespace mtplx::cli {
namespace {

constexpr int kMaxProjectedDepth = 3;

struct BenchFlags {
  std::string model_dir;
  int threads = 0;
  bool json = false;
  bool quiet = false;
  std::string acceptance = "0.94,0.81,0.7";
  std::string prefill = "512,2048";
  int repeats = 5;
  int64_t context = 64;
  bool synthetic_context = false;
  int verify_rows = 8;  // v(1..8); depth D needs v(D + 1), B batched sequences v(B (D + 1))
  uint64_t bandwidth_mib = 512;
  // Loaded as `run` loads the model, so the numbers are the ones generation sees.
  std::string activations = GenerationFlags().activations;
  int draft_head_bits = GenerationFlags().draft_head_bits;
  int draft_layer_bits = GenerationFlags().draft_layer_bits;
  int64_t draft_vocab = GenerationFlags().draft_vocab;
  int draft_group_size = GenerationFlags().draft_group_size;
  std::string kv_cache = GenerationFlags().kv_cache;
};

// "0.9,0.8" -> {0.9, 0.8}; each value within [low, high].
Result<std::vector<double>> ParseList(const std::string& flag, const std::string& text, double low,
                                      double high) {
  std::vector<double> values;
  for (const std::string& part : StrSplit(text, ',')) {
    char* end = nullptr;
    const double value = std::strtod(part.c_str(), &end);
    if (part.empty() || *end != '\0' || !(value >= low && value <= high))
      return InvalidArgument(
          StrCat(flag, ": '", part, "' is not a number in [", low, ", ", high, "]"));
    values.push_back(value);
  }
  return values;
}

Result<std::vector<int64_t>> ParsePrefill(const std::string& text) {
  if (text == "none") return std::vector<int64_t>{};
  MTPLX_ASSIGN_OR_RETURN(std::vector<double> sizes, ParseList("--prefill", text, 1, 1e7));
  std::vector<int64_t> out;
  for (double size : sizes) {
    if (size != std::floor(size))
      return InvalidArgument(StrCat("--prefill: ", size, " is not a whole number of tokens"));
    out.push_back(static_cast<int64_t>(size));
  }
  return out;
}

const char* ActivationsName(const model::Model& m) {
  return m.activations() == kernels::Activations::kF32 ? "f32" : "int8";
}

// Projected speedup by depth (1..3), or null without a draft cost.
nlohmann::json Projection(const engine::BenchReport& r, const std::vector<double>& acceptance) {
  if (!r.draft_cost_ratio) return nullptr;
  nlohmann::json out = nlohmann::json::object();
  for (int depth = 1; depth <= kMaxProjectedDepth; ++depth) {
    const auto speedup =
        engine::ProjectedSpeedup(acceptance, r.verify_cost, *r.draft_cost_ratio, depth);
    out[std::to_string(depth)] = speedup ? nlohmann::json(*speedup) : nlohmann::json(nullptr);
  }
  return out;
}

// {"1": values[0], "2": values[1], ...}: quantities by row count m.
nlohmann::json Indexed(const std::vector<double>& values) {
  nlohmann::json out = nlohmann::json::object();
  for (size_t i = 0; i < values.size(); ++i) out[std::to_string(i + 1)] = values[i];
  return out;
}

nlohmann::json ReportJson(const engine::BenchReport& r, const model::Model& m,
                          const std::vector<double>& acceptance) {
  nlohmann::json verify = Indexed(r.verify_cost), prefill = nlohmann::json::object();
  for (const auto& [tokens, tok_s] : r.prefill_tok_s) prefill[std::to_string(tokens)] = tok_s;
  return {{"model", m.dir()},
          {"threads", r.threads},
          {"context", r.context},
          {"synthetic_context", r.synthetic_context},
          {"weight_bytes", m.weight_bytes()},
          {"load_s", m.load_seconds()},
          {"load_phases_s",
           {{"read", m.load_phases().read},
            {"draft_head", m.load_phases().draft_head},
            {"repack", m.load_phases().repack}}},
          {"activations", ActivationsName(m)},
          {"kv_cache", kernels::KvTypeName(m.kv_type())},
          {"kernels", model::Model::KernelsName()},
          {"draft_head_bits", m.draft_head_bits()},
          {"draft_layer_bits", m.draft_layer_bits()},
          {"draft_vocab", m.draft_vocab()},
          {"resident_bytes", r.resident_bytes},
          {"read_bandwidth_gbs", r.bandwidth.read_gbs},
          {"read_bandwidth_after_steps_gbs", r.read_gbs_after_steps},
          {"triad_bandwidth_gbs", r.bandwidth.triad_gbs},
          {"bandwidth_bytes", r.bandwidth.bytes},
          {"decode_tok_s", r.decode_tok_s},
          {"bytes_per_token", r.bytes_per_token()},
          {"weight_bytes_per_token", r.weight_bytes_per_token},
          {"state_bytes_per_token", r.state_bytes_per_token},
          {"bandwidth_utilization", r.bandwidth_utilization()},
          {"verify_cost", verify},
          {"verify_bound", Indexed(r.verify_bound)},
          {"arithmetic_s", Indexed(r.arithmetic_seconds)},
          {"draft_cost_ratio",
           r.draft_cost_ratio ? nlohmann::json(*r.draft_cost_ratio) : nlohmann::json(nullptr)},
          {"prefill_tok_s", prefill},
          {"acceptance", acceptance},
          {"projected_speedup", Projection(r, acceptance)},
          {"notices", r.notices}};
}

// Decimal units, as the bandwidth figures use: "6.50 GB", "3.08 MB".
std::string DecimalBytes(uint64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (b >= 1e9) return StrFormat("%.2f GB", b / 1e9);
  if (b >= 1e6) return StrFormat("%.2f MB", b / 1e6);
  return StrFormat("%.1f kB", b / 1e3);
}

void PrintTable(const engine::BenchReport& r, const model::Model& m,
                const std::vector<double>& acceptance) {
  const std::string head =
      (m.draft_head_bits() ? StrCat(m.draft_head_bits(), "-bit draft head")
                           : "model's draft head") +
      (m.draft_layer_bits() ? StrCat(", ", m.draft_layer_bits(), "-bit draft layer") : "");
  std::printf(
      "mtplx bench: %s (%d threads, context %lld, %s activations, %s KV cache, %s kernels, %s)\n",
      m.dir().c_str(), r.threads, static_cast<long long>(r.context), ActivationsName(m),
      kernels::KvTypeName(m.kv_type()), model::Model::KernelsName(), head.c_str());
  std::printf("  %-26s %.2f GB/s (triad %.2f GB/s, %s arrays)\n", "memory read bandwidth",
              r.bandwidth.read_gbs, r.bandwidth.triad_gbs, HumanBytes(r.bandwidth.bytes).c_str());
  if (r.read_gbs_after_steps > 0)
    std::printf("  %-26s %.2f GB/s\n", "read after the steps", r.read_gbs_after_steps);
  const model::Model::LoadPhases& phases = m.load_phases();
  std::printf(
      "  %-26s %.2f s (%.2f GB/s of checkpoint; read %.2f s, draft head %.2f s, "
      "repack %.2f s)\n",
      "load", m.load_seconds(),
      static_cast<double>(m.weight_bytes()) / 1e9 / std::max(m.load_seconds(), 1e-9), phases.read,
      phases.draft_head, phases.repack);
  std::printf("  %-26s %.2f tok/s\n", "AR decode", r.decode_tok_s);
  std::printf("  %-26s %s (weights %s + state %s)\n", "bytes per token",
              DecimalBytes(r.bytes_per_token()).c_str(),
              DecimalBytes(r.weight_bytes_per_token).c_str(),
              DecimalBytes(r.state_bytes_per_token).c_str());
  std::printf("  %-26s %.1f %%\n", "bandwidth utilisation", 100.0 * r.bandwidth_utilization());
  std::printf("  %-26s", "verify cost v(m)");
  for (size_t i = 0; i < r.verify_cost.size(); ++i)
    std::printf(" v(%zu)=%.2f", i + 1, r.verify_cost[i]);
  std::printf("\n");
  if (!r.verify_bound.empty()) {
    std::printf("  %-26s", "roofline v*(m)");
    for (size_t i = 0; i < r.verify_bound.size(); ++i)
      std::printf(" v*(%zu)=%.2f", i + 1, r.verify_bound[i]);
    std::printf("\n  %-26s", "v(m) / v*(m)");
    for (size_t i = 0; i < r.verify_bound.size() && i < r.verify_cost.size(); ++i)
      std::printf("  %zu: %.2f ", i + 1, r.verify_cost[i] / r.verify_bound[i]);
    std::printf("\n");
  }
  if (r.draft_cost_ratio) std::printf("  %-26s %.3f\n", "draft cost ratio c", *r.draft_cost_ratio);
  for (const auto& [tokens, tok_s] : r.prefill_tok_s)
    std::printf("  %-26s %.1f tok/s\n", StrCat("prefill ", tokens, " tokens").c_str(), tok_s);
  std::printf("  %-26s %s\n", "resident memory", HumanBytes(r.resident_bytes).c_str());
  if (!r.draft_cost_ratio) return;
  std::string profile;
  for (double a : acceptance) profile += StrFormat("%s%.2f", profile.empty() ? "" : ", ", a);
  std::printf("  projected speedup at acceptance (%s):\n", profile.c_str());
  for (int depth = 1; depth <= kMaxProjectedDepth; ++depth) {
    const auto speedup =
        engine::ProjectedSpeedup(acceptance, r.verify_cost, *r.draft_cost_ratio, depth);
    if (speedup) std::printf("    depth %d  %.2fx\n", depth, *speedup);
  }
}

int RunBenchCommand(BenchFlags f) {
  auto acceptance = ParseList("--acceptance", f.acceptance, 0.0, 1.0);
  if (!acceptance.ok()) return ReportError(acceptance.status().message());
  auto prefill = ParsePrefill(f.prefill);
  if (!prefill.ok()) return ReportError(prefill.status().message());
  auto model = ResolveModelDir(f.model_dir);
  if (!model.ok()) return ReportError(model.status().message());
  f.model_dir = *model;
  model::LoadOptions load;
  load.threads = f.threads;
  load.show_progress = !f.quiet;
  load.activations =
      f.activations == "f32" ? kernels::Activations::kF32 : kernels::Activations::kInt8;
  load.draft_head_bits = f.draft_head_bits;
  load.draft_layer_bits = f.draft_layer_bits;
  load.draft_vocab = f.draft_vocab;
  load.draft_head_group_size = f.draft_group_size;
  load.kv_type = KvTypeFromFlag(f.kv_cache);
  auto loaded = model::Model::Load(f.model_dir, load);
  if (!loaded.ok()) return ReportError(loaded.status().message());
  const model::Model& m = **loaded;

  engine::BenchOptions options;
  options.context = f.context;
  options.synthetic_context = f.synthetic_context;
  options.max_verify_rows = f.verify_rows;
  options.rounds = f.repeats;
  options.prefill_sizes = *prefill;
  options.bandwidth_bytes = f.bandwidth_mib << 20;
  options.show_progress = !f.quiet;
  auto report = engine::RunBench(m, options);
  if (!report.ok()) return ReportError(report.status().message());
  if (f.json) {
    std::printf("%s\n", ReportJson(*report, m, *acceptance).dump().c_str());
    return 0;
  }
  PrintTable(*report, m, *acceptance);
  if (!f.quiet)
    for (const std::string& notice : report->notices)
      std::fprintf(stderr, "[mtplx] %s\n", notice.c_str());
  return 0;
}

}  // namespace

Runner AddBenchCommand(CLI::App& app) {
  auto f = std::make_shared<BenchFlags>();
  CLI::App* cmd = app.add_subcommand(
      "bench", "Measure memory bandwidth, decode, verify, draft and prefill cost on this machine");
  cmd->add_option("--model", f->model_dir, "Model folder (default: the bundled model)");
  cmd->add_option("--threads", f->threads, "Worker threads (0 = all cores)")->check(ThreadCount());
  AddKvCacheFlag(cmd, f->kv_cache);
  cmd->add_flag("--json", f->json, "Print one JSON object instead of a table");
  cmd->add_option("--acceptance", f->acceptance,
                  "Conditional acceptance at depth 1,2,3,... for the projection (default "
                  "0.94,0.81,0.7; later depths reuse the last value)");
  cmd->add_option("--repeats", f->repeats, "Interleaved samples per quantity; medians reported")
      ->check(AtLeastOne());
  cmd->add_option("--prefill", f->prefill,
                  "Prompt sizes to time prefill at (default 512,2048; none skips)");
  cmd->add_option("--context", f->context, "Tokens in the state while decode/verify are timed")
      ->check(AtLeastOne());
  cmd->add_flag("--synthetic-context", f->synthetic_context,
                "Stand zero KV rows in for the context instead of prefilling it (step times do "
                "not depend on the cached values; a long context is ready at once)");
  cmd->add_option("--verify-rows", f->verify_rows,
                  "Largest verify forward to time: v(m) for m = 1..N (default 8; a server "
                  "batching B sequences at depth D runs B (D + 1) rows)")
      ->check(CLI::Range(1, 64));
  cmd->add_option("--bandwidth-mib", f->bandwidth_mib, "MiB streamed per bandwidth pass")
      ->check(AtLeastOne());
  cmd->add_option("--activations", f->activations,
                  "Activations meeting quantized weights: int8 (default, as run) | f32")
      ->check(CLI::IsMember({"int8", "f32"}));
  cmd->add_option("--draft-head-bits", f->draft_head_bits,
                  "Bits of the drafter's copy of the output head (default as run; 0 = the model's)")
      ->check(CLI::IsMember({0, 2, 3, 4, 5, 6, 8}));
  cmd->add_option("--draft-layer-bits", f->draft_layer_bits,
                  "Bits of the MTP layer's matrices (default as run; 0 = as stored)")
      ->check(CLI::IsMember({0, 2, 3, 4, 5, 6, 8}));
  cmd->add_option("--draft-group-size", f->draft_group_size,
                  "Columns a scale and bias cover in the drafter's matrices (default as run)")
      ->check(CLI::IsMember({32, 64, 128}));
  cmd->add_option("--draft-vocab", f->draft_vocab,
                  "Ids of the draft head (default as run: -1 = automatic)")
      ->check(CLI::Range(int64_t{-1}, int64_t{1} << 40));
  cmd->add_flag("--quiet", f->quiet, "No progress bar or notices on stderr");
  cmd->footer(
      "Formulae (times are medians of interleaved samples):\n"
      "  bandwidth_utilization = bytes_per_token * decode_tok_s / read bandwidth\n"
      "  v(m) = time(verify forward of m rows) / time(1 row), m = 1..8\n"
      "  v*(m) = max(S, A(m)) / max(S, A(1)), the roofline of v(m): S = decode weight bytes /\n"
      "         read bandwidth, A(m) = matmul time of m rows with the weights in cache (a slice\n"
      "         of one of the model's matrices, scaled to all decode weights)\n"
      "  c    = time(one MTP draft step) / time(one AR decode step)\n"
      "  projected speedup at depth D with conditional acceptances a1..aD:\n"
      "    E = 1 + a1 + a1*a2 + ... + a1*...*aD   (expected tokens per cycle)\n"
      "    speedup = E / (v(D+1) + D*c)            (cycle cost in AR steps)");
  return [f] { return RunBenchCommand(*f); };
}

}  // namespace mtplx::cli
