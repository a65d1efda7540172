#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <utility>

#include "base/file.h"
#include "base/strings.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/piece_cache.h"
#include "tokenizer/utf8.h"

namespace mtplx::tokenizer {
namespace {

constexpr size_t kPieceCacheEntries = size_t{1} << 15;

enum TokenFlag : uint8_t { kKnown = 1, kAdded = 2, kSpecial = 4 };

// The bytes a token stands for. Like Hugging Face's ByteLevel decoder, text that is not in the
// byte-level alphabet (an added token such as "<think>" is, but "héllo" would not be) is taken
// as its own UTF-8 bytes.
std::string DecodedBytes(const std::string& text) {
  std::optional<std::string> bytes = ByteLevelToBytes(text);
  if (!bytes) return text;
  return std::move(*bytes);
}

Result<std::vector<std::pair<std::string, std::string>>> MergesAsBytes(const TokenizerSpec& spec) {
  std::vector<std::pair<std::string, std::string>> merges;
  merges.reserve(spec.merges.size());
  for (size_t rank = 0; rank < spec.merges.size(); ++rank) {
    const auto& [left, right] = spec.merges[rank];
    std::optional<std::string> left_bytes = ByteLevelToBytes(left);
    std::optional<std::string> right_bytes = ByteLevelToBytes(right);
    if (!left_bytes || !right_bytes) {
      return InvalidArgument(StrCat("merge ", rank, " (", left, " ", right,
                                    ") has a character outside the byte-level alphabet"));
    }
    merges.emplace_back(std::move(*left_bytes), std::move(*right_bytes));
  }
  return merges;
}

// Vocab tokens outside the byte-level alphabet cannot be produced by BPE, so they are left out.
std::vector<std::pair<std::string, int32_t>> VocabAsBytes(const TokenizerSpec& spec) {
  std::vector<std::pair<std::string, int32_t>> vocab;
  vocab.reserve(spec.vocab.size());
  for (const auto& [text, id] : spec.vocab) {
    std::optional<std::string> bytes = ByteLevelToBytes(text);
    if (bytes) vocab.emplace_back(std::move(*bytes), id);
  }
  return vocab;
}

}  // namespace

// Buffers reused across the pieces of one Encode call.
struct Tokenizer::EncodeState {
  std::vector<int32_t>* ids;
  BpeScratch scratch;
  std::vector<std::string_view> pieces;
  std::vector<std::string_view> next_pieces;
  std::string normalized;
  std::string prefixed;
};

Tokenizer::Tokenizer(BpeModel bpe, std::vector<RegexSplitter> splitters)
    : bpe_(std::move(bpe)),
      splitters_(std::move(splitters)),
      cache_(std::make_unique<PieceCache>(kPieceCacheEntries)) {}

Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Result<Tokenizer> Tokenizer::FromJsonFile(const std::string& path) {
  MTPLX_ASSIGN_OR_RETURN(const std::string text, ReadTextFile(path));
  Result<Tokenizer> tokenizer = FromJsonString(text);
  if (!tokenizer.ok()) return tokenizer.status().WithContext(StrCat("load tokenizer ", path));
  return tokenizer;
}

Result<Tokenizer> Tokenizer::FromJsonString(std::string_view json_text) {
  MTPLX_ASSIGN_OR_RETURN(const TokenizerSpec spec, ParseTokenizerJson(json_text));
  return FromSpec(spec);
}

Result<Tokenizer> Tokenizer::FromSpec(const TokenizerSpec& spec) {
  MTPLX_ASSIGN_OR_RETURN(auto merges, MergesAsBytes(spec));
  MTPLX_ASSIGN_OR_RETURN(BpeModel bpe, BpeModel::Create(VocabAsBytes(spec), merges));
  std::vector<RegexSplitter> splitters;
  for (const SplitStep& step : spec.split_steps) {
    MTPLX_ASSIGN_OR_RETURN(RegexSplitter splitter,
                           RegexSplitter::Compile(step.pattern, step.literal));
    splitters.push_back(std::move(splitter));
  }
  Tokenizer tokenizer(std::move(bpe), std::move(splitters));
  tokenizer.nfc_ = spec.nfc;
  tokenizer.add_prefix_space_ = spec.add_prefix_space;
  tokenizer.InitTables(spec);
  return tokenizer;
}

void Tokenizer::InitTables(const TokenizerSpec& spec) {
  int32_t max_id = -1;
  for (const auto& entry : spec.vocab) max_id = std::max(max_id, entry.second);
  for (const AddedToken& token : spec.added_tokens) max_id = std::max(max_id, token.id);
  const size_t size = static_cast<size_t>(max_id) + 1;  // max_id >= 255: all bytes exist
  token_text_.assign(size, "");
  token_bytes_.assign(size, "");
  token_flags_.assign(size, 0);
  id_of_text_.reserve(spec.vocab.size() + spec.added_tokens.size());
  for (const auto& [text, id] : spec.vocab) {
    token_text_[id] = text;
    token_bytes_[id] = DecodedBytes(text);
    token_flags_[id] = kKnown;
    id_of_text_[text] = id;
  }
  // Added tokens come second: where both name an id or a text, the added token wins, as in
  // Hugging Face's lookups.
  for (const AddedToken& token : spec.added_tokens) {
    token_text_[token.id] = token.content;
    token_bytes_[token.id] = DecodedBytes(token.content);
    token_flags_[token.id] = kKnown | kAdded | (token.special ? kSpecial : 0);
    id_of_text_[token.content] = token.id;
    id_of_added_[token.content] = token.id;
  }
  added_tokens_ = spec.added_tokens;
  added_matcher_ = AddedTokenMatcher(added_tokens_);
}

std::vector<int32_t> Tokenizer::Encode(std::string_view text, bool allow_special) const {
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  EncodeState state;
  state.ids = &ids;
  size_t pos = 0;
  while (allow_special && pos < text.size()) {
    const AddedTokenMatcher::Match match = added_matcher_.FindNext(text, pos);
    if (match.token == nullptr) break;
    EncodeSegment(text.substr(pos, match.position - pos), &state);
    ids.push_back(match.token->id);
    pos = match.position + match.token->content.size();
  }
  EncodeSegment(text.substr(pos), &state);
  return ids;
}

std::vector<int32_t> Tokenizer::EncodeMarked(
    std::string_view text, std::span<const std::pair<size_t, size_t>> user_spans) const {
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  EncodeState state;
  state.ids = &ids;
  auto overlaps_user = [&](size_t begin, size_t end) {
    for (const auto& [b, e] : user_spans)
      if (begin < e && b < end) return true;
    return false;
  };
  size_t pos = 0, search = 0;
  while (search < text.size()) {
    const AddedTokenMatcher::Match match = added_matcher_.FindNext(text, search);
    if (match.token == nullptr) break;
    const size_t end = match.position + match.token->content.size();
    if (overlaps_user(match.position, end)) {
      search = match.position + 1;  // user text: not a token here
      continue;
    }
    EncodeSegment(text.substr(pos, match.position - pos), &state);
    ids.push_back(match.token->id);
    pos = search = end;
  }
  EncodeSegment(text.substr(pos), &state);
  return ids;
}

void Tokenizer::EncodeSegment(std::string_view segment, EncodeState* state) const {
  if (segment.empty()) return;
  std::string_view text = segment;
  if (nfc_ && NormalizeNfc(segment, &state->normalized)) text = state->normalized;
  if (add_prefix_space_ && text.front() != ' ') {
    state->prefixed.assign(" ").append(text);
    text = state->prefixed;
  }
  auto& pieces = state->pieces;
  pieces.assign(1, text);
  for (const RegexSplitter& splitter : splitters_) {
    state->next_pieces.clear();
    for (const std::string_view piece : pieces) splitter.Split(piece, &state->next_pieces);
    pieces.swap(state->next_pieces);
  }
  for (const std::string_view piece : pieces) EncodePiece(piece, state);
}

void Tokenizer::EncodePiece(std::string_view piece, EncodeState* state) const {
  std::vector<int32_t>& ids = *state->ids;
  if (piece.size() > 1 && cache_->Lookup(piece, &ids)) return;
  const size_t before = ids.size();
  bpe_.Encode(piece, &state->scratch, &ids);
  if (piece.size() > 1) cache_->Insert(piece, ids.data() + before, ids.size() - before);
}

std::string Tokenizer::Decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  std::string bytes;
  for (const int32_t id : ids) {
    if (!IsSpecial(id) || !skip_special_tokens) bytes.append(TokenBytes(id));
  }
  return IsValidUtf8(bytes) ? bytes : ToValidUtf8Lossy(bytes);
}

std::optional<std::string_view> Tokenizer::IdToToken(int32_t id) const {
  if (id < 0 || id >= vocab_size() || !(token_flags_[id] & kKnown)) return std::nullopt;
  return token_text_[id];
}

std::optional<int32_t> Tokenizer::TokenToId(std::string_view token_text) const {
  const auto it = id_of_text_.find(token_text);
  if (it == id_of_text_.end()) return std::nullopt;
  return it->second;
}

std::string_view Tokenizer::TokenBytes(int32_t id) const {
  if (id < 0 || id >= vocab_size()) return {};
  return token_bytes_[id];
}

std::optional<int32_t> Tokenizer::AddedTokenId(std::string_view content) const {
  const auto it = id_of_added_.find(content);
  if (it == id_of_added_.end()) return std::nullopt;
  return it->second;
}

bool Tokenizer::IsSpecial(int32_t id) const {
  return id >= 0 && id < vocab_size() && (token_flags_[id] & kSpecial);
}

bool Tokenizer::IsAddedToken(int32_t id) const {
  return id >= 0 && id < vocab_size() && (token_flags_[id] & kAdded);
}

}  // namespace mtplx::tokenizer
