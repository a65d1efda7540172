#include "chat/value.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace mtplx::chat {

Value Value::Undefined(std::string hint) {
  UndefinedInfo info;
  if (!hint.empty()) info.hint = std::make_shared<const std::string>(std::move(hint));
  return Value(Storage(std::move(info)));
}

Value Value::None() { return Value(Storage(nullptr)); }
Value Value::Bool(bool value) { return Value(Storage(value)); }
Value Value::Int(int64_t value) { return Value(Storage(value)); }
Value Value::Float(double value) { return Value(Storage(value)); }

Value Value::String(std::string text, bool from_user) {
  return Value(Storage(std::make_shared<const MarkedString>(std::move(text), from_user)));
}

Value Value::String(MarkedString text) {
  return Value(Storage(std::make_shared<const MarkedString>(std::move(text))));
}

Value Value::List(std::vector<Value> items) {
  auto data = std::make_shared<ListData>();
  data->items = std::move(items);
  return Value(Storage(ListPtr(std::move(data))));
}

Value Value::Tuple(std::vector<Value> items) {
  auto data = std::make_shared<ListData>();
  data->items = std::move(items);
  data->is_tuple = true;
  return Value(Storage(ListPtr(std::move(data))));
}

Value Value::Dict(std::vector<std::pair<MarkedString, Value>> entries) {
  auto data = std::make_shared<DictData>();
  data->entries.reserve(entries.size());
  for (auto& [key, value] : entries) {
    if (data->Find(key.text()) == nullptr) data->entries.emplace_back(key, std::move(value));
  }
  return Value(Storage(DictPtr(std::move(data))));
}

Value Value::Dict(std::shared_ptr<const DictData> data) { return Value(Storage(std::move(data))); }

Value Value::Namespace(std::shared_ptr<DictData> data) { return Value(Storage(std::move(data))); }

Value Value::Func(std::shared_ptr<const Function> function) {
  return Value(Storage(std::move(function)));
}

bool Value::is_tuple() const { return is_list() && AsList().is_tuple; }

int64_t Value::AsInt() const {
  if (is_bool()) return AsBool() ? 1 : 0;
  return std::get<int64_t>(storage_);
}

double Value::AsDouble() const {
  if (is_float()) return std::get<double>(storage_);
  return static_cast<double>(AsInt());
}

const std::vector<Value>& Value::items() const { return AsList().items; }

std::string Value::UndefinedMessage() const {
  const auto& info = std::get<UndefinedInfo>(storage_);
  return info.hint ? *info.hint : "value is undefined";
}

bool Value::Truthy() const {
  switch (kind()) {
    case Kind::kUndefined:
    case Kind::kNone:
      return false;
    case Kind::kBool:
      return AsBool();
    case Kind::kInt:
      return AsInt() != 0;
    case Kind::kFloat:
      return AsDouble() != 0.0;
    case Kind::kString:
      return !AsString().empty();
    case Kind::kList:
      return !items().empty();
    case Kind::kDict:
      return !AsDict().entries.empty();
    case Kind::kNamespace:
    case Kind::kFunction:
      return true;
  }
  return false;
}

bool Value::ContainsUserText() const {
  switch (kind()) {
    case Kind::kString:
      return AsString().AnyUser();
    case Kind::kList:
      for (const Value& item : items()) {
        if (item.ContainsUserText()) return true;
      }
      return false;
    case Kind::kDict:
      for (const auto& [key, value] : AsDict().entries) {
        if (key.AnyUser() || value.ContainsUserText()) return true;
      }
      return false;
    default:
      // Namespaces may contain themselves; they are template state, not user data.
      return false;
  }
}

const void* Value::identity() const {
  switch (kind()) {
    case Kind::kNamespace:
      return std::get<NamespacePtr>(storage_).get();
    case Kind::kFunction:
      return std::get<FunctionPtr>(storage_).get();
    case Kind::kList:
      return std::get<ListPtr>(storage_).get();
    case Kind::kDict:
      return std::get<DictPtr>(storage_).get();
    case Kind::kString:
      return std::get<StringPtr>(storage_).get();
    default:
      return nullptr;
  }
}

std::optional<MarkedString> EncodeDictKey(const Value& key) {
  switch (key.kind()) {
    case Value::Kind::kString:
      return key.AsString();
    case Value::Kind::kNone:
      return MarkedString("\xFFn");
    case Value::Kind::kBool:
    case Value::Kind::kInt:
      return MarkedString("\xFFi" + std::to_string(key.AsInt()));
    case Value::Kind::kFloat: {
      // Python hashes 1.0 like 1, so integral floats share the int key.
      const double d = key.AsDouble();
      if (d == std::floor(d) && std::fabs(d) < 9.2e18) {
        return MarkedString("\xFFi" + std::to_string(static_cast<int64_t>(d)));
      }
      char buffer[32];
      std::snprintf(buffer, sizeof(buffer), "%.17g", d);
      return MarkedString(std::string("\xFF") + "f" + buffer);
    }
    default:
      return std::nullopt;
  }
}

Value DecodeDictKey(const MarkedString& key) {
  const std::string& text = key.text();
  if (text.empty() || static_cast<unsigned char>(text[0]) != 0xFF || text.size() < 2) {
    return Value::String(key);
  }
  if (text[1] == 'n') return Value::None();
  if (text[1] == 'i') return Value::Int(std::strtoll(text.c_str() + 2, nullptr, 10));
  if (text[1] == 'f') return Value::Float(std::strtod(text.c_str() + 2, nullptr));
  return Value::String(key);
}

const Value* DictData::Find(std::string_view key) const {
  for (const auto& [entry_key, value] : entries) {
    if (entry_key.text() == key) return &value;
  }
  return nullptr;
}

void DictData::Set(MarkedString key, Value value) {
  for (auto& [entry_key, entry_value] : entries) {
    if (entry_key.text() == key.text()) {
      entry_value = std::move(value);
      return;
    }
  }
  entries.emplace_back(std::move(key), std::move(value));
}

const Value* CallArgs::Get(size_t index, std::string_view name) const {
  if (index < positional.size()) return &positional[index];
  return Keyword(name);
}

const Value* CallArgs::Keyword(std::string_view name) const {
  for (const auto& [key, value] : keyword) {
    if (key == name) return &value;
  }
  return nullptr;
}

}  // namespace mtplx::chat
