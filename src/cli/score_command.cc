// `mtplx score`: runs a token sequence and reports the logits of every position.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>
#include <vector>

#include "base/strings.h"
#include "cli/commands.h"
#include "model/model.h"

namespace mtplx::cli {
namespace {

struct ScoreOptions {
  std::string model_dir;
  std::string tokens;
  std::string logits_out;
  std::string delta_path = "auto";
  std::string activations = "f32";  // the reference numerics; int8 scores as `run` computes
  int threads = 0;
  int chunk = 512;
};

Result<std::vector<int32_t>> ParseTokens(const std::string& text) {
  std::vector<int32_t> tokens;
  for (const std::string& part : StrSplit(text, ',')) {
    if (part.empty()) continue;
    char* end = nullptr;
    const long value = std::strtol(part.c_str(), &end, 10);
    if (*end != '\0' || value < 0 || value > INT32_MAX)
      return InvalidArgument(StrCat("--tokens: '", part, "' is not a token id"));
    tokens.push_back(static_cast<int32_t>(value));
  }
  if (tokens.empty()) return InvalidArgument("--tokens: no token ids given");
  return tokens;
}

nlohmann::json TopLogProbs(const float* logits, int64_t vocab, int k) {
  float max = *std::max_element(logits, logits + vocab);
  double sum = 0.0;
  for (int64_t i = 0; i < vocab; ++i) sum += std::exp(static_cast<double>(logits[i] - max));
  const double log_z = max + std::log(sum);
  std::vector<int64_t> ids(vocab);
  std::iota(ids.begin(), ids.end(), 0);
  std::partial_sort(ids.begin(), ids.begin() + k, ids.end(),
                    [&](int64_t a, int64_t b) { return logits[a] > logits[b]; });
  nlohmann::json row = nlohmann::json::array();
  for (int i = 0; i < k; ++i) row.push_back({{"id", ids[i]}, {"logprob", logits[ids[i]] - log_z}});
  return row;
}

int RunScore(const ScoreOptions& o) {
  auto tokens = ParseTokens(o.tokens);
  if (!tokens.ok()) return ReportError(tokens.status().message());
  model::LoadOptions load;
  load.threads = o.threads;
  load.show_progress = false;
  load.activations =
      o.activations == "int8" ? kernels::Activations::kInt8 : kernels::Activations::kF32;
  auto loaded = model::Model::Load(o.model_dir, load);
  if (!loaded.ok()) return ReportError(loaded.status().message());
  const model::Model& m = **loaded;
  model::ForwardOptions forward;
  if (o.delta_path == "recurrent") forward.delta_path = model::DeltaNetPath::kRecurrent;
  if (o.delta_path == "chunked") forward.delta_path = model::DeltaNetPath::kChunked;
  std::FILE* out = nullptr;
  if (!o.logits_out.empty() && !(out = std::fopen(o.logits_out.c_str(), "wb")))
    return ReportError(StrCat(o.logits_out, ": cannot create"));
  auto state = m.NewState();
  const int64_t vocab = m.config().vocab_size;
  nlohmann::json top = nlohmann::json::array();
  for (size_t begin = 0; begin < tokens->size(); begin += o.chunk) {
    const size_t n = std::min<size_t>(o.chunk, tokens->size() - begin);
    model::ForwardOutput result;
    const Status s =
        m.Forward(*state, std::span<const int32_t>(tokens->data() + begin, n), forward, &result);
    if (!s.ok()) return ReportError(s.message());
    for (size_t r = 0; r < n; ++r)
      top.push_back(TopLogProbs(result.logits.data() + r * vocab, vocab, 5));
    if (out &&
        std::fwrite(result.logits.data(), 4, result.logits.size(), out) != result.logits.size())
      return ReportError(StrCat(o.logits_out, ": write failed"));
  }
  if (out && std::fclose(out) != 0) return ReportError(StrCat(o.logits_out, ": write failed"));
  nlohmann::json report = {
      {"model", o.model_dir}, {"rows", tokens->size()}, {"vocab", vocab}, {"top5", top}};
  std::printf("%s\n", report.dump().c_str());
  return 0;
}

}  // namespace

Runner AddScoreCommand(CLI::App& app) {
  auto o = std::make_shared<ScoreOptions>();
  CLI::App* cmd = app.add_subcommand("score", "Run token ids and report every position's logits");
  cmd->add_option("--model", o->model_dir, "Model folder")->required();
  cmd->add_option("--tokens", o->tokens, "Comma-separated token ids")->required();
  cmd->add_option("--logits-out", o->logits_out, "Write f32 logits [rows, vocab] here");
  cmd->add_option("--threads", o->threads, "Worker threads (0 = all cores)")->check(ThreadCount());
  cmd->add_option("--chunk", o->chunk, "Rows per forward call")->check(AtLeastOne());
  cmd->add_option("--activations", o->activations,
                  "Activations meeting quantized weights: f32 (exact, default) | int8 (as run)")
      ->check(CLI::IsMember({"int8", "f32"}));
  cmd->add_option("--delta-path", o->delta_path, "auto | recurrent | chunked")
      ->check(CLI::IsMember({"auto", "recurrent", "chunked"}));
  return [o] { return RunScore(*o); };
}

}  // namespace mtplx::cli
