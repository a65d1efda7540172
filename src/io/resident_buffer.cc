#include "io/resident_buffer.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "base/strings.h"

namespace mtplx::io {

ResidentBuffer::~ResidentBuffer() {
  if (data_) munmap(data_, mapped_);
}

ResidentBuffer::ResidentBuffer(ResidentBuffer&& other) noexcept { *this = std::move(other); }

ResidentBuffer& ResidentBuffer::operator=(ResidentBuffer&& other) noexcept {
  if (this != &other) {
    if (data_) munmap(data_, mapped_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    mapped_ = std::exchange(other.mapped_, 0);
    locked_ = std::exchange(other.locked_, false);
  }
  return *this;
}

Result<ResidentBuffer> ResidentBuffer::Allocate(size_t size) {
  ResidentBuffer buffer;
  buffer.mapped_ = size == 0 ? 4096 : (size + 4095) / 4096 * 4096;
  void* p =
      mmap(nullptr, buffer.mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    return ResourceExhausted(
        StrCat("cannot allocate ", HumanBytes(size), " for weights (", std::strerror(errno), ")"));
  madvise(p, buffer.mapped_, MADV_HUGEPAGE);  // fewer TLB misses while streaming weights
  buffer.data_ = static_cast<uint8_t*>(p);
  buffer.size_ = size;
  return buffer;
}

namespace {

// Reads [offset, offset + size) of `fd` into `out` with several threads: copying out of the page
// cache and faulting in fresh pages are per-core work, so one thread reads far below memory speed.
// Each thread claims the next chunk; the first error stops the others.
Status ParallelRead(int fd, const std::string& path, uint64_t offset, size_t size, uint8_t* out,
                    ProgressBar* progress) {
  constexpr size_t kChunk = 32u << 20;
  const size_t chunks = (size + kChunk - 1) / kChunk;
  const unsigned threads = static_cast<unsigned>(
      std::min<size_t>({chunks, std::max(1u, std::thread::hardware_concurrency()), 8}));
  std::atomic<size_t> next{0}, done_bytes{0};
  std::atomic<bool> failed{false};
  std::mutex error_mutex;
  Status error = Status::Ok();
  size_t reported = 0;  // bytes already added to the bar (which spans every file)
  const auto report = [&] {
    const size_t now = done_bytes;
    if (progress && now > reported) progress->Add(now - reported);
    reported = now;
  };
  const auto worker = [&](bool reports_progress) {
    for (size_t c = next++; c < chunks && !failed; c = next++) {
      const size_t begin = c * kChunk, end = std::min(size, begin + kChunk);
      size_t at = begin;
      while (at < end) {
        const ssize_t got = pread(fd, out + at, end - at, static_cast<off_t>(offset + at));
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) {
          std::lock_guard<std::mutex> lock(error_mutex);
          if (!failed.exchange(true))
            error = DataLoss(StrCat(path, ": file ends after ", offset + at, " bytes, expected ",
                                    offset + size,
                                    got < 0 ? StrCat(" (", std::strerror(errno), ")") : ""));
          return;
        }
        at += static_cast<size_t>(got);
      }
      done_bytes += end - begin;
      if (reports_progress) report();
    }
  };
  std::vector<std::thread> helpers;
  for (unsigned t = 1; t < threads; ++t) helpers.emplace_back(worker, false);
  worker(true);  // only this thread draws the bar (ProgressBar is not thread-safe)
  for (std::thread& h : helpers) h.join();
  report();
  return error;
}

}  // namespace

Result<ResidentBuffer> ResidentBuffer::ReadFile(const std::string& path, uint64_t offset,
                                                size_t size, ProgressBar* progress) {
  MTPLX_ASSIGN_OR_RETURN(ResidentBuffer buffer, Allocate(size));
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NotFound(StrCat(path, ": cannot open (", std::strerror(errno), ")"));
  // The page cache keeps its copy (reclaimable memory): the next start reads from it at memory
  // speed instead of from the disk.
  const Status read = ParallelRead(fd, path, offset, size, buffer.data_, progress);
  close(fd);
  if (!read.ok()) return read;
  return buffer;
}

bool ResidentBuffer::Lock() {
  if (locked_ || !data_) return locked_;
  locked_ = mlock(data_, mapped_) == 0;
  return locked_;
}

}  // namespace mtplx::io
