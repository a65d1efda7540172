#include "synth/tokenizer_files.h"

#include "base/file.h"
#include "tokenizer/synthetic_tokenizer.h"

namespace mtplx::synth {

Status WriteTokenizerFiles(const nlohmann::ordered_json& config, const std::string& dir) {
  const auto& text = config.contains("text_config") ? config["text_config"] : config;
  tokenizer::SyntheticTokenizerOptions options;
  // The added tokens start at <|endoftext|>, which the presets use as eos/bos.
  options.added_token_base = text["eos_token_id"].get<int32_t>();
  MTPLX_ASSIGN_OR_RETURN(std::string tokenizer_json,
                         tokenizer::BuildSyntheticTokenizerJson(options));
  MTPLX_RETURN_IF_ERROR(WriteTextFile(JoinPath(dir, "tokenizer.json"), tokenizer_json));
  MTPLX_RETURN_IF_ERROR(WriteTextFile(JoinPath(dir, "tokenizer_config.json"),
                                      tokenizer::BuildSyntheticTokenizerConfigJson(options)));
  return WriteTextFile(JoinPath(dir, "chat_template.jinja"),
                       std::string(tokenizer::QwenChatTemplate()));
}

}  // namespace mtplx::synth
