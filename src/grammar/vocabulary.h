// The model's tokens as byte strings, laid out for computing token masks: a trie of every
// token's bytes flattened in depth-first order, where each node knows where its subtree ends, so
// a walk skips every token under a prefix the grammar has already refused.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace mtplx::tokenizer {
class Tokenizer;
}

namespace mtplx::grammar {

class Vocabulary {
 public:
  struct Node {
    uint8_t byte;
    uint8_t depth;         // 1 for a first byte
    uint32_t subtree_end;  // the index just past this node's subtree
    uint32_t first_token;  // tokens_[first_token, first_token + token_count) end here
    uint32_t token_count;
  };

  // `logits_size` is the model's vocabulary (its logit rows), which may exceed the tokenizer's.
  // Special tokens have no bytes here: a grammar never produces them (the end of generation is
  // handled by the constraint).
  static std::shared_ptr<const Vocabulary> FromTokenizer(const tokenizer::Tokenizer& tokenizer,
                                                         int32_t logits_size);
  // For tests: token i has bytes tokens[i] (empty: never allowed).
  static std::shared_ptr<const Vocabulary> FromBytes(std::vector<std::string> tokens);

  int32_t size() const { return static_cast<int32_t>(bytes_.size()); }
  std::string_view bytes(int32_t id) const { return bytes_[id]; }
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<int32_t>& tokens() const { return tokens_; }
  size_t max_depth() const { return max_depth_; }

 private:
  explicit Vocabulary(std::vector<std::string> bytes);
  std::vector<std::string> bytes_;
  std::vector<Node> nodes_;
  std::vector<int32_t> tokens_;
  size_t max_depth_ = 0;
};

}  // namespace mtplx::grammar
