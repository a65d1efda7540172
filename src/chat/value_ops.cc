#include "chat/value_ops.h"

#include <algorithm>
#include <cmath>

#include "base/strings.h"
#include "chat/py_text.h"

namespace mtplx::chat {
namespace {

using Kind = Value::Kind;

// Deeper structures than this can only come from a namespace that contains itself.
constexpr int kMaxNesting = 256;

void AppendRepr(const Value& value, int depth, std::string* out) {
  if (depth > kMaxNesting) {
    out->append("...");
    return;
  }
  switch (value.kind()) {
    case Kind::kUndefined:
      out->append("Undefined");
      return;
    case Kind::kNone:
      out->append("None");
      return;
    case Kind::kBool:
      out->append(value.AsBool() ? "True" : "False");
      return;
    case Kind::kInt:
      out->append(std::to_string(value.AsInt()));
      return;
    case Kind::kFloat:
      out->append(PyFloatRepr(value.AsDouble()));
      return;
    case Kind::kString:
      out->append(PyStringRepr(value.text()));
      return;
    case Kind::kList: {
      const bool tuple = value.is_tuple();
      out->push_back(tuple ? '(' : '[');
      const std::vector<Value>& items = value.items();
      for (size_t i = 0; i < items.size(); ++i) {
        if (i > 0) out->append(", ");
        AppendRepr(items[i], depth + 1, out);
      }
      if (tuple && items.size() == 1) out->push_back(',');
      out->push_back(tuple ? ')' : ']');
      return;
    }
    case Kind::kDict:
    case Kind::kNamespace: {
      const DictData& dict = value.is_dict() ? value.AsDict() : value.AsNamespace();
      if (value.is_namespace()) out->append("<Namespace ");
      out->push_back('{');
      for (size_t i = 0; i < dict.entries.size(); ++i) {
        if (i > 0) out->append(", ");
        AppendRepr(DecodeDictKey(dict.entries[i].first), depth + 1, out);
        out->append(": ");
        AppendRepr(dict.entries[i].second, depth + 1, out);
      }
      out->push_back('}');
      if (value.is_namespace()) out->push_back('>');
      return;
    }
    case Kind::kFunction:
      out->append(StrCat("<function ", value.AsFunction().name(), ">"));
      return;
  }
}

bool ListEquals(const Value& a, const Value& b, int depth);

bool EqualsAt(const Value& a, const Value& b, int depth) {
  if (depth > kMaxNesting) return false;
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.AsDouble() == b.AsDouble();
    return a.AsInt() == b.AsInt();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Kind::kUndefined:
    case Kind::kNone:
      return true;
    case Kind::kString:
      return a.text() == b.text();
    case Kind::kList:
      return ListEquals(a, b, depth);
    case Kind::kDict: {
      const DictData& x = a.AsDict();
      const DictData& y = b.AsDict();
      if (x.entries.size() != y.entries.size()) return false;
      for (const auto& [key, value] : x.entries) {
        const Value* other = y.Find(key.text());
        if (other == nullptr || !EqualsAt(value, *other, depth + 1)) return false;
      }
      return true;
    }
    default:
      return a.identity() == b.identity();
  }
}

bool ListEquals(const Value& a, const Value& b, int depth) {
  if (a.is_tuple() != b.is_tuple() || a.items().size() != b.items().size()) return false;
  for (size_t i = 0; i < a.items().size(); ++i) {
    if (!EqualsAt(a.items()[i], b.items()[i], depth + 1)) return false;
  }
  return true;
}

Status OrderError(std::string_view op, const Value& a, const Value& b) {
  return InvalidArgument(StrCat("TypeError: '", op, "' not supported between instances of '",
                                TypeName(a), "' and '", TypeName(b), "'"));
}

Result<int> CompareAt(const Value& a, const Value& b, std::string_view op, int depth) {
  if (a.is_undefined()) return UndefinedError(a);
  if (b.is_undefined()) return UndefinedError(b);
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) {
      const double x = a.AsDouble();
      const double y = b.AsDouble();
      return x < y ? -1 : x > y ? 1 : 0;
    }
    return a.AsInt() < b.AsInt() ? -1 : a.AsInt() > b.AsInt() ? 1 : 0;
  }
  if (a.is_string() && b.is_string()) {
    const int c = a.text().compare(b.text());
    return c < 0 ? -1 : c > 0 ? 1 : 0;
  }
  if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple() && depth < kMaxNesting) {
    const auto& x = a.items();
    const auto& y = b.items();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (EqualsAt(x[i], y[i], depth + 1)) continue;
      return CompareAt(x[i], y[i], op, depth + 1);
    }
    return x.size() < y.size() ? -1 : x.size() > y.size() ? 1 : 0;
  }
  return OrderError(op, a, b);
}

