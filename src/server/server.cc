#include "server/server.h"

#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>

#include "api/anthropic_api.h"
#include "api/openai_api.h"
#include "api/structured.h"
#include "base/strings.h"
#include "server/dashboard.h"
#include "server/metrics.h"

namespace mtplx::server {
namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

// A copy of one engine event, handed from the engine thread to the connection thread.
struct EventCopy {
  engine::Event event;  // without the completion pointer
  std::shared_ptr<engine::Completion> completion;
};

class EventChannel {
 public:
  void Push(const engine::Event& e) {
    EventCopy copy;
    copy.event = e;
    copy.event.completion = nullptr;
    if (e.completion) copy.completion = std::make_shared<engine::Completion>(*e.completion);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      events_.push_back(std::move(copy));
    }
    ready_.notify_one();
  }

  // Everything queued, waiting up to `timeout` for the first.
  std::deque<EventCopy> Take(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mutex_);
    ready_.wait_for(lock, timeout, [&] { return !events_.empty(); });
    std::deque<EventCopy> out;
    out.swap(events_);
    return out;
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<EventCopy> events_;
};

bool IsAnthropicPath(const std::string& path) { return StartsWith(path, "/v1/messages"); }

void SendJson(httplib::Response& res, int status, const Json& body) {
  res.status = status;
  res.set_content(api::DumpJson(body), "application/json");
}

void SendError(const httplib::Request& req, httplib::Response& res, const api::ApiError& error) {
  SendJson(
      res, error.http_status,
      IsAnthropicPath(req.path) ? api::AnthropicErrorBody(error) : api::OpenAIErrorBody(error));
  if (error.http_status == 503) res.set_header("Retry-After", "1");
}

// The key a client presented, from either header.
std::string PresentedKey(const httplib::Request& req) {
  std::string key = req.get_header_value("x-api-key");
  const std::string auth = req.get_header_value("Authorization");
  if (key.empty() && StartsWith(auth, "Bearer ")) key = auth.substr(7);
  return key;
}

// Generation requests: the shape of the reply and the engine request behind it.
struct Generation {
  engine::Request request;
  std::unique_ptr<api::ResponseFormatter> formatter;
};

// Streams one generation: waits for engine events, formats them, writes them; pings while the
// engine is quiet; cancels the request when the client is gone.
class Pump {
 public:
  Pump(std::shared_ptr<EventChannel> channel, std::unique_ptr<api::ResponseFormatter> formatter,
       std::shared_ptr<std::atomic<bool>> cancel, double keepalive_seconds, std::string label,
       ServerCounters* counters)
      : channel_(std::move(channel)),
        formatter_(std::move(formatter)),
        cancel_(std::move(cancel)),
        keepalive_(keepalive_seconds),
        label_(std::move(label)),
        counters_(counters),
        last_write_(Clock::now()) {}

  // One call of cpp-httplib's chunked content provider.
  bool Step(httplib::DataSink& sink) {
    for (EventCopy& e : channel_->Take(std::chrono::milliseconds(100))) {
      if (!Handle(e, sink)) return Abandon();
      if (done_) {
        sink.done();
        return true;
      }
    }
    if (!sink.is_writable()) return Abandon();
    const double quiet = std::chrono::duration<double>(Clock::now() - last_write_).count();
    if (quiet >= keepalive_) {
      const std::string ping = formatter_->KeepAlive();
      if (!ping.empty() && !Write(sink, ping)) return Abandon();
      last_write_ = Clock::now();
    }
    return true;
  }

  // The connection ended: a reply not fully sent is cancelled.
  void Close(bool success) {
    if (!done_ || !success) {
      cancel_->store(true);
      if (!done_) ++counters_->disconnects;
    }
  }

 private:
  bool Abandon() {
    cancel_->store(true);
    return false;
  }

  bool Write(httplib::DataSink& sink, const std::string& bytes) {
    if (bytes.empty()) return true;
    last_write_ = Clock::now();
    return sink.write(bytes.data(), bytes.size());
  }

  bool Handle(const EventCopy& e, httplib::DataSink& sink) {
    switch (e.event.type) {
      case engine::Event::Type::kStarted:
        return Write(sink, formatter_->OnStarted(e.event));
      case engine::Event::Type::kText:
        return Write(sink, formatter_->OnText(e.event));
      case engine::Event::Type::kFinished:
        done_ = true;
        Log(*e.completion);
        return Write(sink, formatter_->OnFinished(*e.completion));
      case engine::Event::Type::kFailed:
        done_ = true;
        ++counters_->server_errors;
        std::fprintf(stderr, "[mtplx] %s failed: %s\n", label_.c_str(),
                     e.event.error.message().c_str());
        return Write(sink, formatter_->OnFailed(api::FromStatus(e.event.error)));
    }
    return true;
  }

