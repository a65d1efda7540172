#include "engine/bank_store.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "base/sha256.h"
#include "base/strings.h"

namespace mtplx::engine {
namespace {

namespace fs = std::filesystem;
constexpr const char* kSuffix = ".mtplxcache";

int64_t CommonPrefix(std::span<const int32_t> a, std::span<const int32_t> b) {
  const size_t n = std::min(a.size(), b.size());
  return static_cast<int64_t>(std::mismatch(a.begin(), a.begin() + n, b.begin()).first - a.begin());
}

// One file per conversation prefix: named by a digest of its tokens.
std::string FileName(const std::vector<int32_t>& tokens) {
  Sha256 digest;
  digest.Update(std::string_view(reinterpret_cast<const char*>(tokens.data()),
                                 tokens.size() * sizeof(int32_t)));
  return digest.HexDigest().substr(0, 32) + kSuffix;
}

Status CheckSnapshot(const state::SequenceSnapshot& s, const state::StateLayout& layout,
                     int64_t head_dim, int64_t min_rows) {
  size_t attention = 0, delta = 0;
  for (bool is_attention : layout.is_attention) (is_attention ? attention : delta) += 1;
  // A prefix's trunk snapshot holds attention rows only (its DeltaNet states are per checkpoint).
  if (s.attention.size() != attention || (!s.delta.empty() && s.delta.size() != delta))
    return DataLoss("the cached state has another number of layers");
  const int64_t row_bytes = head_dim * kernels::KvElementBytes(layout.kv_type);
  for (const auto& a : s.attention)
    if (a.type != layout.kv_type || a.capacity < min_rows ||
        a.keys.size() != static_cast<size_t>(layout.kv_heads * a.capacity * row_bytes))
      return DataLoss("a cached attention layer has another shape or KV type");
  for (const auto& d : s.delta)
    if (d.conv.size() != static_cast<size_t>(layout.conv_history * layout.conv_channels) ||
        d.recurrent.size() != static_cast<size_t>(layout.recurrent_size))
      return DataLoss("a cached DeltaNet layer has another shape");
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<BankStore>> BankStore::Open(const std::string& dir, std::string fingerprint,
                                                   uint64_t budget_bytes, CaptureShapes shapes) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir))
    return NotFound(StrCat(dir, ": cannot create the cache directory (", ec.message(), ")"));
  std::unique_ptr<BankStore> store(new BankStore());
  store->dir_ = dir;
  store->fingerprint_ = std::move(fingerprint);
  store->budget_ = budget_bytes;
  store->shapes_ = std::move(shapes);
  std::vector<std::pair<fs::file_time_type, PrefixFileInfo>> found;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string path = entry.path().string();
    if (!entry.is_regular_file() || !EndsWith(path, kSuffix)) continue;
    auto info = ReadPrefixFileInfo(path);
    if (!info.ok()) {
      std::fprintf(stderr, "[mtplx] removing a damaged cache file: %s\n",
                   info.status().message().c_str());
      fs::remove(path, ec);
      continue;
    }
    if (info->fingerprint != store->fingerprint_) continue;  // another model's: not ours to touch
    found.emplace_back(entry.last_write_time(ec), std::move(info).value());
  }
  std::sort(found.begin(), found.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [time, info] : found) store->index_.push_back(std::move(info));
  store->EvictToBudget();
  store->writer_ = std::thread([s = store.get()] { s->WriterLoop(); });
  return store;
}

BankStore::~BankStore() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (writer_.joinable()) writer_.join();
}

void BankStore::Save(const PrefixCapture& capture) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(capture);  // the snapshots are shared, not copied
  }
  wake_.notify_one();
}

void BankStore::Flush() {
  std::unique_lock<std::mutex> lock(mutex_);
  idle_.wait(lock, [&] { return queue_.empty() && !writing_; });
}

void BankStore::WriterLoop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, all written
    PrefixCapture capture = std::move(queue_.front());
    queue_.pop_front();
    writing_ = true;
    lock.unlock();
    Write(capture);
    lock.lock();
    writing_ = false;
    if (queue_.empty()) idle_.notify_all();
  }
}

