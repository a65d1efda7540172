#include "cli/session.h"

#include <algorithm>
#include <cmath>

#include "base/file.h"
#include "base/strings.h"
#include "cli/commands.h"
#include "cli/default_model.h"
#include "cli/tuning.h"
#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "io/runtime_contract.h"

namespace mtplx::cli {

void AddGenerationFlags(CLI::App* cmd, GenerationFlags& f) {
  cmd->add_option("--model", f.model_dir, "Model folder (default: the bundled model)");
  cmd->add_option("--system", f.system, "System prompt");
  cmd->add_option("--max-tokens", f.max_tokens, "Most tokens to generate")->check(AtLeastOne());
  cmd->add_option("--temperature", f.temperature, "0 = greedy")
      ->check(FiniteNumber())
      ->check(CLI::Range(0.0, 100.0));
  cmd->add_option("--top-p", f.top_p, "Nucleus mass")
      ->check(FiniteNumber())
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--top-k", f.top_k, "Keep the k most likely tokens (0 = off)")
      ->check(NotNegative());
  cmd->add_option("--min-p", f.min_p, "Drop tokens below min-p x the top probability")
      ->check(FiniteNumber())
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--presence-penalty", f.presence_penalty,
                  "Subtract this from the logit of every token already generated (not at T 0)")
      ->check(FiniteNumber())
      ->check(CLI::Range(-2.0, 2.0));
  cmd->add_option("--frequency-penalty", f.frequency_penalty,
                  "Subtract this times its count from a generated token's logit (not at T 0)")
      ->check(FiniteNumber())
      ->check(CLI::Range(-2.0, 2.0));
  cmd->add_option("--seed", f.seed, "Sampling seed");
  cmd->add_option("--threads", f.threads, "Worker threads (0 = all cores)")->check(ThreadCount());
  cmd->add_option("--depth", f.depth,
                  StrCat("MTP draft depth (1-", io::kMaxMtpDepth,
                         ", capped at the pack's mtp_depth_max; default: the pack's)"))
      ->check(CLI::Range(1, io::kMaxMtpDepth));
  cmd->add_flag("--no-mtp", f.no_mtp, "Plain decoding on the same loaded model");
  cmd->add_flag("--skip-mtp-check", f.skip_mtp_check,
                "Speculate even if the MTP head fails the acceptance check");
  cmd->add_option(
         "--draft-temperature", f.draft_temperature,
         "Draft sampler temperature (default: the pack's recommendation, else the request's)")
      ->check(FiniteNumber())
      ->check(CLI::Range(0.0, 100.0));
  cmd->add_option("--draft-top-p", f.draft_top_p, "Draft sampler top-p")
      ->check(FiniteNumber())
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--draft-top-k", f.draft_top_k, "Draft sampler top-k")->check(NotNegative());
  cmd->add_option("--mtp-hidden", f.mtp_hidden, "Trunk hidden fed to the MTP head: post | pre")
      ->check(CLI::IsMember({"post", "pre"}));
  cmd->add_option("--activations", f.activations,
                  "Activations meeting quantized weights: int8 (fast, default) | f32 (exact)")
      ->check(CLI::IsMember({"int8", "f32"}));
  AddKvCacheFlag(cmd, f.kv_cache);
  cmd->add_option("--draft-head-bits", f.draft_head_bits,
                  "Bits of the drafter's copy of the output head (0 = the model's head)")
      ->check(CLI::IsMember({0, 2, 3, 4, 5, 6, 8}));
  cmd->add_option("--draft-layer-bits", f.draft_layer_bits,
                  "Bits of the MTP layer's matrices, quantized again at load when wider (0 = as "
                  "stored)")
      ->check(CLI::IsMember({0, 2, 3, 4, 5, 6, 8}));
  cmd->add_option("--draft-group-size", f.draft_group_size,
                  "Columns a scale and bias cover in the drafter's requantized matrices")
      ->check(CLI::IsMember({32, 64, 128}));
  cmd->add_option("--draft-vocab", f.draft_vocab,
                  "Ids the drafter may propose: the N lowest (most frequent) ids; 0 = all, "
                  "-1 = automatic (default: a quarter of the vocabulary, at least 4096)")
      ->check(CLI::Range(int64_t{-1}, int64_t{1} << 40));
  cmd->add_option("--think", f.think, "Reasoning: auto (template default) | on | off")
      ->check(CLI::IsMember({"auto", "on", "off"}));
  cmd->add_option("--stop", f.stop, "Stop before this text (repeatable)");
  cmd->add_flag("--ignore-eos", f.ignore_eos,
                "Keep generating past the model's end-of-turn tokens (benchmarks, tests)");
  cmd->add_option("--json-schema", f.json_schema_file,
                  "Constrain the reply to a JSON document of this schema (a file)");
  cmd->add_option("--grammar", f.grammar_file,
                  "Constrain the reply to a sentence of this GBNF grammar (a file)");
  cmd->add_flag("--quiet", f.quiet, "No progress bar, notices or stats line");
}

