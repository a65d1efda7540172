#include "engine/prefix_file.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "base/strings.h"

namespace mtplx::engine {
namespace {

constexpr char kMagic[8] = {'M', 'T', 'P', 'L', 'X', 'P', 'F', 'X'};
constexpr uint32_t kVersion = 2;  // 2: each attention cache names its KV type
constexpr uint64_t kMaxFingerprint = 4096;

// A 64-bit checksum over 8-byte words (the tail zero-padded): fast enough for files of GBs, and
// any flipped or lost byte changes it.
class Checksum {
 public:
  void Add(const void* data, size_t n) {
    const auto* p = static_cast<const uint8_t*>(data);
    for (size_t i = 0; i < n; ++i) {
      pending_ |= static_cast<uint64_t>(p[i]) << (8 * filled_);
      if (++filled_ == 8) Flush();
    }
  }
  // Whole words straight from an aligned buffer (the float and int arrays).
  void AddWords(const void* data, size_t n) {
    if (filled_ != 0) return Add(data, n);
    const auto* p = static_cast<const uint8_t*>(data);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      uint64_t w;
      std::memcpy(&w, p + i, 8);
      Mix(w);
    }
    Add(p + i, n - i);
  }
  uint64_t Value() {
    if (filled_) Flush();
    return state_ ^ (state_ >> 31);
  }

 private:
  void Mix(uint64_t w) {
    state_ ^= w;
    state_ = (state_ << 29 | state_ >> 35) * 0x9E3779B97F4A7C15ull;
  }
  void Flush() {
    Mix(pending_);
    pending_ = 0;
    filled_ = 0;
  }
  uint64_t state_ = 0x243F6A8885A308D3ull, pending_ = 0;
  int filled_ = 0;
};

class Writer {
 public:
  explicit Writer(std::ofstream& out) : out_(out) {}
  void Bytes(const void* data, size_t n) {
    out_.write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
    sum_.AddWords(data, n);
  }
  template <typename T>
  void Scalar(T v) {
    Bytes(&v, sizeof v);
  }
  template <typename T>
  void Array(const std::vector<T>& v) {
    Scalar<uint64_t>(v.size());
    Bytes(v.data(), v.size() * sizeof(T));
  }
  void Deltas(const std::vector<state::DeltaNetState>& states) {
    Scalar<uint64_t>(states.size());
    for (const auto& d : states) {
      Array(d.conv);
      Array(d.recurrent);
    }
  }
  void Snapshot(const state::SequenceSnapshot& s) {
    Scalar<int64_t>(s.position);
    Scalar<uint64_t>(s.attention.size());
    for (const auto& a : s.attention) {
      Scalar<int64_t>(a.capacity);
      // 8 bytes, so the arrays stay word-aligned for the checksum's fast path.
      Scalar<uint64_t>(static_cast<uint64_t>(a.type));
      Array(a.keys);
      Array(a.values);
    }
    Deltas(s.delta);
  }
  uint64_t Sum() { return sum_.Value(); }

 private:
  std::ofstream& out_;
  Checksum sum_;
};

// Reads a file held in memory; every length is checked against what is left.
class Reader {
 public:
  Reader(const std::string& path, const std::string& data) : path_(path), data_(data) {}
  Status Bytes(void* out, size_t n) {
    if (n > data_.size() - at_) return Truncated();
    if (n == 0) return Status::Ok();  // an empty array: out may be null
    std::memcpy(out, data_.data() + at_, n);
    sum_.AddWords(data_.data() + at_, n);
    at_ += n;
    return Status::Ok();
  }
  template <typename T>
  Status Scalar(T& v) {
    return Bytes(&v, sizeof v);
  }
  template <typename T>
  Status Array(std::vector<T>& v) {
    uint64_t n = 0;
    MTPLX_RETURN_IF_ERROR(Scalar(n));
    if (n > (data_.size() - at_) / sizeof(T)) return Truncated();
    v.resize(n);
    return Bytes(v.data(), n * sizeof(T));
  }
  Status Count(uint64_t& n, uint64_t most) {
    MTPLX_RETURN_IF_ERROR(Scalar(n));
    if (n > most) return Corrupt(StrCat("a count of ", n));
    return Status::Ok();
  }
  Status Deltas(std::vector<state::DeltaNetState>& states) {
    uint64_t n = 0;
    MTPLX_RETURN_IF_ERROR(Count(n, 4096));
    states.resize(n);
    for (auto& d : states) {
      MTPLX_RETURN_IF_ERROR(Array(d.conv));
      MTPLX_RETURN_IF_ERROR(Array(d.recurrent));
    }
    return Status::Ok();
  }
  Status Snapshot(state::SequenceSnapshot& s) {
    uint64_t layers = 0;
    MTPLX_RETURN_IF_ERROR(Scalar(s.position));
    MTPLX_RETURN_IF_ERROR(Count(layers, 4096));
    s.attention.resize(layers);
    for (auto& a : s.attention) {
      uint64_t type = 0;
      MTPLX_RETURN_IF_ERROR(Scalar(a.capacity));
      MTPLX_RETURN_IF_ERROR(Scalar(type));
      if (type > static_cast<uint64_t>(kernels::KvType::kBf16))
        return Corrupt(StrCat("an unknown KV cache type ", type));
      a.type = static_cast<kernels::KvType>(type);
      MTPLX_RETURN_IF_ERROR(Array(a.keys));
      MTPLX_RETURN_IF_ERROR(Array(a.values));
      // Whole elements for every position (divided step by step: capacity times the element
      // size may overflow).
      const auto capacity = static_cast<uint64_t>(a.capacity);
      const auto element = static_cast<uint64_t>(kernels::KvElementBytes(a.type));
      if (a.capacity < 0 || a.keys.size() != a.values.size() ||
          (a.capacity > 0 &&
           (a.keys.size() % capacity != 0 || a.keys.size() / capacity % element != 0)))
        return Corrupt("an attention cache of inconsistent size");
    }
    return Deltas(s.delta);
  }
  Status Verify() {
    const uint64_t computed = sum_.Value();
    uint64_t stored = 0;
    if (sizeof stored > data_.size() - at_) return Truncated();
    std::memcpy(&stored, data_.data() + at_, sizeof stored);
    at_ += sizeof stored;
    if (stored != computed) return Corrupt("the checksum does not match");
    if (at_ != data_.size()) return Corrupt("bytes after the checksum");
    return Status::Ok();
  }
  size_t at() const { return at_; }
  void Skip(size_t n) {
    sum_.Add(data_.data() + at_, n);
    at_ += n;
  }

