#include "cli/session.h"

#include <algorithm>
#include <cmath>

#include "base/file.h"
#include "base/strings.h"
#include "cli/commands.h"
#include "cli/default_model.h"
#include "engine/mtp_check.h"
#include "engine/prompt.h"
#include "io/checkpoint.h"
#include "tokenizer/stream_decoder.h"

namespace mtplx::cli {

void AddGenerationFlags(CLI::App* cmd, GenerationFlags& f) {
  cmd->add_option("--model", f.model_dir, "Model folder (default: the bundled model)");
  cmd->add_option("--system", f.system, "System prompt");
  cmd->add_option("--max-tokens", f.max_tokens, "Most tokens to generate")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--temperature", f.temperature, "0 = greedy")
      ->check(FiniteNumber())
      ->check(CLI::Range(0.0, 100.0));
  cmd->add_option("--top-p", f.top_p, "Nucleus mass")
      ->check(FiniteNumber())
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--top-k", f.top_k, "Keep the k most likely tokens (0 = off)")
      ->check(CLI::NonNegativeNumber);
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
  cmd->add_option("--threads", f.threads, "Worker threads (0 = all cores)");
  cmd->add_option("--depth", f.depth, "MTP draft depth (1-4; default: the pack's)")
      ->check(CLI::Range(1, 4));
  cmd->add_flag("--no-mtp", f.no_mtp, "Plain decoding on the same loaded model");
  cmd->add_flag("--skip-mtp-check", f.skip_mtp_check,
                "Speculate even if the MTP head fails the acceptance check");
  cmd->add_option("--draft-temperature", f.draft_temperature, "Draft sampler temperature")
      ->check(FiniteNumber())
      ->check(CLI::Range(0.0, 100.0));
  cmd->add_option("--draft-top-p", f.draft_top_p, "Draft sampler top-p")
      ->check(FiniteNumber())
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--draft-top-k", f.draft_top_k, "Draft sampler top-k")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--mtp-hidden", f.mtp_hidden, "Trunk hidden fed to the MTP head: post | pre")
      ->check(CLI::IsMember({"post", "pre"}));
  cmd->add_option("--activations", f.activations,
                  "Activations meeting quantized weights: int8 (fast, default) | f32 (exact)")
      ->check(CLI::IsMember({"int8", "f32"}));
  cmd->add_option("--draft-head-bits", f.draft_head_bits,
                  "Bits of the drafter's copy of the output head (0 = the model's head)")
      ->check(CLI::IsMember({0, 2, 3, 4, 5, 6, 8}));
  cmd->add_option("--draft-vocab", f.draft_vocab,
                  "Ids the drafter may propose: the N lowest (most frequent) ids; 0 = all, "
                  "-1 = automatic (default: a quarter of the vocabulary, at least 4096)")
      ->check(CLI::Range(int64_t{-1}, int64_t{1} << 40));
  cmd->add_option("--think", f.think, "Reasoning: auto (template default) | on | off")
      ->check(CLI::IsMember({"auto", "on", "off"}));
  cmd->add_option("--stop", f.stop, "Stop before this text (repeatable)");
  cmd->add_flag("--ignore-eos", f.ignore_eos,
                "Keep generating past the model's end-of-turn tokens (benchmarks, tests)");
  cmd->add_flag("--quiet", f.quiet, "No progress bar, notices or stats line");
}

Result<std::unique_ptr<Session>> Session::Open(const GenerationFlags& flags, bool show_progress) {
  std::unique_ptr<Session> s(new Session());
  s->flags_ = flags;
  if (s->flags_.model_dir.empty()) {
    MTPLX_ASSIGN_OR_RETURN(s->flags_.model_dir, DefaultModelDir());
  }
  const std::string& dir = s->flags_.model_dir;
  MTPLX_RETURN_IF_ERROR(io::CheckModelFolder(dir, /*need_tokenizer=*/true));
  MTPLX_ASSIGN_OR_RETURN(tokenizer::Tokenizer tok,
                         tokenizer::Tokenizer::FromJsonFile(JoinPath(dir, "tokenizer.json")));
  s->tokenizer_ = std::make_unique<tokenizer::Tokenizer>(std::move(tok));
  MTPLX_ASSIGN_OR_RETURN(chat::ChatTemplate tmpl, chat::ChatTemplate::FromModelDir(dir));
  s->template_ = std::make_unique<chat::ChatTemplate>(std::move(tmpl));
  MTPLX_ASSIGN_OR_RETURN(s->defaults_, io::LoadGenerationDefaults(dir));
  model::LoadOptions load;
  load.threads = flags.threads;
  load.show_progress = show_progress;
  load.activations =
      flags.activations == "f32" ? kernels::Activations::kF32 : kernels::Activations::kInt8;
  load.draft_head_bits = flags.draft_head_bits;
  load.draft_vocab = flags.draft_vocab;
  MTPLX_ASSIGN_OR_RETURN(s->model_, model::Model::Load(dir, load));
  s->ChooseMode();
  return s;
}

// --no-mtp, a checkpoint without an MTP head, or a head that fails the acceptance check all mean
// plain decoding, with a notice saying why.
void Session::ChooseMode() {
  if (flags_.no_mtp) return;
  if (!model_->has_mtp()) {
    notice_ = "this checkpoint has no MTP head: plain decoding";
    return;
  }
  if (!flags_.skip_mtp_check) {
    const auto probe =
        tokenizer_->Encode("The quick brown fox jumps over the lazy dog.\ndef main():\n", false);
    auto check = engine::CheckMtp(*model_, probe);
    if (!check.ok()) {
      notice_ = "MTP check failed (" + check.status().message() + "): plain decoding";
      return;
    }
    if (!check->usable) {
      notice_ = "MTP disabled: " + check->reason + "; decoding without speculation";
      return;
    }
  }
  depth_ = flags_.depth > 0 ? flags_.depth : defaults_.mtp_depth;
  speculate_ = true;
}

