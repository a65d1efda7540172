#include "support/test_support.h"

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <vector>

namespace mtplx::testing {
namespace {

std::string EnvOr(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value && *value ? value : fallback;
}

std::vector<std::string>& TempDirs() {
  // Leaked on purpose: the atexit handler below must still see it during static destruction.
  static auto* dirs = new std::vector<std::string>();
  return *dirs;
}

void RemoveTempDirs() {
  for (const auto& dir : TempDirs()) {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
}

}  // namespace

std::string SourceDir() { return EnvOr("MTPLX_SOURCE_DIR", MTPLX_SOURCE_DIR_DEFAULT); }
std::string BinaryDir() { return EnvOr("MTPLX_BINARY_DIR", MTPLX_BINARY_DIR_DEFAULT); }
std::string TestDataPath(const std::string& relative) {
  return SourceDir() + "/tests/data/" + relative;
}

std::string MakeTempDir(const std::string& prefix) {
  static std::once_flag once;
  std::call_once(once, [] { std::atexit(RemoveTempDirs); });
  std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
  char* made = mkdtemp(pattern.data());
  if (!made) return "";
  TempDirs().push_back(made);
  return made;
}

std::string TrainedModelDir() { return SourceDir() + "/models/default"; }

std::string TrainedModelCopy(const std::string& prefix, const std::string& runtime_keys) {
  namespace fs = std::filesystem;
  const std::string dir = MakeTempDir(prefix);
  std::error_code error;
  fs::copy(TrainedModelDir(), dir, fs::copy_options::recursive, error);
  const fs::path runtime = fs::path(dir) / "mtplx_runtime.json";
  std::ifstream in(runtime);
  nlohmann::json contract = nlohmann::json::parse(in, nullptr, false);
  const nlohmann::json keys = nlohmann::json::parse(runtime_keys, nullptr, false);
  if (dir.empty() || error || !contract.is_object() || !keys.is_object()) return "";
  contract.update(keys);
  std::ofstream(runtime) << contract.dump(2);
  return dir;
}

CommandOutcome RunMtplx(const std::string& args, bool merge_stderr) {
  return RunMtplxWithEnv("", args, merge_stderr);
}

CommandOutcome RunMtplxWithEnv(const std::string& env, const std::string& args, bool merge_stderr) {
  const std::string command = (env.empty() ? "" : env + " ") + BinaryDir() + "/bin/mtplx " + args +
                              (merge_stderr ? " 2>&1" : " 2>/dev/null");
  CommandOutcome outcome;
  std::FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return outcome;
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0)
    outcome.output.append(buffer.data(), n);
  const int status = pclose(pipe);
  outcome.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return outcome;
}

}  // namespace mtplx::testing
