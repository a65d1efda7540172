#include "io/resident_buffer.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

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

Result<ResidentBuffer> ResidentBuffer::ReadFile(const std::string& path, uint64_t offset,
                                                size_t size, ProgressBar* progress) {
  MTPLX_ASSIGN_OR_RETURN(ResidentBuffer buffer, Allocate(size));
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NotFound(StrCat(path, ": cannot open (", std::strerror(errno), ")"));
  posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  size_t done = 0;
  constexpr size_t kChunk = 64u << 20;
  while (done < size) {
    const size_t want = size - done < kChunk ? size - done : kChunk;
    const ssize_t got = pread(fd, buffer.data_ + done, want, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      close(fd);
      return DataLoss(StrCat(path, ": file ends after ", offset + done, " bytes, expected ",
                             offset + size,
                             got < 0 ? StrCat(" (", std::strerror(errno), ")") : ""));
    }
    done += static_cast<size_t>(got);
    if (progress) progress->Add(static_cast<uint64_t>(got));
  }
  // The page cache copy is no longer needed: the weights now live in our buffer.
  posix_fadvise(fd, static_cast<off_t>(offset), static_cast<off_t>(size), POSIX_FADV_DONTNEED);
  close(fd);
  return buffer;
}

bool ResidentBuffer::Lock() {
  if (locked_ || !data_) return locked_;
  locked_ = mlock(data_, mapped_) == 0;
  return locked_;
}

}  // namespace mtplx::io