Status TypeError(const std::string& message) { return InvalidArgument("TypeError: " + message); }

Result<bool> Contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Kind::kString:
      if (!item.is_string()) {
        return TypeError(
            StrCat("'in <string>' requires string as left operand, not ", TypeName(item)));
      }
      return container.text().find(item.text()) != std::string::npos;
    case Kind::kList:
      for (const Value& element : container.items()) {
        if (Equals(element, item)) return true;
      }
      return false;
    case Kind::kDict: {
      const std::optional<MarkedString> key = EncodeDictKey(item);
      if (!key) return TypeError(StrCat("unhashable type: '", TypeName(item), "'"));
      return container.AsDict().Find(key->text()) != nullptr;
    }
    case Kind::kUndefined:
      return false;
    default:
      return TypeError(StrCat("argument of type '", TypeName(container), "' is not iterable"));
  }
}

Status SizeError() { return ResourceExhausted("result is larger than the render size limit"); }

Result<Value> Repeat(const Value& sequence, int64_t count, size_t max_size) {
  count = std::max<int64_t>(count, 0);
  if (sequence.is_string()) {
    const std::string& text = sequence.text();
    if (!text.empty() && static_cast<uint64_t>(count) > max_size / text.size()) return SizeError();
    MarkedString out;
    for (int64_t i = 0; i < count; ++i) out.Append(sequence.AsString());
    return Value::String(std::move(out));
  }
  const auto& items = sequence.items();
  if (!items.empty() && static_cast<uint64_t>(count) > max_size / items.size()) return SizeError();
  std::vector<Value> out;
  for (int64_t i = 0; i < count; ++i) out.insert(out.end(), items.begin(), items.end());
  return sequence.is_tuple() ? Value::Tuple(std::move(out)) : Value::List(std::move(out));
}

Result<Value> Concatenate(const Value& a, const Value& b, size_t max_size) {
  if (a.is_string() && b.is_string()) {
    if (a.AsString().size() + b.AsString().size() > max_size) return SizeError();
    MarkedString out = a.AsString();
    out.Append(b.AsString());
    return Value::String(std::move(out));
  }
  if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
    if (a.items().size() + b.items().size() > max_size) return SizeError();
    std::vector<Value> out = a.items();
    out.insert(out.end(), b.items().begin(), b.items().end());
    return a.is_tuple() ? Value::Tuple(std::move(out)) : Value::List(std::move(out));
  }
  if (a.is_string() || a.is_list()) {
    return TypeError(StrCat("can only concatenate ", TypeName(a), " (not \"", TypeName(b),
                            "\") to ", TypeName(a)));
  }
  return TypeError(
      StrCat("unsupported operand type(s) for +: '", TypeName(a), "' and '", TypeName(b), "'"));
}

// str % args with the conversions templates use: %s %r %d %i %%.
Result<Value> PercentFormat(const Value& format, const Value& args) {
  std::vector<Value> values = args.is_tuple() ? args.items() : std::vector<Value>{args};
  MarkedString out;
  size_t next = 0;
  const std::string& text = format.text();
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out.Append(std::string_view(&text[i], 1), false);
      continue;
    }
    const char conversion = i + 1 < text.size() ? text[++i] : '\0';
    if (conversion == '%') {
      out.Append("%");
      continue;
    }
    if (next >= values.size()) return TypeError("not enough arguments for format string");
    const Value& value = values[next++];
    if (conversion == 's') {
      out.Append(ToStr(value));
    } else if (conversion == 'r') {
      out.Append(Repr(value), value.ContainsUserText());
    } else if ((conversion == 'd' || conversion == 'i') && value.is_number()) {
      out.Append(std::to_string(value.is_float() ? static_cast<int64_t>(value.AsDouble())
                                                 : value.AsInt()));
    } else {
      return Unimplemented(
          StrCat("format conversion '%", std::string(1, conversion), "' is not supported"));
    }
  }
  if (next < values.size()) {
    return TypeError("not all arguments converted during string formatting");
  }
  return Value::String(std::move(out));
}

