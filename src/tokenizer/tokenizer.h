// The product tokenizer: Hugging Face byte-level BPE (Qwen 3 / 3.5 and GPT-2 style files).
//
// Encode pipeline, matching Hugging Face tokenizers: split out added tokens (only when the text
// comes from a trusted template) → NFC → regex pre-tokenization → byte-level BPE per piece.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/status.h"
#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe_model.h"
#include "tokenizer/regex_splitter.h"
#include "tokenizer/tokenizer_json.h"

namespace mtplx::tokenizer {

class PieceCache;

// Immutable after loading; Encode and Decode may run concurrently from many threads.
class Tokenizer {
 public:
  static Result<Tokenizer> FromJsonFile(const std::string& path);
  static Result<Tokenizer> FromJsonString(std::string_view json_text);
  static Result<Tokenizer> FromSpec(const TokenizerSpec& spec);

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  // allow_special=true (chat-template output): added tokens in the text become their ids.
  // allow_special=false (user content): "<|im_end|>" is encoded as ordinary text, so users
  // cannot inject control tokens. Any bytes are accepted, including invalid UTF-8.
  std::vector<int32_t> Encode(std::string_view text, bool allow_special) const;

  // Encodes rendered chat-template text: added tokens are matched everywhere except inside
  // `user_spans` (sorted, disjoint [begin, end) byte ranges of text that came from user input),
  // so a user cannot forge <|im_start|> and friends. Splitting only at the accepted matches keeps
  // the result identical to Hugging Face's whole-string encoding whenever no user span contains
  // added-token text.
  std::vector<int32_t> EncodeMarked(std::string_view text,
                                    std::span<const std::pair<size_t, size_t>> user_spans) const;

  // Concatenates the tokens' bytes and repairs invalid UTF-8 with U+FFFD (as Hugging Face's
  // decode does). Unknown ids are skipped; skip_special_tokens drops tokens flagged special.
  std::string Decode(std::span<const int32_t> ids, bool skip_special_tokens = false) const;

  // One past the largest id (vocab and added tokens), i.e. the number of ids in use.
  int32_t vocab_size() const { return static_cast<int32_t>(token_text_.size()); }

  // Token text as written in tokenizer.json ("Ġthe", "<|im_end|>"); nullopt for unknown ids.
  std::optional<std::string_view> IdToToken(int32_t id) const;
  std::optional<int32_t> TokenToId(std::string_view token_text) const;

  // The raw bytes an id decodes to (may be a partial UTF-8 character); empty if unknown.
  std::string_view TokenBytes(int32_t id) const;

  // Id of an added token by its content ("<|im_end|>", "<think>"), special or not.
  std::optional<int32_t> AddedTokenId(std::string_view content) const;
  bool IsSpecial(int32_t id) const;
  bool IsAddedToken(int32_t id) const;
  const std::vector<AddedToken>& added_tokens() const { return added_tokens_; }

 private:
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view text) const { return std::hash<std::string_view>()(text); }
  };
  using StringToId = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;
  struct EncodeState;

  Tokenizer(BpeModel bpe, std::vector<RegexSplitter> splitters);
  void InitTables(const TokenizerSpec& spec);
  void EncodeSegment(std::string_view segment, EncodeState* state) const;
  void EncodePiece(std::string_view piece, EncodeState* state) const;

  BpeModel bpe_;
  std::vector<RegexSplitter> splitters_;
  bool nfc_ = false;
  bool add_prefix_space_ = false;
  std::vector<AddedToken> added_tokens_;
  AddedTokenMatcher added_matcher_;
  std::vector<std::string> token_text_;   // by id
  std::vector<std::string> token_bytes_;  // by id
  std::vector<uint8_t> token_flags_;      // by id: kKnown | kAdded | kSpecial
  StringToId id_of_text_;
  StringToId id_of_added_;
  std::unique_ptr<PieceCache> cache_;
};

}  // namespace mtplx::tokenizer
