// The prefix cache every request of an engine shares (the "session bank"). After a request, the
// states of its prompt are kept: the attention rows, the DeltaNet states at chosen cuts (turn
// boundaries and a fixed grid) and the MTP history. A later prompt restores the longest cached
// prefix that ends at a checkpoint and prefills only the rest. Entries are evicted least
// recently used within a byte budget.
//
// Restoring is exact: checkpoints sit on cuts of the prefill partition, so a restored run
// continues with the chunks a cold run would use (see PrefillPartition).
#pragma once

#include <cstdint>
#include <list>
#include <optional>
#include <span>
#include <string>

#include "engine/bank_store.h"
#include "engine/prefix.h"

namespace mtplx::engine {

struct BankLookup {
  std::optional<PrefixState> prefix;  // where to start; nullopt: prefill from scratch
  int64_t matched = 0;                // tokens the best entry shares with the prompt
  // Why less than the whole shared prefix was reused ("" on a full hit): new_prompt,
  // no_checkpoint_before_divergence, mtp_configuration, ...
  std::string miss_reason;
};

class SessionBank {
 public:
  explicit SessionBank(uint64_t budget_bytes) : budget_(budget_bytes) {}

  // The restore point for `prompt`: at most prompt.size() - 1 tokens (the last prompt token is
  // always run, its logits start decoding). `need_mtp`: the request speculates, so the entry
  // must hold the MTP history built with the same hidden variant.
  BankLookup Lookup(std::span<const int32_t> prompt, bool need_mtp, bool pre_norm_hidden);

  // Keeps a request's capture. `restored` is the prefix the request started from (0: none):
  // an entry the capture extends is replaced, its checkpoints up to `restored` carried over.
  void Insert(PrefixCapture capture, int64_t restored);

  // A disk tier (not owned): inserts are also written there, and a lookup it serves better than
  // memory is read back into memory.
  void AttachStore(BankStore* store) { store_ = store; }

  void Clear();
  // Evicts least recently used entries until at most `bytes` remain.
  void ShrinkTo(uint64_t bytes);
  // A new byte budget (the memory governor lowers it while requests need the room).
  void SetBudget(uint64_t budget) {
    budget_ = budget;
    ShrinkTo(budget);
  }
  uint64_t bytes() const { return bytes_; }
  uint64_t budget() const { return budget_; }
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    PrefixCapture capture;
    uint64_t bytes = 0;
  };
  void EvictToFit(uint64_t incoming);
  BankLookup LookupMemory(std::span<const int32_t> prompt, bool need_mtp, bool pre_norm_hidden,
                          int64_t* best_position);
  // Puts a capture read from disk in front (evicting to fit; not written back).
  void Promote(PrefixCapture capture);

  uint64_t budget_;
  uint64_t bytes_ = 0;
  std::list<Entry> entries_;  // most recently used first
  BankStore* store_ = nullptr;
};

}  // namespace mtplx::engine