void AddKvCacheFlag(CLI::App* cmd, std::string& kv_cache) {
  cmd->add_option("--kv-cache", kv_cache,
                  "Attention KV cache rows: bf16 (half the memory and bytes per token of "
                  "context, default) | f32 (exact)")
      ->check(CLI::IsMember({"bf16", "f32"}));
}

kernels::KvType KvTypeFromFlag(const std::string& kv_cache) {
  return kv_cache == "f32" ? kernels::KvType::kF32 : kernels::KvType::kBf16;
}

namespace {

// The grammar of --json-schema or --grammar (none when neither is given).
Result<std::shared_ptr<const grammar::Grammar>> LoadGrammar(const GenerationFlags& flags) {
  if (flags.json_schema_file.empty() && flags.grammar_file.empty())
    return std::shared_ptr<const grammar::Grammar>();
  if (!flags.json_schema_file.empty() && !flags.grammar_file.empty())
    return InvalidArgument("--json-schema and --grammar cannot both be given");
  const std::string& path =
      flags.json_schema_file.empty() ? flags.grammar_file : flags.json_schema_file;
  MTPLX_ASSIGN_OR_RETURN(const std::string text, ReadTextFile(path));
  Result<grammar::Grammar> g =
      flags.json_schema_file.empty() ? grammar::ParseGbnf(text) : grammar::CompileJsonSchema(text);
  if (!g.ok()) return InvalidArgument(StrCat(path, ": ", g.status().message()));
  return std::make_shared<const grammar::Grammar>(std::move(g).value());
}

}  // namespace

Result<std::unique_ptr<Session>> Session::Open(const GenerationFlags& flags, bool show_progress) {
  std::unique_ptr<Session> s(new Session());
  s->flags_ = flags;
  MTPLX_ASSIGN_OR_RETURN(s->grammar_, LoadGrammar(flags));
  MTPLX_ASSIGN_OR_RETURN(s->flags_.model_dir, ResolveModelDir(s->flags_.model_dir));
  engine::EngineOptions options;
  options.model_dir = s->flags_.model_dir;
  options.load.threads = flags.threads;
  options.load.show_progress = show_progress;
  options.load.activations =
      flags.activations == "f32" ? kernels::Activations::kF32 : kernels::Activations::kInt8;
  options.load.kv_type = KvTypeFromFlag(flags.kv_cache);
  options.load.draft_head_bits = flags.draft_head_bits;
  options.load.draft_layer_bits = flags.draft_layer_bits;
  options.load.draft_vocab = flags.draft_vocab;
  options.load.draft_head_group_size = flags.draft_group_size;
  options.no_mtp = flags.no_mtp;
  options.skip_mtp_check = flags.skip_mtp_check;
  options.depth = flags.depth;
  options.adaptive_depth = flags.depth == 0;  // --depth pins it
  options.pre_norm_hidden = flags.mtp_hidden == "pre";
  options.draft_temperature = flags.draft_temperature;
  options.draft_top_p = flags.draft_top_p;
  options.draft_top_k = flags.draft_top_k;
  s->tuned_notice_ = ApplyTunedDepth(options, /*apply_threads=*/true);
  ApplyKnownMtpCheck(options);
  MTPLX_ASSIGN_OR_RETURN(s->engine_, engine::Engine::Open(options));
  RememberMtpCheck(*s->engine_);
  return s;
}

Result<Turn> Session::Reply(const chat::Conversation& conversation,
                            const std::function<void(std::string_view)>& on_text) {
  engine::Request request = engine_->NewRequest();
  request.kind = engine::PromptKind::kChat;
  request.conversation = conversation;
  if (flags_.think != "auto") request.render.enable_thinking = flags_.think == "on";
  if (grammar_ && flags_.think == "auto") request.render.enable_thinking = false;
  return Generate(std::move(request), on_text);
}

Result<Turn> Session::Complete(const std::string& text,
                               const std::function<void(std::string_view)>& on_text) {
  engine::Request request = engine_->NewRequest();
  request.kind = engine::PromptKind::kText;
  request.text = text;
  return Generate(std::move(request), on_text);
}

