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
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  // An installed binary (cmake --install): PREFIX/bin/mtplx and PREFIX/share/mtplx/models/default.
  if (!ec)
    candidates.push_back((exe.parent_path().parent_path() / "share/mtplx/models/default")
                             .lexically_normal()
                             .string());
#ifdef MTPLX_BUNDLED_MODEL
  candidates.push_back(MTPLX_BUNDLED_MODEL);  // the trained pack committed in models/default
#endif
#ifdef MTPLX_BUILD_DEFAULT_MODEL
  candidates.push_back(MTPLX_BUILD_DEFAULT_MODEL);
#endif
  if (!ec)
    candidates.push_back(
        (exe.parent_path().parent_path() / "models/default").lexically_normal().string());
  for (const auto& dir : candidates)
    if (FileExists(JoinPath(dir, "config.json"))) return dir;
  return NotFound(
      "no bundled default model found (looked in PREFIX/share/mtplx/models/default beside the "
      "binary and in the source tree); build the project (scripts/setup.sh), install it "
      "(cmake --install build --prefix PREFIX) or pass --model DIR");
}

}  // namespace mtplx::cli
