#include "grammar/constraint.h"

#include <algorithm>
#include <limits>

namespace mtplx::grammar {

namespace {
// Masks kept per request; past this the cache starts over (a long free-form generation walks
// through many states that never recur).
constexpr size_t kMaxCachedMasks = 4096;
// DFA states kept (256 transitions each, 1 KiB); past this the DFA starts over.
constexpr size_t kMaxDfaStates = 32768;
constexpr int32_t kUnknown = -1;
constexpr int32_t kDead = -2;

void Set(std::vector<uint64_t>& bits, int32_t id) { bits[id >> 6] |= uint64_t{1} << (id & 63); }
}  // namespace

TokenConstraint::TokenConstraint(std::shared_ptr<const Grammar> grammar,
                                 std::shared_ptr<const Vocabulary> vocabulary,
                                 std::vector<int32_t> end_ids)
    : vocabulary_(std::move(vocabulary)),
      matcher_(std::move(grammar)),
      end_ids_(std::move(end_ids)) {
  history_.push_back(matcher_.Start());
  walk_.resize(vocabulary_->max_depth() + 1);
}

void TokenConstraint::AllowEnds(const MatchState& state, std::vector<uint64_t>& bits) const {
  if (!state.CanEnd()) return;
  for (int32_t id : end_ids_)
    if (id >= 0 && id < vocabulary_->size()) Set(bits, id);
}

int32_t TokenConstraint::Intern(const MatchState& state) {
  const auto [it, added] = dfa_index_.emplace(state, static_cast<int32_t>(dfa_states_.size()));
  if (added) {
    dfa_states_.push_back(state);
    dfa_next_.resize(dfa_next_.size() + 256, kUnknown);
  }
  return it->second;
}

int32_t TokenConstraint::Transition(int32_t from, uint8_t byte) {
  int32_t next = dfa_next_[static_cast<size_t>(from) * 256 + byte];
  if (next != kUnknown) return next;
  matcher_.AdvanceByte(dfa_states_[from], byte, scratch_);
  next = scratch_.dead() ? kDead : Intern(scratch_);
  dfa_next_[static_cast<size_t>(from) * 256 + byte] = next;
  return next;
}

std::vector<uint64_t> TokenConstraint::Compute(const MatchState& state) {
  if (dfa_states_.size() > kMaxDfaStates) {
    dfa_states_.clear();
    dfa_next_.clear();
    dfa_index_.clear();
  }
  std::vector<uint64_t> bits((vocabulary_->size() + 63) / 64, 0);
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
  AllowEnds(state, bits);
  return bits;
}

const std::vector<uint64_t>& TokenConstraint::Allowed() {
  if (current_) return *current_;
  ++stats_.masks;
  const MatchState& state = history_.back();
  auto it = cache_.find(state);
  if (it != cache_.end()) {
    ++stats_.cache_hits;
  } else {
    if (cache_.size() >= kMaxCachedMasks) cache_.clear();
    it = cache_.emplace(state, Compute(state)).first;
  }
  current_ = &it->second;
  return *current_;
}

std::vector<uint64_t> TokenConstraint::AllowedByScan() {
  const MatchState& state = history_.back();
  std::vector<uint64_t> bits((vocabulary_->size() + 63) / 64, 0);
  for (int32_t id = 0; id < vocabulary_->size(); ++id) {
    const std::string_view b = vocabulary_->bytes(id);
    if (b.empty()) continue;
    MatchState s = state;
    if (matcher_.AdvanceBytes(s, b)) Set(bits, id);
  }
  AllowEnds(state, bits);
  return bits;
}

void TokenConstraint::MaskLogits(std::span<float> logits) {
  const std::vector<uint64_t>& bits = Allowed();
  const size_t n = std::min<size_t>(logits.size(), static_cast<size_t>(vocabulary_->size()));
  constexpr float kNone = -std::numeric_limits<float>::infinity();
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
}

bool TokenConstraint::Accept(int32_t token) {
  if (token < 0 || token >= vocabulary_->size()) return false;
  const MatchState& state = history_.back();
  if (std::find(end_ids_.begin(), end_ids_.end(), token) != end_ids_.end()) {
    if (!state.CanEnd()) return false;
    history_.push_back(state);
    current_ = nullptr;
    return true;
  }
  const std::string_view b = vocabulary_->bytes(token);
  if (b.empty()) return false;
  MatchState next = state;
  if (!matcher_.AdvanceBytes(next, b)) return false;
  history_.push_back(std::move(next));
  current_ = nullptr;
  return true;
}

void TokenConstraint::Rollback(size_t tokens) {
  tokens = std::min(tokens, accepted());
  if (tokens == 0) return;
  history_.resize(history_.size() - tokens);
  current_ = nullptr;
}

}  // namespace mtplx::grammar