  void Log(const engine::Completion& done) const {
    std::fprintf(stderr,
                 "[mtplx] %s prompt=%lld cached=%lld%s%s completion=%lld finish=%s "
                 "ttft=%.3fs decode=%.1f tok/s%s\n",
                 label_.c_str(), static_cast<long long>(done.prompt_tokens),
                 static_cast<long long>(done.cached_tokens),
                 done.cache_miss_reason.empty() ? "" : " miss=", done.cache_miss_reason.c_str(),
                 static_cast<long long>(done.stats.completion_tokens), done.finish_reason.c_str(),
                 done.ttft_seconds, done.stats.DecodeTokensPerSecond(),
                 done.depth > 0 ? StrFormat(" mtp=%d tokens/cycle=%.2f", done.depth,
                                            done.speculative.MeanTokensPerCycle())
                                      .c_str()
                                : "");
  }

  std::shared_ptr<EventChannel> channel_;
  std::unique_ptr<api::ResponseFormatter> formatter_;
  std::shared_ptr<std::atomic<bool>> cancel_;
  double keepalive_;
  std::string label_;
  ServerCounters* counters_;
  Clock::time_point last_write_;
  bool done_ = false;
};

}  // namespace

bool KeyMatches(const std::string& presented, const std::vector<std::string>& keys) {
  bool any = false;
  for (const std::string& key : keys) {
    // Every byte is compared whatever the lengths: the time does not reveal a matching prefix.
    unsigned char diff = presented.size() == key.size() ? 0 : 1;
    for (size_t i = 0; i < key.size(); ++i)
      diff |= static_cast<unsigned char>(key[i] ^ (i < presented.size() ? presented[i] : 0));
    any |= diff == 0;
  }
  return any;
}

bool IsLoopbackHost(const std::string& host) {
  return host == "localhost" || host == "::1" || StartsWith(host, "127.");
}

Server::Server(engine::Engine& engine, ServerOptions options)
    : engine_(engine), options_(std::move(options)), http_(std::make_unique<httplib::Server>()) {
  Routes();
}

Server::~Server() { Stop(); }

Status Server::Bind() {
  if (!IsLoopbackHost(options_.host) && options_.api_keys.empty())
    return FailedPrecondition(
        StrCat("refusing to listen on ", options_.host,
               " without an API key: anyone who can reach it could use this machine; pass "
               "--api-key or --api-key-file, or bind 127.0.0.1"));
  const int threads = engine_.options().max_queue + engine_.options().parallel + 8;
  http_->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  http_->set_payload_max_length(options_.max_body_bytes);
  http_->set_read_timeout(options_.read_timeout_seconds, 0);
  http_->set_write_timeout(options_.read_timeout_seconds, 0);
  http_->set_keep_alive_timeout(5);  // an idle keep-alive connection holds a pool thread
  if (options_.port == 0) {
    port_ = http_->bind_to_any_port(options_.host);
    if (port_ <= 0) return Internal(StrCat("cannot bind any port on ", options_.host));
  } else {
    if (!http_->bind_to_port(options_.host, options_.port))
      return FailedPrecondition(StrCat("cannot listen on ", options_.host, ":", options_.port,
                                       " (is another server using the port? try --port)"));
    port_ = options_.port;
  }
  return Status::Ok();
}

Status Server::Run() {
  if (!http_->listen_after_bind()) return Internal("the HTTP server stopped with an error");
  return Status::Ok();
}

void Server::Stop() {
  if (http_ && http_->is_running()) http_->stop();
}

