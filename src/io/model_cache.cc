#include "io/model_cache.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "base/file.h"
#include "base/strings.h"

namespace mtplx::io {
namespace {

namespace fs = std::filesystem;

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : "";
}

std::string Home() {
  const std::string home = Env("HOME");
  return home.empty() ? "." : home;
}

uint64_t TreeBytes(const fs::path& dir) {
  uint64_t total = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (it->is_regular_file(ec) && !it->is_symlink(ec)) total += it->file_size(ec);
  }
  return total;
}

// The snapshot refs/main names, else the most recently modified one.
std::string HubSnapshot(const fs::path& entry) {
  const fs::path snapshots = entry / "snapshots";
  std::string main;
  if (auto text = ReadTextFile((entry / "refs" / "main").string()); text.ok()) main = *text;
  while (!main.empty() && (main.back() == '\n' || main.back() == ' ')) main.pop_back();
  if (!main.empty() && fs::is_directory(snapshots / main)) return (snapshots / main).string();
  std::string newest;
  fs::file_time_type newest_time{};
  std::error_code ec;
  for (const auto& s : fs::directory_iterator(snapshots, ec)) {
    const auto t = s.last_write_time(ec);
    if (newest.empty() || t > newest_time) newest = s.path().string(), newest_time = t;
  }
  return newest;
}

void ListHub(std::vector<LocalModel>& out) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(HubCacheDir(), ec)) {
    const std::string folder = entry.path().filename().string();
    if (folder.rfind("models--", 0) != 0 || !entry.is_directory()) continue;
    LocalModel m;
    m.source = "hub";
    m.name = folder.substr(8);
    const size_t sep = m.name.find("--");
    if (sep != std::string::npos) m.name.replace(sep, 2, "/");
    m.entry = entry.path().string();
    m.path = HubSnapshot(entry.path());
    if (m.path.empty() || !FileExists(JoinPath(m.path, "config.json"))) continue;
    m.bytes = TreeBytes(entry.path() / "blobs");
    out.push_back(std::move(m));
  }
}

void ListPacks(std::vector<LocalModel>& out) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(PackCacheDir(), ec)) {
    if (!entry.is_directory() || !FileExists((entry.path() / "config.json").string())) continue;
    LocalModel m;
    m.source = "packs";
    m.name = entry.path().filename().string();
    const size_t sep = m.name.find("--");
    if (sep != std::string::npos) m.name.replace(sep, 2, "/");
    m.entry = m.path = entry.path().string();
    m.bytes = TreeBytes(entry.path());
    out.push_back(std::move(m));
  }
}

// Whether `path` (resolved, symlinks followed) lies strictly inside `root` (resolved).
bool Inside(const std::string& path, const std::string& root) {
  std::error_code ec;
  const fs::path p = fs::weakly_canonical(path, ec);
  if (ec) return false;
  const fs::path r = fs::weakly_canonical(root, ec);
  if (ec) return false;
  const std::string ps = p.string(), rs = r.string() + "/";
  return ps.size() > rs.size() && ps.compare(0, rs.size(), rs) == 0;
}

}  // namespace

std::string HubCacheDir() {
  if (!Env("HF_HUB_CACHE").empty()) return Env("HF_HUB_CACHE");
  if (!Env("HF_HOME").empty()) return JoinPath(Env("HF_HOME"), "hub");
  return JoinPath(Home(), ".cache/huggingface/hub");
}

std::string PackCacheDir() {
  if (!Env("MTPLX_HOME").empty()) return JoinPath(Env("MTPLX_HOME"), "models");
  return JoinPath(Home(), ".mtplx/models");
}

std::vector<LocalModel> ListLocalModels() {
  std::vector<LocalModel> out;
  ListHub(out);
  ListPacks(out);
  std::sort(out.begin(), out.end(), [](const LocalModel& a, const LocalModel& b) {
    return a.name < b.name || (a.name == b.name && a.source < b.source);
  });
  return out;
}

Result<LocalModel> FindLocalModel(const std::string& name) {
  const std::vector<LocalModel> all = ListLocalModels();
  for (const LocalModel& m : all)
    if (m.name == name || fs::path(m.entry).filename() == name) return m;
  std::string known;
  for (const LocalModel& m : all) known += (known.empty() ? "" : ", ") + m.name;
  return NotFound(StrCat("no cached model named '", name, "' in ", HubCacheDir(), " or ",
                         PackCacheDir(),
                         known.empty() ? " (both are empty)" : "; there are: " + known));
}

Status RemoveLocalModel(const LocalModel& model) {
  const std::string root = model.source == "hub" ? HubCacheDir() : PackCacheDir();
  // Never outside the cache: a symlinked entry or one resolving elsewhere is refused.
  std::error_code ec;
  if (fs::is_symlink(model.entry, ec) || !Inside(model.entry, root))
    return FailedPrecondition(StrCat(model.entry, " is not inside ", root, ": not removed"));
  fs::remove_all(model.entry, ec);
  if (ec) return Internal(StrCat("cannot remove ", model.entry, ": ", ec.message()));
  return Status::Ok();
}

}  // namespace mtplx::io
