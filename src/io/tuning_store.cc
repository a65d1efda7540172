#include "io/tuning_store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "base/file.h"
#include "base/sha256.h"
#include "base/strings.h"

namespace mtplx::io {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

Json RecordJson(const TuningRecord& r, const TuningKey& key) {
  Json results = Json::array();
  for (const TuningResult& x : r.results)
    results.push_back({{"depth", x.depth},
                       {"tok_s", x.tok_s},
                       {"acceptance", x.acceptance},
                       {"tokens_per_cycle", x.tokens_per_cycle},
                       {"speedup", x.speedup}});
  Json threads = Json::array();
  for (const TuningThreadResult& t : r.thread_results)
    threads.push_back({{"threads", t.threads}, {"tok_s", t.tok_s}});
  return {{"model", key.model},
          {"cpu", key.cpu},
          {"threads", key.threads},
          {"engine_version", key.engine_version},
          {"best_depth", r.best_depth},
          {"run_threads", r.threads},
          {"thread_results", threads},
          {"step_verify_costs", r.step_verify_costs},
          {"step_draft_cost", r.step_draft_cost},
          {"verdict", r.verdict},
          {"results", results},
          {"measured_at", r.measured_at},
          {"max_tokens", r.max_tokens}};
}

std::optional<TuningRecord> RecordFrom(const Json& j) {
  if (!j.is_object() || !j.contains("best_depth") || !j["best_depth"].is_number_integer())
    return std::nullopt;
  TuningRecord r;
  r.best_depth = j["best_depth"].get<int>();
  if (r.best_depth < 0 || r.best_depth > 8) return std::nullopt;
  if (j.contains("verdict") && j["verdict"].is_string()) r.verdict = j["verdict"];
  if (j.contains("measured_at") && j["measured_at"].is_string()) r.measured_at = j["measured_at"];
  if (j.contains("max_tokens") && j["max_tokens"].is_number_integer())
    r.max_tokens = j["max_tokens"];
  if (j.contains("run_threads") && j["run_threads"].is_number_integer())
    r.threads = std::max(0, j["run_threads"].get<int>());
  if (j.contains("thread_results") && j["thread_results"].is_array())
    for (const Json& x : j["thread_results"])
      if (x.is_object() && x.contains("threads") && x["threads"].is_number_integer() &&
          x.contains("tok_s") && x["tok_s"].is_number())
        r.thread_results.push_back({x["threads"].get<int>(), x["tok_s"].get<double>()});
  if (j.contains("step_verify_costs") && j["step_verify_costs"].is_array()) {
    for (const Json& v : j["step_verify_costs"]) {
      if (!v.is_number() || v.get<double>() <= 0) {
        r.step_verify_costs.clear();  // a broken curve is no curve
        break;
      }
      r.step_verify_costs.push_back(v.get<double>());
    }
  }
  if (j.contains("step_draft_cost") && j["step_draft_cost"].is_number())
    r.step_draft_cost = std::max(0.0, j["step_draft_cost"].get<double>());
  if (j.contains("results") && j["results"].is_array())
    for (const Json& x : j["results"]) {
      if (!x.is_object() || !x.contains("depth") || !x["depth"].is_number_integer()) continue;
      TuningResult t;
      t.depth = x["depth"].get<int>();
      if (x.contains("tok_s") && x["tok_s"].is_number()) t.tok_s = x["tok_s"];
      if (x.contains("acceptance") && x["acceptance"].is_number()) t.acceptance = x["acceptance"];
      if (x.contains("tokens_per_cycle") && x["tokens_per_cycle"].is_number())
        t.tokens_per_cycle = x["tokens_per_cycle"];
      if (x.contains("speedup") && x["speedup"].is_number())
        t.speedup = std::max(0.0, x["speedup"].get<double>());
      r.results.push_back(t);
    }
  return r;
}

Json ReadStore(const std::string& path) {
  if (!FileExists(path)) return Json::object();
  auto text = ReadTextFile(path);
  if (!text.ok()) return Json::object();
  Json j = Json::parse(*text, nullptr, false);
  return j.is_object() ? j : Json::object();
}

// Writes the whole store atomically: a staged file per process, then a rename.
Status WriteStore(const std::string& path, const Json& store) {
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  const std::string staged = StrCat(path, ".", getpid(), ".tmp");
  MTPLX_RETURN_IF_ERROR(WriteTextFile(staged, store.dump(2) + "\n"));
  fs::rename(staged, path, ec);
  if (ec) {
    fs::remove(staged, ec);
    return Internal(StrCat("cannot write ", path, ": ", ec.message()));
  }
  return Status::Ok();
}

// Holds the store's lock file (tuning.json.lock) exclusively while one process reads, changes
// and writes the store: without it, two processes storing at once (a tune and a server's first
// start) each write the file they read and one's entry is lost. A home where the lock cannot be
// made is used unlocked (the store is a cache of measurements, never a reason to fail).
class StoreLock {
 public:
  explicit StoreLock(const std::string& path) {
    std::error_code ec;
    fs::create_directories(fs::path(path).parent_path(), ec);
    fd_ = ::open((path + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) return;
    while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
    }
  }
  ~StoreLock() {
    if (fd_ >= 0) ::close(fd_);  // closing releases the lock
  }
  StoreLock(const StoreLock&) = delete;
  StoreLock& operator=(const StoreLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace

std::string TuningKey::ToString() const {
  return StrCat(model, " | ", cpu, " | ", threads, " threads | mtplx ", engine_version);
}

std::string TuningStorePath() {
  const char* home = std::getenv("MTPLX_HOME");
  if (home && *home) return JoinPath(home, "tuning.json");
  const char* user = std::getenv("HOME");
  return JoinPath(JoinPath(user && *user ? user : ".", ".mtplx"), "tuning.json");
}

Result<std::string> TuningModelId(const std::string& model_dir) {
  MTPLX_ASSIGN_OR_RETURN(std::string config, ReadTextFile(JoinPath(model_dir, "config.json")));
  Sha256 digest;
  digest.Update(config);
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(model_dir, ec))
    if (entry.is_regular_file() && entry.path().extension() == ".safetensors")
      files.push_back(entry.path().filename().string() + "=" + std::to_string(entry.file_size()));
  std::sort(files.begin(), files.end());
  for (const std::string& f : files) digest.Update(f + "\n");
  fs::path name = fs::absolute(model_dir).lexically_normal();
  if (name.filename().empty()) name = name.parent_path();
  return name.filename().string() + "@" + digest.HexDigest().substr(0, 16);
}

Result<std::string> WeightFilesStamp(const std::string& model_dir) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(model_dir, ec)) {
    if (!entry.is_regular_file() || entry.path().extension() != ".safetensors") continue;
    const auto written = entry.last_write_time(ec).time_since_epoch().count();
    files.push_back(StrCat(entry.path().filename().string(), "=", entry.file_size(), "@", written));
  }
  if (ec) return NotFound(StrCat(model_dir, ": cannot list the weight files (", ec.message(), ")"));
  std::sort(files.begin(), files.end());
  Sha256 digest;
  for (const std::string& f : files) digest.Update(f + "\n");
  return digest.HexDigest().substr(0, 16);
}

