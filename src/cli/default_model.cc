#include "cli/default_model.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "base/file.h"
#include "base/strings.h"
#include "io/model_cache.h"
#include "kernels/hardware.h"

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

namespace {

bool LooksLikeRepoName(const std::string& value) {
  const size_t slash = value.find('/');
  return slash != std::string::npos && slash > 0 && slash + 1 < value.size() &&
         value.find('/', slash + 1) == std::string::npos && value.front() != '.' &&
         value.front() != '~';
}

// The FP16 sibling of a folder, or of a cached model by name; empty when there is none.
std::string Fp16Sibling(const std::string& dir, const std::string& name) {
  if (!name.empty()) {
    for (const char* suffix : {"-FP16", "-fp16"})
      if (auto sibling = io::FindLocalModel(name + suffix); sibling.ok()) return sibling->path;
  }
  std::string base = dir;
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  for (const char* suffix : {"-fp16", "-FP16"})
    if (FileExists(JoinPath(base + suffix, "config.json"))) return base + suffix;
  return "";
}

// `route`: go to an FP16 sibling when this CPU has no fast bf16.
Result<std::string> Resolve(const std::string& value, bool route) {
  std::string dir, name;
  if (value.empty()) {
    MTPLX_ASSIGN_OR_RETURN(dir, DefaultModelDir());
  } else if (FileExists(value) || IsDirectory(value) || !LooksLikeRepoName(value)) {
    // A folder (`models/default` from the repository is one, though it reads like ORG/NAME), or
    // a path whose loading will name what is missing.
    return value;
  } else {
    auto cached = io::FindLocalModel(value);
    if (!cached.ok())
      return NotFound("model " + value + " is not on this machine (download it with `mtplx pull " +
                      value + "`, or pass a folder)");
    dir = cached->path;
    name = value;
  }
  static const bool fast_bf16 = kernels::DetectHardware().fast_bf16;
  if (!route || fast_bf16) return dir;
  const std::string sibling = Fp16Sibling(dir, name);
  if (sibling.empty()) return dir;
  std::fprintf(stderr,
               "[mtplx] using the FP16 sibling %s: this CPU has no fast bf16 arithmetic (pass "
               "--model with a folder to choose)\n",
               sibling.c_str());
  return sibling;
}

}  // namespace

Result<std::string> ResolveModelDir(const std::string& value) { return Resolve(value, true); }

Result<std::string> FindModelDir(const std::string& value) {
  if (value.empty()) return value;
  return Resolve(value, false);
}

}  // namespace mtplx::cli
