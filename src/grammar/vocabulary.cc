#include "grammar/vocabulary.h"

#include <algorithm>
#include <numeric>

#include "tokenizer/tokenizer.h"

namespace mtplx::grammar {

namespace {
// Longer tokens are left out of masks (none of a real vocabulary is near this).
constexpr size_t kMaxTokenBytes = 255;
}  // namespace

Vocabulary::Vocabulary(std::vector<std::string> bytes) : bytes_(std::move(bytes)) {
  std::vector<int32_t> order;
  for (int32_t id = 0; id < static_cast<int32_t>(bytes_.size()); ++id)
    if (!bytes_[id].empty() && bytes_[id].size() <= kMaxTokenBytes) order.push_back(id);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return bytes_[a] < bytes_[b] || (bytes_[a] == bytes_[b] && a < b);
  });
  // Sorted strings visit the trie in depth-first order: each token adds the nodes past its
  // common prefix with the previous one.
  std::vector<uint32_t> open;  // the node at each depth of the current path
  std::string_view previous;
  for (int32_t id : order) {
    const std::string_view b = bytes_[id];
    size_t common = 0;
    while (common < previous.size() && common < b.size() && previous[common] == b[common]) ++common;
    while (open.size() > common) {
      nodes_[open.back()].subtree_end = static_cast<uint32_t>(nodes_.size());
      open.pop_back();
    }
    for (size_t d = common; d < b.size(); ++d) {
      open.push_back(static_cast<uint32_t>(nodes_.size()));
      nodes_.push_back(Node{static_cast<uint8_t>(b[d]), static_cast<uint8_t>(d + 1), 0,
                            static_cast<uint32_t>(tokens_.size()), 0});
    }
    Node& leaf = nodes_[open.back()];
    if (leaf.token_count == 0) leaf.first_token = static_cast<uint32_t>(tokens_.size());
    tokens_.push_back(id);
    ++leaf.token_count;
    max_depth_ = std::max(max_depth_, b.size());
    previous = b;
  }
  while (!open.empty()) {
    nodes_[open.back()].subtree_end = static_cast<uint32_t>(nodes_.size());
    open.pop_back();
  }
}

std::shared_ptr<const Vocabulary> Vocabulary::FromBytes(std::vector<std::string> tokens) {
  return std::shared_ptr<const Vocabulary>(new Vocabulary(std::move(tokens)));
}

std::shared_ptr<const Vocabulary> Vocabulary::FromTokenizer(const tokenizer::Tokenizer& tokenizer,
                                                            int32_t logits_size) {
  std::vector<std::string> bytes(static_cast<size_t>(logits_size));
  const int32_t n = std::min(logits_size, tokenizer.vocab_size());
  for (int32_t id = 0; id < n; ++id)
    if (!tokenizer.IsSpecial(id)) bytes[id] = std::string(tokenizer.TokenBytes(id));
  return FromBytes(std::move(bytes));
}

}  // namespace mtplx::grammar
