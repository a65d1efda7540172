#include "api/fields.h"

#include <algorithm>
#include <cmath>

#include "base/strings.h"

namespace mtplx::api {
namespace {

ApiError WrongType(const std::string& path, const char* wanted, const nlohmann::json& value) {
  return InvalidRequest(StrCat("'", path, "' must be ", wanted, ", not ", JsonTypeName(value)),
                        path);
}

// Deepest array/object nesting of JSON text (strings skipped), stopping once past `limit`:
// nlohmann's dump and comparisons recurse, so absurd nesting is refused before parsing.
size_t NestingDepth(const std::string& text, size_t limit) {
  size_t depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"')
      in_string = true;
    else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
      if (deepest > limit) return deepest;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

constexpr size_t kMaxNesting = 256;

}  // namespace

MaybeError ParseBody(const std::string& text, nlohmann::json& out) {
  if (text.find_first_not_of(" \t\r\n") == std::string::npos)
    return InvalidRequest("the request body is empty; send a JSON object", "", "invalid_json");
  if (NestingDepth(text, kMaxNesting) > kMaxNesting)
    return InvalidRequest(
        StrCat("the request body nests JSON deeper than ", kMaxNesting, " levels"), "",
        "invalid_json");
  try {
    out = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {  // syntax, or a number out of range
    return InvalidRequest(StrCat("the request body is not valid JSON: ", e.what()), "",
                          "invalid_json");
  }
  if (!out.is_object())
    return InvalidRequest(StrCat("the request body must be a JSON object, not ", JsonTypeName(out)),
                          "", "invalid_json");
  return std::nullopt;
}

std::string JsonTypeName(const nlohmann::json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::null:
      return "null";
    case nlohmann::json::value_t::object:
      return "an object";
    case nlohmann::json::value_t::array:
      return "an array";
    case nlohmann::json::value_t::string:
      return "a string";
    case nlohmann::json::value_t::boolean:
      return "a boolean";
    case nlohmann::json::value_t::number_float:
      return "a number";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
      return "an integer";
    default:
      return "an unsupported value";
  }
}

bool FieldReader::Has(const char* key) const { return Get(key) != nullptr; }

const nlohmann::json* FieldReader::Get(const char* key) const {
  if (!object_.is_object()) return nullptr;
  const auto it = object_.find(key);
  if (it == object_.end() || it->is_null()) return nullptr;
  return &*it;
}

MaybeError FieldReader::Number(const char* key, double low, double high,
                               std::optional<double>& out) const {
  const nlohmann::json* v = Get(key);
  if (!v) return std::nullopt;
  if (!v->is_number()) return WrongType(Path(key), "a number", *v);
  const double x = v->get<double>();
  if (!std::isfinite(x) || x < low || x > high)
    return InvalidRequest(StrCat("'", Path(key), "' must be a number between ", low, " and ", high,
                                 ", not ", v->dump()),
                          Path(key));
  out = x;
  return std::nullopt;
}

MaybeError FieldReader::Integer(const char* key, int64_t low, int64_t high,
                                std::optional<int64_t>& out) const {
  const nlohmann::json* v = Get(key);
  if (!v) return std::nullopt;
  if (!v->is_number()) return WrongType(Path(key), "an integer", *v);
  const double x = v->get<double>();
  const bool integral =
      v->is_number_integer() || v->is_number_unsigned() || (std::isfinite(x) && x == std::floor(x));
  if (!integral) return WrongType(Path(key), "an integer", *v);
  // nlohmann keeps non-negative integers unsigned: compare those as integers (exact beyond 2^53).
  const bool out_of_range =
      v->is_number_unsigned() ? v->get<uint64_t>() > static_cast<uint64_t>(high) ||
                                    (low > 0 && v->get<uint64_t>() < static_cast<uint64_t>(low))
                              : !(x >= static_cast<double>(low) && x <= static_cast<double>(high));
  if (out_of_range)
    return InvalidRequest(StrCat("'", Path(key), "' must be an integer between ", low, " and ",
                                 high, ", not ", v->dump()),
                          Path(key));
  out = v->is_number_integer() ? v->get<int64_t>() : static_cast<int64_t>(x);
  return std::nullopt;
}

MaybeError FieldReader::Bool(const char* key, std::optional<bool>& out) const {
  const nlohmann::json* v = Get(key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) return WrongType(Path(key), "a boolean", *v);
  out = v->get<bool>();
  return std::nullopt;
}

MaybeError FieldReader::String(const char* key, std::optional<std::string>& out) const {
  const nlohmann::json* v = Get(key);
  if (!v) return std::nullopt;
  if (!v->is_string()) return WrongType(Path(key), "a string", *v);
  out = v->get<std::string>();
  return std::nullopt;
}

MaybeError FieldReader::StringList(const char* key, size_t max_items,
                                   std::vector<std::string>& out) const {
  const nlohmann::json* v = Get(key);
  if (!v) return std::nullopt;
  if (v->is_string()) {
    if (!v->get<std::string>().empty()) out.push_back(v->get<std::string>());
    return std::nullopt;
  }
  if (!v->is_array()) return WrongType(Path(key), "a string or an array of strings", *v);
  if (v->size() > max_items)
    return InvalidRequest(StrCat("'", Path(key), "' holds ", v->size(), " items; at most ",
                                 max_items, " are allowed"),
                          Path(key));
  for (size_t i = 0; i < v->size(); ++i) {
    const auto& item = (*v)[i];
    if (!item.is_string()) return WrongType(StrCat(Path(key), "[", i, "]"), "a string", item);
    if (!item.get<std::string>().empty()) out.push_back(item.get<std::string>());
  }
  return std::nullopt;
}

MaybeError FieldReader::Object(const char* key, const nlohmann::json*& out) const {
  const nlohmann::json* v = Get(key);
  out = nullptr;
  if (!v) return std::nullopt;
  if (!v->is_object()) return WrongType(Path(key), "an object", *v);
  out = v;
  return std::nullopt;
}

MaybeError FieldReader::Array(const char* key, const nlohmann::json*& out) const {
  const nlohmann::json* v = Get(key);
  out = nullptr;
  if (!v) return std::nullopt;
  if (!v->is_array()) return WrongType(Path(key), "an array", *v);
  out = v;
  return std::nullopt;
}

}  // namespace mtplx::api
