// Status and Result<T>: the channel for expected failures (files, formats, requests, capacity).
// Programmer errors use MTPLX_CHECK (check.h) instead.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace mtplx {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,
  kNotFound,
  kDataLoss,       // corrupt or truncated input
  kUnimplemented,  // valid input we do not support
  kOutOfRange,
  kResourceExhausted,
  kFailedPrecondition,
  kInternal,
  kOutOfMemory,  // the work does not fit in the memory budget (HTTP 507)
};

const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  std::string ToString() const;

  // Returns a copy whose message is "context: message".
  Status WithContext(const std::string& context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) {
  return {StatusCode::kInvalidArgument, std::move(m)};
}
inline Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status DataLoss(std::string m) { return {StatusCode::kDataLoss, std::move(m)}; }
inline Status Unimplemented(std::string m) { return {StatusCode::kUnimplemented, std::move(m)}; }
inline Status OutOfRange(std::string m) { return {StatusCode::kOutOfRange, std::move(m)}; }
inline Status OutOfMemory(std::string m) { return Status(StatusCode::kOutOfMemory, std::move(m)); }
inline Status ResourceExhausted(std::string m) {
  return {StatusCode::kResourceExhausted, std::move(m)};
}
inline Status FailedPrecondition(std::string m) {
  return {StatusCode::kFailedPrecondition, std::move(m)};
}
inline Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

// Result<T> holds either a value or a non-OK Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}         // NOLINT(google-explicit-constructor)
  Result(Status status) : status_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    if (status_.ok()) status_ = Internal("Result constructed from OK status without a value");
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace mtplx

#define MTPLX_CONCAT_INNER(a, b) a##b
#define MTPLX_CONCAT(a, b) MTPLX_CONCAT_INNER(a, b)

#define MTPLX_RETURN_IF_ERROR(expr)                \
  do {                                             \
    ::mtplx::Status mtplx_status_ = (expr);        \
    if (!mtplx_status_.ok()) return mtplx_status_; \
  } while (0)

#define MTPLX_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return tmp.status();               \
  lhs = std::move(tmp).value()

#define MTPLX_ASSIGN_OR_RETURN(lhs, expr) \
  MTPLX_ASSIGN_OR_RETURN_IMPL(MTPLX_CONCAT(mtplx_result_, __LINE__), lhs, expr)
