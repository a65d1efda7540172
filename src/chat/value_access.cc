// Attribute and item lookup with the rules of Jinja's ImmutableSandboxedEnvironment, and the
// dict and list methods it allows.
#include <algorithm>
#include <optional>

#include "base/strings.h"
#include "chat/methods.h"
#include "chat/py_text.h"
#include "chat/value_ops.h"

namespace mtplx::chat {
namespace {

using Kind = Value::Kind;

class BoundMethod : public Function {
 public:
  BoundMethod(Value self, std::string name, MethodImpl impl)
      : self_(std::move(self)), name_(std::move(name)), impl_(impl) {}
  std::string_view name() const override { return name_; }
  Result<Value> Call(Interpreter&, const CallArgs& args) const override {
    return impl_(self_, args);
  }

 private:
  Value self_;
  std::string name_;
  MethodImpl impl_;
};

// "'dict object' has no attribute 'x'", as Jinja's Undefined words it.
std::string ObjectTypeRepr(const Value& object) {
  if (object.is_none()) return "None";
  return TypeName(object) + " object";
}

Value MissingAttribute(const Value& object, const std::string& name_repr) {
  return Value::Undefined(StrCat("'", ObjectTypeRepr(object), "' has no attribute ", name_repr));
}

Result<Value> DictGet(const Value& self, const CallArgs& args) {
  MTPLX_RETURN_IF_ERROR(CheckArity("get", args, 2));
  const Value* key = args.Get(0, "key");
  if (key == nullptr) return InvalidArgument("TypeError: get expected at least 1 argument, got 0");
  const std::optional<MarkedString> encoded = EncodeDictKey(*key);
  const Value* found = encoded ? self.AsDict().Find(encoded->text()) : nullptr;
  if (found != nullptr) return *found;
  const Value* fallback = args.Get(1, "default");
  return fallback ? *fallback : Value::None();
}

Result<Value> DictItems(const Value& self, const CallArgs& args) {
  MTPLX_RETURN_IF_ERROR(CheckArity("items", args, 0));
  std::vector<Value> items;
  for (const auto& [key, value] : self.AsDict().entries) {
    items.push_back(Value::Tuple({DecodeDictKey(key), value}));
  }
  return Value::List(std::move(items));
}

Result<Value> DictKeys(const Value& self, const CallArgs& args) {
  MTPLX_RETURN_IF_ERROR(CheckArity("keys", args, 0));
  MTPLX_ASSIGN_OR_RETURN(std::vector<Value> keys, Iterate(self));
  return Value::List(std::move(keys));
}

Result<Value> DictValues(const Value& self, const CallArgs& args) {
  MTPLX_RETURN_IF_ERROR(CheckArity("values", args, 0));
  std::vector<Value> values;
  for (const auto& [key, value] : self.AsDict().entries) values.push_back(value);
  return Value::List(std::move(values));
}

Result<Value> CopySelf(const Value& self, const CallArgs& args) {
  MTPLX_RETURN_IF_ERROR(CheckArity("copy", args, 0));
  return self.is_tuple() ? Value::List(self.items()) : self;
}

Result<Value> ListCount(const Value& self, const CallArgs& args) {
  MTPLX_RETURN_IF_ERROR(CheckArity("count", args, 1));
  const Value* item = args.Get(0, "value");
  if (item == nullptr) return InvalidArgument("TypeError: count() takes exactly one argument");
  return Value::Int(std::count_if(self.items().begin(), self.items().end(),
                                  [&](const Value& v) { return Equals(v, *item); }));
}

Result<Value> ListIndex(const Value& self, const CallArgs& args) {
  MTPLX_RETURN_IF_ERROR(CheckArity("index", args, 1));
  const Value* item = args.Get(0, "value");
  if (item == nullptr) return InvalidArgument("TypeError: index expected at least 1 argument");
  const auto& items = self.items();
  for (size_t i = 0; i < items.size(); ++i) {
    if (Equals(items[i], *item)) return Value::Int(static_cast<int64_t>(i));
  }
  return InvalidArgument(StrCat("ValueError: ", Repr(*item), " is not in list"));
}

struct NamedMethod {
  std::string_view name;
  MethodImpl impl;
};

constexpr NamedMethod kDictMethods[] = {
    {"copy", CopySelf}, {"get", DictGet},       {"items", DictItems},
    {"keys", DictKeys}, {"values", DictValues},
};
constexpr NamedMethod kListMethods[] = {
    {"copy", CopySelf}, {"count", ListCount}, {"index", ListIndex}};

MethodImpl FindIn(const NamedMethod* begin, const NamedMethod* end, std::string_view name) {
  for (const NamedMethod* m = begin; m != end; ++m) {
    if (m->name == name) return m->impl;
  }
  return nullptr;
}

// The method NAME of the receiver's type, or nullptr.
MethodImpl FindMethod(const Value& object, std::string_view name) {
  switch (object.kind()) {
    case Kind::kString:
      return FindStringMethod(name);
    case Kind::kDict:
      return FindDictMethod(name);
    case Kind::kList:
      if (object.is_tuple() && name == "copy") return nullptr;
      return FindListMethod(name);
    default:
      return nullptr;
  }
}

// getattr(obj, name) as Python sees it, before Jinja's fallback to obj[name]: a safe method, an
// unsafe-access marker, a namespace attribute, or nullopt when Python has no such attribute.
std::optional<Value> PythonAttribute(const Value& object, std::string_view name) {
  if (StartsWith(name, "__")) {  // dunder attributes reach Python internals
    return Value::Undefined(
        StrCat("access to attribute '", name, "' of '", TypeName(object), "' object is unsafe."));
  }
  if (MethodImpl impl = FindMethod(object, name)) return BindMethod(object, name, impl);
  if (IsUnsafeMethod(object, name)) {
    return Value::Undefined(
        StrCat("access to attribute '", name, "' of '", TypeName(object), "' object is unsafe."));
  }
  if (object.is_namespace()) {
    if (const Value* value = object.AsNamespace().Find(name)) return *value;
  }
  return std::nullopt;
}

// Python's index normalization: negative counts from the end; nullopt when out of range.
std::optional<size_t> NormalizeIndex(int64_t index, size_t size) {
  const int64_t n = static_cast<int64_t>(size);
  if (index < 0) index += n;
  if (index < 0 || index >= n) return std::nullopt;
  return static_cast<size_t>(index);
}

Value IndexSequence(const Value& object, const Value& key) {
  const int64_t index = key.AsInt();
  if (object.is_list()) {
    const auto position = NormalizeIndex(index, object.items().size());
    if (position) return object.items()[*position];
  } else {
    const std::vector<size_t> offsets = CodePointOffsets(object.text());
    const auto position = NormalizeIndex(index, offsets.size() - 1);
    if (position) {
      return Value::String(object.AsString().Substr(offsets[*position], offsets[*position + 1]));
    }
  }
  return MissingAttribute(object, std::to_string(index));
}

// Python's slice.indices(): the elements start, start+step, ... before stop.
std::vector<size_t> SliceIndices(size_t size, std::optional<int64_t> start_arg,
                                 std::optional<int64_t> stop_arg, int64_t step) {
  const int64_t n = static_cast<int64_t>(size);
  const auto adjust = [&](std::optional<int64_t> value, int64_t fallback) {
    if (!value) return fallback;
    int64_t v = *value;
    if (v < 0) {
      v += n;
      if (v < 0) v = step < 0 ? -1 : 0;
    } else if (v >= n) {
      v = step < 0 ? n - 1 : n;
    }
    return v;
  };
  const int64_t start = adjust(start_arg, step < 0 ? n - 1 : 0);
  const int64_t stop = adjust(stop_arg, step < 0 ? -1 : n);
  std::vector<size_t> indices;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    indices.push_back(static_cast<size_t>(i));
  }
  return indices;
}

}  // namespace

