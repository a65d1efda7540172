#include "tokenizer/tokenizer_json.h"

#include <nlohmann/json.hpp>

#include "base/strings.h"
#include "tokenizer/regex_splitter.h"

namespace mtplx::tokenizer {
namespace {

using Json = nlohmann::json;

// Largest id we accept; guards against a typo allocating gigabytes of tables.
constexpr int64_t kMaxTokenId = (int64_t{1} << 24) - 1;

std::string TypeOf(const Json& node) {
  return node.is_object() && node.contains("type") ? node.at("type").get<std::string>() : "";
}

bool FlagOr(const Json& node, const char* key, bool fallback) {
  const auto it = node.find(key);
  return it == node.end() || it->is_null() ? fallback : it->get<bool>();
}

bool IsNullOrEmptyString(const Json& node, const char* key) {
  const auto it = node.find(key);
  return it == node.end() || it->is_null() || it->get<std::string>().empty();
}

Status ParseNormalizer(const Json& node, TokenizerSpec* spec) {
  if (node.is_null()) return Status::Ok();
  const std::string type = TypeOf(node);
  if (type == "NFC") {
    spec->nfc = true;
    return Status::Ok();
  }
  if (type == "Sequence") {
    for (const Json& child : node.at("normalizers")) {
      MTPLX_RETURN_IF_ERROR(ParseNormalizer(child, spec));
    }
    return Status::Ok();
  }
  return Unimplemented(StrCat("normalizer \"", type, "\" is not supported (only NFC)"));
}

Status ParseSplit(const Json& node, TokenizerSpec* spec) {
  const std::string behavior = node.value("behavior", "");
  if (behavior != "Isolated" || FlagOr(node, "invert", false)) {
    return Unimplemented(StrCat("Split pre-tokenizer with behavior \"", behavior,
                                "\" or invert=true is not supported (only Isolated)"));
  }
  const Json& pattern = node.at("pattern");
  if (pattern.contains("Regex")) {
    spec->split_steps.push_back({pattern.at("Regex").get<std::string>(), false});
  } else if (pattern.contains("String")) {
    spec->split_steps.push_back({pattern.at("String").get<std::string>(), true});
  } else {
    return InvalidArgument("Split pre-tokenizer pattern has neither Regex nor String");
  }
  return Status::Ok();
}

// ByteLevel maps bytes to the printable alphabet; with use_regex (default true) it also splits
// with the GPT-2 pattern first.
Status ParseByteLevel(const Json& node, TokenizerSpec* spec, bool* seen) {
  if (FlagOr(node, "add_prefix_space", false)) {
    // Hugging Face prepends the space to every piece reaching this step; we only support the
    // unambiguous case where ByteLevel is the first step and the pieces are whole segments.
    if (!spec->split_steps.empty()) {
      return Unimplemented("ByteLevel add_prefix_space after another pre-tokenizer");
    }
    spec->add_prefix_space = true;
  }
  if (FlagOr(node, "use_regex", true)) {
    spec->split_steps.push_back({std::string(kGpt2SplitPattern), false});
  }
  *seen = true;
  return Status::Ok();
}

Status ParsePreTokenizer(const Json& node, TokenizerSpec* spec, bool* byte_level_seen) {
  if (node.is_null()) return Status::Ok();
  const std::string type = TypeOf(node);
  if (type == "Sequence") {
    for (const Json& child : node.at("pretokenizers")) {
      MTPLX_RETURN_IF_ERROR(ParsePreTokenizer(child, spec, byte_level_seen));
    }
    return Status::Ok();
  }
  if (*byte_level_seen) {
    return Unimplemented(StrCat("pre-tokenizer \"", type, "\" after ByteLevel"));
  }
  if (type == "Split") return ParseSplit(node, spec);
  if (type == "ByteLevel") return ParseByteLevel(node, spec, byte_level_seen);
  return Unimplemented(StrCat("pre-tokenizer \"", type, "\" is not supported"));
}

Status CheckBpeOptions(const Json& model) {
  if (TypeOf(model) != "BPE") {
    return Unimplemented(StrCat("model type \"", TypeOf(model), "\" is not supported (only BPE)"));
  }
  if (FlagOr(model, "byte_fallback", false)) return Unimplemented("BPE byte_fallback");
  if (FlagOr(model, "ignore_merges", false)) return Unimplemented("BPE ignore_merges");
  if (model.contains("dropout") && !model.at("dropout").is_null()) {
    return Unimplemented("BPE dropout");
  }
  if (!IsNullOrEmptyString(model, "continuing_subword_prefix") ||
      !IsNullOrEmptyString(model, "end_of_word_suffix")) {
    return Unimplemented("BPE continuing_subword_prefix / end_of_word_suffix");
  }
  return Status::Ok();
}

// A token id must be a JSON integer in [0, kMaxTokenId]; floats such as 1e105 are refused
// rather than converted (converting an out-of-range float to an integer is undefined).
Result<int32_t> TokenId(const Json& node, std::string_view what) {
  if (!node.is_number_integer()) return InvalidArgument(StrCat(what, " id is not an integer"));
  if (node.is_number_unsigned() ? node.get<uint64_t>() > static_cast<uint64_t>(kMaxTokenId)
                                : (node.get<int64_t>() < 0 || node.get<int64_t>() > kMaxTokenId)) {
    return InvalidArgument(StrCat(what, " id ", node.dump(), " is out of range"));
  }
  return static_cast<int32_t>(node.get<int64_t>());
}

Status ParseVocab(const Json& vocab, TokenizerSpec* spec) {
  spec->vocab.reserve(vocab.size());
  for (const auto& [token, id_node] : vocab.items()) {
    MTPLX_ASSIGN_OR_RETURN(const int32_t id, TokenId(id_node, StrCat("vocab \"", token, "\"")));
    spec->vocab.emplace_back(token, id);
  }
  return Status::Ok();
}

// Merges are written "left right" (older files) or ["left", "right"] (newer files).
Status ParseMerges(const Json& merges, TokenizerSpec* spec) {
  spec->merges.reserve(merges.size());
  for (const Json& merge : merges) {
    if (merge.is_array() && merge.size() == 2) {
      spec->merges.emplace_back(merge[0].get<std::string>(), merge[1].get<std::string>());
      continue;
    }
    const std::string text = merge.get<std::string>();
    const size_t space = text.find(' ');
    if (space == std::string::npos || text.find(' ', space + 1) != std::string::npos) {
      return InvalidArgument(StrCat("merge \"", text, "\" is not two tokens"));
    }
    spec->merges.emplace_back(text.substr(0, space), text.substr(space + 1));
  }
  return Status::Ok();
}

// The "normalized" flag is ignored: all added tokens are matched in the raw text. Qwen sets it
// to false everywhere, and NFC leaves ASCII token text unchanged anyway.
Status ParseAddedTokens(const Json& tokens, TokenizerSpec* spec) {
  if (tokens.is_null()) return Status::Ok();
  for (const Json& node : tokens) {
    AddedToken token;
    MTPLX_ASSIGN_OR_RETURN(token.id, TokenId(node.at("id"), "added token"));
    token.content = node.at("content").get<std::string>();
    token.special = FlagOr(node, "special", false);
    if (FlagOr(node, "lstrip", false) || FlagOr(node, "rstrip", false) ||
        FlagOr(node, "single_word", false)) {
      return Unimplemented(
          StrCat("added token \"", token.content, "\" uses lstrip/rstrip/single_word"));
    }
    spec->added_tokens.push_back(std::move(token));
  }
  return Status::Ok();
}

Status ParseDecoder(const Json& node) {
  if (TypeOf(node) != "ByteLevel") {
    return Unimplemented(StrCat("decoder \"", TypeOf(node), "\" is not supported (ByteLevel)"));
  }
  return Status::Ok();
}

Status ParseDocument(const Json& root, TokenizerSpec* spec) {
  if (!root.is_object()) return InvalidArgument("top level is not a JSON object");
  const Json& model = root.at("model");
  MTPLX_RETURN_IF_ERROR(CheckBpeOptions(model));
  MTPLX_RETURN_IF_ERROR(ParseVocab(model.at("vocab"), spec));
  MTPLX_RETURN_IF_ERROR(ParseMerges(model.at("merges"), spec));
  MTPLX_RETURN_IF_ERROR(ParseAddedTokens(root.value("added_tokens", Json()), spec));
  MTPLX_RETURN_IF_ERROR(ParseNormalizer(root.value("normalizer", Json()), spec));
  bool byte_level = false;
  MTPLX_RETURN_IF_ERROR(ParsePreTokenizer(root.value("pre_tokenizer", Json()), spec, &byte_level));
  if (!byte_level)
    return Unimplemented("pre-tokenizer has no ByteLevel step (only byte-level BPE)");
  return ParseDecoder(root.value("decoder", Json()));
}

}  // namespace

Result<TokenizerSpec> ParseTokenizerJson(std::string_view json_text) {
  TokenizerSpec spec;
  try {
    const Json root = Json::parse(json_text.begin(), json_text.end());
    MTPLX_RETURN_IF_ERROR(ParseDocument(root, &spec));
  } catch (const Json::exception& error) {
    // Missing keys and wrong types surface as exceptions from nlohmann::json's accessors.
    return InvalidArgument(StrCat("malformed tokenizer.json: ", error.what()));
  }
  return spec;
}

}  // namespace mtplx::tokenizer