engine::GenerateRequest Session::MakeRequest(std::vector<int32_t> prompt, uint64_t seed) const {
  engine::GenerateRequest r;
  r.prompt = std::move(prompt);
  r.max_tokens = flags_.max_tokens;
  r.seed = seed;
  if (!flags_.ignore_eos) {
    r.stop_ids = defaults_.stop_ids;
    for (const char* stop : {"<|im_end|>", "<|endoftext|>"})
      if (auto id = tokenizer_->AddedTokenId(stop)) r.stop_ids.push_back(*id);
  }
  r.sampling.temperature = flags_.temperature >= 0 ? flags_.temperature : defaults_.temperature;
  r.sampling.top_p = flags_.top_p >= 0 ? flags_.top_p : defaults_.top_p;
  r.sampling.top_k = flags_.top_k >= 0 ? flags_.top_k : defaults_.top_k;
  r.sampling.min_p = flags_.min_p >= 0 ? flags_.min_p : defaults_.min_p;
  r.sampling.presence_penalty =
      std::isnan(flags_.presence_penalty) ? defaults_.presence_penalty : flags_.presence_penalty;
  r.sampling.frequency_penalty =
      std::isnan(flags_.frequency_penalty) ? defaults_.frequency_penalty : flags_.frequency_penalty;
  return r;
}

Result<Turn> Session::Reply(const chat::Conversation& conversation,
                            const std::function<void(std::string_view)>& on_text) {
  chat::RenderOptions options;
  options.add_generation_prompt = true;
  if (flags_.think != "auto") options.enable_thinking = flags_.think == "on";
  MTPLX_ASSIGN_OR_RETURN(std::vector<int32_t> prompt,
                         engine::BuildPrompt(*template_, *tokenizer_, conversation, options));
  return Generate(std::move(prompt), on_text);
}

Result<Turn> Session::Complete(const std::string& text,
                               const std::function<void(std::string_view)>& on_text) {
  std::vector<int32_t> prompt = tokenizer_->Encode(text, /*allow_special=*/false);
  if (prompt.empty()) return InvalidArgument("the prompt encodes to no tokens");
  return Generate(std::move(prompt), on_text);
}

Result<Turn> Session::Generate(std::vector<int32_t> prompt,
                               const std::function<void(std::string_view)>& on_text) {
  engine::GenerateRequest request = MakeRequest(std::move(prompt), flags_.seed + turns_++);
  request.cancel = interrupt_;
  tokenizer::StreamDecoder decoder(tokenizer_.get(), /*skip_special_tokens=*/true);
  Turn turn;
  // Text is streamed only once no stop string can still start inside it.
  size_t streamed = 0;
  bool stopped = false;
  size_t longest_stop = 0;
  for (const auto& stop : flags_.stop) longest_stop = std::max(longest_stop, stop.size());
  auto on_token = [&](int32_t id) {
    turn.text += decoder.Push(id);
    for (const auto& stop : flags_.stop) {
      // Text before `streamed` was already checked: no stop string starts there.
      const size_t at = stop.empty() ? std::string::npos : turn.text.find(stop, streamed);
      if (at != std::string::npos) {
        turn.text.resize(at);
        stopped = true;
      }
    }
    const size_t safe = stopped ? turn.text.size()
                                : turn.text.size() - std::min(turn.text.size(),
                                                              longest_stop ? longest_stop - 1 : 0);
    if (on_text && safe > streamed)
      on_text(std::string_view(turn.text).substr(streamed, safe - streamed));
    streamed = std::max(streamed, safe);
    return !stopped;
  };
  engine::GenerateResult result;
  if (speculate_) {
    engine::SpeculativeOptions spec;
    spec.depth = depth_;
    spec.pre_norm_hidden = flags_.mtp_hidden == "pre";
    if (flags_.draft_temperature >= 0 || flags_.draft_top_p >= 0 || flags_.draft_top_k >= 0) {
      spec.draft_same_as_target = false;
      spec.draft = request.sampling;
      if (flags_.draft_temperature >= 0) spec.draft.temperature = flags_.draft_temperature;
      if (flags_.draft_top_p >= 0) spec.draft.top_p = flags_.draft_top_p;
      if (flags_.draft_top_k >= 0) spec.draft.top_k = flags_.draft_top_k;
    }
    MTPLX_ASSIGN_OR_RETURN(engine::SpeculativeResult run,
                           engine::GenerateSpeculative(*model_, request, spec, on_token));
    turn.depth = depth_;
    turn.speculative = run.speculative;
    result = std::move(run.result);
  } else {
    MTPLX_ASSIGN_OR_RETURN(result, engine::GeneratePlain(*model_, request, on_token));
  }
  if (!stopped) turn.text += decoder.Flush();
  if (on_text && turn.text.size() > streamed) on_text(std::string_view(turn.text).substr(streamed));
  turn.token_ids = std::move(result.tokens);
  turn.finish_reason = stopped ? "stop" : result.finish_reason;
  if (turn.finish_reason == "cancelled") turn.finish_reason = "interrupted";
  turn.stats = result.stats;
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
  out["verify_calls"] = p.verify_calls;
  out["bonus_tokens"] = p.bonus_tokens;
  out["corrections"] = p.corrections;
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
