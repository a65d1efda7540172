// File helpers that report failures as Status, naming the file.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"

namespace mtplx {

bool FileExists(const std::string& path);
bool IsDirectory(const std::string& path);
Result<uint64_t> FileSize(const std::string& path);
Result<std::string> ReadTextFile(const std::string& path);
Status WriteTextFile(const std::string& path, const std::string& text);
Status MakeDirectories(const std::string& path);
std::string JoinPath(const std::string& a, const std::string& b);
std::string Basename(const std::string& path);

}  // namespace mtplx
