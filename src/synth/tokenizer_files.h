// Tokenizer files of a synthetic checkpoint: tokenizer.json (a small byte-level BPE with the Qwen
// added tokens at the ids the config expects), tokenizer_config.json and chat_template.jinja.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "base/status.h"

namespace mtplx::synth {

Status WriteTokenizerFiles(const nlohmann::ordered_json& config, const std::string& dir);

}  // namespace mtplx::synth
