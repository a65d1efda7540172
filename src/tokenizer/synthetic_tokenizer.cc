#include "tokenizer/synthetic_tokenizer.h"

#include <unordered_set>

#include "base/strings.h"
#include "tokenizer/bpe_trainer.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/regex_splitter.h"
#include "tokenizer/synthetic_corpus.h"

namespace mtplx::tokenizer {
namespace {

struct AddedTokenName {
  const char* content;
  bool special;
};

// Spec §6 order. The flags follow Qwen3's tokenizer.json; the Qwen 3.5 audio/TTS tokens are
// special.
constexpr AddedTokenName kQwenAddedTokens[kQwenAddedTokenCount] = {
    {"<|endoftext|>", true},      {"<|im_start|>", true},
    {"<|im_end|>", true},         {"<|object_ref_start|>", true},
    {"<|object_ref_end|>", true}, {"<|box_start|>", true},
    {"<|box_end|>", true},        {"<|quad_start|>", true},
    {"<|quad_end|>", true},       {"<|vision_start|>", true},
    {"<|vision_end|>", true},     {"<|vision_pad|>", true},
    {"<|image_pad|>", true},      {"<|video_pad|>", true},
    {"<tool_call>", false},       {"</tool_call>", false},
    {"<|fim_prefix|>", false},    {"<|fim_middle|>", false},
    {"<|fim_suffix|>", false},    {"<|fim_pad|>", false},
    {"<|repo_name|>", false},     {"<|file_sep|>", false},
    {"<tool_response>", false},   {"</tool_response>", false},
    {"<think>", false},           {"</think>", false},
    {"<|audio_start|>", true},    {"<|audio_end|>", true},
    {"<tts_pad>", true},          {"<tts_text_bos>", true},
    {"<tts_text_eod>", true},     {"<tts_text_bos_single>", true},
    {"<|audio_pad|>", true},
};

constexpr const char* kByteLevelStep =
    R"({"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, )"
    R"("use_regex": false})";

// JSON string literal for UTF-8 text.
std::string Quote(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += StrFormat("\\u%04x", static_cast<unsigned>(c));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

const char* Bool(bool value) { return value ? "true" : "false"; }

// The vocabulary as byte-level texts by id (0..base-1) plus the merges as id pairs.
struct SyntheticVocab {
  std::vector<std::string> texts;
  std::vector<std::pair<int32_t, int32_t>> merges;
};

Result<SyntheticVocab> BuildVocab(const SyntheticTokenizerOptions& options) {
  const int32_t base = options.added_token_base;
  const int32_t max_merges = options.max_merges < 0 ? base - 256 : options.max_merges;
  if (base < 256 || max_merges > base - 256) {
    return InvalidArgument(StrCat("synthetic tokenizer: added_token_base ", base,
                                  " leaves no room for 256 byte tokens and ", max_merges,
                                  " merges"));
  }
  MTPLX_ASSIGN_OR_RETURN(const RegexSplitter splitter, RegexSplitter::Compile(kQwen35SplitPattern));
  TrainedBpe trained =
      TrainByteLevelBpe(SyntheticTrainingCorpus(), splitter, static_cast<size_t>(max_merges));
  SyntheticVocab vocab;
  vocab.merges = std::move(trained.merges);
  std::unordered_set<std::string> seen;
  for (const std::string& bytes : trained.tokens) {
    vocab.texts.push_back(BytesToByteLevel(bytes));
    seen.insert(vocab.texts.back());
  }
  for (auto id = static_cast<int32_t>(vocab.texts.size()); id < base; ++id) {
    vocab.texts.push_back(StrCat("<unused_", id, ">"));
    if (!seen.insert(vocab.texts.back()).second) {
      return Internal(StrCat("synthetic tokenizer: placeholder ", vocab.texts.back(),
                             " collides with a learned token"));
    }
  }
  return vocab;
}

void AppendAddedTokens(int32_t base, std::string* json) {
  *json += "  \"added_tokens\": [\n";
  const std::vector<AddedToken> tokens = QwenAddedTokens(base);
  for (size_t i = 0; i < tokens.size(); ++i) {
    *json += StrCat("    {\"id\": ", tokens[i].id, ", \"content\": ", Quote(tokens[i].content),
                    ", \"single_word\": false, \"lstrip\": false, \"rstrip\": false, ",
                    "\"normalized\": false, \"special\": ", Bool(tokens[i].special), "}",
                    i + 1 < tokens.size() ? ",\n" : "\n");
  }
  *json += "  ],\n";
}

void AppendPipeline(std::string* json) {
  *json += "  \"normalizer\": {\"type\": \"NFC\"},\n";
  *json += StrCat("  \"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [",
                  "{\"type\": \"Split\", \"pattern\": {\"Regex\": ", Quote(kQwen35SplitPattern),
                  "}, \"behavior\": \"Isolated\", \"invert\": false}, ", kByteLevelStep, "]},\n");
  *json += StrCat("  \"post_processor\": ", kByteLevelStep, ",\n");
  *json += StrCat("  \"decoder\": ", kByteLevelStep, ",\n");
}

void AppendModel(const SyntheticVocab& vocab, std::string* json) {
  *json +=
      "  \"model\": {\n    \"type\": \"BPE\",\n    \"dropout\": null,\n    \"unk_token\": null,\n"
      "    \"continuing_subword_prefix\": \"\",\n    \"end_of_word_suffix\": \"\",\n"
      "    \"fuse_unk\": false,\n    \"byte_fallback\": false,\n    \"ignore_merges\": false,\n"
      "    \"vocab\": {\n";
  for (size_t id = 0; id < vocab.texts.size(); ++id) {
    *json += StrCat("      ", Quote(vocab.texts[id]), ": ", id,
                    id + 1 < vocab.texts.size() ? ",\n" : "\n");
  }
  *json += "    },\n    \"merges\": [\n";
  for (size_t i = 0; i < vocab.merges.size(); ++i) {
    const auto [left, right] = vocab.merges[i];
    *json += StrCat("      [", Quote(vocab.texts[left]), ", ", Quote(vocab.texts[right]), "]",
                    i + 1 < vocab.merges.size() ? ",\n" : "\n");
  }
  *json += "    ]\n  }\n";
}

}  // namespace

std::vector<AddedToken> QwenAddedTokens(int32_t base) {
  std::vector<AddedToken> tokens;
  tokens.reserve(kQwenAddedTokenCount);
  for (int32_t i = 0; i < kQwenAddedTokenCount; ++i) {
    tokens.push_back({base + i, kQwenAddedTokens[i].content, kQwenAddedTokens[i].special});
  }
  return tokens;
}

Result<std::string> BuildSyntheticTokenizerJson(const SyntheticTokenizerOptions& options) {
  MTPLX_ASSIGN_OR_RETURN(const SyntheticVocab vocab, BuildVocab(options));
  std::string json = "{\n  \"version\": \"1.0\",\n  \"truncation\": null,\n  \"padding\": null,\n";
  AppendAddedTokens(options.added_token_base, &json);
  AppendPipeline(&json);
  AppendModel(vocab, &json);
  json += "}\n";
  return json;
}

std::string BuildSyntheticTokenizerConfigJson(const SyntheticTokenizerOptions& options) {
  const std::vector<AddedToken> tokens = QwenAddedTokens(options.added_token_base);
  std::string decoder;
  std::string additional;
  for (const AddedToken& token : tokens) {
    if (!decoder.empty()) decoder += ",\n";
    decoder += StrCat("    \"", token.id, "\": {\"content\": ", Quote(token.content),
                      ", \"lstrip\": false, \"normalized\": false, \"rstrip\": false, ",
                      "\"single_word\": false, \"special\": ", Bool(token.special), "}");
    // As in Qwen's files: every special token except <|endoftext|>, which is the pad token.
    if (token.special && token.content != "<|endoftext|>") {
      additional += StrCat(additional.empty() ? "" : ", ", Quote(token.content));
    }
  }
  return StrCat("{\n  \"add_bos_token\": false,\n  \"add_prefix_space\": false,\n",
                "  \"added_tokens_decoder\": {\n", decoder, "\n  },\n",
                "  \"additional_special_tokens\": [", additional, "],\n",
                "  \"bos_token\": null,\n  \"chat_template\": ", Quote(QwenChatTemplate()), ",\n",
                "  \"clean_up_tokenization_spaces\": false,\n  \"eos_token\": \"<|im_end|>\",\n",
                "  \"errors\": \"replace\",\n  \"model_max_length\": 262144,\n",
                "  \"pad_token\": \"<|endoftext|>\",\n  \"split_special_tokens\": false,\n",
                "  \"tokenizer_class\": \"Qwen2Tokenizer\",\n  \"unk_token\": null\n}\n");
}

}  // namespace mtplx::tokenizer
