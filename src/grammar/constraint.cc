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
// Frames of a stack whose walk is shared by every stack with the same top frames. One is too
// few: a repeated group (X* with X ::= a | b) ends its frame after every character, so its
// tokens would all run on into the context; three hold a string's characters, its repetition
// and its closing quote.
constexpr int kCutFrames = 3;
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
    const bool hole = std::binary_search(state.stacks.begin(), state.stacks.end(), Matcher::kHole);
    dfa_hole_.push_back(hole ? (state.stacks.size() == 1 ? 2 : 1) : 0);
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

void MaskOracle::ResetDfaIfFull() {
  if (dfa_states_.size() <= kMaxDfaStates) return;
  dfa_states_.clear();
  dfa_next_.clear();
  dfa_hole_.clear();
  dfa_index_.clear();
}

MaskOracle::PositionMask MaskOracle::Walk(const MatchState& start) {
  ResetDfaIfFull();
  PositionMask out;
  TokenMask bits((vocabulary_->size() + 63) / 64, 0);
  size_t accepted = 0;
  const auto& nodes = vocabulary_->nodes();
  const auto& tokens = vocabulary_->tokens();
  // Depth-first over the flattened trie: a node whose byte kills every stack skips its subtree.
  // The depths on the current path after which the cut frames may have ended (kHole in the
  // state), and the path's bytes: a token refused inside them may still run on in the context
  // from any of those depths; a token accepted inside them needs no context at all. (A whole
  // state, with no hole, leaves nothing to the context.)
  std::vector<uint32_t> ends;
  std::vector<uint8_t> path(vocabulary_->max_depth() + 1);
  const auto resume = [&](uint32_t first, uint32_t last, uint32_t depth) {
    if (first == last) return;
    for (uint32_t end : ends)
      out.resumed.push_back({first, last, static_cast<uint16_t>(end),
                             static_cast<int16_t>(end < depth ? path[end + 1] : -1)});
  };
  walk_[0] = Intern(start);
  for (uint32_t i = 0; i < nodes.size();) {
    const Vocabulary::Node& node = nodes[i];
    ++stats_.nodes_visited;
    while (!ends.empty() && ends.back() >= node.depth) ends.pop_back();
    path[node.depth] = node.byte;
    const int32_t here = Transition(walk_[node.depth - 1], node.byte);
    if (here == kDead) {  // the subtree's tokens lie contiguously in depth-first order
      const uint32_t last = node.subtree_end < nodes.size() ? nodes[node.subtree_end].first_token
                                                            : static_cast<uint32_t>(tokens.size());
      resume(node.first_token, last, node.depth);
      i = node.subtree_end;
      continue;
    }
    walk_[node.depth] = here;
    const uint8_t hole = dfa_hole_[here];
    if (hole != 0) ends.push_back(node.depth);
    if (hole == 2) {  // only the end of the rule is left: up to the context
      resume(node.first_token, node.first_token + node.token_count, node.depth);
    } else {  // a stack inside the rule is left: accepted whatever the context
      for (uint32_t t = node.first_token; t < node.first_token + node.token_count; ++t) {
        Set(bits, tokens[t]);
        ++accepted;
      }
    }
    ++i;
  }
  stats_.resumed += out.resumed.size();
  // Ids take 32 bits each, the mask one a token: keep the smaller.
  if (accepted * 32 < static_cast<size_t>(vocabulary_->size())) {
    for (size_t w = 0; w < bits.size(); ++w)
      for (uint64_t m = bits[w]; m; m &= m - 1)
        out.accepted_ids.push_back(static_cast<int32_t>(w * 64 + __builtin_ctzll(m)));
  } else {
    out.accepted_bits = std::move(bits);
  }
  return out;
}

const MaskOracle::PositionMask& MaskOracle::Position(uint32_t top) {
  auto it = positions_.find(top);
  if (it == positions_.end()) {
    ++stats_.positions;
    MatchState start;
    start.stacks.push_back(top);
    it = positions_.emplace(top, Walk(start)).first;
  }
  return it->second;
}

void MaskOracle::AddAccepted(const PositionMask& walked, TokenMask& bits) {
  if (!walked.accepted_bits.empty())
    for (size_t w = 0; w < bits.size(); ++w) bits[w] |= walked.accepted_bits[w];
  for (int32_t id : walked.accepted_ids) Set(bits, id);
}

bool MaskOracle::Runs(int32_t from, std::string_view bytes) {
  for (char b : bytes) {
    from = Transition(from, static_cast<uint8_t>(b));
    if (from == kDead) return false;
  }
  return true;
}

TokenMask MaskOracle::Compose(const MatchState& state) {
  TokenMask bits((vocabulary_->size() + 63) / 64, 0);
  for (uint32_t stack : state.stacks) {
    if (stack == 0) continue;  // the grammar may end: no byte follows from here
    uint32_t below = 0;
    const uint32_t top = matcher_.Cut(stack, kCutFrames, below);
    const PositionMask& position = Position(top);  // may restart the DFA
    AddAccepted(position, bits);
    if (position.resumed.empty()) continue;
    matcher_.Resume(below, scratch_);
    if (scratch_.dead()) continue;
    const int32_t from = Intern(scratch_);
    const auto& tokens = vocabulary_->tokens();
    for (const Resumed& r : position.resumed) {
      const int32_t next = r.next < 0 ? from : Transition(from, static_cast<uint8_t>(r.next));
      if (next == kDead) continue;
      for (uint32_t t = r.first; t < r.last; ++t) {
        const int32_t id = tokens[t];
        if ((bits[id >> 6] >> (id & 63)) & 1) continue;
        ++stats_.context_checks;
        if (r.next < 0 || Runs(next, vocabulary_->bytes(id).substr(r.offset + 1u))) Set(bits, id);
      }
    }
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
  // Inside a UTF-8 character the stacks wait on the rest of it: walk the whole state (rare, and
  // cached).
  TokenMask bits;
  if (state.partial_left > 0) {
    bits.assign((vocabulary_->size() + 63) / 64, 0);
    AddAccepted(Walk(state), bits);
  } else {
    bits = Compose(state);
  }
  return cache_.emplace(state, std::make_shared<const TokenMask>(std::move(bits))).first->second;
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
