#include "server/client.h"

#include <httplib.h>

#include "base/strings.h"

namespace mtplx::server {
namespace {

using Json = nlohmann::json;

httplib::Headers AuthHeaders(const Endpoint& endpoint) {
  httplib::Headers headers;
  if (!endpoint.api_key.empty()) headers.emplace("Authorization", "Bearer " + endpoint.api_key);
  return headers;
}

// The message of an error body in either API's shape, or the body itself.
std::string ErrorMessage(const std::string& body) {
  const Json parsed = Json::parse(body, nullptr, false);
  if (parsed.is_object() && parsed.contains("error") && parsed["error"].is_object() &&
      parsed["error"].contains("message") && parsed["error"]["message"].is_string())
    return parsed["error"]["message"].get<std::string>();
  return body.substr(0, 300);
}

// A string member, or "" when it is missing, null or not a string (never throws).
std::string StringField(const Json& object, const char* key) {
  if (!object.is_object()) return "";
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

// Splits server-sent events out of the bytes received so far; returns each event's data.
class SseReader {
 public:
  template <typename Fn>
  void Feed(const char* data, size_t size, Fn on_data) {
    buffer_.append(data, size);
    size_t end;
    while ((end = buffer_.find("\n\n")) != std::string::npos) {
      const std::string event = buffer_.substr(0, end);
      buffer_.erase(0, end + 2);
      for (const std::string& line : StrSplit(event, '\n'))
        if (StartsWith(line, "data: ")) on_data(line.substr(6));
    }
  }

 private:
  std::string buffer_;
};

}  // namespace

std::string Endpoint::BaseUrl() const { return StrFormat("http://%s:%d", host.c_str(), port); }

Result<Json> GetJson(const Endpoint& endpoint, const std::string& path, double timeout_seconds) {
  httplib::Client client(endpoint.host, endpoint.port);
  const auto timeout = std::chrono::duration<double>(timeout_seconds);
  client.set_connection_timeout(timeout);
  client.set_read_timeout(timeout);
  const httplib::Result result = client.Get(path, AuthHeaders(endpoint));
  if (!result)
    return NotFound(StrCat("no server answers at ", endpoint.BaseUrl(), " (",
                           httplib::to_string(result.error()), ")"));
  if (result->status != 200)
    return FailedPrecondition(StrCat(endpoint.BaseUrl(), path, " answered HTTP ", result->status,
                                     ": ", ErrorMessage(result->body)));
  Json parsed = Json::parse(result->body, nullptr, false);
  if (parsed.is_discarded())
    return DataLoss(StrCat(endpoint.BaseUrl(), path, " did not answer JSON"));
  return parsed;
}

Result<RemoteReply> StreamChat(
    const Endpoint& endpoint, Json body,
    const std::function<void(const std::string&, const std::string&)>& on_delta,
    const std::atomic<bool>* cancel) {
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  httplib::Client client(endpoint.host, endpoint.port);
  client.set_read_timeout(std::chrono::hours(1));
  RemoteReply reply;
  SseReader sse;
  std::string error_body;
  bool cancelled = false;
  httplib::Request request;
  request.method = "POST";
  request.path = "/v1/chat/completions";
  request.headers = AuthHeaders(endpoint);
  request.set_header("Content-Type", "application/json");
  request.body = body.dump(-1, ' ', false, Json::error_handler_t::replace);
  request.content_receiver = [&](const char* data, size_t size, uint64_t, uint64_t) {
    if (cancel && cancel->load()) {
      cancelled = true;
      return false;  // closing the connection stops the server's generation
    }
    if (error_body.size() < 65536 && reply.finish_reason.empty() && data[0] == '{')
      error_body.append(data, size);
    sse.Feed(data, size, [&](const std::string& payload) {
      if (payload == "[DONE]") return;
      const Json chunk = Json::parse(payload, nullptr, false);
      if (!chunk.is_object()) return;
      if (chunk.contains("usage") && chunk["usage"].is_object()) reply.usage = chunk["usage"];
      if (chunk.contains("mtplx_stats")) reply.stats = chunk["mtplx_stats"];
      if (!chunk.contains("choices") || !chunk["choices"].is_array()) return;
      for (const Json& choice : chunk["choices"]) {
        if (!choice.is_object()) continue;
        const auto delta = choice.find("delta");
        const Json empty = Json::object();
        const Json& d = delta != choice.end() ? *delta : empty;
        const std::string content = StringField(d, "content");
        const std::string reasoning = StringField(d, "reasoning_content");
        reply.content += content;
        reply.reasoning += reasoning;
        if (!content.empty() || !reasoning.empty()) on_delta(content, reasoning);
        const std::string finish = StringField(choice, "finish_reason");
        if (!finish.empty()) reply.finish_reason = finish;
      }
    });
    return true;
  };
  httplib::Response response;
  httplib::Error error = httplib::Error::Success;
  const bool sent = client.send(request, response, error);
  if (cancelled) {
    reply.finish_reason = "cancelled";
    return reply;
  }
  if (!sent)
    return NotFound(
        StrCat("no server answers at ", endpoint.BaseUrl(), " (", httplib::to_string(error), ")"));
  if (response.status != 200)
    return FailedPrecondition(
        StrCat("the server answered HTTP ", response.status, ": ",
               ErrorMessage(error_body.empty() ? response.body : error_body)));
  return reply;
}

}  // namespace mtplx::server
