// A bounded, thread-safe memo of pre-token → token ids. Natural text repeats a small set of
// words, so most pieces skip BPE entirely.
#pragma once

#include <cstddef>
#include <cstdint>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace mtplx::tokenizer {

class PieceCache {
 public:
  // Pieces longer than this are rare and cheap to skip; caching them would only churn memory.
  static constexpr size_t kMaxPieceBytes = 64;

  explicit PieceCache(size_t capacity) : capacity_(capacity) {}

  // Appends the cached ids of piece to *ids and returns true, or returns false on a miss.
  bool Lookup(std::string_view piece, std::vector<int32_t>* ids) const;

  // Remembers ids for piece unless the cache is full (like Hugging Face, we stop inserting
  // rather than evict: eviction would need a write lock on every hit).
  void Insert(std::string_view piece, const int32_t* ids, size_t count);

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view text) const { return std::hash<std::string_view>()(text); }
  };

  const size_t capacity_;
  mutable std::shared_mutex mutex_;
  std::unordered_map<std::string, std::vector<int32_t>, Hash, std::equal_to<>> map_;
};

}  // namespace mtplx::tokenizer
