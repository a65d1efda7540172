#include "hub/http.h"

#include <curl/curl.h>

#include <cstdio>
#include <filesystem>
#include <mutex>

#include "base/strings.h"

namespace mtplx::hub {
namespace {

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

size_t ToString(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

struct FileSink {
  std::FILE* file;
  const std::function<void(uint64_t)>* on_bytes;
  long status = 0;
  bool discard = false;  // an error status: the body is not the file's
};

size_t ToFile(char* data, size_t size, size_t n, void* out) {
  auto* sink = static_cast<FileSink*>(out);
  if (sink->discard) return size * n;
  if (std::fwrite(data, size, n, sink->file) != n) return 0;
  if (*sink->on_bytes) (*sink->on_bytes)(size * n);
  return size * n;
}

// A configured handle; the caller owns it and the header list.
CURL* NewHandle(const std::string& url, const std::string& token, curl_slist** headers) {
  GlobalInit();
  CURL* curl = curl_easy_init();
  if (!curl) return nullptr;
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(curl, CURLOPT_MAXREDIRS, 10L);
  curl_easy_setopt(curl, CURLOPT_USERAGENT, "mtplx/0.1");
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, 30L);
  // A stalled transfer (under 1 KB/s for a minute) fails and is resumed by the caller.
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1024L);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, 60L);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  if (!token.empty()) {
    // libcurl drops custom Authorization headers on redirects to another host (the CDN).
    *headers = curl_slist_append(*headers, ("Authorization: Bearer " + token).c_str());
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, *headers);
  }
  return curl;
}

Status CurlError(CURLcode code, const std::string& url) {
  return Internal(StrCat(url, ": ", curl_easy_strerror(code)));
}

}  // namespace

Result<HttpResponse> HttpGet(const std::string& url, const std::string& token) {
  curl_slist* headers = nullptr;
  CURL* curl = NewHandle(url, token, &headers);
  if (!curl) return Internal("cannot start libcurl");
  HttpResponse r;
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, ToString);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &r.body);
  const CURLcode code = curl_easy_perform(curl);
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &r.status);
  curl_easy_cleanup(curl);
  curl_slist_free_all(headers);
  if (code != CURLE_OK) return CurlError(code, url);
  return r;
}

Result<long> HttpDownload(const std::string& url, const std::string& token, const std::string& path,
                          bool resume, const std::function<void(uint64_t)>& on_bytes) {
  std::error_code ec;
  const uint64_t have =
      resume && std::filesystem::exists(path, ec) ? std::filesystem::file_size(path, ec) : 0;
  std::FILE* file = std::fopen(path.c_str(), have > 0 ? "ab" : "wb");
  if (!file) return Internal(StrCat("cannot write ", path));
  curl_slist* headers = nullptr;
  CURL* curl = NewHandle(url, token, &headers);
  if (!curl) {
    std::fclose(file);
    return Internal("cannot start libcurl");
  }
  FileSink sink{file, &on_bytes};
  if (have > 0) curl_easy_setopt(curl, CURLOPT_RESUME_FROM_LARGE, static_cast<curl_off_t>(have));
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, ToFile);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(curl, CURLOPT_FAILONERROR, 1L);
  const CURLcode code = curl_easy_perform(curl);
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_cleanup(curl);
  curl_slist_free_all(headers);
  std::fclose(file);
  if (code == CURLE_HTTP_RETURNED_ERROR) return status;
  if (code == CURLE_RANGE_ERROR) {  // the server will not resume: start over
    std::filesystem::remove(path, ec);
    return HttpDownload(url, token, path, false, on_bytes);
  }
  if (code != CURLE_OK) return CurlError(code, url);
  return status;
}

}  // namespace mtplx::hub
