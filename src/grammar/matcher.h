// Matching text against a Grammar, one byte at a time, as a pushdown automaton whose stacks are
// shared and interned (hash-consed): a stack is its top position plus the id of the stack below
// it, so pushing, popping and replacing the top are O(1), equal stacks have equal ids, and the
// expansion of a stack and its step on a character are memoized by id. A state is the set of
// live stacks (each with a character class on top, or the empty stack: the grammar may end
// here) plus the bits of an unfinished UTF-8 character.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "grammar/grammar.h"

namespace mtplx::grammar {

struct MatchState {
  std::vector<uint32_t> stacks;  // sorted, unique stack ids; 0 is the empty stack
  uint32_t partial = 0;          // the bits so far of an unfinished UTF-8 character
  uint32_t partial_left = 0;     // its continuation bytes still to come
  uint32_t partial_length = 0;   // its length in bytes (2..4)

  bool dead() const { return stacks.empty(); }
  // The text so far is a complete sentence of the grammar.
  bool CanEnd() const { return partial_left == 0 && !stacks.empty() && stacks.front() == 0; }
  // Complete, and nothing may follow.
  bool Done() const { return CanEnd() && stacks.size() == 1; }
  bool operator==(const MatchState& o) const {
    return stacks == o.stacks && partial == o.partial && partial_left == o.partial_left &&
           partial_length == o.partial_length;
  }
};

struct MatchStateHash {
  size_t operator()(const MatchState& s) const;
};

class Matcher {
 public:
  explicit Matcher(std::shared_ptr<const Grammar> grammar);

  const Grammar& grammar() const { return *grammar_; }
  MatchState Start();
  // `to` = `from` after one more byte (dead when the byte cannot continue the text).
  void AdvanceByte(const MatchState& from, uint8_t byte, MatchState& to);
  // Advances `state` over `bytes`; false (state dead) when they cannot continue it.
  bool AdvanceBytes(MatchState& state, std::string_view bytes);
  size_t interned_stacks() const { return nodes_.size(); }

  // Context-free views of a stack, for masks that do not depend on what lies below its top
  // frame. kHole is a stack that stands for "the rule of the frame above has ended; what comes
  // next depends on the context": it expands to itself and takes no character (like the empty
  // stack), so a state reached from a Cut stack holds kHole exactly after the text that ended
  // the frames cut off.
  static constexpr uint32_t kHole = 1;
  // The top `frames` frames of `stack` (fewer if it has fewer) copied over kHole; `below` gets
  // the stack under them.
  uint32_t Cut(uint32_t stack, int frames, uint32_t& below);
  // The state after the frames above `below` have ended: `below`, expanded.
  void Resume(uint32_t below, MatchState& to);

 private:
  struct Node {
    uint32_t pos;
    uint32_t parent;
  };
  uint32_t Push(uint32_t parent, uint32_t pos);
  // The stack after the element on top of `stack` has been matched.
  uint32_t Next(uint32_t stack);
  // Every stack `stack` expands to whose top is a character class (or the empty stack).
  // `depth`: rule references entered without a character; past kMaxExpandDepth the path is
  // dropped (a grammar nesting that deep before its first character is refused, not a crash).
  const std::vector<uint32_t>& Expand(uint32_t stack, int depth = 0);
  void ExpandInto(uint32_t stack, std::vector<uint32_t>& out, int depth);
  // The expanded stacks after `stack` (top: a class) matches code point c; empty if it does not.
  const std::vector<uint32_t>& Step(uint32_t stack, uint32_t c);
  void AdvanceCodePoint(const MatchState& from, uint32_t c, MatchState& to);

  std::shared_ptr<const Grammar> grammar_;
  const Element* elements_;
  std::vector<Node> nodes_;  // nodes_[0]: the empty stack
  std::unordered_map<uint64_t, uint32_t> intern_;
  std::unordered_map<uint32_t, std::vector<uint32_t>> expanded_;
  std::unordered_map<uint64_t, std::vector<uint32_t>> stepped_;
  // ASCII steps by table: row r of ascii_ holds, for each of the 128 characters, 1 + the index
  // in ascii_results_ of the step's result (0: not computed yet); ascii_rows_ maps a stack to
  // its row. The trie walk steps the same few stacks over and over, so the last row is kept.
  std::unordered_map<uint32_t, uint32_t> ascii_rows_;
  std::vector<uint32_t> ascii_;
  std::deque<std::vector<uint32_t>> ascii_results_;
  uint32_t last_stack_ = 0, last_row_ = 0;
  std::vector<uint32_t> scratch_;
};

}  // namespace mtplx::grammar
