// A grammar applied to one generation: which tokens may come next (a bit mask over the model's
// vocabulary, computed by walking the vocabulary trie from the current state and cached by
// state), and the state after each token, kept so that speculative decoding can roll rejected
// drafts back. The end-of-generation tokens are allowed exactly when the text so far is a
// complete sentence of the grammar.
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

class TokenConstraint {
 public:
  TokenConstraint(std::shared_ptr<const Grammar> grammar,
                  std::shared_ptr<const Vocabulary> vocabulary, std::vector<int32_t> end_ids);

  // One bit per token of the vocabulary: may it come next.
  const std::vector<uint64_t>& Allowed();
  bool IsAllowed(int32_t token) { return (Allowed()[token >> 6] >> (token & 63)) & 1; }
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

  // The reference the trie walk is tested against: every token's bytes run through the
  // matcher one by one.
  std::vector<uint64_t> AllowedByScan();

  struct Stats {
    uint64_t masks = 0;       // Allowed() calls that computed or looked up a mask
    uint64_t cache_hits = 0;  // of those, served from the cache
    uint64_t nodes_visited = 0;
  };
  const Stats& stats() const { return stats_; }

 private:
  std::vector<uint64_t> Compute(const MatchState& state);
  // A lazily built DFA over the matcher's states: each state met gets an id and a row of 256
  // byte transitions filled on first use, so walking the trie again through known states is
  // one table lookup a node.
  int32_t Intern(const MatchState& state);
  int32_t Transition(int32_t from, uint8_t byte);
  void AllowEnds(const MatchState& state, std::vector<uint64_t>& bits) const;

  std::shared_ptr<const Vocabulary> vocabulary_;
  Matcher matcher_;
  std::vector<int32_t> end_ids_;
  std::vector<MatchState> history_;  // history_[i]: the state after i tokens
  std::unordered_map<MatchState, std::vector<uint64_t>, MatchStateHash> cache_;
  const std::vector<uint64_t>* current_ = nullptr;  // the mask of history_.back(), once known
  std::vector<int32_t> walk_;                       // the trie walk's DFA state at each depth
  std::vector<MatchState> dfa_states_;
  std::vector<int32_t> dfa_next_;  // 256 a state: kUnknown, kDead or the next state's id
  std::unordered_map<MatchState, int32_t, MatchStateHash> dfa_index_;
  MatchState scratch_;
  Stats stats_;
};

}  // namespace mtplx::grammar
