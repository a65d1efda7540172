// A grammar applied to generation. MaskOracle knows, for a state of the grammar's matcher, which
// tokens may come next: a bit mask over the model's vocabulary, cached by state. A state is a set
// of stacks, and a token is allowed when it runs from one of them, so the mask is the union of
// the stacks' masks; and what a token does from a stack mostly depends on the stack's top few
// frames only. So the vocabulary is walked once for each such top (Position), with the frames
// below replaced by a hole: tokens that stay inside the top frames are decided there, and only
// the few that run past their end (a `",` closing a string) are checked against the real stack
// below. A new state whose tops were seen (the same string rule in another property, the same
// schema in another request) costs a union and those checks, not a walk of the vocabulary. One
// oracle serves every request with the same grammar (agents send the same schemas and tools again
// and again), so their masks are computed once. TokenConstraint is one generation: the state after
// each token, kept so that speculative decoding can roll rejected drafts back, and the
// end-of-generation tokens, allowed exactly when the text so far is a complete sentence of the
// grammar.
//
// Neither is thread-safe: the engine uses them from its one decoding thread.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/matcher.h"
#include "grammar/vocabulary.h"

namespace mtplx::grammar {

using TokenMask = std::vector<uint64_t>;  // one bit per token of the vocabulary

class MaskOracle {
 public:
  MaskOracle(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const Vocabulary> vocabulary);

  const Grammar& grammar() const { return matcher_.grammar(); }
  const Vocabulary& vocabulary() const { return *vocabulary_; }
  MatchState Start() { return matcher_.Start(); }
  // Advances `state` over a token's bytes; false (state dead) when they cannot continue it.
  bool Advance(MatchState& state, std::string_view bytes) {
    return matcher_.AdvanceBytes(state, bytes);
  }
  // The tokens whose bytes may come next (end tokens are the constraint's business).
  std::shared_ptr<const TokenMask> Mask(const MatchState& state);
  // The reference the trie walk is tested against: every token's bytes run through the matcher.
  TokenMask MaskByScan(const MatchState& state);

  struct Stats {
    uint64_t masks = 0;       // Mask() calls
    uint64_t cache_hits = 0;  // of those, served from the cache
    uint64_t nodes_visited = 0;
    uint64_t positions = 0;       // stack tops walked
    uint64_t resumed = 0;         // token ranges the position walks left to the context
    uint64_t context_checks = 0;  // tokens checked in a context (once per new state)
  };
  const Stats& stats() const { return stats_; }

 private:
  // Tokens refused inside the top frames that may run on in the context: the tokens
  // vocabulary().tokens()[first, last) (one subtree of the trie, so they share their first
  // `offset` + 1 bytes) after the frames ended following `offset` of their bytes; `next` is the
  // byte after that (-1: the tokens end there), which most contexts refuse at once.
  struct Resumed {
    uint32_t first, last;
    uint16_t offset;
    int16_t next;
  };
  // What the tokens do from the top frames of a stack, whatever lies below them: those accepted
  // inside those frames (an id list when short, else bits), and those up to the context.
  struct PositionMask {
    TokenMask accepted_bits;
    std::vector<int32_t> accepted_ids;
    std::vector<Resumed> resumed;
  };
  // `top`: a stack cut by Matcher::Cut.
  const PositionMask& Position(uint32_t top);
  // The vocabulary walked from `start`.
  PositionMask Walk(const MatchState& start);
  static void AddAccepted(const PositionMask& walked, TokenMask& bits);
  // Whether `bytes` may follow from the DFA state `from`.
  bool Runs(int32_t from, std::string_view bytes);
  TokenMask Compose(const MatchState& state);
  void ResetDfaIfFull();
  // A lazily built DFA over the matcher's states: each state met gets an id and a row of 256
  // byte transitions filled on first use, so walking the trie again through known states is
  // one table lookup a node.
  int32_t Intern(const MatchState& state);
  int32_t Transition(int32_t from, uint8_t byte);

  std::shared_ptr<const Vocabulary> vocabulary_;
  Matcher matcher_;
  std::unordered_map<MatchState, std::shared_ptr<const TokenMask>, MatchStateHash> cache_;
  std::unordered_map<uint32_t, PositionMask> positions_;
  std::vector<int32_t> walk_;  // the trie walk's DFA state at each depth
  std::vector<MatchState> dfa_states_;
  std::vector<int32_t> dfa_next_;  // 256 a state: kUnknown, kDead or the next state's id
  std::vector<uint8_t> dfa_hole_;  // 1: the state holds Matcher::kHole; 2: and nothing else
  std::unordered_map<MatchState, int32_t, MatchStateHash> dfa_index_;
  MatchState scratch_;
  Stats stats_;
};

class TokenConstraint {
 public:
  TokenConstraint(std::shared_ptr<MaskOracle> oracle, std::vector<int32_t> end_ids);
  // With an oracle of its own.
  TokenConstraint(std::shared_ptr<const Grammar> grammar,
                  std::shared_ptr<const Vocabulary> vocabulary, std::vector<int32_t> end_ids);

  // One bit per token of the vocabulary: may it come next (end tokens included).
  TokenMask Allowed();
  bool IsAllowed(int32_t token);
  // Sets the logit of every token that may not come next to -infinity.
  void MaskLogits(std::span<float> logits);
  // Takes a token; false (nothing changes) when the grammar does not allow it.
  bool Accept(int32_t token);
  // Forgets the last `tokens` accepted tokens.
  void Rollback(size_t tokens);
  size_t accepted() const { return history_.size() - 1; }
  // The text so far is complete (an end token may come); Done: and nothing else may.
  bool CanEnd() const { return history_.back().CanEnd(); }
  bool Done() const { return history_.back().Done(); }

  TokenMask AllowedByScan();
  const MaskOracle& oracle() const { return *oracle_; }

 private:
  const TokenMask& Current();
  bool IsEnd(int32_t token) const;
  void AddEnds(TokenMask& bits) const;

  std::shared_ptr<MaskOracle> oracle_;
  std::vector<int32_t> end_ids_;
  std::vector<MatchState> history_;                    // history_[i]: the state after i tokens
  std::shared_ptr<const TokenMask> current_;           // the mask of history_.back(), once known
  std::vector<std::pair<int32_t, float>> end_logits_;  // MaskLogits' saved end-token logits
};

}  // namespace mtplx::grammar