void Server::Routes() {
  httplib::Server& http = *http_;
  const api::ServeDefaults& defaults = options_.defaults;

  http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    ++counters_.requests;
    const std::string origin = req.get_header_value("Origin");
    if (!origin.empty()) {
      for (const std::string& allowed : options_.cors_origins)
        if (allowed == "*" || allowed == origin) {
          res.set_header("Access-Control-Allow-Origin", allowed == "*" ? "*" : origin);
          res.set_header("Access-Control-Allow-Headers",
                         "Authorization, Content-Type, x-api-key, anthropic-version, "
                         "anthropic-beta");
          res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
        }
      if (req.method == "OPTIONS") {
        res.status = res.has_header("Access-Control-Allow-Origin") ? 204 : 403;
        return httplib::Server::HandlerResponse::Handled;
      }
    }
    // The dashboard page carries no data (its script sends the key with each poll).
    if (req.path == "/health" || req.path == "/dashboard" || options_.api_keys.empty())
      return httplib::Server::HandlerResponse::Unhandled;
    if (!KeyMatches(PresentedKey(req), options_.api_keys)) {
      SendError(req, res,
                api::AuthenticationError("a valid API key is required (Authorization: Bearer "
                                         "KEY or x-api-key: KEY)"));
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });

  http.set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (res.status >= 500)
      ++counters_.server_errors;
    else if (res.status >= 400)
      ++counters_.client_errors;
    if (!res.body.empty() || res.status < 400) return;
    api::ApiError error;
    error.http_status = res.status;
    switch (res.status) {
      case 404:
        error = api::NotFoundError(StrCat("no route for ", req.method, " ", req.path));
        break;
      case 413:
        error.type = "invalid_request_error";
        error.code = "request_too_large";
        error.message = StrCat("the request body is larger than the server's limit of ",
                               options_.max_body_bytes, " bytes");
        break;
      default:
        error.type = res.status >= 500 ? "server_error" : "invalid_request_error";
        error.message = StrCat("the request failed with HTTP status ", res.status);
    }
    error.http_status = res.status;
    SendError(req, res, error);
  });

  http.set_exception_handler(
      [this](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
        ++counters_.server_errors;
        std::string what = "unknown error";
        try {
          std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        SendError(req, res, api::ServerError("internal error: " + what));
      });

  // Parses the body, then runs `handler(json)`, which answers or returns an error.
  auto json_route = [](auto handler) {
    return [handler](const httplib::Request& req, httplib::Response& res) {
      Json body;
      if (api::MaybeError error = api::ParseBody(req.body, body)) {
        SendError(req, res, *error);
        return;
      }
      if (api::MaybeError error = handler(req, res, body)) SendError(req, res, *error);
    };
  };

  // Queues a generation and streams its events back.
  auto generate = [this](const httplib::Request& req, httplib::Response& res,
                         engine::Request request,
                         std::unique_ptr<api::ResponseFormatter> formatter) -> api::MaybeError {
    if (draining_)
      return api::Overloaded("the server is shutting down; retry shortly (or on another replica)");
    if (Status prepared = engine_.Prepare(request); !prepared.ok())
      return api::FromStatus(prepared);
    auto channel = std::make_shared<EventChannel>();
    auto cancel = request.cancel;
    if (Status queued = engine_.Submit(std::move(request),
                                       [channel](const engine::Event& e) { channel->Push(e); });
        !queued.ok())
      return api::FromStatus(queued);
    const bool streaming = formatter->streaming();
    auto pump =
        std::make_shared<Pump>(channel, std::move(formatter), cancel, options_.keepalive_seconds,
                               StrCat(req.method, " ", req.path), &counters_);
    if (streaming) {
      res.set_header("Cache-Control", "no-cache");
      res.set_header("X-Accel-Buffering", "no");
    }
    res.set_chunked_content_provider(
        streaming ? "text/event-stream" : "application/json",
        [pump](size_t, httplib::DataSink& sink) { return pump->Step(sink); },
        [pump](bool success) { pump->Close(success); });
    return std::nullopt;
  };

  http.Post(
      "/v1/chat/completions",
      json_route([this, &defaults, generate](const httplib::Request& req, httplib::Response& res,
                                             const Json& body) -> api::MaybeError {
        api::ChatCall call;
        MTPLX_API_TRY(api::ParseChatCompletion(body, engine_, defaults, call));
        const std::string prefix = api::ForceToolCall(call.tool_choice, defaults, call.request);
        MTPLX_API_TRY(api::ApplyStructuredOutput(body, req.body, defaults, prefix, call));
        auto formatter = api::NewChatFormatter(call, engine_, prefix);
        return generate(req, res, std::move(call.request), std::move(formatter));
      }));

  http.Post("/v1/completions", json_route([this, &defaults, generate](
                                              const httplib::Request& req, httplib::Response& res,
                                              const Json& body) -> api::MaybeError {
              api::CompletionCall call;
              MTPLX_API_TRY(api::ParseCompletion(body, engine_, defaults, call));
              MTPLX_API_TRY(api::ApplyStructuredOutput(body, req.body, defaults, "", call.call));
              // Echoed prompts and their logprobs need the ids the engine will run.
              if (Status s = engine_.Prepare(call.call.request); !s.ok())
                return api::MaybeError(api::FromStatus(s));
              auto formatter = api::NewCompletionFormatter(call, engine_);
              return generate(req, res, std::move(call.call.request), std::move(formatter));
            }));

  http.Post(
      "/v1/messages",
      json_route([this, &defaults, generate](const httplib::Request& req, httplib::Response& res,
                                             const Json& body) -> api::MaybeError {
        api::ChatCall call;
        MTPLX_API_TRY(api::ParseMessages(body, engine_, defaults, call));
        const std::string prefix = api::ForceToolCall(call.tool_choice, defaults, call.request);
        MTPLX_API_TRY(api::ApplyStructuredOutput(body, req.body, defaults, prefix, call));
        auto formatter = api::NewMessagesFormatter(call, prefix);
        return generate(req, res, std::move(call.request), std::move(formatter));
      }));

  http.Post("/v1/messages/count_tokens",
            json_route([this, &defaults](const httplib::Request&, httplib::Response& res,
                                         const Json& body) -> api::MaybeError {
              Json out;
              MTPLX_API_TRY(api::CountTokens(body, engine_, defaults, out));
              SendJson(res, 200, out);
              return std::nullopt;
            }));

  auto tokenize = json_route([this, &defaults](const httplib::Request&, httplib::Response& res,
                                               const Json& body) -> api::MaybeError {
    Json out;
    MTPLX_API_TRY(api::Tokenize(body, engine_, defaults, out));
    SendJson(res, 200, out);
    return std::nullopt;
  });
  http.Post("/tokenize", tokenize);
  http.Post("/v1/tokenize", tokenize);
  auto detokenize = json_route(
      [this](const httplib::Request&, httplib::Response& res, const Json& body) -> api::MaybeError {
        Json out;
        MTPLX_API_TRY(api::Detokenize(body, engine_, out));
        SendJson(res, 200, out);
        return std::nullopt;
      });
  http.Post("/detokenize", detokenize);
  http.Post("/v1/detokenize", detokenize);

  http.Get("/v1/models", [this, &defaults](const httplib::Request&, httplib::Response& res) {
    SendJson(res, 200, api::ModelsJson(engine_, defaults));
  });
  http.Get(R"(/v1/models/(.+))",
           [this, &defaults](const httplib::Request& req, httplib::Response& res) {
             Json model = api::ModelJson(engine_, defaults);
             model["id"] = req.matches[1].str();  // every name is an alias of the served model
             SendJson(res, 200, model);
           });

  http.Get("/health", [this, &defaults](const httplib::Request&, httplib::Response& res) {
    const engine::EngineStatus s = engine_.status();
    const engine::MemoryPlan plan = engine_.memory_plan();
    SendJson(res, 200,
             {{"status", draining_ ? "draining" : "ok"},
              {"model", defaults.model_id},
              {"mtp",
               {{"enabled", engine_.depth() > 0},
                {"depth", engine_.depth()},
                {"notice", engine_.notice()}}},
              {"context_window", engine_.context_window()},
              {"queue",
               {{"waiting", s.queued},
                {"busy", s.busy},
                {"running", s.running},
                {"parallel", engine_.options().parallel},
                {"done", s.requests_done}}},
              {"cache",
               {{"bytes", s.cache_bytes},
                {"entries", s.cache_entries},
                {"budget_bytes", plan.cache_budget_bytes}}},
              {"memory_plan",
               {{"weight_bytes", plan.weight_bytes},
                {"kv_bytes_per_token", plan.kv_bytes_per_token},
                {"state_bytes_at_context", plan.state_bytes_at_context},
                {"budget_bytes", plan.budget_bytes},
                {"model_bytes", plan.base_bytes},
                {"request_bytes", plan.request_bytes},
                {"reserved_bytes", s.reserved_bytes}}},
              {"api_key_required", !options_.api_keys.empty()}});
  });

  http.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(PrometheusText(TakeSnapshot(engine_, counters_)),
                    "text/plain; version=0.0.4; charset=utf-8");
  });
  http.Get("/v1/mtplx/stats", [this](const httplib::Request&, httplib::Response& res) {
    SendJson(res, 200, StatsJson(TakeSnapshot(engine_, counters_)));
  });
  http.Get("/dashboard", [](const httplib::Request&, httplib::Response& res) {
    res.set_header("Cache-Control", "no-cache");
    res.set_content(DashboardHtml(), "text/html; charset=utf-8");
  });

  http.Get("/v1", [](const httplib::Request&, httplib::Response& res) {
    SendJson(res, 200, {{"message", "mtplx: OpenAI API base URL; see /v1/models"}});
  });
}

}  // namespace mtplx::server
