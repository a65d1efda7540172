#include "tokenizer/piece_cache.h"

#include <mutex>

namespace mtplx::tokenizer {

bool PieceCache::Lookup(std::string_view piece, std::vector<int32_t>* ids) const {
  if (piece.size() > kMaxPieceBytes) return false;
  std::shared_lock lock(mutex_);
  const auto it = map_.find(piece);
  if (it == map_.end()) return false;
  ids->insert(ids->end(), it->second.begin(), it->second.end());
  return true;
}

void PieceCache::Insert(std::string_view piece, const int32_t* ids, size_t count) {
  if (piece.size() > kMaxPieceBytes) return;
  std::unique_lock lock(mutex_);
  if (map_.size() >= capacity_) return;
  map_.try_emplace(std::string(piece), ids, ids + count);
}

}  // namespace mtplx::tokenizer
