// Errors as the OpenAI and Anthropic APIs shape them. Every failure a client can cause becomes an
// ApiError with an HTTP status and a message naming the cause (the field, the limit); the same
// error renders in either API's shape.
//
//   OpenAI:    {"error": {"message": "...", "type": "invalid_request_error", "param": "messages",
//               "code": "context_length_exceeded"}}
//   Anthropic: {"type": "error", "error": {"type": "invalid_request_error", "message": "..."}}
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "base/status.h"

namespace mtplx::api {

struct ApiError {
  int http_status = 400;
  // OpenAI error type: invalid_request_error, authentication_error, not_found_error,
  // rate_limit_error, server_error.
  std::string type = "invalid_request_error";
  std::string code;  // machine-readable cause, e.g. "context_length_exceeded"; may be empty
  std::string message;
  std::string param;  // the offending field, e.g. "messages[2].role"; may be empty
};

ApiError InvalidRequest(std::string message, std::string param = "", std::string code = "");
ApiError NotFoundError(std::string message);
ApiError AuthenticationError(std::string message);
ApiError Overloaded(std::string message);  // 503: the queue is full, retry later
ApiError ServerError(std::string message);
ApiError InsufficientMemory(std::string message);  // 507: the request does not fit in memory

// An engine status as the client sees it: OutOfRange (the prompt exceeds the context window)
// is 400 context_length_exceeded, ResourceExhausted 503, OutOfMemory 507 insufficient_memory,
// argument errors 400, the rest 500.
ApiError FromStatus(const Status& status);

nlohmann::json OpenAIErrorBody(const ApiError& error);
nlohmann::json AnthropicErrorBody(const ApiError& error);

}  // namespace mtplx::api