  Status Truncated() const { return DataLoss(StrCat(path_, ": the cache file is truncated")); }
  Status Corrupt(const std::string& what) const {
    return DataLoss(StrCat(path_, ": not a valid cache file (", what, ")"));
  }

 private:
  const std::string& path_;
  const std::string& data_;
  size_t at_ = 0;
  Checksum sum_;
};

Result<std::string> ReadWhole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound(StrCat(path, ": cannot open"));
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return data;
}

// Magic, version and header (fingerprint, flags, size, checkpoint positions, tokens); leaves the
// reader at the first checkpoint's arrays.
Result<PrefixFileInfo> ReadHeader(const std::string& path, Reader& r) {
  char magic[8];
  uint32_t version = 0;
  uint64_t length = 0;
  uint8_t has_mtp = 0, pre_norm = 0;
  MTPLX_RETURN_IF_ERROR(r.Bytes(magic, sizeof magic));
  if (std::memcmp(magic, kMagic, sizeof magic) != 0) return r.Corrupt("no MTPLXPFX magic");
  MTPLX_RETURN_IF_ERROR(r.Scalar(version));
  if (version != kVersion) return r.Corrupt(StrCat("format version ", version));
  MTPLX_RETURN_IF_ERROR(r.Scalar(length));
  if (length > kMaxFingerprint) return r.Corrupt("an oversized fingerprint");
  PrefixFileInfo info;
  info.path = path;
  info.fingerprint.resize(length);
  MTPLX_RETURN_IF_ERROR(r.Bytes(info.fingerprint.data(), length));
  MTPLX_RETURN_IF_ERROR(r.Scalar(has_mtp));
  MTPLX_RETURN_IF_ERROR(r.Scalar(pre_norm));
  if (has_mtp > 1 || pre_norm > 1) return r.Corrupt("a flag that is neither 0 nor 1");
  info.has_mtp = has_mtp == 1;
  info.pre_norm_hidden = pre_norm == 1;
  MTPLX_RETURN_IF_ERROR(r.Scalar(info.bytes));
  MTPLX_RETURN_IF_ERROR(r.Array(info.checkpoints));
  MTPLX_RETURN_IF_ERROR(r.Array(info.tokens));
  for (size_t i = 0; i < info.checkpoints.size(); ++i)
    if (info.checkpoints[i] < 1 || info.checkpoints[i] > static_cast<int64_t>(info.tokens.size()) ||
        (i > 0 && info.checkpoints[i] <= info.checkpoints[i - 1]))
      return r.Corrupt("checkpoint positions");
  if (info.checkpoints.empty()) return r.Corrupt("no checkpoint");
  return info;
}

}  // namespace

