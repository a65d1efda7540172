#include "cli/default_model.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "base/file.h"
#include "base/strings.h"

namespace mtplx::cli {

Result<std::string> DefaultModelDir() {
  if (const char* env = std::getenv("MTPLX_MODEL"); env && *env) return std::string(env);
  std::vector<std::string> candidates;
#ifdef MTPLX_BUNDLED_MODEL
  candidates.push_back(MTPLX_BUNDLED_MODEL);  // the trained pack committed in models/default
#endif
#ifdef MTPLX_BUILD_DEFAULT_MODEL
  candidates.push_back(MTPLX_BUILD_DEFAULT_MODEL);
#endif
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) candidates.push_back((exe.parent_path() / "../models/default").string());
  for (const auto& dir : candidates)
    if (FileExists(JoinPath(dir, "config.json"))) return dir;
  return NotFound(
      "no bundled default model found; build the project (scripts/setup.sh) or pass --model DIR");
}

}  // namespace mtplx::cli
