#include "chat/json_value.h"

#include <nlohmann/json.hpp>

#include "base/strings.h"
#include "chat/value_ops.h"

namespace mtplx::chat {
namespace {

using Json = nlohmann::ordered_json;

constexpr int kMaxDepth = 512;

Result<Value> FromJson(const Json& node, bool from_user, int depth) {
  if (depth > kMaxDepth) return InvalidArgument("JSON is nested too deeply");
  switch (node.type()) {
    case Json::value_t::null:
      return Value::None();
    case Json::value_t::boolean:
      return Value::Bool(node.get<bool>());
    case Json::value_t::number_integer:
      return Value::Int(node.get<int64_t>());
    case Json::value_t::number_unsigned: {
      const uint64_t value = node.get<uint64_t>();
      if (value > static_cast<uint64_t>(INT64_MAX)) return Value::Float(static_cast<double>(value));
      return Value::Int(static_cast<int64_t>(value));
    }
    case Json::value_t::number_float:
      return Value::Float(node.get<double>());
    case Json::value_t::string:
      return Value::String(node.get<std::string>(), from_user);
    case Json::value_t::array: {
      std::vector<Value> items;
      items.reserve(node.size());
      for (const Json& child : node) {
        MTPLX_ASSIGN_OR_RETURN(Value item, FromJson(child, from_user, depth + 1));
        items.push_back(std::move(item));
      }
      return Value::List(std::move(items));
    }
    case Json::value_t::object: {
      auto data = std::make_shared<DictData>();
      data->entries.reserve(node.size());
      for (auto it = node.begin(); it != node.end(); ++it) {
        MTPLX_ASSIGN_OR_RETURN(Value item, FromJson(it.value(), from_user, depth + 1));
        data->entries.emplace_back(MarkedString(it.key(), from_user), std::move(item));
      }
      return Value::Dict(std::move(data));
    }
    default:
      return InvalidArgument("unsupported JSON value (binary)");
  }
}

}  // namespace

Result<Value> ParseJson(std::string_view text, bool from_user) {
  try {
    // Like Python's json module, a repeated key keeps its first position and its last value.
    const Json json = Json::parse(text.begin(), text.end());
    return FromJson(json, from_user, 0);
  } catch (const Json::exception& e) {
    return InvalidArgument(StrCat("invalid JSON: ", e.what()));
  }
}

Result<std::string> ValueToJson(const Value& value) {
  JsonOptions options;
  options.item_separator = ",";
  options.key_separator = ":";
  return ToJson(value, options);
}

}  // namespace mtplx::chat