MethodImpl FindDictMethod(std::string_view name) {
  return FindIn(std::begin(kDictMethods), std::end(kDictMethods), name);
}

MethodImpl FindListMethod(std::string_view name) {
  return FindIn(std::begin(kListMethods), std::end(kListMethods), name);
}

bool IsUnsafeMethod(const Value& self, std::string_view name) {
  static constexpr std::string_view kListMutators[] = {"append", "clear",  "extend",  "insert",
                                                       "pop",    "remove", "reverse", "sort"};
  static constexpr std::string_view kDictMutators[] = {"clear", "pop", "popitem", "setdefault",
                                                       "update"};
  if (self.is_list() && !self.is_tuple()) {
    return std::find(std::begin(kListMutators), std::end(kListMutators), name) !=
           std::end(kListMutators);
  }
  if (self.is_dict()) {
    return std::find(std::begin(kDictMutators), std::end(kDictMutators), name) !=
           std::end(kDictMutators);
  }
  return false;
}

Value BindMethod(const Value& self, std::string_view name, MethodImpl impl) {
  return Value::Func(std::make_shared<BoundMethod>(self, std::string(name), impl));
}

Status CheckArity(std::string_view function, const CallArgs& args, size_t max,
                  std::initializer_list<std::string_view> keywords) {
  if (args.positional.size() > max) {
    return InvalidArgument(StrCat("TypeError: ", function, "() takes at most ", max, " arguments (",
                                  args.positional.size(), " given)"));
  }
  for (const auto& [key, value] : args.keyword) {
    if (std::find(keywords.begin(), keywords.end(), key) == keywords.end()) {
      return InvalidArgument(
          StrCat("TypeError: ", function, "() got an unexpected keyword argument '", key, "'"));
    }
  }
  return Status::Ok();
}

