#include "pack/staging.h"

#include <unistd.h>

#include <filesystem>

#include "base/strings.h"

namespace mtplx::pack {
namespace {

namespace fs = std::filesystem;

// A hidden sibling: the same file system as the destination, so the final rename is atomic.
std::string SiblingPath(const fs::path& destination, const char* role) {
  const fs::path parent = destination.has_parent_path() ? destination.parent_path() : fs::path(".");
  return (parent / StrCat(".", destination.filename().string(), ".mtplx-", role, "-", getpid()))
      .string();
}

}  // namespace

bool IsNonEmptyDirectory(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec) && !fs::is_empty(path, ec);
}

Result<StagingDir> StagingDir::Create(const std::string& destination, bool replace) {
  if (destination.empty()) return InvalidArgument("the output folder name is empty");
  fs::path dest = fs::path(destination).lexically_normal();
  if (dest.filename().empty()) dest = dest.parent_path();  // "out/" -> "out"
  std::error_code ec;
  if (fs::exists(dest, ec) && !fs::is_directory(dest, ec))
    return InvalidArgument(StrCat(dest.string(), ": exists and is not a folder"));
  if (IsNonEmptyDirectory(dest.string()) && !replace)
    return FailedPrecondition(
        StrCat(dest.string(), ": exists and is not empty (pass --force to replace it)"));
  const std::string staging = SiblingPath(dest, "staging");
  fs::remove_all(staging, ec);
  fs::create_directories(staging, ec);
  if (ec)
    return InvalidArgument(
        StrCat(staging, ": cannot create the staging folder (", ec.message(), ")"));
  return StagingDir(dest.string(), staging);
}

StagingDir::StagingDir(StagingDir&& other) noexcept
    : destination_(std::move(other.destination_)), path_(std::move(other.path_)) {
  other.path_.clear();
}

StagingDir::~StagingDir() {
  if (path_.empty()) return;
  std::error_code ec;
  fs::remove_all(path_, ec);
}

Status StagingDir::Commit() {
  std::error_code ec;
  std::string old;
  if (fs::exists(destination_, ec)) {  // move the old folder aside first, then swap
    old = SiblingPath(destination_, "old");
    fs::remove_all(old, ec);
    fs::rename(destination_, old, ec);
    if (ec)
      return InvalidArgument(
          StrCat(destination_, ": cannot move the old folder aside (", ec.message(), ")"));
  }
  fs::rename(path_, destination_, ec);
  if (ec) {
    const std::string reason = ec.message();
    if (!old.empty()) fs::rename(old, destination_, ec);  // put the old folder back
    return InvalidArgument(
        StrCat(destination_, ": cannot move the finished pack into place (", reason, ")"));
  }
  path_.clear();
  if (!old.empty()) fs::remove_all(old, ec);
  return Status::Ok();
}

}  // namespace mtplx::pack
