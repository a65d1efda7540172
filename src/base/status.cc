#include "base/status.h"

namespace mtplx {

const char* StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "ok";
    case StatusCode::kInvalidArgument:
      return "invalid argument";
    case StatusCode::kNotFound:
      return "not found";
    case StatusCode::kDataLoss:
      return "data loss";
    case StatusCode::kUnimplemented:
      return "unimplemented";
    case StatusCode::kOutOfRange:
      return "out of range";
    case StatusCode::kResourceExhausted:
      return "resource exhausted";
    case StatusCode::kFailedPrecondition:
      return "failed precondition";
    case StatusCode::kInternal:
      return "internal";
    case StatusCode::kOutOfMemory:
      return "insufficient memory";
  }
  return "unknown";
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  return std::string(StatusCodeName(code_)) + ": " + message_;
}

Status Status::WithContext(const std::string& context) const {
  if (ok()) return *this;
  return Status(code_, context + ": " + message_);
}

}  // namespace mtplx
