#include "hub/pull.h"

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/file.h"
#include "base/progress.h"
#include "base/sha256.h"
#include "base/strings.h"
#include "hub/http.h"
#include "io/model_cache.h"
#include "io/safetensors.h"

namespace mtplx::hub {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

// Attempts per file: a transfer cut short resumes, a failed check starts over.
constexpr int kAttempts = 4;

struct RemoteFile {
  std::string name;
  uint64_t size = 0;
  std::string blob;    // the blob's name in the cache: LFS sha256, else the git blob id
  std::string sha256;  // LFS files: checked after download
};

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : "";
}

std::string Endpoint(const PullOptions& o) {
  std::string e = !o.endpoint.empty() ? o.endpoint : Env("HF_ENDPOINT");
  if (e.empty()) e = "https://huggingface.co";
  while (!e.empty() && e.back() == '/') e.pop_back();
  return e;
}

std::string Token(const PullOptions& o) {
  if (!o.token.empty()) return o.token;
  if (!Env("HF_TOKEN").empty()) return Env("HF_TOKEN");
  const std::string home =
      Env("HF_HOME").empty()
          ? JoinPath(Env("HOME").empty() ? "." : Env("HOME"), ".cache/huggingface")
          : Env("HF_HOME");
  auto text = ReadTextFile(JoinPath(home, "token"));
  std::string token = text.ok() ? *text : "";
  while (!token.empty() && (token.back() == '\n' || token.back() == ' ')) token.pop_back();
  return token;
}

Status HttpError(long status, const std::string& what, const std::string& repo,
                 const std::string& endpoint, bool have_token) {
  if (status == 401 || status == 403)
    return FailedPrecondition(StrCat(
        what, ": ", endpoint, " answered ", status,
        have_token ? " (the token was refused: check HF_TOKEN's access to " + repo + ")"
                   : " (the model needs a token: set HF_TOKEN, or log in with huggingface-cli)"));
  if (status == 404)
    return NotFound(
        StrCat(what, ": ", endpoint, " has no model ", repo, " (or no such revision or file)"));
  return Internal(StrCat(what, ": ", endpoint, " answered HTTP ", status));
}

// The revision's commit and its files (sizes and hashes: ?blobs=true).
Result<std::pair<std::string, std::vector<RemoteFile>>> ListFiles(const PullOptions& o,
                                                                  const std::string& endpoint,
                                                                  const std::string& token) {
  const std::string url =
      StrCat(endpoint, "/api/models/", o.repo, "/revision/", o.revision, "?blobs=true");
  MTPLX_ASSIGN_OR_RETURN(const HttpResponse r, HttpGet(url, token));
  if (r.status != 200)
    return HttpError(r.status, "listing " + o.repo, o.repo, endpoint, !token.empty());
  const Json info = Json::parse(r.body, nullptr, false);
  if (!info.is_object() || !info.contains("sha") || !info.contains("siblings"))
    return DataLoss(StrCat(url, ": not a model description"));
  std::vector<RemoteFile> files;
  for (const Json& s : info["siblings"]) {
    RemoteFile f;
    f.name = s.value("rfilename", "");
    if (f.name.empty() || !WantedFile(f.name)) continue;
    if (f.name.find("..") != std::string::npos || f.name.front() == '/')
      return DataLoss(StrCat(url, ": refusing the file name ", f.name));
    f.size = s.value("size", uint64_t{0});
    f.blob = s.value("blobId", "");
    if (s.contains("lfs") && s["lfs"].is_object()) {
      f.sha256 = s["lfs"].value("sha256", "");
      f.size = s["lfs"].value("size", f.size);
      if (!f.sha256.empty()) f.blob = f.sha256;
    }
    if (f.blob.empty()) {  // a server that names no blob: a stable name of our own
      Sha256 digest;
      digest.Update(o.repo + "/" + info["sha"].get<std::string>() + "/" + f.name);
      f.blob = digest.HexDigest();
    }
    files.push_back(std::move(f));
  }
  return std::make_pair(info["sha"].get<std::string>(), std::move(files));
}

// Whether a blob on disk is the file: its size, and its sha256 when known.
bool Verified(const std::string& path, const RemoteFile& f) {
  std::error_code ec;
  if (!fs::exists(path, ec) || (f.size && fs::file_size(path, ec) != f.size)) return false;
  if (f.sha256.empty()) return true;
  auto sha = Sha256File(path);
  return sha.ok() && *sha == f.sha256;
}

struct Shared {
  std::mutex mutex;
  ProgressBar* progress;
  std::atomic<uint64_t> downloaded{0};
  std::atomic<int> reused{0}, refetched{0};
};

