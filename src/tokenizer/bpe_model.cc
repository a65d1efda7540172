#include "tokenizer/bpe_model.h"

#include <algorithm>
#include <unordered_map>

#include "base/strings.h"
#include "tokenizer/byte_level.h"

namespace mtplx::tokenizer {
namespace {

constexpr uint64_t kEmptyKey = ~uint64_t{0};  // ids are non-negative, so no pair maps here

// Min-heap order on (rank, position): lowest rank first, leftmost among equal ranks, which is
// the order Hugging Face's BPE applies merges in.
bool LaterCandidate(const BpeScratch::Candidate& a, const BpeScratch::Candidate& b) {
  return a.rank != b.rank ? a.rank > b.rank : a.position > b.position;
}

}  // namespace

uint64_t BpeModel::PairTable::Key(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

size_t BpeModel::PairTable::Home(uint64_t key) const {
  // Fibonacci hashing spreads the consecutive ids well over a power-of-two table.
  return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> 20) & mask_;
}

void BpeModel::PairTable::Reserve(size_t count) {
  size_t capacity = 16;
  while (capacity < count * 2) capacity *= 2;  // load factor <= 0.5 keeps probes short
  slots_.assign(capacity, Slot{kEmptyKey, Rule{0, 0}});
  mask_ = capacity - 1;
}

void BpeModel::PairTable::Insert(int32_t left, int32_t right, Rule rule) {
  const uint64_t key = Key(left, right);
  size_t index = Home(key);
  while (slots_[index].key != kEmptyKey && slots_[index].key != key) index = (index + 1) & mask_;
  // A repeated pair keeps its last rank, as Hugging Face's map does.
  slots_[index] = Slot{key, rule};
}

const BpeModel::Rule* BpeModel::PairTable::Find(int32_t left, int32_t right) const {
  const uint64_t key = Key(left, right);
  for (size_t index = Home(key);; index = (index + 1) & mask_) {
    if (slots_[index].key == key) return &slots_[index].rule;
    if (slots_[index].key == kEmptyKey) return nullptr;
  }
}

Result<BpeModel> BpeModel::Create(const std::vector<std::pair<std::string, int32_t>>& vocab,
                                  const std::vector<std::pair<std::string, std::string>>& merges) {
  std::unordered_map<std::string_view, int32_t> id_of;
  id_of.reserve(vocab.size());
  for (const auto& [bytes, id] : vocab) id_of.emplace(bytes, id);

  BpeModel model;
  for (int byte = 0; byte < 256; ++byte) {
    const auto it = id_of.find(std::string_view(reinterpret_cast<const char*>(&byte), 1));
    if (it == id_of.end()) {
      return InvalidArgument(StrCat("byte-level BPE vocab has no token for byte ", byte, " (",
                                    BytesToByteLevel(std::string(1, char(byte))), ")"));
    }
    model.byte_ids_[byte] = it->second;
  }
  model.rules_.Reserve(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [left, right] = merges[rank];
    const auto left_it = id_of.find(left);
    const auto right_it = id_of.find(right);
    const auto merged_it = id_of.find(left + right);
    if (left_it == id_of.end() || right_it == id_of.end() || merged_it == id_of.end()) {
      return InvalidArgument(StrCat("merge ", rank, " (", BytesToByteLevel(left), " ",
                                    BytesToByteLevel(right), ") uses a token not in the vocab"));
    }
    model.rules_.Insert(left_it->second, right_it->second,
                        Rule{static_cast<int32_t>(rank), merged_it->second});
  }
  model.merge_count_ = merges.size();
  return model;
}

void BpeModel::PushCandidate(const std::vector<BpeScratch::Symbol>& symbols, int32_t position,
                             std::vector<BpeScratch::Candidate>* heap) const {
  const BpeScratch::Symbol& left = symbols[position];
  if (left.next < 0) return;
  const Rule* rule = rules_.Find(left.id, symbols[left.next].id);
  if (rule == nullptr) return;
  heap->push_back({rule->rank, position});
  std::push_heap(heap->begin(), heap->end(), LaterCandidate);
}

void BpeModel::Encode(std::string_view piece, BpeScratch* scratch,
                      std::vector<int32_t>* ids) const {
  if (piece.size() <= 1) {
    if (!piece.empty()) ids->push_back(byte_ids_[static_cast<unsigned char>(piece[0])]);
    return;
  }
  auto& symbols = scratch->symbols;
  auto& heap = scratch->heap;
  symbols.clear();
  heap.clear();
  const auto size = static_cast<int32_t>(piece.size());
  for (int32_t i = 0; i < size; ++i) {
    symbols.push_back(
        {byte_ids_[static_cast<unsigned char>(piece[i])], i - 1, i + 1 < size ? i + 1 : -1});
  }
  for (int32_t i = 0; i + 1 < size; ++i) PushCandidate(symbols, i, &heap);

  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), LaterCandidate);
    const BpeScratch::Candidate candidate = heap.back();
    heap.pop_back();
    BpeScratch::Symbol& left = symbols[candidate.position];
    if (left.id < 0 || left.next < 0) continue;
    BpeScratch::Symbol& right = symbols[left.next];
    // Entries go stale when a neighbour merged first; ranks are unique per pair, so an equal
    // rank proves the pair is still the one that was queued.
    const Rule* rule = rules_.Find(left.id, right.id);
    if (rule == nullptr || rule->rank != candidate.rank) continue;
    left.id = rule->merged_id;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = candidate.position;
    right.id = -1;
    if (left.prev >= 0) PushCandidate(symbols, left.prev, &heap);
    PushCandidate(symbols, candidate.position, &heap);
  }
  for (int32_t i = 0; i >= 0; i = symbols[i].next) ids->push_back(symbols[i].id);
}

}  // namespace mtplx::tokenizer