Result<Value> IntArithmetic(BinaryOp op, int64_t x, int64_t y) {
  int64_t result = 0;
  switch (op) {
    case BinaryOp::kAdd:
      if (__builtin_add_overflow(x, y, &result)) break;
      return Value::Int(result);
    case BinaryOp::kSub:
      if (__builtin_sub_overflow(x, y, &result)) break;
      return Value::Int(result);
    case BinaryOp::kMul:
      if (__builtin_mul_overflow(x, y, &result)) break;
      return Value::Int(result);
    case BinaryOp::kFloorDiv:
    case BinaryOp::kMod: {
      if (y == 0) {
        return InvalidArgument(op == BinaryOp::kMod ? "ZeroDivisionError: integer modulo by zero"
                                                    : "ZeroDivisionError: integer division or "
                                                      "modulo by zero");
      }
      if (x == INT64_MIN && y == -1) break;
      int64_t quotient = x / y;
      int64_t remainder = x % y;
      if (remainder != 0 && ((remainder < 0) != (y < 0))) {
        --quotient;
        remainder += y;
      }
      return Value::Int(op == BinaryOp::kMod ? remainder : quotient);
    }
    case BinaryOp::kPow: {
      if (y < 0) return Value::Float(std::pow(static_cast<double>(x), static_cast<double>(y)));
      int64_t base = x;
      result = 1;
      for (int64_t e = y; e > 0; e >>= 1) {
        if ((e & 1) && __builtin_mul_overflow(result, base, &result)) {
          return Unimplemented("integer result is too large");
        }
        if (e > 1 && __builtin_mul_overflow(base, base, &base)) {
          return Unimplemented("integer result is too large");
        }
      }
      return Value::Int(result);
    }
    case BinaryOp::kDiv:
      break;
  }
  return Unimplemented("integer result is too large");
}

Result<Value> FloatArithmetic(BinaryOp op, double x, double y) {
  switch (op) {
    case BinaryOp::kAdd:
      return Value::Float(x + y);
    case BinaryOp::kSub:
      return Value::Float(x - y);
    case BinaryOp::kMul:
      return Value::Float(x * y);
    case BinaryOp::kDiv:
      if (y == 0) return InvalidArgument("ZeroDivisionError: division by zero");
      return Value::Float(x / y);
    case BinaryOp::kFloorDiv:
      if (y == 0) return InvalidArgument("ZeroDivisionError: float floor division by zero");
      return Value::Float(std::floor(x / y));
    case BinaryOp::kMod: {
      if (y == 0) return InvalidArgument("ZeroDivisionError: float modulo");
      double r = std::fmod(x, y);
      if (r != 0 && ((r < 0) != (y < 0))) r += y;
      return Value::Float(r);
    }
    case BinaryOp::kPow:
      if (x == 0 && y < 0) {
        return InvalidArgument("ZeroDivisionError: 0.0 cannot be raised to a negative power");
      }
      return Value::Float(std::pow(x, y));
  }
  return Value::Float(0);
}

const char* OpSymbol(BinaryOp op) {
  switch (op) {
    case BinaryOp::kAdd:
      return "+";
    case BinaryOp::kSub:
      return "-";
    case BinaryOp::kMul:
      return "*";
    case BinaryOp::kDiv:
      return "/";
    case BinaryOp::kFloorDiv:
      return "//";
    case BinaryOp::kMod:
      return "%";
    case BinaryOp::kPow:
      return "**";
  }
  return "?";
}

void AppendJson(const Value& value, const JsonOptions& options, int depth, Status* status,
                std::string* out);

// json.dumps turns None, bool, int and float keys into strings.
void AppendJsonKey(const Value& key, bool ensure_ascii, std::string* out) {
  switch (key.kind()) {
    case Kind::kNone:
      out->append("\"null\"");
      return;
    case Kind::kInt:
      out->append("\"" + std::to_string(key.AsInt()) + "\"");
      return;
    case Kind::kFloat:
      out->append("\"" + PyFloatRepr(key.AsDouble()) + "\"");
      return;
    default:
      AppendJsonString(key.text(), ensure_ascii, out);
      return;
  }
}