Status FetchFile(const PullOptions& o, const std::string& endpoint, const std::string& token,
                 const std::string& entry, const std::string& commit, const RemoteFile& f,
                 Shared& shared) {
  const std::string blob = JoinPath(JoinPath(entry, "blobs"), f.blob);
  if (Verified(blob, f)) {
    ++shared.reused;
    std::lock_guard<std::mutex> lock(shared.mutex);
    shared.progress->Add(f.size);
    return Status::Ok();
  }
  const std::string partial = blob + ".incomplete";
  const std::string url = StrCat(endpoint, "/", o.repo, "/resolve/", commit, "/", f.name);
  auto on_bytes = [&](uint64_t n) {
    shared.downloaded += n;
    std::lock_guard<std::mutex> lock(shared.mutex);
    shared.progress->Add(n);
  };
  std::string last_error;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    std::error_code ec;
    auto status = HttpDownload(url, token, partial, /*resume=*/true, on_bytes);
    if (!status.ok()) {
      last_error = status.status().message();  // cut short: the next attempt resumes
      continue;
    }
    if (*status >= 400)
      return HttpError(*status, "fetching " + f.name, o.repo, endpoint, !token.empty());
    if (Verified(partial, f)) {
      fs::rename(partial, blob, ec);
      if (ec) return Internal(StrCat("cannot move ", partial, ": ", ec.message()));
      return Status::Ok();
    }
    // Wrong size or hash: what was there is not trusted; fetch the whole file again.
    last_error = StrCat(f.name, ": ", fs::file_size(partial, ec), " bytes that fail the ",
                        f.sha256.empty() ? "size" : "sha256", " check");
    fs::remove(partial, ec);
    ++shared.refetched;
  }
  return DataLoss(
      StrCat("could not fetch ", f.name, " after ", kAttempts, " attempts: ", last_error));
}

// snapshots/<commit>/<name> -> ../../blobs/<blob> (one more ../ per folder in the name).
Status LinkSnapshot(const std::string& entry, const std::string& commit, const RemoteFile& f) {
  const fs::path link = fs::path(entry) / "snapshots" / commit / f.name;
  std::error_code ec;
  fs::create_directories(link.parent_path(), ec);
  std::string target = "../../blobs/" + f.blob;
  for (char c : f.name)
    if (c == '/') target = "../" + target;
  fs::remove(link, ec);
  fs::create_symlink(target, link, ec);
  if (ec) return Internal(StrCat("cannot link ", link.string(), ": ", ec.message()));
  return Status::Ok();
}

}  // namespace

bool WantedFile(const std::string& name) {
  for (const char* suffix :
       {".safetensors", ".json", ".jinja", ".txt", ".model", ".tiktoken", ".md", ".py"})
    if (EndsWith(name, suffix)) return name.find("/onnx/") == std::string::npos;
  return false;
}

Result<PullResult> Pull(const PullOptions& o) {
  const size_t slash = o.repo.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == o.repo.size() ||
      o.repo.find('/', slash + 1) != std::string::npos || o.repo.find("..") != std::string::npos)
    return InvalidArgument(StrCat("'", o.repo, "' is not ORG/NAME"));
  const std::string endpoint = Endpoint(o);
  const std::string token = Token(o);
  MTPLX_ASSIGN_OR_RETURN(auto listing, ListFiles(o, endpoint, token));
  // References, not a structured binding: clang 14 (the sanitizer and fuzz builds) cannot capture
  // a binding in the worker lambda below.
  const std::string& commit = listing.first;
  const std::vector<RemoteFile>& files = listing.second;
  if (files.empty()) return NotFound(StrCat(o.repo, " has no files mtplx can use"));
  const std::string cache = o.cache_dir.empty() ? io::HubCacheDir() : o.cache_dir;
  std::string folder = "models--" + o.repo;
  folder.replace(folder.find('/'), 1, "--");
  const std::string entry = JoinPath(cache, folder);
  std::error_code ec;
  fs::create_directories(JoinPath(entry, "blobs"), ec);
  fs::create_directories(JoinPath(entry, "refs"), ec);
  if (ec) return Internal(StrCat("cannot create ", entry, ": ", ec.message()));

  PullResult result;
  result.commit = commit;
  for (const RemoteFile& f : files) result.bytes_total += f.size;
  ProgressBar progress("pulling " + o.repo, result.bytes_total, "B", o.progress);
  Shared shared;
  shared.progress = &progress;
  std::atomic<size_t> next{0};
  std::vector<Status> errors(files.size(), Status::Ok());
  auto worker = [&] {
    for (size_t i = next++; i < files.size(); i = next++)
      errors[i] = FetchFile(o, endpoint, token, entry, commit, files[i], shared);
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < std::max(1, std::min<int>(o.parallel, static_cast<int>(files.size()))); ++t)
    threads.emplace_back(worker);
  for (std::thread& t : threads) t.join();
  progress.Finish();
  for (const Status& s : errors) MTPLX_RETURN_IF_ERROR(s);
  for (const RemoteFile& f : files) MTPLX_RETURN_IF_ERROR(LinkSnapshot(entry, commit, f));
  MTPLX_RETURN_IF_ERROR(WriteTextFile(JoinPath(JoinPath(entry, "refs"), o.revision), commit));
  result.snapshot_dir = JoinPath(JoinPath(JoinPath(entry, "snapshots"), commit), "");
  result.snapshot_dir.pop_back();
  result.files = static_cast<int>(files.size());
  result.bytes_downloaded = shared.downloaded;
  result.reused = shared.reused;
  result.refetched = shared.refetched;
  for (const RemoteFile& f : files) {
    if (!EndsWith(f.name, ".safetensors")) continue;
    uint64_t offset = 0, size = 0;
    auto header =
        io::SafetensorsFile::ReadHeader(JoinPath(result.snapshot_dir, f.name), &offset, &size);
    if (!header.ok()) return header.status();
    for (const auto& [name, t] : header->tensors)
      if (name.rfind("mtp.", 0) == 0 || name.find(".mtp.") != std::string::npos)
        ++result.mtp_tensors;
  }
  return result;
}

}  // namespace mtplx::hub
