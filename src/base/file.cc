#include "base/file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/strings.h"

namespace mtplx {

bool FileExists(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec);
}

bool IsDirectory(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_directory(path, ec);
}

Result<uint64_t> FileSize(const std::string& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) return NotFound(StrCat(path, ": ", ec.message()));
  return static_cast<uint64_t>(size);
}

Result<std::string> ReadTextFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound(StrCat(path, ": cannot open (", std::strerror(errno), ")"));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return DataLoss(StrCat(path, ": read failed"));
  return buffer.str();
}

Status WriteTextFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return NotFound(StrCat(path, ": cannot create (", std::strerror(errno), ")"));
  out << text;
  out.close();
  if (!out) return DataLoss(StrCat(path, ": write failed"));
  return Status::Ok();
}

Status MakeDirectories(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) return InvalidArgument(StrCat(path, ": cannot create directory (", ec.message(), ")"));
  return Status::Ok();
}

std::string JoinPath(const std::string& a, const std::string& b) {
  return (std::filesystem::path(a) / b).string();
}

std::string Basename(const std::string& path) {
  return std::filesystem::path(path).filename().string();
}

}  // namespace mtplx
