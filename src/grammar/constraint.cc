#include "grammar/constraint.h"

#include <algorithm>
#include <limits>

namespace mtplx::grammar {

namespace {
// Masks kept per grammar; past this the cache starts over (a long free-form generation walks
// through many states that never recur).
constexpr size_t kMaxCachedMasks = 4096;
// DFA states kept (256 transitions each, 1 KiB); past this the DFA starts over.
constexpr size_t kMaxDfaStates = 16384;
constexpr int32_t kUnknown = -1;
constexpr int32_t kDead = -2;

void Set(TokenMask& bits, int32_t id) { bits[id >> 6] |= uint64_t{1} << (id & 63); }
}  // namespace

MaskOracle::MaskOracle(std::shared_ptr<const Grammar> grammar,
                       std::shared_ptr<const Vocabulary> vocabulary)
    : vocabulary_(std::move(vocabulary)), matcher_(std::move(grammar)) {
  walk_.resize(vocabulary_->max_depth() + 1);
}

int32_t MaskOracle::Intern(const MatchState& state) {
  const auto [it, added] = dfa_index_.emplace(state, static_cast<int32_t>(dfa_states_.size()));
  if (added) {
    dfa_states_.push_back(state);
    dfa_next_.resize(dfa_next_.size() + 256, kUnknown);
  }
  return it->second;
}

int32_t MaskOracle::Transition(int32_t from, uint8_t byte) {
  int32_t next = dfa_next_[static_cast<size_t>(from) * 256 + byte];
  if (next != kUnknown) return next;
  matcher_.AdvanceByte(dfa_states_[from], byte, scratch_);
  next = scratch_.dead() ? kDead : Intern(scratch_);
  dfa_next_[static_cast<size_t>(from) * 256 + byte] = next;
  return next;
}

TokenMask MaskOracle::Compute(const MatchState& state) {
  if (dfa_states_.size() > kMaxDfaStates) {
    dfa_states_.clear();
    dfa_next_.clear();
    dfa_index_.clear();
  }
  TokenMask bits((vocabulary_->size() + 63) / 64, 0);
  const auto& nodes = vocabulary_->nodes();
  const auto& tokens = vocabulary_->tokens();
  walk_[0] = Intern(state);
  // Depth-first over the flattened trie: a node whose byte kills every stack skips its subtree.
  for (uint32_t i = 0; i < nodes.size();) {
    const Vocabulary::Node& node = nodes[i];
    ++stats_.nodes_visited;
    const int32_t here = Transition(walk_[node.depth - 1], node.byte);
    if (here == kDead) {
      i = node.subtree_end;
      continue;
    }
    walk_[node.depth] = here;
    for (uint32_t t = node.first_token; t < node.first_token + node.token_count; ++t)
      Set(bits, tokens[t]);
    ++i;
  }
  return bits;
}

std::shared_ptr<const TokenMask> MaskOracle::Mask(const MatchState& state) {
  ++stats_.masks;
  auto it = cache_.find(state);
  if (it != cache_.end()) {
    ++stats_.cache_hits;
    return it->second;
  }
  if (cache_.size() >= kMaxCachedMasks) cache_.clear();  // holders keep their masks alive
  return cache_.emplace(state, std::make_shared<const TokenMask>(Compute(state))).first->second;
}

TokenMask MaskOracle::MaskByScan(const MatchState& state) {
  TokenMask bits((vocabulary_->size() + 63) / 64, 0);
  for (int32_t id = 0; id < vocabulary_->size(); ++id) {
    const std::string_view b = vocabulary_->bytes(id);
    if (b.empty()) continue;
    MatchState s = state;
    if (matcher_.AdvanceBytes(s, b)) Set(bits, id);
  }
  return bits;
}

TokenConstraint::TokenConstraint(std::shared_ptr<MaskOracle> oracle, std::vector<int32_t> end_ids)
    : oracle_(std::move(oracle)), end_ids_(std::move(end_ids)) {
  history_.push_back(oracle_->Start());
}

TokenConstraint::TokenConstraint(std::shared_ptr<const Grammar> grammar,
                                 std::shared_ptr<const Vocabulary> vocabulary,
                                 std::vector<int32_t> end_ids)
    : TokenConstraint(std::make_shared<MaskOracle>(std::move(grammar), std::move(vocabulary)),
                      std::move(end_ids)) {}

bool TokenConstraint::IsEnd(int32_t token) const {
  return std::find(end_ids_.begin(), end_ids_.end(), token) != end_ids_.end();
}

void TokenConstraint::AddEnds(TokenMask& bits) const {
  if (!CanEnd()) return;
  for (int32_t id : end_ids_)
    if (id >= 0 && id < oracle_->vocabulary().size()) Set(bits, id);
}

const TokenMask& TokenConstraint::Current() {
  if (!current_) current_ = oracle_->Mask(history_.back());
  return *current_;
}

TokenMask TokenConstraint::Allowed() {
  TokenMask bits = Current();
  AddEnds(bits);
  return bits;
}

bool TokenConstraint::IsAllowed(int32_t token) {
  if (token < 0 || token >= oracle_->vocabulary().size()) return false;
  if (IsEnd(token)) return CanEnd();
  return (Current()[token >> 6] >> (token & 63)) & 1;
}

TokenMask TokenConstraint::AllowedByScan() {
  TokenMask bits = oracle_->MaskByScan(history_.back());
  AddEnds(bits);
  return bits;
}

void TokenConstraint::MaskLogits(std::span<float> logits) {
  const TokenMask& bits = Current();
  const size_t n =
      std::min<size_t>(logits.size(), static_cast<size_t>(oracle_->vocabulary().size()));
  constexpr float kNone = -std::numeric_limits<float>::infinity();
  // End tokens have no bytes, so the mask refuses them: keep theirs where the text may end.
  // (A member buffer: this runs for every verify row, and should not allocate.)
  end_logits_.clear();
  if (CanEnd())
    for (int32_t id : end_ids_)
      if (id >= 0 && static_cast<size_t>(id) < n) end_logits_.emplace_back(id, logits[id]);
  // Per 64 tokens: all allowed (the common case inside free text) costs a compare, none allowed
  // a fill, and a mix a visit to each refused token only.
  for (size_t w = 0; w * 64 < n; ++w) {
    const size_t base = w * 64;
    const size_t end = std::min(n, base + 64);
    uint64_t refused = ~bits[w];
    if (end - base < 64) refused &= (uint64_t{1} << (end - base)) - 1;
    if (refused == 0) continue;
    if (refused == ~uint64_t{0}) {
      std::fill(logits.begin() + base, logits.begin() + end, kNone);
      continue;
    }
    for (; refused; refused &= refused - 1) logits[base + __builtin_ctzll(refused)] = kNone;
  }
  for (size_t i = n; i < logits.size(); ++i) logits[i] = kNone;  // ids past the vocabulary
  for (const auto& [id, value] : end_logits_) logits[id] = value;
}

bool TokenConstraint::Accept(int32_t token) {
  if (token < 0 || token >= oracle_->vocabulary().size()) return false;
  const MatchState& state = history_.back();
  if (IsEnd(token)) {
    if (!state.CanEnd()) return false;
    history_.push_back(state);
    current_.reset();
    return true;
  }
  const std::string_view b = oracle_->vocabulary().bytes(token);
  if (b.empty()) return false;
  MatchState next = state;
  if (!oracle_->Advance(next, b)) return false;
  history_.push_back(std::move(next));
  current_.reset();
  return true;
}

void TokenConstraint::Rollback(size_t tokens) {
  tokens = std::min(tokens, accepted());
  if (tokens == 0) return;
  history_.resize(history_.size() - tokens);
  current_.reset();
}

}  // namespace mtplx::grammar
