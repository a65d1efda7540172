// A loaded model ready to answer conversations: model, tokenizer, chat template, generation
// defaults and the decision between plain and speculative decoding. `run` uses one turn of it,
// `chat` many.
#pragma once

#include <CLI/CLI.hpp>
#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "chat/chat_template.h"
#include "chat/conversation.h"
#include "engine/engine.h"
#include "grammar/grammar.h"
#include "model/model.h"

namespace mtplx::cli {

// Flags shared by `run` and `chat`.
struct GenerationFlags {
  std::string model_dir;
  std::string system;
  int max_tokens = 256;
  double temperature = -1, top_p = -1, min_p = -1;  // -1: the pack's default
  int top_k = -1;
  // OpenAI semantics; NaN: the pack's default (mtplx_runtime.json sampler, else 0).
  double presence_penalty = std::numeric_limits<double>::quiet_NaN();
  double frequency_penalty = std::numeric_limits<double>::quiet_NaN();
  uint64_t seed = 0;
  int threads = 0;
  int depth = 0;  // 0: the pack's default
  bool no_mtp = false;
  bool skip_mtp_check = false;
  double draft_temperature = -1, draft_top_p = -1;
  int draft_top_k = -1;
  std::string mtp_hidden = "post";
  // Quantized matmuls: int8 (fast) | f32 (exact reference).
  std::string activations = "int8";
  // KV cache rows: bf16 (half the bytes a long context reads, default) | f32 (exact reference).
  std::string kv_cache = "bf16";
  // Bits of the drafter's own copy of the output head; 0: the model's head.
  int draft_head_bits = 4;
  // Bits of the MTP layer's matrices, quantized again at load when wider; 0: as stored.
  int draft_layer_bits = 4;
  int64_t draft_vocab = -1;  // model::kAutoDraftVocab; 0: the whole vocabulary
  // Columns sharing one scale and bias in the drafter's requantized matrices.
  int draft_group_size = 64;
  std::string think = "auto";     // enable_thinking: auto (template default) | on | off
  std::vector<std::string> stop;  // stop strings: generation ends before the first match
  bool ignore_eos = false;        // generate past the model's end tokens (fixed-length runs)
  std::string json_schema_file;   // the reply is a JSON document of this schema
  std::string grammar_file;       // the reply is a sentence of this GBNF grammar
  bool quiet = false;
};

void AddGenerationFlags(CLI::App* cmd, GenerationFlags& flags);
// --kv-cache, shared by every command that loads a model for generation.
void AddKvCacheFlag(CLI::App* cmd, std::string& kv_cache);
kernels::KvType KvTypeFromFlag(const std::string& kv_cache);

// One reply as the terminal commands report it: the engine's completion, with finish_reason
// "interrupted" when Ctrl-C / SIGTERM stopped it.
using Turn = engine::Completion;

// The engine behind `run` and `chat`, driven with the flags of the command line.
class Session {
 public:
  static Result<std::unique_ptr<Session>> Open(const GenerationFlags& flags, bool show_progress);

  // Generates the assistant's reply; `on_text` receives decoded text as it streams.
  Result<Turn> Reply(const chat::Conversation& conversation,
                     const std::function<void(std::string_view)>& on_text);

  // Continues `text` as it is, without the chat template (completion of a base model: code,
  // prose); special-token text in it stays plain text.
  Result<Turn> Complete(const std::string& text,
                        const std::function<void(std::string_view)>& on_text);

  // Speculation on or off for later turns (off always works; on only if the head passed).
  void SetSpeculation(bool on) { engine_->SetSpeculation(on); }
  bool speculating() const { return engine_->depth() > 0; }
  int depth() const { return engine_->depth(); }
  // Why speculation is off, when it is (empty otherwise).
  const std::string& notice() const { return engine_->notice(); }
  // "tuned: MTP depth 2 (...)" when `mtplx tune`'s stored depth was applied.
  const std::string& tuned_notice() const { return tuned_notice_; }
  const model::Model& model() const { return engine_->model(); }
  // Raised by a signal handler to stop the reply in progress: the turn ends with the text so far
  // and finish_reason "interrupted".
  void SetInterruptFlag(std::shared_ptr<std::atomic<bool>> flag) { interrupt_ = std::move(flag); }

 private:
  Session() = default;
  Result<Turn> Generate(engine::Request request,
                        const std::function<void(std::string_view)>& on_text);

  GenerationFlags flags_;
  std::unique_ptr<engine::Engine> engine_;
  std::shared_ptr<const grammar::Grammar> grammar_;  // from --json-schema / --grammar
  int turns_ = 0;
  std::string tuned_notice_;
  std::shared_ptr<std::atomic<bool>> interrupt_;
};

// A plain text message ("system", "user", "assistant").
chat::Message TextMessage(std::string role, std::string content);

// Stats of a turn as JSON (the `stats` object of `run --json`).
nlohmann::json TurnStatsJson(const Turn& turn, const model::Model& model);
// "[mtplx] mode=MTP depth=2 tokens=N tok/s=X prefill_tok/s=Y finish=length"
std::string StatsLine(const Turn& turn);

}  // namespace mtplx::cli
