// `mtplx run "PROMPT"`: chat-formats the prompt, streams the answer, prints a stats line.
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <iterator>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "base/file.h"
#include "base/strings.h"
#include "cli/commands.h"
#include "cli/default_model.h"
#include "engine/generator.h"
#include "chat/chat_template.h"
#include "engine/mtp_check.h"
#include "engine/prompt.h"
#include "engine/speculative.h"
#include "io/generation_config.h"
#include "model/model.h"
#include "tokenizer/stream_decoder.h"
#include "tokenizer/tokenizer.h"

namespace mtplx::cli {
namespace {

struct RunOptions {
  std::string prompt;
  std::string model_dir;
  std::string system;
  int max_tokens = 256;
  double temperature = -1, top_p = -1, min_p = -1;
  int top_k = -1;
  uint64_t seed = 0;
  int threads = 0;
  bool json = false;
  bool quiet = false;
  int depth = 0;  // 0: pack default
  bool no_mtp = false;
  bool skip_mtp_check = false;
  double draft_temperature = -1, draft_top_p = -1;
  int draft_top_k = -1;
  std::string mtp_hidden = "post";
  std::string think = "auto";  // enable_thinking: auto (template default) | on | off
};

// The speculative outcome of one run, for the stats line and --json.
struct Mode {
  int depth = 0;  // 0 = plain decoding
  std::string notice;
  engine::SpeculativeStats stats;
};

nlohmann::json SpeculativeJson(const Mode& mode) {
  if (mode.depth == 0) return nlohmann::json::object();
  const auto& s = mode.stats;
  nlohmann::json per_cycle = nlohmann::json::object();
  for (size_t n = 1; n < s.tokens_per_cycle.size(); ++n)
    per_cycle[std::to_string(n)] = s.tokens_per_cycle[n];
  return {{"acceptance_by_depth", s.AcceptanceByDepth()},
          {"acceptance_unconditional", s.AcceptanceUnconditional()},
          {"tokens_per_cycle", per_cycle},
          {"mean_tokens_per_cycle", s.MeanTokensPerCycle()},
          {"verify_calls", s.verify_calls},
          {"bonus_tokens", s.bonus_tokens},
          {"corrections", s.corrections},
          {"time_s", {{"draft", s.draft_seconds}, {"verify", s.verify_seconds},
                      {"accept", s.accept_seconds}, {"commit", s.commit_seconds}}}};
}

// Decides plain vs speculative decoding: --no-mtp, a checkpoint without an MTP head, or a head
// that fails the acceptance check all mean plain decoding, with a notice saying why.
Mode ChooseMode(const model::Model& m, const tokenizer::Tokenizer& tok, const RunOptions& o,
                int pack_depth) {
  Mode mode;
  if (o.no_mtp) return mode;
  if (!m.has_mtp()) {
    mode.notice = "this checkpoint has no MTP head: plain decoding";
    return mode;
  }
  if (!o.skip_mtp_check) {
    const auto probe = tok.Encode("The quick brown fox jumps over the lazy dog.\ndef main():\n", false);
    auto check = engine::CheckMtp(m, probe);
    if (!check.ok()) {
      mode.notice = "MTP check failed (" + check.status().message() + "): plain decoding";
      return mode;
    }
    if (!check->usable) {
      mode.notice = "MTP disabled: " + check->reason + "; decoding without speculation";
      return mode;
    }
  }
  mode.depth = o.depth > 0 ? o.depth : pack_depth;
  return mode;
}

// The prompt as the model's chat template renders it (system + user turn + generation prompt).
Result<std::vector<int32_t>> EncodeChat(const std::string& model_dir,
                                        const tokenizer::Tokenizer& tok, const RunOptions& o) {
  MTPLX_ASSIGN_OR_RETURN(chat::ChatTemplate chat_template, chat::ChatTemplate::FromModelDir(model_dir));
  chat::Conversation conversation;
  if (!o.system.empty()) conversation.messages.push_back({.role = "system", .content = o.system});
  conversation.messages.push_back({.role = "user", .content = o.prompt});
  chat::RenderOptions options;
  options.add_generation_prompt = true;
  if (o.think != "auto") options.enable_thinking = o.think == "on";
  return engine::BuildPrompt(chat_template, tok, conversation, options);
}

Result<std::string> ReadPrompt(const std::string& prompt) {
  if (prompt != "-") return prompt;
  std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  return text;
}

int RunGenerate(RunOptions o) {
  auto prompt = ReadPrompt(o.prompt);
  if (!prompt.ok()) return ReportError(prompt.status().message());
  o.prompt = *prompt;
  if (o.prompt.find_first_not_of(" \t\r\n") == std::string::npos)
    return ReportError("the prompt is empty");
  if (o.model_dir.empty()) {
    auto found = DefaultModelDir();
    if (!found.ok()) return ReportError(found.status().message());
    o.model_dir = *found;
  }
  auto tok = tokenizer::Tokenizer::FromJsonFile(JoinPath(o.model_dir, "tokenizer.json"));
  if (!tok.ok()) return ReportError(tok.status().message());
  auto defaults = io::LoadGenerationDefaults(o.model_dir);
  if (!defaults.ok()) return ReportError(defaults.status().message());
  model::LoadOptions load;
  load.threads = o.threads;
  load.show_progress = !o.quiet && !o.json;
  auto loaded = model::Model::Load(o.model_dir, load);
  if (!loaded.ok()) return ReportError(loaded.status().message());

  engine::GenerateRequest request;
  auto prompt_ids = EncodeChat(o.model_dir, *tok, o);
  if (!prompt_ids.ok()) return ReportError(prompt_ids.status().message());
  request.prompt = std::move(prompt_ids).value();
  request.max_tokens = o.max_tokens;
  request.seed = o.seed;
  request.stop_ids = defaults->stop_ids;
  for (const char* stop : {"<|im_end|>", "<|endoftext|>"})
    if (auto id = tok->AddedTokenId(stop)) request.stop_ids.push_back(*id);
  request.sampling.temperature = o.temperature >= 0 ? o.temperature : defaults->temperature;
  request.sampling.top_p = o.top_p >= 0 ? o.top_p : defaults->top_p;
  request.sampling.top_k = o.top_k >= 0 ? o.top_k : defaults->top_k;
  request.sampling.min_p = o.min_p >= 0 ? o.min_p : defaults->min_p;

  tokenizer::StreamDecoder decoder(&*tok, /*skip_special_tokens=*/true);
  std::string text;
  auto on_token = [&](int32_t id) {
    const std::string piece = decoder.Push(id);
    text += piece;
    if (!o.json) {
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      std::fflush(stdout);
    }
    return true;
  };
  Mode mode = ChooseMode(**loaded, *tok, o, defaults->mtp_depth);
  if (!mode.notice.empty() && !o.quiet && !o.json) std::fprintf(stderr, "[mtplx] %s\n", mode.notice.c_str());
  Result<engine::GenerateResult> result = InvalidArgument("unset");
  if (mode.depth > 0) {
    engine::SpeculativeOptions spec;
    spec.depth = mode.depth;
    spec.pre_norm_hidden = o.mtp_hidden == "pre";
    if (o.draft_temperature >= 0 || o.draft_top_p >= 0 || o.draft_top_k >= 0) {
      spec.draft_same_as_target = false;
      spec.draft = request.sampling;
      if (o.draft_temperature >= 0) spec.draft.temperature = o.draft_temperature;
      if (o.draft_top_p >= 0) spec.draft.top_p = o.draft_top_p;
      if (o.draft_top_k >= 0) spec.draft.top_k = o.draft_top_k;
    }
    auto run = engine::GenerateSpeculative(**loaded, request, spec, on_token);
    if (!run.ok()) return ReportError(run.status().message());
    mode.stats = run->speculative;
    result = std::move(run->result);
  } else {
    result = engine::GeneratePlain(**loaded, request, on_token);
  }
  if (!result.ok()) return ReportError(result.status().message());
  const char* mode_name = mode.depth > 0 ? "MTP" : "AR";
  const std::string tail = decoder.Flush();
  text += tail;
  const auto& s = result->stats;
  if (o.json) {
    nlohmann::json out = {
        {"text", text},
        {"token_ids", result->tokens},
        {"finish_reason", result->finish_reason},
        {"stats",
         {{"mode", mode_name}, {"depth", mode.depth}, {"tokens", s.completion_tokens},
          {"prompt_tokens", s.prompt_tokens}, {"tok_s", s.DecodeTokensPerSecond()},
          {"prefill_tok_s", s.PrefillTokensPerSecond()},
          {"major_faults_during_decode", s.major_faults_during_decode},
          {"resident_bytes", s.resident_bytes},
          {"weight_bytes", (*loaded)->weight_bytes()},
          {"weights_locked", (*loaded)->weights_locked()}}}};
    out["stats"].update(SpeculativeJson(mode));
    if (!mode.notice.empty()) out["notice"] = mode.notice;
    std::printf("%s\n", out.dump().c_str());
    return 0;
  }
  std::printf("%s\n", tail.c_str());
  if (!o.quiet)
    std::fprintf(stderr, "[mtplx] mode=%s depth=%d tokens=%lld tok/s=%.2f prefill_tok/s=%.1f\n",
                 mode_name, mode.depth, static_cast<long long>(s.completion_tokens),
                 s.DecodeTokensPerSecond(), s.PrefillTokensPerSecond());
  return 0;
}

}  // namespace

Runner AddRunCommand(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand("run", "Generate a reply to a prompt (\"-\" reads stdin)");
  cmd->add_option("prompt", o->prompt, "The prompt, or - for stdin")->required();
  cmd->add_option("--model", o->model_dir, "Model folder (default: the bundled model)");
  cmd->add_option("--system", o->system, "System prompt");
  cmd->add_option("--max-tokens", o->max_tokens, "Most tokens to generate")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--temperature", o->temperature, "0 = greedy")->check(CLI::Range(0.0, 100.0));
  cmd->add_option("--top-p", o->top_p, "Nucleus mass")->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--top-k", o->top_k, "Keep the k most likely tokens (0 = off)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--min-p", o->min_p, "Drop tokens below min-p x the top probability")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--seed", o->seed, "Sampling seed");
  cmd->add_option("--threads", o->threads, "Worker threads (0 = all cores)");
  cmd->add_flag("--json", o->json, "Print one JSON object instead of streaming");
  cmd->add_flag("--quiet", o->quiet, "No progress bar or stats line");
  cmd->add_option("--depth", o->depth, "MTP draft depth (1-4; default: the pack's)")
      ->check(CLI::Range(1, 4));
  cmd->add_flag("--no-mtp", o->no_mtp, "Plain decoding on the same loaded model");
  cmd->add_flag("--skip-mtp-check", o->skip_mtp_check,
                "Speculate even if the MTP head fails the acceptance check");
  cmd->add_option("--draft-temperature", o->draft_temperature, "Draft sampler temperature")
      ->check(CLI::Range(0.0, 100.0));
  cmd->add_option("--draft-top-p", o->draft_top_p, "Draft sampler top-p")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--draft-top-k", o->draft_top_k, "Draft sampler top-k")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--think", o->think, "Reasoning: auto (template default) | on | off")
      ->check(CLI::IsMember({"auto", "on", "off"}));
  cmd->add_option("--mtp-hidden", o->mtp_hidden, "Trunk hidden fed to the MTP head: post | pre")
      ->check(CLI::IsMember({"post", "pre"}));
  return [o] { return RunGenerate(*o); };
}

}  // namespace mtplx::cli
