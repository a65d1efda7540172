// A small HTTPS client over libcurl for the hub: GET into memory (API calls) or appended to a
// file from an offset (downloads that resume), with the token and redirects handled.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "base/status.h"

namespace mtplx::hub {

struct HttpResponse {
  long status = 0;
  std::string body;
};

// GET `url` into memory.
Result<HttpResponse> HttpGet(const std::string& url, const std::string& token);

// GET `url` appending to `path` from its current size (Range) when `resume`; `on_bytes` sees
// every chunk's size. Returns the HTTP status; a transfer cut short is an error.
Result<long> HttpDownload(const std::string& url, const std::string& token, const std::string& path,
                          bool resume, const std::function<void(uint64_t)>& on_bytes);

}  // namespace mtplx::hub
