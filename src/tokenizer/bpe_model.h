// Byte-level BPE: splits one pre-tokenized piece into token ids by applying merges in rank order.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace mtplx::tokenizer {

// Reusable buffers for BpeModel::Encode, so that encoding a long text allocates once.
struct BpeScratch {
  struct Symbol {
    int32_t id;    // -1 once merged into its left neighbour
    int32_t prev;  // index in symbols, -1 at the start
    int32_t next;  // index in symbols, -1 at the end
  };
  struct Candidate {
    int32_t rank;
    int32_t position;  // index of the left symbol
  };
  std::vector<Symbol> symbols;
  std::vector<Candidate> heap;
};

class BpeModel {
 public:
  // vocab: (raw bytes, id) of every token that is a byte string; merges: raw-byte pairs in
  // rank order. Fails, as Hugging Face does, when a merge or its result is not in the vocab,
  // and when one of the 256 single bytes has no token (byte-level BPE needs all of them).
  static Result<BpeModel> Create(const std::vector<std::pair<std::string, int32_t>>& vocab,
                                 const std::vector<std::pair<std::string, std::string>>& merges);

  // Appends the ids of one piece (raw bytes) to *ids.
  void Encode(std::string_view piece, BpeScratch* scratch, std::vector<int32_t>* ids) const;

  size_t merge_count() const { return merge_count_; }

 private:
  struct Rule {
    int32_t rank;
    int32_t merged_id;
  };
  // Open-addressing map from a (left id, right id) pair to its merge rule.
  class PairTable {
   public:
    void Reserve(size_t count);
    void Insert(int32_t left, int32_t right, Rule rule);
    const Rule* Find(int32_t left, int32_t right) const;

   private:
    // Key and rule side by side: one cache line per probe in a table of megabytes.
    struct Slot {
      uint64_t key;
      Rule rule;
    };
    static uint64_t Key(int32_t left, int32_t right);
    size_t Home(uint64_t key) const;

    std::vector<Slot> slots_;
    size_t mask_ = 0;
  };

  BpeModel() = default;
  void PushCandidate(const std::vector<BpeScratch::Symbol>& symbols, int32_t position,
                     std::vector<BpeScratch::Candidate>* heap) const;

  std::array<int32_t, 256> byte_ids_{};
  PairTable rules_;
  size_t merge_count_ = 0;
};

}  // namespace mtplx::tokenizer
