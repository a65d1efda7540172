// The bytes a client receives for one generation request: server-sent events while streaming,
// one JSON body at the end otherwise. The server feeds a formatter the engine's events in order;
// each API (OpenAI chat, OpenAI completions, Anthropic messages) has its own.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "api/errors.h"
#include "engine/engine.h"

namespace mtplx::api {

class ResponseFormatter {
 public:
  virtual ~ResponseFormatter() = default;
  virtual bool streaming() const = 0;
  // Each returns what to send now (possibly nothing).
  virtual std::string OnStarted(const engine::Event& started) = 0;
  virtual std::string OnText(const engine::Event& text) = 0;
  // Streaming: the closing events; otherwise the whole response body.
  virtual std::string OnFinished(const engine::Completion& done) = 0;
  // An error after the response began: an error event, or the error body.
  virtual std::string OnFailed(const ApiError& error) = 0;
  // What keeps a quiet stream alive (a long prefill); empty when not streaming.
  virtual std::string KeepAlive() = 0;
};

// "data: {...}\n\n" and "event: NAME\ndata: {...}\n\n" (invalid UTF-8 replaced, never thrown).
std::string SseData(const nlohmann::json& payload);
std::string SseEvent(const std::string& name, const nlohmann::json& payload);
// JSON text that never throws on invalid UTF-8 (replaced with U+FFFD).
std::string DumpJson(const nlohmann::json& value);

}  // namespace mtplx::api