Result<Value> GetAttr(const Value& object, std::string_view name) {
  if (object.is_undefined()) return UndefinedError(object);
  if (std::optional<Value> attribute = PythonAttribute(object, name)) return *attribute;
  if (object.is_dict()) {
    if (const Value* value = object.AsDict().Find(name)) return *value;
  }
  return MissingAttribute(object, PyStringRepr(name));
}

Result<Value> GetPythonAttr(const Value& object, std::string_view name) {
  if (object.is_undefined()) return UndefinedError(object);
  if (std::optional<Value> attribute = PythonAttribute(object, name)) return *attribute;
  return MissingAttribute(object, PyStringRepr(name));
}

Result<Value> GetItem(const Value& object, const Value& key) {
  if (object.is_undefined()) return UndefinedError(object);
  if (object.is_dict()) {
    const std::optional<MarkedString> encoded = EncodeDictKey(key);
    if (encoded) {
      if (const Value* value = object.AsDict().Find(encoded->text())) return *value;
    }
  }
  if ((object.is_list() || object.is_string()) && (key.is_int() || key.is_bool())) {
    return IndexSequence(object, key);
  }
  // Jinja falls back to getattr for string keys ("abc"["upper"] is the bound method).
  if (key.is_string()) {
    if (std::optional<Value> attribute = PythonAttribute(object, key.text())) return *attribute;
  }
  return MissingAttribute(object, Repr(key));
}

Result<Value> GetSlice(const Value& object, const Value& start, const Value& stop,
                       const Value& step) {
  if (object.is_undefined()) return UndefinedError(object);
  const auto bound = [](const Value& v) -> std::optional<std::optional<int64_t>> {
    if (v.is_none()) return std::optional<int64_t>();
    if (v.is_int() || v.is_bool()) return std::optional<int64_t>(v.AsInt());
    return std::nullopt;  // not a valid slice index
  };
  const auto b_start = bound(start);
  const auto b_stop = bound(stop);
  const auto b_step = bound(step);
  if (!b_start || !b_stop || !b_step || !(object.is_list() || object.is_string())) {
    return Value::Undefined("invalid slice");
  }
  const int64_t step_value = b_step->value_or(1);
  if (step_value == 0) return InvalidArgument("ValueError: slice step cannot be zero");
  if (object.is_list()) {
    std::vector<Value> items;
    for (size_t i : SliceIndices(object.items().size(), *b_start, *b_stop, step_value)) {
      items.push_back(object.items()[i]);
    }
    return object.is_tuple() ? Value::Tuple(std::move(items)) : Value::List(std::move(items));
  }
  const MarkedString& text = object.AsString();
  const std::vector<size_t> offsets = CodePointOffsets(text.text());
  const std::vector<size_t> indices =
      SliceIndices(offsets.size() - 1, *b_start, *b_stop, step_value);
  if (step_value == 1) {
    if (indices.empty()) return Value::String(MarkedString());
    return Value::String(text.Substr(offsets[indices.front()], offsets[indices.back() + 1]));
  }
  MarkedString out;
  for (size_t i : indices) out.Append(text.Substr(offsets[i], offsets[i + 1]));
  return Value::String(std::move(out));
}

}  // namespace mtplx::chat
