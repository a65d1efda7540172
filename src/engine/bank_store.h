// The session bank's disk tier (`serve --cache-dir DIR`): every capture the bank keeps is also
// written to DIR (by a background thread, so the engine never waits for the disk), entries a newer
// capture extends are replaced, and the least recently used files go when the directory exceeds
// its byte budget. A lookup the memory tier cannot serve as well is served from disk, and the
// files outlive the process: after a restart, the first turn of a conversation the server saw
// before restores its prefix bit for bit. Files written by another model, weights or engine
// (their fingerprint) are ignored; corrupt ones are reported and removed.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"
#include "engine/prefix.h"
#include "engine/prefix_file.h"
#include "state/sequence_state.h"

namespace mtplx::engine {

// The state shapes a restored capture must have (the model's trunk and MTP layouts).
struct CaptureShapes {
  state::StateLayout trunk;
  int64_t head_dim = 0;
  int64_t hidden_size = 0;
  bool has_mtp = false;
  state::StateLayout mtp;
};

// A file on disk that serves a prompt: its info and the checkpoint to restore.
struct DiskHit {
  PrefixFileInfo info;
  int64_t position = 0;
};

class BankStore {
 public:
  static Result<std::unique_ptr<BankStore>> Open(const std::string& dir, std::string fingerprint,
                                                 uint64_t budget_bytes, CaptureShapes shapes);
  ~BankStore();
  BankStore(const BankStore&) = delete;
  BankStore& operator=(const BankStore&) = delete;

  // Queues `capture` for writing.
  void Save(const PrefixCapture& capture);
  // Waits until every queued capture is on disk.
  void Flush();

  // The file whose last checkpoint inside the prompt's shared prefix (at most prompt.size() - 1)
  // is the furthest, if it goes past `beyond`.
  std::optional<DiskHit> Best(std::span<const int32_t> prompt, bool need_mtp, bool pre_norm_hidden,
                              int64_t beyond) const;
  // Reads a file back (and marks it recently used); a bad file is removed from the index.
  Result<PrefixCapture> Load(const PrefixFileInfo& info);

  size_t files() const;
  uint64_t bytes() const;

 private:
  BankStore() = default;
  void WriterLoop();
  void Write(const PrefixCapture& capture);
  void EvictToBudget();
  Status CheckShapes(const PrefixCapture& capture) const;

  std::string dir_, fingerprint_;
  uint64_t budget_ = 0;
  CaptureShapes shapes_;
  mutable std::mutex mutex_;
  std::condition_variable wake_, idle_;
  std::vector<PrefixFileInfo> index_;  // most recently used last
  std::deque<PrefixCapture> queue_;
  bool writing_ = false, stopping_ = false;
  std::thread writer_;
};

}  // namespace mtplx::engine