Status WritePrefixFile(const std::string& path, const PrefixCapture& capture,
                       const std::string& fingerprint) {
  if (!capture.trunk || capture.checkpoints.empty())
    return InvalidArgument("a prefix capture without states");
  const std::string staged = StrCat(path, ".", getpid(), ".tmp");
  {
    std::ofstream out(staged, std::ios::binary | std::ios::trunc);
    if (!out) return Internal(StrCat(staged, ": cannot create"));
    Writer w(out);
    w.Bytes(kMagic, sizeof kMagic);
    w.Scalar(kVersion);
    w.Scalar<uint64_t>(fingerprint.size());
    w.Bytes(fingerprint.data(), fingerprint.size());
    w.Scalar<uint8_t>(capture.mtp != nullptr);
    w.Scalar<uint8_t>(capture.pre_norm_hidden);
    w.Scalar<uint64_t>(capture.Bytes());
    std::vector<int64_t> positions;
    for (const PrefixCheckpoint& c : capture.checkpoints) positions.push_back(c.position);
    w.Array(positions);
    w.Array(capture.tokens);
    for (const PrefixCheckpoint& c : capture.checkpoints) {
      w.Array(c.hidden);
      w.Deltas(c.delta ? *c.delta : DeltaStates{});
    }
    w.Snapshot(*capture.trunk);
    if (capture.mtp) w.Snapshot(*capture.mtp);
    const uint64_t sum = w.Sum();
    out.write(reinterpret_cast<const char*>(&sum), sizeof sum);
    out.flush();
    if (!out) {
      std::remove(staged.c_str());
      return Internal(StrCat(staged, ": write failed (disk full?)"));
    }
  }
  std::error_code ec;
  std::filesystem::rename(staged, path, ec);
  if (ec) {
    std::remove(staged.c_str());
    return Internal(StrCat(path, ": cannot rename into place: ", ec.message()));
  }
  return Status::Ok();
}

Result<PrefixCapture> ParsePrefixFile(const std::string& label, const std::string& data,
                                      const std::string& fingerprint) {
  Reader r(label, data);
  MTPLX_ASSIGN_OR_RETURN(PrefixFileInfo info, ReadHeader(label, r));
  if (!fingerprint.empty() && info.fingerprint != fingerprint)
    return FailedPrecondition(StrCat(label, ": written for another model or engine"));
  PrefixCapture c;
  c.tokens = std::move(info.tokens);
  c.pre_norm_hidden = info.pre_norm_hidden;
  for (int64_t position : info.checkpoints) {
    PrefixCheckpoint p;
    p.position = position;
    MTPLX_RETURN_IF_ERROR(r.Array(p.hidden));
    DeltaStates deltas;
    MTPLX_RETURN_IF_ERROR(r.Deltas(deltas));
    p.delta = std::make_shared<const DeltaStates>(std::move(deltas));
    c.checkpoints.push_back(std::move(p));
  }
  auto trunk = std::make_shared<state::SequenceSnapshot>();
  MTPLX_RETURN_IF_ERROR(r.Snapshot(*trunk));
  c.trunk = std::move(trunk);
  if (info.has_mtp) {
    auto mtp = std::make_shared<state::SequenceSnapshot>();
    MTPLX_RETURN_IF_ERROR(r.Snapshot(*mtp));
    c.mtp = std::move(mtp);
  }
  MTPLX_RETURN_IF_ERROR(r.Verify());
  return c;
}

Result<PrefixFileInfo> ReadPrefixFileInfo(const std::string& path) {
  // The header only: read the file piece by piece, each length from what came before.
  std::ifstream in(path, std::ios::binary);
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(path, ec);
  if (!in || ec) return NotFound(StrCat(path, ": cannot open"));
  std::string head;
  auto take = [&](uint64_t n) {  // never past the end of the file, whatever a length says
    n = std::min<uint64_t>(n, size - std::min<uint64_t>(size, head.size()));
    const size_t at = head.size();
    head.resize(at + n);
    in.read(head.data() + at, static_cast<std::streamsize>(n));
    head.resize(at + static_cast<size_t>(in.gcount()));
  };
  auto length_at = [&](size_t offset) -> uint64_t {
    uint64_t n = 0;
    if (head.size() >= offset + 8) std::memcpy(&n, head.data() + offset, 8);
    return n;
  };
  take(20);
  const uint64_t fingerprint = std::min(length_at(12), kMaxFingerprint);
  take(fingerprint + 2 + 8 + 8);
  const size_t positions_at = 20 + fingerprint + 2 + 8;
  const uint64_t positions = std::min<uint64_t>(length_at(positions_at), uint64_t{1} << 24);
  take(positions * 8 + 8);
  const uint64_t tokens =
      std::min<uint64_t>(length_at(positions_at + 8 + positions * 8), uint64_t{1} << 30);
  take(tokens * 4);
  Reader r(path, head);
  return ReadHeader(path, r);
}

Result<PrefixCapture> ReadPrefixFile(const std::string& path, const std::string& fingerprint) {
  if (fingerprint.empty()) return InvalidArgument("reading a cache file needs its fingerprint");
  MTPLX_ASSIGN_OR_RETURN(std::string data, ReadWhole(path));
  return ParsePrefixFile(path, data, fingerprint);
}

}  // namespace mtplx::engine
