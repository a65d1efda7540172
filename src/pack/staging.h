// An output folder written atomically: everything goes into a hidden sibling folder, which
// replaces the destination with a rename only when the work succeeded. A failure (or an early
// return) removes the sibling, so no half-written pack is ever left where a pack is expected.
#pragma once

#include <string>

#include "base/status.h"

namespace mtplx::pack {

class StagingDir {
 public:
  // Refuses a destination that is a file, or a non-empty folder unless `replace`; creates the
  // destination's parent folders and the staging sibling.
  static Result<StagingDir> Create(const std::string& destination, bool replace);

  StagingDir(StagingDir&& other) noexcept;
  StagingDir& operator=(StagingDir&&) = delete;
  StagingDir(const StagingDir&) = delete;
  ~StagingDir();

  // Where to write.
  const std::string& path() const { return path_; }
  const std::string& destination() const { return destination_; }
  // Moves the staged folder into place, replacing what is there.
  Status Commit();

 private:
  StagingDir(std::string destination, std::string path)
      : destination_(std::move(destination)), path_(std::move(path)) {}

  std::string destination_;
  std::string path_;  // empty once committed or moved from
};

// Whether `path` is a folder holding at least one entry.
bool IsNonEmptyDirectory(const std::string& path);

}  // namespace mtplx::pack
