// Jinja's builtin filters (jinja2/filters.py), with tojson replaced by transformers' version:
// json.dumps(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False), which does
// not HTML-escape.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "base/strings.h"
#include "chat/builtins_internal.h"
#include "chat/methods.h"
#include "chat/py_text.h"
#include "chat/value_ops.h"

namespace mtplx::chat {
namespace internal {

Value ArgOr(const CallArgs& args, size_t index, std::string_view name, Value fallback) {
  const Value* arg = args.Get(index, name);
  return arg ? *arg : fallback;
}

bool BoolArg(const CallArgs& args, size_t index, std::string_view name, bool fallback) {
  const Value* arg = args.Get(index, name);
  return arg ? arg->Truthy() : fallback;
}

Status TypeError(const std::string& message) { return InvalidArgument("TypeError: " + message); }

namespace {

Result<Value> FilterDefault(Interpreter&, const Value& subject, const CallArgs& args) {
  const bool boolean = BoolArg(args, 1, "boolean", false);
  if (subject.is_undefined() || (boolean && !subject.Truthy())) {
    return ArgOr(args, 0, "default_value", Value::String(""));
  }
  return subject;
}

Result<Value> FilterLength(Interpreter&, const Value& subject, const CallArgs&) {
  MTPLX_ASSIGN_OR_RETURN(const size_t length, Length(subject));
  return Value::Int(static_cast<int64_t>(length));
}

Result<Value> FilterString(Interpreter&, const Value& subject, const CallArgs&) {
  return Value::String(ToStr(subject));
}

Result<Value> CallStrMethod(const Value& subject, std::string_view method, const CallArgs& args) {
  const Value text = Value::String(ToStr(subject));
  return FindStringMethod(method)(text, args);
}

Result<Value> FilterTrim(Interpreter&, const Value& subject, const CallArgs& args) {
  return CallStrMethod(subject, "strip", args);
}

Result<Value> FilterUpper(Interpreter&, const Value& subject, const CallArgs&) {
  return CallStrMethod(subject, "upper", {});
}

Result<Value> FilterLower(Interpreter&, const Value& subject, const CallArgs&) {
  return CallStrMethod(subject, "lower", {});
}

Result<Value> FilterCapitalize(Interpreter&, const Value& subject, const CallArgs&) {
  return CallStrMethod(subject, "capitalize", {});
}

Result<Value> FilterTitle(Interpreter&, const Value& subject, const CallArgs&) {
  return Value::String(PyCaseMap(ToStr(subject), CaseMode::kJinjaTitle));
}

Result<Value> FilterReplace(Interpreter&, const Value& subject, const CallArgs& args) {
  CallArgs method_args;
  method_args.positional = {Value::String(ToStr(ArgOr(args, 0, "old", Value::String("")))),
                            Value::String(ToStr(ArgOr(args, 1, "new", Value::String(""))))};
  const Value count = ArgOr(args, 2, "count", Value::None());
  if (!count.is_none()) method_args.positional.push_back(count);
  return CallStrMethod(subject, "replace", method_args);
}

Result<Value> FilterSafe(Interpreter&, const Value& subject, const CallArgs&) {
  return Value::String(ToStr(subject));  // Markup(value) is a str
}

Result<Value> FilterEscape(Interpreter&, const Value& subject, const CallArgs&) {
  const MarkedString text = ToStr(subject);
  std::string out;
  for (char c : text.text()) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out.push_back(c);
    }
  }
  return Value::String(MarkedString(std::move(out), text.AnyUser()));
}

Result<JsonOptions> TojsonOptions(const CallArgs& args) {
  JsonOptions options;
  options.ensure_ascii = BoolArg(args, 0, "ensure_ascii", false);
  const Value indent = ArgOr(args, 1, "indent", Value::None());
  if (indent.is_string()) {
    options.indent_set = true;
    options.indent = indent.text();
  } else if (indent.is_int() || indent.is_bool()) {
    options.indent_set = true;
    options.indent.assign(static_cast<size_t>(std::clamp<int64_t>(indent.AsInt(), 0, 1024)), ' ');
  } else if (!indent.is_none()) {
    return TypeError("tojson indent must be an int, a str or None");
  }
  if (options.indent_set) options.item_separator = ",";
  const Value separators = ArgOr(args, 2, "separators", Value::None());
  if (!separators.is_none()) {
    if (!separators.is_list() || separators.items().size() != 2 ||
        !separators.items()[0].is_string() || !separators.items()[1].is_string()) {
      return TypeError("tojson separators must be a pair of strings");
    }
    options.item_separator = separators.items()[0].text();
    options.key_separator = separators.items()[1].text();
  }
  options.sort_keys = BoolArg(args, 3, "sort_keys", false);
  return options;
}

Result<Value> FilterTojson(Interpreter& in, const Value& subject, const CallArgs& args) {
  MTPLX_ASSIGN_OR_RETURN(const JsonOptions options, TojsonOptions(args));
  MTPLX_ASSIGN_OR_RETURN(std::string json, ToJson(subject, options));
  MTPLX_RETURN_IF_ERROR(in.CheckSize(json.size()));
  return Value::String(MarkedString(std::move(json), subject.ContainsUserText()));
}

// Python's int(text, base): optional sign, underscores between digits, surrounding whitespace.
std::optional<int64_t> ParsePyInt(const std::string& text, int base) {
  const auto [begin, end] = PyStripRange(text, nullptr, true, true);
  std::string digits;
  for (size_t i = begin; i < end; ++i) {
    if (text[i] == '_' && i > begin && i + 1 < end && text[i - 1] != '_') continue;
    digits.push_back(text[i]);
  }
  if (digits.empty() || base < 2 || base > 36) return std::nullopt;
  errno = 0;
  char* stop = nullptr;
  const long long value = std::strtoll(digits.c_str(), &stop, base);
  if (errno != 0 || *stop != '\0' || digits[0] == ' ') return std::nullopt;
  return value;
}

std::optional<double> ParsePyFloat(const std::string& text) {
  const auto [begin, end] = PyStripRange(text, nullptr, true, true);
  const std::string trimmed = text.substr(begin, end - begin);
  if (trimmed.empty() || trimmed.find_first_of("xXpP") != std::string::npos) return std::nullopt;
  char* stop = nullptr;
  const double value = std::strtod(trimmed.c_str(), &stop);
  if (*stop != '\0') return std::nullopt;
  return value;
}

Result<Value> FilterInt(Interpreter&, const Value& subject, const CallArgs& args) {
  const Value fallback = ArgOr(args, 0, "default", Value::Int(0));
  const Value base = ArgOr(args, 1, "base", Value::Int(10));
  if (subject.is_int() || subject.is_bool()) return Value::Int(subject.AsInt());
  if (subject.is_float()) {
    const double d = subject.AsDouble();
    if (!std::isfinite(d) || std::fabs(d) > 9.2e18) return Unimplemented("int() of this float");
    return Value::Int(static_cast<int64_t>(d));
  }
  if (subject.is_string()) {
    if (auto value =
            ParsePyInt(subject.text(), base.is_int() ? static_cast<int>(base.AsInt()) : 10)) {
      return Value::Int(*value);
    }
    if (auto value = ParsePyFloat(subject.text());
        value && std::isfinite(*value) && std::fabs(*value) < 9.2e18) {
      return Value::Int(static_cast<int64_t>(*value));
    }
  }
  return fallback;
}

Result<Value> FilterFloat(Interpreter&, const Value& subject, const CallArgs& args) {
  if (subject.is_number()) return Value::Float(subject.AsDouble());
  if (subject.is_string()) {
    if (auto value = ParsePyFloat(subject.text())) return Value::Float(*value);
  }
  return ArgOr(args, 0, "default", Value::Float(0.0));
}

Result<Value> FilterAbs(Interpreter&, const Value& subject, const CallArgs&) {
  if (subject.is_float()) return Value::Float(std::fabs(subject.AsDouble()));
  if (subject.is_int() || subject.is_bool()) {
    if (subject.AsInt() == INT64_MIN) return Unimplemented("integer result is too large");
    return Value::Int(std::llabs(subject.AsInt()));
  }
  return TypeError(StrCat("bad operand type for abs(): '", TypeName(subject), "'"));
}

Result<Value> FilterRound(Interpreter&, const Value& subject, const CallArgs& args) {
  const Value precision = ArgOr(args, 0, "precision", Value::Int(0));
  const std::string method = ToStr(ArgOr(args, 1, "method", Value::String("common"))).text();
  if (!subject.is_number() || !precision.is_int()) return TypeError("round needs a number");
  const int64_t digits = precision.AsInt();
  if (method == "common" && !subject.is_float()) return Value::Int(subject.AsInt());
  const double x = subject.AsDouble();
  if (method == "common") {
    if (digits >= 0 && digits < 300) {
      // printf rounds the exact binary value half-to-even, as Python's round does.
      char buffer[512];
      std::snprintf(buffer, sizeof(buffer), "%.*f", static_cast<int>(digits), x);
      return Value::Float(std::strtod(buffer, nullptr));
    }
    const double scale = std::pow(10.0, static_cast<double>(-digits));
    return Value::Float(std::nearbyint(x / scale) * scale);
  }
  if (method != "ceil" && method != "floor") {
    return InvalidArgument("FilterArgumentError: method must be common, ceil or floor");
  }
  const double scale = std::pow(10.0, static_cast<double>(digits));
  const double scaled = method == "ceil" ? std::ceil(x * scale) : std::floor(x * scale);
  return Value::Float(scaled / scale);
}

Result<Value> FilterIndent(Interpreter&, const Value& subject, const CallArgs& args) {
  const Value width = ArgOr(args, 0, "width", Value::Int(4));
  const bool first = BoolArg(args, 1, "first", false);
  const bool blank = BoolArg(args, 2, "blank", false);
  const std::string indention =
      width.is_string() ? width.text()
                        : std::string(static_cast<size_t>(std::clamp<int64_t>(
                                          width.is_number() ? width.AsInt() : 4, 0, 1024)),
                                      ' ');
  MarkedString text = ToStr(subject);
  text.Append("\n");  // Jinja's quirk: the added newline makes splitlines keep a trailing blank
  const ByteRanges lines = PySplitLines(text.text());
  MarkedString out;
  for (size_t i = 0; i < lines.size(); ++i) {
    const MarkedString line = text.Substr(lines[i].first, lines[i].second);
    if (i > 0) {
      out.Append("\n");
      if (blank || !line.empty()) out.Append(indention);
    }
    out.Append(line);
  }
  if (first) {
    MarkedString prefixed(indention);
    prefixed.Append(out);
    out = std::move(prefixed);
  }
  return Value::String(std::move(out));
}

Result<Value> FilterWordcount(Interpreter&, const Value& subject, const CallArgs&) {
  const std::string text = ToStr(subject).text();
  int64_t words = 0;
  bool in_word = false;
  for (char c : text) {
    const bool word_char = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                           (c >= '0' && c <= '9') || c == '_' ||
                           static_cast<unsigned char>(c) >= 0x80;
    if (word_char && !in_word) ++words;
    in_word = word_char;
  }
  return Value::Int(words);
}

Result<Value> FilterFormat(Interpreter& in, const Value& subject, const CallArgs& args) {
  Value values = Value::Tuple(args.positional);
  if (!args.keyword.empty()) return Unimplemented("format with keyword arguments");
  return EvalBinary(BinaryOp::kMod, Value::String(ToStr(subject)), values,
                    in.limits().max_output_bytes);
}

Result<Value> FilterAttr(Interpreter&, const Value& subject, const CallArgs& args) {
  return GetPythonAttr(subject, ToStr(ArgOr(args, 0, "name", Value::String(""))).text());
}

struct NamedFilter {
  std::string_view name;
  FilterFn fn;
};

constexpr NamedFilter kFilters[] = {
    {"abs", FilterAbs},
    {"attr", FilterAttr},
    {"batch", FilterBatch},
    {"capitalize", FilterCapitalize},
    {"count", FilterLength},
    {"d", FilterDefault},
    {"default", FilterDefault},
    {"dictsort", FilterDictSort},
    {"e", FilterEscape},
    {"escape", FilterEscape},
    {"first", FilterFirst},
    {"float", FilterFloat},
    {"forceescape", FilterEscape},
    {"format", FilterFormat},
    {"indent", FilterIndent},
    {"int", FilterInt},
    {"items", FilterItems},
    {"join", FilterJoin},
    {"last", FilterLast},
    {"length", FilterLength},
    {"list", FilterList},
    {"lower", FilterLower},
    {"map", FilterMap},
    {"max", FilterMax},
    {"min", FilterMin},
    {"reject", FilterReject},
    {"rejectattr", FilterRejectAttr},
    {"replace", FilterReplace},
    {"reverse", FilterReverse},
    {"round", FilterRound},
    {"safe", FilterSafe},
    {"select", FilterSelect},
    {"selectattr", FilterSelectAttr},
    {"sort", FilterSort},
    {"string", FilterString},
    {"sum", FilterSum},
    {"title", FilterTitle},
    {"tojson", FilterTojson},
    {"trim", FilterTrim},
    {"unique", FilterUnique},
    {"upper", FilterUpper},
    {"wordcount", FilterWordcount},
};

}  // namespace
}  // namespace internal

FilterFn FindFilter(std::string_view name) {
  for (const internal::NamedFilter& filter : internal::kFilters) {
    if (filter.name == name) return filter.fn;
  }
  return nullptr;
}

}  // namespace mtplx::chat
