// Template globals: Jinja's range, dict and namespace, plus the raise_exception and strftime_now
// functions transformers registers for chat templates.
#include <ctime>
#include <optional>

#include "base/strings.h"
#include "chat/builtins_internal.h"
#include "chat/value_ops.h"

namespace mtplx::chat {
namespace internal {
namespace {

// The sandbox refuses ranges longer than this (jinja2.sandbox.MAX_RANGE).
constexpr int64_t kMaxRange = 100000;

using Impl = Result<Value> (*)(Interpreter& interpreter, const CallArgs& args);

class Builtin : public Function {
 public:
  Builtin(std::string_view name, Impl impl) : name_(name), impl_(impl) {}
  std::string_view name() const override { return name_; }
  Result<Value> Call(Interpreter& interpreter, const CallArgs& args) const override {
    return impl_(interpreter, args);
  }

 private:
  std::string_view name_;
  Impl impl_;
};

Result<Value> Range(Interpreter&, const CallArgs& args) {
  if (!args.keyword.empty()) return TypeError("range() takes no keyword arguments");
  const auto& p = args.positional;
  if (p.empty() || p.size() > 3) return TypeError("range expected 1 to 3 arguments");
  for (const Value& arg : p) {
    if (!arg.is_int() && !arg.is_bool()) {
      return TypeError(StrCat("'", TypeName(arg), "' object cannot be interpreted as an integer"));
    }
  }
  const int64_t start = p.size() == 1 ? 0 : p[0].AsInt();
  const int64_t stop = p.size() == 1 ? p[0].AsInt() : p[1].AsInt();
  const int64_t step = p.size() == 3 ? p[2].AsInt() : 1;
  if (step == 0) return InvalidArgument("ValueError: range() arg 3 must not be zero");
  // Count without overflow: the sandbox rejects anything past kMaxRange anyway.
  const long double span = static_cast<long double>(stop) - static_cast<long double>(start);
  const long double count = span / step;
  if (count > kMaxRange) {
    return InvalidArgument(
        StrCat("OverflowError: Range too big. The sandbox blocks ranges larger "
               "than MAX_RANGE (",
               kMaxRange, ")."));
  }
  std::vector<Value> items;
  for (int64_t i = start; step > 0 ? i < stop : i > stop;) {
    items.push_back(Value::Int(i));
    if (__builtin_add_overflow(i, step, &i)) break;
  }
  return Value::List(std::move(items));
}

// dict(mapping_or_pairs, **kwargs) into `data`.
Status FillDict(const CallArgs& args, DictData* data) {
  if (args.positional.size() > 1) return TypeError("dict expected at most 1 argument");
  if (!args.positional.empty()) {
    const Value& source = args.positional[0];
    if (source.is_dict() || source.is_namespace()) {
      const DictData& from = source.is_dict() ? source.AsDict() : source.AsNamespace();
      for (const auto& [key, value] : from.entries) data->Set(key, value);
    } else {
      MTPLX_ASSIGN_OR_RETURN(const std::vector<Value> pairs, Iterate(source));
      for (const Value& pair : pairs) {
        const std::optional<MarkedString> key = pair.is_list() && pair.items().size() == 2
                                                    ? EncodeDictKey(pair.items()[0])
                                                    : std::nullopt;
        if (!key) return TypeError("dict() needs a mapping or (key, value) pairs");
        data->Set(*key, pair.items()[1]);
      }
    }
  }
  for (const auto& [key, value] : args.keyword) data->Set(MarkedString(key), value);
  return Status::Ok();
}

Result<Value> Dict(Interpreter&, const CallArgs& args) {
  auto data = std::make_shared<DictData>();
  MTPLX_RETURN_IF_ERROR(FillDict(args, data.get()));
  return Value::Dict(std::move(data));
}

Result<Value> Namespace(Interpreter& interpreter, const CallArgs& args) {
  auto data = std::make_shared<DictData>();
  MTPLX_RETURN_IF_ERROR(FillDict(args, data.get()));
  for (const auto& [key, value] : data->entries) {
    if (StartsWith(key.text(), "_")) {
      return InvalidArgument(
          StrCat("SecurityError: Chat templates cannot store "
                 "underscore-prefixed attributes on a namespace, but got '",
                 key.text(), "'. Please rename the attribute."));
    }
  }
  return interpreter.NewNamespace(std::move(data));
}

// The template's own refusal; the message is what the caller should see.
Result<Value> RaiseException(Interpreter&, const CallArgs& args) {
  const Value message = ArgOr(args, 0, "message", Value::String(""));
  return InvalidArgument(ToStr(message).text());
}

Result<Value> StrftimeNow(Interpreter&, const CallArgs& args) {
  const Value format = ArgOr(args, 0, "format", Value::None());
  if (!format.is_string()) return TypeError("strftime_now() argument must be str");
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char buffer[512];
  const size_t length = std::strftime(buffer, sizeof(buffer), format.text().c_str(), &local);
  return Value::String(std::string(buffer, length));
}

}  // namespace
}  // namespace internal

std::vector<std::pair<std::string, Value>> BuiltinGlobals() {
  using internal::Builtin;
  const auto make = [](std::string_view name, internal::Impl impl) {
    return std::make_pair(std::string(name), Value::Func(std::make_shared<Builtin>(name, impl)));
  };
  return {make("range", internal::Range), make("dict", internal::Dict),
          make("namespace", internal::Namespace), make("raise_exception", internal::RaiseException),
          make("strftime_now", internal::StrftimeNow)};
}

}  // namespace mtplx::chat