void BankStore::Write(const PrefixCapture& capture) {
  const std::string path = (fs::path(dir_) / FileName(capture.tokens)).string();
  if (const Status written = WritePrefixFile(path, capture, fingerprint_); !written.ok()) {
    std::fprintf(stderr, "[mtplx] cache spill failed: %s\n", written.message().c_str());
    return;
  }
  auto info = ReadPrefixFileInfo(path);
  if (!info.ok()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  // Entries the new one extends hold nothing it does not (their checkpoints were carried over).
  std::erase_if(index_, [&](const PrefixFileInfo& old) {
    const bool extended = old.path == path || CommonPrefix(old.tokens, capture.tokens) ==
                                                  static_cast<int64_t>(old.tokens.size());
    std::error_code ec;
    if (extended && old.path != path) fs::remove(old.path, ec);
    return extended;
  });
  index_.push_back(std::move(info).value());
  EvictToBudget();
}

void BankStore::EvictToBudget() {
  uint64_t total = 0;
  for (const auto& f : index_) total += f.bytes;
  while (total > budget_ && !index_.empty()) {
    std::error_code ec;
    fs::remove(index_.front().path, ec);
    total -= index_.front().bytes;
    index_.erase(index_.begin());
  }
}

std::optional<DiskHit> BankStore::Best(std::span<const int32_t> prompt, bool need_mtp,
                                       bool pre_norm_hidden, int64_t beyond) const {
  const int64_t limit = static_cast<int64_t>(prompt.size()) - 1;
  std::optional<DiskHit> best;
  std::lock_guard<std::mutex> lock(mutex_);
  for (const PrefixFileInfo& f : index_) {
    if (need_mtp && (!f.has_mtp || f.pre_norm_hidden != pre_norm_hidden)) continue;
    const int64_t common = std::min(CommonPrefix(f.tokens, prompt), limit);
    for (size_t i = f.checkpoints.size(); i-- > 0;) {
      if (f.checkpoints[i] > common) continue;
      if (f.checkpoints[i] > beyond && (!best || f.checkpoints[i] > best->position))
        best = DiskHit{f, f.checkpoints[i]};
      break;
    }
  }
  return best;
}

Status BankStore::CheckShapes(const PrefixCapture& c) const {
  const int64_t rows = static_cast<int64_t>(c.tokens.size());
  MTPLX_RETURN_IF_ERROR(CheckSnapshot(*c.trunk, shapes_.trunk, shapes_.head_dim, rows));
  if (c.mtp) {
    if (!shapes_.has_mtp) return DataLoss("an MTP history for a model without an MTP head");
    MTPLX_RETURN_IF_ERROR(CheckSnapshot(*c.mtp, shapes_.mtp, shapes_.head_dim, rows - 1));
  }
  for (const auto& p : c.checkpoints) {
    if (static_cast<int64_t>(p.hidden.size()) != shapes_.hidden_size)
      return DataLoss("a checkpoint's hidden row has another width");
    state::SequenceSnapshot deltas;
    deltas.delta = *p.delta;
    state::StateLayout recurrent_only = shapes_.trunk;
    std::erase(recurrent_only.is_attention, true);
    MTPLX_RETURN_IF_ERROR(CheckSnapshot(deltas, recurrent_only, shapes_.head_dim, 0));
  }
  return Status::Ok();
}

Result<PrefixCapture> BankStore::Load(const PrefixFileInfo& info) {
  auto capture = ReadPrefixFile(info.path, fingerprint_);
  Status valid = capture.ok() ? CheckShapes(*capture) : capture.status();
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = std::find_if(index_.begin(), index_.end(),
                         [&](const PrefixFileInfo& f) { return f.path == info.path; });
  if (!valid.ok()) {
    std::error_code ec;
    fs::remove(info.path, ec);
    if (it != index_.end()) index_.erase(it);
    return DataLoss(StrCat(info.path, ": ", valid.message()));
  }
  if (it != index_.end()) std::rotate(it, it + 1, index_.end());  // most recently used
  std::error_code ec;
  fs::last_write_time(info.path, fs::file_time_type::clock::now(), ec);
  return capture;
}

size_t BankStore::files() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return index_.size();
}

uint64_t BankStore::bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  uint64_t total = 0;
  for (const auto& f : index_) total += f.bytes;
  return total;
}

}  // namespace mtplx::engine
