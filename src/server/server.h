// The HTTP server of `mtplx serve`: OpenAI- and Anthropic-compatible endpoints over one engine.
// HTTP is cpp-httplib's (a thread per connection from a pool); JSON and the API shapes are the
// api layer's; generation runs on the engine's thread, and its events are pumped to the client
// as server-sent events (or one JSON body) by the connection thread.
//
// Limits that never crash the process: a body size limit (413), a bounded queue (503 with
// Retry-After), prompts that do not fit (400 context_length_exceeded), slow clients (read
// timeout), and a client that goes away cancels its generation.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "api/chat_call.h"
#include "base/status.h"
#include "engine/engine.h"

namespace httplib {
class Server;
}

namespace mtplx::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8000;  // 0: any free port (see Server::port())
  // Keys a client must send (Authorization: Bearer K, or x-api-key: K); empty: no key needed,
  // allowed on loopback addresses only.
  std::vector<std::string> api_keys;
  size_t max_body_bytes = size_t{32} << 20;
  // Origins allowed to call the API from a browser (CORS); empty: none.
  std::vector<std::string> cors_origins;
  int read_timeout_seconds = 30;   // a client that sends nothing for this long is dropped
  double keepalive_seconds = 2.0;  // pings while a streamed reply has nothing to send
  api::ServeDefaults defaults;
};

// Counters of the server's own (HTTP) side.
struct ServerCounters {
  std::atomic<int64_t> requests{0};
  std::atomic<int64_t> client_errors{0};
  std::atomic<int64_t> server_errors{0};
  std::atomic<int64_t> disconnects{0};
};

class Server {
 public:
  Server(engine::Engine& engine, ServerOptions options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Checks the security rules and binds the port: an error names the address and the cause.
  Status Bind();
  int port() const { return port_; }
  // Serves until Stop() (from another thread or a signal handler's helper thread).
  Status Run();
  void Stop();
  // Graceful shutdown, first half: new generation requests get 503 (Retry-After) while the
  // running and queued ones finish; /health reports "draining".
  void BeginDrain() { draining_ = true; }
  bool draining() const { return draining_; }

  const ServerCounters& counters() const { return counters_; }

 private:
  void Routes();

  engine::Engine& engine_;
  ServerOptions options_;
  std::unique_ptr<httplib::Server> http_;
  int port_ = 0;
  ServerCounters counters_;
  std::atomic<bool> draining_{false};
};

// Constant-time comparison of a presented key with the accepted ones.
bool KeyMatches(const std::string& presented, const std::vector<std::string>& keys);

// True for 127.0.0.0/8, ::1 and "localhost".
bool IsLoopbackHost(const std::string& host);

}  // namespace mtplx::server
