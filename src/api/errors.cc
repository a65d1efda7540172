#include "api/errors.h"

namespace mtplx::api {
namespace {

ApiError Make(int status, std::string type, std::string message, std::string param = "",
              std::string code = "") {
  ApiError e;
  e.http_status = status;
  e.type = std::move(type);
  e.message = std::move(message);
  e.param = std::move(param);
  e.code = std::move(code);
  return e;
}

// Anthropic's error types for our HTTP statuses.
const char* AnthropicType(const ApiError& e) {
  switch (e.http_status) {
    case 401:
      return "authentication_error";
    case 403:
      return "permission_error";
    case 404:
      return "not_found_error";
    case 413:
      return "request_too_large";
    case 429:
      return "rate_limit_error";
    case 503:
    case 529:
      return "overloaded_error";
    default:
      return e.http_status >= 500 ? "api_error" : "invalid_request_error";
  }
}

}  // namespace

ApiError InvalidRequest(std::string message, std::string param, std::string code) {
  return Make(400, "invalid_request_error", std::move(message), std::move(param), std::move(code));
}

ApiError NotFoundError(std::string message) {
  return Make(404, "not_found_error", std::move(message));
}

ApiError AuthenticationError(std::string message) {
  return Make(401, "authentication_error", std::move(message), "", "invalid_api_key");
}

ApiError Overloaded(std::string message) {
  return Make(503, "server_error", std::move(message), "", "overloaded");
}

ApiError InsufficientMemory(std::string message) {
  return Make(507, "server_error", std::move(message), "", "insufficient_memory");
}

ApiError ServerError(std::string message) {
  return Make(500, "server_error", std::move(message), "", "internal_error");
}

ApiError FromStatus(const Status& status) {
  switch (status.code()) {
    case StatusCode::kOutOfRange:
      return InvalidRequest(status.message(), "messages", "context_length_exceeded");
    case StatusCode::kResourceExhausted:
      return Overloaded(status.message());
    case StatusCode::kInvalidArgument:
    case StatusCode::kUnimplemented:
      return InvalidRequest(status.message());
    case StatusCode::kNotFound:
      return NotFoundError(status.message());
    case StatusCode::kOutOfMemory:
      return InsufficientMemory(status.message());
    default:
      return ServerError(status.message());
  }
}

nlohmann::json OpenAIErrorBody(const ApiError& error) {
  nlohmann::json body = {{"message", error.message}, {"type", error.type}};
  body["param"] = error.param.empty() ? nlohmann::json(nullptr) : nlohmann::json(error.param);
  body["code"] = error.code.empty() ? nlohmann::json(nullptr) : nlohmann::json(error.code);
  return {{"error", body}};
}

nlohmann::json AnthropicErrorBody(const ApiError& error) {
  return {{"type", "error"},
          {"error", {{"type", AnthropicType(error)}, {"message", error.message}}}};
}

}  // namespace mtplx::api