void AppendNewlineIndent(const JsonOptions& options, int depth, std::string* out) {
  out->push_back('\n');
  for (int i = 0; i < depth; ++i) out->append(options.indent);
}

void AppendJsonContainer(const Value& value, const JsonOptions& options, int depth, Status* status,
                         std::string* out) {
  const bool is_list = value.is_list();
  const size_t count = is_list ? value.items().size() : value.AsDict().entries.size();
  out->push_back(is_list ? '[' : '{');
  if (count == 0) {
    out->push_back(is_list ? ']' : '}');
    return;
  }
  std::vector<size_t> order(count);
  for (size_t i = 0; i < count; ++i) order[i] = i;
  if (!is_list && options.sort_keys) {
    const auto& entries = value.AsDict().entries;
    std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
      return entries[x].first.text() < entries[y].first.text();
    });
  }
  for (size_t i = 0; i < count && status->ok(); ++i) {
    if (i > 0) out->append(options.item_separator);
    if (options.indent_set) AppendNewlineIndent(options, depth + 1, out);
    if (is_list) {
      AppendJson(value.items()[i], options, depth + 1, status, out);
    } else {
      const auto& [key, item] = value.AsDict().entries[order[i]];
      AppendJsonKey(DecodeDictKey(key), options.ensure_ascii, out);
      out->append(options.key_separator);
      AppendJson(item, options, depth + 1, status, out);
    }
  }
  if (options.indent_set) AppendNewlineIndent(options, depth, out);
  out->push_back(is_list ? ']' : '}');
}

void AppendJson(const Value& value, const JsonOptions& options, int depth, Status* status,
                std::string* out) {
  if (depth > kMaxNesting) {
    *status = InvalidArgument("ValueError: Circular reference detected");
    return;
  }
  switch (value.kind()) {
    case Kind::kNone:
      out->append("null");
      return;
    case Kind::kBool:
      out->append(value.AsBool() ? "true" : "false");
      return;
    case Kind::kInt:
      out->append(std::to_string(value.AsInt()));
      return;
    case Kind::kFloat: {
      const double d = value.AsDouble();
      if (std::isnan(d)) {
        out->append("NaN");
      } else if (std::isinf(d)) {
        out->append(d > 0 ? "Infinity" : "-Infinity");
      } else {
        out->append(PyFloatRepr(d));
      }
      return;
    }
    case Kind::kString:
      AppendJsonString(value.text(), options.ensure_ascii, out);
      return;
    case Kind::kList:
    case Kind::kDict:
      AppendJsonContainer(value, options, depth, status, out);
      return;
    default:
      *status = TypeError(StrCat("Object of type ", TypeName(value), " is not JSON serializable"));
      return;
  }
}

}  // namespace

std::string TypeName(const Value& value) {
  switch (value.kind()) {
    case Kind::kUndefined:
      return "Undefined";
    case Kind::kNone:
      return "NoneType";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kFloat:
      return "float";
    case Kind::kString:
      return "str";
    case Kind::kList:
      return value.is_tuple() ? "tuple" : "list";
    case Kind::kDict:
      return "dict";
    case Kind::kNamespace:
      return "Namespace";
    case Kind::kFunction:
      return "function";
  }
  return "object";
}

MarkedString ToStr(const Value& value) {
  switch (value.kind()) {
    case Kind::kUndefined:
      return MarkedString();
    case Kind::kString:
      return value.AsString();
    default:
      return MarkedString(Repr(value), value.ContainsUserText());
  }
}

std::string Repr(const Value& value) {
  std::string out;
  AppendRepr(value, 0, &out);
  return out;
}

Status UndefinedError(const Value& value) {
  return InvalidArgument("UndefinedError: " + value.UndefinedMessage());
}

bool Equals(const Value& a, const Value& b) { return EqualsAt(a, b, 0); }

Result<int> Compare(const Value& a, const Value& b) { return CompareAt(a, b, "<", 0); }