Result<Turn> Session::Generate(engine::Request request,
                               const std::function<void(std::string_view)>& on_text) {
  request.max_tokens = flags_.max_tokens;
  request.seed = flags_.seed + turns_++;
  request.stop = flags_.stop;
  request.ignore_eos = flags_.ignore_eos;
  request.grammar = grammar_;
  sample::SamplingParams& p = request.sampling;
  if (flags_.temperature >= 0) p.temperature = flags_.temperature;
  if (flags_.top_p >= 0) p.top_p = flags_.top_p;
  if (flags_.top_k >= 0) p.top_k = flags_.top_k;
  if (flags_.min_p >= 0) p.min_p = flags_.min_p;
  if (!std::isnan(flags_.presence_penalty)) p.presence_penalty = flags_.presence_penalty;
  if (!std::isnan(flags_.frequency_penalty)) p.frequency_penalty = flags_.frequency_penalty;
  if (interrupt_) request.cancel = interrupt_;
  MTPLX_ASSIGN_OR_RETURN(Turn turn, engine_->Run(std::move(request), [&](const engine::Event& e) {
    if (e.type == engine::Event::Type::kText && on_text) on_text(e.text);
  }));
  if (turn.finish_reason == "cancelled") turn.finish_reason = "interrupted";
  return turn;
}

chat::Message TextMessage(std::string role, std::string content) {
  chat::Message message;
  message.role = std::move(role);
  message.content = std::move(content);
  return message;
}

nlohmann::json TurnStatsJson(const Turn& turn, const model::Model& model) {
  const auto& s = turn.stats;
  nlohmann::json out = {
      {"mode", turn.depth > 0 ? "MTP" : "AR"},
      {"depth", turn.depth},
      {"tokens", s.completion_tokens},
      {"prompt_tokens", s.prompt_tokens},
      {"tok_s", s.DecodeTokensPerSecond()},
      {"prefill_tok_s", s.PrefillTokensPerSecond()},
      {"major_faults_during_decode", s.major_faults_during_decode},
      {"resident_bytes", s.resident_bytes},
      {"weight_bytes", model.weight_bytes()},
      {"activations", model.activations() == kernels::Activations::kInt8 ? "int8" : "f32"},
      {"weights_locked", model.weights_locked()}};
  if (turn.depth == 0) return out;
  const auto& p = turn.speculative;
  nlohmann::json per_cycle = nlohmann::json::object();
  for (size_t n = 1; n < p.tokens_per_cycle.size(); ++n)
    per_cycle[std::to_string(n)] = p.tokens_per_cycle[n];
  out["draft_head_bits"] = model.draft_head_bits();
  out["draft_layer_bits"] = model.draft_layer_bits();
  out["draft_vocab"] = model.draft_vocab();
  out["acceptance_by_depth"] = p.AcceptanceByDepth();
  out["acceptance_unconditional"] = p.AcceptanceUnconditional();
  // Raw counts (index d - 1 for depth d), so runs can be pooled.
  out["proposed_by_depth"] =
      std::vector<int64_t>(p.proposed_by_depth.begin() + 1, p.proposed_by_depth.end());
  out["accepted_by_depth"] =
      std::vector<int64_t>(p.accepted_by_depth.begin() + 1, p.accepted_by_depth.end());
  out["cycles"] = p.cycles;
  out["tokens_per_cycle"] = per_cycle;
  out["mean_tokens_per_cycle"] = p.MeanTokensPerCycle();
  out["mean_depth"] = p.MeanDepth();
  out["cycles_by_depth"] = p.cycles_by_depth;
  out["verify_calls"] = p.verify_calls;
  out["bonus_tokens"] = p.bonus_tokens;
  out["corrections"] = p.corrections;
  out["early_stops"] = p.early_stops;
  out["time_s"] = {{"draft", p.draft_seconds},
                   {"verify", p.verify_seconds},
                   {"accept", p.accept_seconds},
                   {"commit", p.commit_seconds}};
  return out;
}

std::string StatsLine(const Turn& turn) {
  return StrFormat("[mtplx] mode=%s depth=%d tokens=%lld tok/s=%.2f prefill_tok/s=%.1f finish=%s",
                   turn.depth > 0 ? "MTP" : "AR", turn.depth,
                   static_cast<long long>(turn.stats.completion_tokens),
                   turn.stats.DecodeTokensPerSecond(), turn.stats.PrefillTokensPerSecond(),
                   turn.finish_reason.c_str());
}

}  // namespace mtplx::cli