std::optional<TuningRecord> LoadTuning(const std::string& path, const TuningKey& key) {
  const Json store = ReadStore(path);
  const auto entries = store.find("entries");
  if (entries == store.end() || !entries->is_object()) return std::nullopt;
  const auto it = entries->find(key.ToString());
  if (it == entries->end()) return std::nullopt;
  return RecordFrom(*it);
}

Status StoreTuning(const std::string& path, const TuningKey& key, const TuningRecord& record) {
  const StoreLock lock(path);
  Json store = ReadStore(path);
  if (!store.contains("entries") || !store["entries"].is_object())
    store["entries"] = Json::object();
  store["entries"][key.ToString()] = RecordJson(record, key);
  return WriteStore(path, store);
}

std::optional<double> LoadMtpCheck(const std::string& path, const std::string& key) {
  const Json store = ReadStore(path);
  const auto checks = store.find("mtp_checks");
  if (checks == store.end() || !checks->is_object()) return std::nullopt;
  const auto it = checks->find(key);
  if (it == checks->end() || !it->is_object()) return std::nullopt;
  const auto acceptance = it->find("acceptance");
  if (acceptance == it->end() || !acceptance->is_number()) return std::nullopt;
  const double a = acceptance->get<double>();
  if (!(a >= 0.0 && a <= 1.0)) return std::nullopt;
  return a;
}

Status StoreMtpCheck(const std::string& path, const std::string& key, double acceptance) {
  const StoreLock lock(path);
  Json store = ReadStore(path);
  if (!store.contains("mtp_checks") || !store["mtp_checks"].is_object())
    store["mtp_checks"] = Json::object();
  store["mtp_checks"][key] = {{"acceptance", acceptance}};
  return WriteStore(path, store);
}

std::vector<double> MeasuredCycleCosts(const TuningRecord& record) {
  std::vector<double> costs;
  double plain = 0.0;
  for (const TuningResult& r : record.results)
    if (r.depth == 0) plain = r.tok_s;
  for (int d = 0; plain > 0; ++d) {
    const auto it = std::find_if(record.results.begin(), record.results.end(),
                                 [&](const TuningResult& r) { return r.depth == d; });
    if (it == record.results.end() || it->tok_s <= 0) break;
    const double speedup = it->speedup > 0 ? it->speedup : it->tok_s / plain;
    costs.push_back(d == 0 ? 1.0 : it->tokens_per_cycle / speedup);
  }
  return costs.size() >= 2 ? costs : std::vector<double>{};
}

}  // namespace mtplx::io
