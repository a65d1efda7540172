// Typed reads of request fields. A field that is present with the wrong type, a number that is
// not finite or out of range, or a string that is too long is refused with an error naming the
// field; absent and null fields leave the output unset.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/errors.h"

namespace mtplx::api {

using MaybeError = std::optional<ApiError>;

// Returns from the calling function when `expr` yields an error.
#define MTPLX_API_TRY(expr)                             \
  do {                                                  \
    if (::mtplx::api::MaybeError _api_error = (expr)) { \
      return *std::move(_api_error);                    \
    }                                                   \
  } while (0)

// A field of `object` ("temperature"), reported as `prefix + key` ("messages[0].role").
class FieldReader {
 public:
  FieldReader(const nlohmann::json& object, std::string prefix = "")
      : object_(object), prefix_(std::move(prefix)) {}

  // Present and not null.
  bool Has(const char* key) const;
  const nlohmann::json* Get(const char* key) const;
  std::string Path(const char* key) const { return prefix_ + key; }

  MaybeError Number(const char* key, double low, double high, std::optional<double>& out) const;
  MaybeError Integer(const char* key, int64_t low, int64_t high, std::optional<int64_t>& out) const;
  MaybeError Bool(const char* key, std::optional<bool>& out) const;
  MaybeError String(const char* key, std::optional<std::string>& out) const;
  // A string or a list of strings (at most `max_items`, none empty), e.g. "stop".
  MaybeError StringList(const char* key, size_t max_items, std::vector<std::string>& out) const;
  // An object or absent; `out` points at it when present.
  MaybeError Object(const char* key, const nlohmann::json*& out) const;
  MaybeError Array(const char* key, const nlohmann::json*& out) const;

 private:
  const nlohmann::json& object_;
  std::string prefix_;
};

// Parses a request body: an error naming the problem (not JSON, nested deeper than 256 levels,
// not an object) instead of an exception.
MaybeError ParseBody(const std::string& text, nlohmann::json& out);

// The JSON type name a client would recognise ("a string", "an array").
std::string JsonTypeName(const nlohmann::json& value);

}  // namespace mtplx::api