Result<bool> EvalCompare(CompareOp op, const Value& a, const Value& b) {
  switch (op) {
    case CompareOp::kEq:
      return Equals(a, b);
    case CompareOp::kNe:
      return !Equals(a, b);
    case CompareOp::kIn:
      return Contains(b, a);
    case CompareOp::kNotIn: {
      MTPLX_ASSIGN_OR_RETURN(const bool found, Contains(b, a));
      return !found;
    }
    default:
      break;
  }
  const std::string_view symbol = op == CompareOp::kLt   ? "<"
                                  : op == CompareOp::kLe ? "<="
                                  : op == CompareOp::kGt ? ">"
                                                         : ">=";
  MTPLX_ASSIGN_OR_RETURN(const int c, CompareAt(a, b, symbol, 0));
  switch (op) {
    case CompareOp::kLt:
      return c < 0;
    case CompareOp::kLe:
      return c <= 0;
    case CompareOp::kGt:
      return c > 0;
    default:
      return c >= 0;
  }
}

Result<size_t> Length(const Value& value) {
  switch (value.kind()) {
    case Kind::kUndefined:
      return size_t{0};
    case Kind::kString:
      return CodePointCount(value.text());
    case Kind::kList:
      return value.items().size();
    case Kind::kDict:
      return value.AsDict().entries.size();
    default:
      return TypeError(StrCat("object of type '", TypeName(value), "' has no len()"));
  }
}

std::vector<Value> StringChars(const Value& value) {
  const MarkedString& text = value.AsString();
  const std::vector<size_t> offsets = CodePointOffsets(text.text());
  std::vector<Value> chars;
  chars.reserve(offsets.size() - 1);
  for (size_t i = 0; i + 1 < offsets.size(); ++i) {
    chars.push_back(Value::String(text.Substr(offsets[i], offsets[i + 1])));
  }
  return chars;
}

Result<std::vector<Value>> Iterate(const Value& value) {
  switch (value.kind()) {
    case Kind::kUndefined:
      return std::vector<Value>();
    case Kind::kString:
      return StringChars(value);
    case Kind::kList:
      return value.items();
    case Kind::kDict: {
      std::vector<Value> keys;
      keys.reserve(value.AsDict().entries.size());
      for (const auto& [key, item] : value.AsDict().entries) keys.push_back(DecodeDictKey(key));
      return keys;
    }
    default:
      return TypeError(StrCat("'", TypeName(value), "' object is not iterable"));
  }
}

Result<Value> EvalBinary(BinaryOp op, const Value& a, const Value& b, size_t max_size) {
  if (a.is_undefined()) return UndefinedError(a);
  if (b.is_undefined()) return UndefinedError(b);
  if (a.is_number() && b.is_number()) {
    if (!a.is_float() && !b.is_float() && op != BinaryOp::kDiv) {
      return IntArithmetic(op, a.AsInt(), b.AsInt());
    }
    return FloatArithmetic(op, a.AsDouble(), b.AsDouble());
  }
  if (op == BinaryOp::kAdd) return Concatenate(a, b, max_size);
  if (op == BinaryOp::kMul) {
    if ((a.is_string() || a.is_list()) && (b.is_int() || b.is_bool())) {
      return Repeat(a, b.AsInt(), max_size);
    }
    if ((b.is_string() || b.is_list()) && (a.is_int() || a.is_bool())) {
      return Repeat(b, a.AsInt(), max_size);
    }
  }
  if (op == BinaryOp::kMod && a.is_string()) return PercentFormat(a, b);
  return TypeError(StrCat("unsupported operand type(s) for ", OpSymbol(op), ": '", TypeName(a),
                          "' and '", TypeName(b), "'"));
}

Result<Value> EvalUnary(ExprKind kind, const Value& value) {
  if (value.is_undefined()) return UndefinedError(value);
  const char* symbol = kind == ExprKind::kNeg ? "-" : "+";
  if (!value.is_number()) {
    return TypeError(StrCat("bad operand type for unary ", symbol, ": '", TypeName(value), "'"));
  }
  if (kind == ExprKind::kPos) return value.is_float() ? value : Value::Int(value.AsInt());
  if (value.is_float()) return Value::Float(-value.AsDouble());
  if (value.AsInt() == INT64_MIN) return Unimplemented("integer result is too large");
  return Value::Int(-value.AsInt());
}

Result<std::string> ToJson(const Value& value, const JsonOptions& options) {
  std::string out;
  Status status;
  AppendJson(value, options, 0, &status, &out);
  if (!status.ok()) return status;
  return out;
}

}  // namespace mtplx::chat
