#include "grammar/matcher.h"

#include <algorithm>

namespace mtplx::grammar {

namespace {
// Live stacks a state may hold: an ambiguous grammar can multiply them with every character; past
// this the text is refused (dead) rather than the engine stalled.
constexpr size_t kMaxStacks = 4096;
// Rule references entered before a character (nested groups, chains of rules): far beyond any
// real grammar, and well within the thread's stack.
constexpr int kMaxExpandDepth = 256;
}  // namespace

size_t MatchStateHash::operator()(const MatchState& s) const {
  uint64_t h = 0x9e3779b97f4a7c15ull ^ (uint64_t{s.partial} << 8) ^ s.partial_left ^
               (uint64_t{s.partial_length} << 40);
  for (uint32_t id : s.stacks) h = (h ^ id) * 0x100000001b3ull + (h >> 29);
  return static_cast<size_t>(h);
}

Matcher::Matcher(std::shared_ptr<const Grammar> grammar)
    : grammar_(std::move(grammar)), elements_(grammar_->elements().data()) {
  nodes_.push_back({0, 0});  // the empty stack
  nodes_.push_back({0, 0});  // kHole (its pos is never read)
}

uint32_t Matcher::Push(uint32_t parent, uint32_t pos) {
  const uint64_t key = (uint64_t{parent} << 32) | pos;
  const auto [it, added] = intern_.emplace(key, static_cast<uint32_t>(nodes_.size()));
  if (added) nodes_.push_back({pos, parent});
  return it->second;
}

uint32_t Matcher::Next(uint32_t stack) {
  const Node node = nodes_[stack];
  const uint32_t next = node.pos + 1;
  // The end of an alternative pops (so a rule that ends by calling itself does not grow the
  // stack: X* stays one frame deep however long it runs).
  if (elements_[next].kind == ElementKind::kEnd) return node.parent;
  return Push(node.parent, next);
}

void Matcher::ExpandInto(uint32_t stack, std::vector<uint32_t>& out, int depth) {
  if (depth > kMaxExpandDepth) return;
  if (stack == 0 || stack == kHole) {
    out.push_back(stack);
    return;
  }
  const Element& e = elements_[nodes_[stack].pos];
  if (e.kind == ElementKind::kChars) {
    out.push_back(stack);
    return;
  }
  // A rule reference (stacks never hold an alternative's end): every alternative of the rule,
  // with what follows the reference below it. Each sub-stack's expansion is memoized, so rules
  // that fan out through empty alternatives cost their distinct stacks, not their paths.
  const uint32_t after = Next(stack);
  for (uint32_t first : grammar_->alternatives(e.rule)) {
    const uint32_t sub = elements_[first].kind == ElementKind::kEnd ? after : Push(after, first);
    const std::vector<uint32_t>& expanded = Expand(sub, depth + 1);  // map values never move
    out.insert(out.end(), expanded.begin(), expanded.end());
    if (out.size() > kMaxStacks) return;
  }
}

const std::vector<uint32_t>& Matcher::Expand(uint32_t stack, int depth) {
  const auto it = expanded_.find(stack);
  if (it != expanded_.end()) return it->second;
  std::vector<uint32_t> out;
  ExpandInto(stack, out, depth);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return expanded_.emplace(stack, std::move(out)).first->second;
}

const std::vector<uint32_t>& Matcher::Step(uint32_t stack, uint32_t c) {
  if (c < 128) {
    if (stack != last_stack_ || ascii_.empty()) {
      const auto [it, added] =
          ascii_rows_.emplace(stack, static_cast<uint32_t>(ascii_.size() / 128));
      if (added) ascii_.resize(ascii_.size() + 128, 0);
      last_stack_ = stack;
      last_row_ = it->second;
    }
    uint32_t& slot = ascii_[last_row_ * 128 + c];
    if (slot == 0) {
      std::vector<uint32_t> out;
      if (grammar_->Matches(elements_[nodes_[stack].pos], c)) out = Expand(Next(stack));
      ascii_results_.push_back(std::move(out));
      // Expand may have grown ascii_ (it does not step), but slot's row is unchanged: re-index.
      ascii_[last_row_ * 128 + c] = static_cast<uint32_t>(ascii_results_.size());
      return ascii_results_.back();
    }
    return ascii_results_[slot - 1];
  }
  const uint64_t key = (uint64_t{stack} << 21) | c;
  const auto it = stepped_.find(key);
  if (it != stepped_.end()) return it->second;
  std::vector<uint32_t> out;
  if (grammar_->Matches(elements_[nodes_[stack].pos], c)) out = Expand(Next(stack));
  return stepped_.emplace(key, std::move(out)).first->second;
}

MatchState Matcher::Start() {
  MatchState state;
  const uint32_t root = grammar_->root();
  for (uint32_t first : grammar_->alternatives(root)) {
    const std::vector<uint32_t>& e =
        elements_[first].kind == ElementKind::kEnd ? Expand(0) : Expand(Push(0, first));
    state.stacks.insert(state.stacks.end(), e.begin(), e.end());
  }
  std::sort(state.stacks.begin(), state.stacks.end());
  state.stacks.erase(std::unique(state.stacks.begin(), state.stacks.end()), state.stacks.end());
  return state;
}

void Matcher::AdvanceCodePoint(const MatchState& from, uint32_t c, MatchState& to) {
  to.partial = 0;
  to.partial_left = 0;
  to.partial_length = 0;
  to.stacks.clear();
  for (uint32_t stack : from.stacks) {
    if (stack == 0 || stack == kHole) continue;
    const std::vector<uint32_t>& next = Step(stack, c);
    to.stacks.insert(to.stacks.end(), next.begin(), next.end());
  }
  if (from.stacks.size() > 1) {
    std::sort(to.stacks.begin(), to.stacks.end());
    to.stacks.erase(std::unique(to.stacks.begin(), to.stacks.end()), to.stacks.end());
  }
  if (to.stacks.size() > kMaxStacks) to.stacks.clear();
}

void Matcher::AdvanceByte(const MatchState& from, uint8_t byte, MatchState& to) {
  uint32_t partial, left, length = from.partial_length;
  if (from.partial_left > 0) {
    if ((byte & 0xc0) != 0x80) {  // not a continuation byte
      to.stacks.clear();
      return;
    }
    partial = (from.partial << 6) | (byte & 0x3f);
    left = from.partial_left - 1;
    if (left == 0) {
      const uint32_t shortest = length == 2 ? 0x80 : length == 3 ? 0x800 : 0x10000;
      if (partial < shortest || partial > 0x10ffff || (partial >= 0xd800 && partial <= 0xdfff)) {
        to.stacks.clear();
        return;
      }
      AdvanceCodePoint(from, partial, to);
      return;
    }
  } else if (byte < 0x80) {
    AdvanceCodePoint(from, byte, to);
    return;
  } else if (byte >= 0xc2 && byte <= 0xdf) {
    partial = byte & 0x1f, left = 1, length = 2;
  } else if (byte >= 0xe0 && byte <= 0xef) {
    partial = byte & 0x0f, left = 2, length = 3;
  } else if (byte >= 0xf0 && byte <= 0xf4) {
    partial = byte & 0x07, left = 3, length = 4;
  } else {  // a stray continuation byte, an overlong lead, or beyond U+10FFFF
    to.stacks.clear();
    return;
  }
  // An unfinished character: the code points it can still become (an overlong form, a
  // surrogate or a value past U+10FFFF can become none), and the stacks whose class takes one.
  const uint32_t shortest = length == 2 ? 0x80 : length == 3 ? 0x800 : 0x10000;
  const uint32_t lo = std::max(partial << (6 * left), shortest);
  const uint32_t hi = std::min((partial << (6 * left)) | ((1u << (6 * left)) - 1), 0x10ffffu);
  if (lo > hi || (lo >= 0xd800 && hi <= 0xdfff)) {
    to.stacks.clear();
    return;
  }
  to.partial = partial;
  to.partial_left = left;
  to.partial_length = length;
  scratch_.clear();
  for (uint32_t stack : from.stacks)
    if (stack != 0 && stack != kHole &&
        grammar_->MatchesAnyIn(elements_[nodes_[stack].pos], lo, hi))
      scratch_.push_back(stack);
  to.stacks.assign(scratch_.begin(), scratch_.end());
}

uint32_t Matcher::Cut(uint32_t stack, int frames, uint32_t& below) {
  uint32_t top[8];
  int n = 0;
  for (; n < frames && n < 8 && stack != 0; ++n) {
    top[n] = nodes_[stack].pos;
    stack = nodes_[stack].parent;
  }
  below = stack;
  uint32_t cut = kHole;
  while (n > 0) cut = Push(cut, top[--n]);
  return cut;
}

void Matcher::Resume(uint32_t below, MatchState& to) {
  to = MatchState{};
  const std::vector<uint32_t>& stacks = Expand(below);
  to.stacks.assign(stacks.begin(), stacks.end());
}

bool Matcher::AdvanceBytes(MatchState& state, std::string_view bytes) {
  MatchState next;
  for (char b : bytes) {
    AdvanceByte(state, static_cast<uint8_t>(b), next);
    std::swap(state, next);
    if (state.dead()) return false;
  }
  return true;
}

}  // namespace mtplx::grammar
