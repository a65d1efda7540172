// A small HTTP client of a running `mtplx serve`: `connect` reads what the server serves, and
// `start` chats with it over the OpenAI API (streamed), so a terminal chat shares the server's
// loaded model and prefix cache instead of loading its own.
#pragma once

#include <atomic>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "base/status.h"

namespace mtplx::server {

struct Endpoint {
  std::string host = "127.0.0.1";
  int port = 8000;
  std::string api_key;  // sent as Authorization: Bearer when set

  std::string BaseUrl() const;  // "http://127.0.0.1:8000"
};

// GET `path` as JSON; an error names the address when nothing answers, or the HTTP status.
Result<nlohmann::json> GetJson(const Endpoint& endpoint, const std::string& path,
                               double timeout_seconds = 2.0);

// The reply of a streamed chat completion.
struct RemoteReply {
  std::string content;
  std::string reasoning;
  std::string finish_reason;
  nlohmann::json usage;
  nlohmann::json stats;  // mtplx_stats
};

// POSTs `body` to /v1/chat/completions with "stream": true and calls `on_delta(content,
// reasoning)` for every chunk as it arrives. `cancel` (may be null) closes the connection, which
// stops the server's generation; the reply so far is returned with finish_reason "cancelled".
Result<RemoteReply> StreamChat(
    const Endpoint& endpoint, nlohmann::json body,
    const std::function<void(const std::string& content, const std::string& reasoning)>& on_delta,
    const std::atomic<bool>* cancel);

}  // namespace mtplx::server
