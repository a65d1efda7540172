// Python str methods. Results cut from the receiver keep its user marks byte for byte.
#include <algorithm>

#include "base/strings.h"
#include "chat/methods.h"
#include "chat/py_text.h"
#include "chat/value_ops.h"

namespace mtplx::chat {
namespace {

Status TypeError(const std::string& message) { return InvalidArgument("TypeError: " + message); }

// An optional string argument: nullptr when absent or None.
Result<const std::string*> OptionalText(const Value* arg, std::string_view what) {
  if (arg == nullptr || arg->is_none()) return static_cast<const std::string*>(nullptr);
  if (!arg->is_string()) {
    return TypeError(StrCat(what, " must be str or None, not ", TypeName(*arg)));
  }
  return &arg->text();
}

Result<const Value*> RequiredString(const CallArgs& args, size_t index, std::string_view name,
                                    std::string_view method) {
  const Value* arg = args.Get(index, name);
  if (arg == nullptr) return TypeError(StrCat(method, "() missing required argument '", name, "'"));
  if (!arg->is_string()) {
    return TypeError(StrCat(method, "() argument must be str, not ", TypeName(*arg)));
  }
  return arg;
}

Result<long long> OptionalInt(const Value* arg, long long fallback) {
  if (arg == nullptr || arg->is_none()) return fallback;
  if (!arg->is_int() && !arg->is_bool()) {
    return TypeError(StrCat("'", TypeName(*arg), "' object cannot be interpreted as an integer"));
  }
  return static_cast<long long>(arg->AsInt());
}

Value Pieces(const Value& self, const ByteRanges& ranges) {
  std::vector<Value> out;
  out.reserve(ranges.size());
  for (const auto& [begin, end] : ranges)
    out.push_back(Value::String(self.AsString().Substr(begin, end)));
  return Value::List(std::move(out));
}

Result<Value> Strip(const Value& self, const CallArgs& args, bool left, bool right) {
  MTPLX_RETURN_IF_ERROR(CheckArity("strip", args, 1, {"chars"}));
  MTPLX_ASSIGN_OR_RETURN(const std::string* chars, OptionalText(args.Get(0, "chars"), "chars"));
  const auto [begin, end] = PyStripRange(self.text(), chars, left, right);
  return Value::String(self.AsString().Substr(begin, end));
}

Result<Value> StripBoth(const Value& self, const CallArgs& args) {
  return Strip(self, args, true, true);
}
Result<Value> LStrip(const Value& self, const CallArgs& args) {
  return Strip(self, args, true, false);
}
Result<Value> RStrip(const Value& self, const CallArgs& args) {
  return Strip(self, args, false, true);
}

Result<Value> SplitImpl(const Value& self, const CallArgs& args, bool from_right) {
  MTPLX_RETURN_IF_ERROR(CheckArity("split", args, 2, {"sep", "maxsplit"}));
  MTPLX_ASSIGN_OR_RETURN(const std::string* sep, OptionalText(args.Get(0, "sep"), "sep"));
  MTPLX_ASSIGN_OR_RETURN(const long long maxsplit, OptionalInt(args.Get(1, "maxsplit"), -1));
  if (sep != nullptr && sep->empty()) return InvalidArgument("ValueError: empty separator");
  return Pieces(self, from_right ? PyRSplit(self.text(), sep, maxsplit)
                                 : PySplit(self.text(), sep, maxsplit));
}

Result<Value> Split(const Value& self, const CallArgs& args) {
  return SplitImpl(self, args, false);
}
Result<Value> RSplit(const Value& self, const CallArgs& args) {
  return SplitImpl(self, args, true);
}

Result<Value> SplitLines(const Value& self, const CallArgs& args) {
  MTPLX_RETURN_IF_ERROR(CheckArity("splitlines", args, 0));
  return Pieces(self, PySplitLines(self.text()));
}

// startswith/endswith with a str or a tuple of str.
Result<Value> Affix(const Value& self, const CallArgs& args, bool prefix) {
  MTPLX_RETURN_IF_ERROR(CheckArity(prefix ? "startswith" : "endswith", args, 1));
  const Value* arg = args.Get(0, "");
  if (arg == nullptr) return TypeError("startswith() takes at least 1 argument (0 given)");
  std::vector<Value> candidates = arg->is_tuple() ? arg->items() : std::vector<Value>{*arg};
  for (const Value& candidate : candidates) {
    if (!candidate.is_string()) {
      return TypeError(StrCat(prefix ? "startswith" : "endswith",
                              " first arg must be str or a tuple of str, not ",
                              TypeName(candidate)));
    }
    if (prefix ? StartsWith(self.text(), candidate.text())
               : EndsWith(self.text(), candidate.text())) {
      return Value::Bool(true);
    }
  }
  return Value::Bool(false);
}

Result<Value> StartsWithMethod(const Value& self, const CallArgs& args) {
  return Affix(self, args, true);
}
Result<Value> EndsWithMethod(const Value& self, const CallArgs& args) {
  return Affix(self, args, false);
}

Result<Value> CaseMap(const Value& self, const CallArgs& args, CaseMode mode) {
  MTPLX_RETURN_IF_ERROR(CheckArity("upper", args, 0));
  return Value::String(PyCaseMap(self.AsString(), mode));
}

Result<Value> Upper(const Value& self, const CallArgs& args) {
  return CaseMap(self, args, CaseMode::kUpper);
}
Result<Value> Lower(const Value& self, const CallArgs& args) {
  return CaseMap(self, args, CaseMode::kLower);
}
Result<Value> Title(const Value& self, const CallArgs& args) {
  return CaseMap(self, args, CaseMode::kTitle);
}
Result<Value> Capitalize(const Value& self, const CallArgs& args) {
  return CaseMap(self, args, CaseMode::kCapitalize);
}

Result<Value> SwapCase(const Value& self, const CallArgs& args) {
  return CaseMap(self, args, CaseMode::kSwap);
}

// partition / rpartition: (head, sep, tail).
Result<Value> PartitionImpl(const Value& self, const CallArgs& args, bool from_right) {
  MTPLX_RETURN_IF_ERROR(CheckArity("partition", args, 1));
  MTPLX_ASSIGN_OR_RETURN(const Value* sep, RequiredString(args, 0, "sep", "partition"));
  if (sep->text().empty()) return InvalidArgument("ValueError: empty separator");
  const MarkedString& text = self.AsString();
  const size_t found = from_right ? text.text().rfind(sep->text()) : text.text().find(sep->text());
  if (found == std::string::npos) {
    const Value empty = Value::String("");
    return from_right ? Value::Tuple({empty, empty, self}) : Value::Tuple({self, empty, empty});
  }
  const size_t after = found + sep->text().size();
  return Value::Tuple({Value::String(text.Substr(0, found)),
                       Value::String(text.Substr(found, after)),
                       Value::String(text.Substr(after, text.size()))});
}

Result<Value> Partition(const Value& self, const CallArgs& args) {
  return PartitionImpl(self, args, false);
}
Result<Value> RPartition(const Value& self, const CallArgs& args) {
  return PartitionImpl(self, args, true);
}

// ljust / rjust / center / zfill: pad to a width in code points.
Result<Value> Pad(const Value& self, const CallArgs& args, int where) {
  MTPLX_RETURN_IF_ERROR(CheckArity("ljust", args, where == 3 ? 1 : 2));
  MTPLX_ASSIGN_OR_RETURN(const long long width, OptionalInt(args.Get(0, "width"), 0));
  std::string fill = where == 3 ? "0" : " ";
  if (const Value* arg = args.Get(1, "fillchar")) {
    if (!arg->is_string() || CodePointCount(arg->text()) != 1) {
      return TypeError("The fill character must be exactly one character long");
    }
    fill = arg->text();
  }
  const long long length = static_cast<long long>(CodePointCount(self.text()));
  const long long missing = std::clamp(width - length, 0LL, 1LL << 24);
  long long left = where == 0 ? 0 : where == 1 ? missing : missing / 2 + (missing & width & 1);
  if (where == 3) left = missing;
  std::string left_pad;
  std::string right_pad;
  for (long long i = 0; i < left; ++i) left_pad += fill;
  for (long long i = left; i < missing; ++i) right_pad += fill;
  MarkedString out;
  const MarkedString& text = self.AsString();
  size_t sign = 0;
  if (where == 3 && !text.empty() && (text.text()[0] == '-' || text.text()[0] == '+')) sign = 1;
  out.Append(text.Substr(0, sign));
  out.Append(left_pad);
  out.Append(text.Substr(sign, text.size()));
  out.Append(right_pad);
  return Value::String(std::move(out));
}

Result<Value> LJust(const Value& self, const CallArgs& args) { return Pad(self, args, 0); }
Result<Value> RJust(const Value& self, const CallArgs& args) { return Pad(self, args, 1); }
Result<Value> Center(const Value& self, const CallArgs& args) { return Pad(self, args, 2); }
Result<Value> ZFill(const Value& self, const CallArgs& args) { return Pad(self, args, 3); }

Result<Value> IsAscii(const Value& self, const CallArgs& args) {
  MTPLX_RETURN_IF_ERROR(CheckArity("isascii", args, 0));
  return Value::Bool(chat::IsAscii(self.text()));
}

Result<Value> Replace(const Value& self, const CallArgs& args) {
  MTPLX_RETURN_IF_ERROR(CheckArity("replace", args, 3, {"count"}));
  MTPLX_ASSIGN_OR_RETURN(const Value* old_text, RequiredString(args, 0, "old", "replace"));
  MTPLX_ASSIGN_OR_RETURN(const Value* new_text, RequiredString(args, 1, "new", "replace"));
  MTPLX_ASSIGN_OR_RETURN(long long count, OptionalInt(args.Get(2, "count"), -1));
  const MarkedString& text = self.AsString();
  const std::string& old_str = old_text->text();
  MarkedString out;
  size_t pos = 0;
  if (old_str.empty()) {
    // Python inserts the replacement before every character and at the end.
    const std::vector<size_t> offsets = CodePointOffsets(text.text());
    for (size_t i = 0; i < offsets.size(); ++i) {
      if (count >= 0 && static_cast<long long>(i) >= count) break;
      out.Append(text.Substr(pos, offsets[i]));
      out.Append(new_text->AsString());
      pos = offsets[i];
    }
    out.Append(text.Substr(pos, text.size()));
    return Value::String(std::move(out));
  }
  for (size_t found = text.text().find(old_str); found != std::string::npos && count != 0;
       found = text.text().find(old_str, pos), --count) {
    out.Append(text.Substr(pos, found));
    out.Append(new_text->AsString());
    pos = found + old_str.size();
  }
  out.Append(text.Substr(pos, text.size()));
  return Value::String(std::move(out));
}

// find/rfind/index/rindex/count over code points [start, end).
struct SearchRange {
  size_t byte_begin;
  size_t byte_end;
  std::vector<size_t> offsets;
};

Result<SearchRange> RangeArgs(const Value& self, const CallArgs& args) {
  SearchRange range;
  range.offsets = CodePointOffsets(self.text());
  const long long n = static_cast<long long>(range.offsets.size()) - 1;
  MTPLX_ASSIGN_OR_RETURN(long long start, OptionalInt(args.Get(1, "start"), 0));
  MTPLX_ASSIGN_OR_RETURN(long long end, OptionalInt(args.Get(2, "end"), n));
  const auto clamp = [n](long long i) { return std::clamp(i < 0 ? i + n : i, 0LL, n); };
  start = clamp(start);
  end = std::max(clamp(end), start);
  range.byte_begin = range.offsets[start];
  range.byte_end = range.offsets[end];
  return range;
}

long long CodePointIndex(const std::vector<size_t>& offsets, size_t byte) {
  return std::lower_bound(offsets.begin(), offsets.end(), byte) - offsets.begin();
}

Result<long long> FindImpl(const Value& self, const CallArgs& args, bool reverse) {
  MTPLX_RETURN_IF_ERROR(CheckArity("find", args, 3));
  MTPLX_ASSIGN_OR_RETURN(const Value* sub, RequiredString(args, 0, "sub", "find"));
  MTPLX_ASSIGN_OR_RETURN(const SearchRange range, RangeArgs(self, args));
  const std::string_view window =
      std::string_view(self.text()).substr(range.byte_begin, range.byte_end - range.byte_begin);
  const size_t found = reverse ? window.rfind(sub->text()) : window.find(sub->text());
  if (found == std::string_view::npos) return -1LL;
  return CodePointIndex(range.offsets, range.byte_begin + found);
}

Result<Value> Find(const Value& self, const CallArgs& args) {
  MTPLX_ASSIGN_OR_RETURN(const long long index, FindImpl(self, args, false));
  return Value::Int(index);
}

Result<Value> RFind(const Value& self, const CallArgs& args) {
  MTPLX_ASSIGN_OR_RETURN(const long long index, FindImpl(self, args, true));
  return Value::Int(index);
}

Result<Value> Index(const Value& self, const CallArgs& args) {
  MTPLX_ASSIGN_OR_RETURN(const long long index, FindImpl(self, args, false));
  if (index < 0) return InvalidArgument("ValueError: substring not found");
  return Value::Int(index);
}

Result<Value> RIndex(const Value& self, const CallArgs& args) {
  MTPLX_ASSIGN_OR_RETURN(const long long index, FindImpl(self, args, true));
  if (index < 0) return InvalidArgument("ValueError: substring not found");
  return Value::Int(index);
}

Result<Value> Count(const Value& self, const CallArgs& args) {
  MTPLX_RETURN_IF_ERROR(CheckArity("count", args, 3));
  MTPLX_ASSIGN_OR_RETURN(const Value* sub, RequiredString(args, 0, "sub", "count"));
  MTPLX_ASSIGN_OR_RETURN(const SearchRange range, RangeArgs(self, args));
  const std::string_view window =
      std::string_view(self.text()).substr(range.byte_begin, range.byte_end - range.byte_begin);
  if (sub->text().empty()) return Value::Int(CodePointCount(window) + 1);
  int64_t count = 0;
  for (size_t pos = window.find(sub->text()); pos != std::string_view::npos;
       pos = window.find(sub->text(), pos + sub->text().size())) {
    ++count;
  }
  return Value::Int(count);
}

Result<Value> Join(const Value& self, const CallArgs& args) {
  MTPLX_RETURN_IF_ERROR(CheckArity("join", args, 1));
  const Value* iterable = args.Get(0, "iterable");
  if (iterable == nullptr) return TypeError("join() takes exactly one argument (0 given)");
  MTPLX_ASSIGN_OR_RETURN(const std::vector<Value> items, Iterate(*iterable));
  MarkedString out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (!items[i].is_string()) {
      return TypeError(
          StrCat("sequence item ", i, ": expected str instance, ", TypeName(items[i]), " found"));
    }
    if (i > 0) out.Append(self.AsString());
    out.Append(items[i].AsString());
  }
  return Value::String(std::move(out));
}

// One replacement field of str.format: "{}", "{0}", "{name}", with "!r"/"!s".
Status FormatField(std::string_view field, const CallArgs& args, size_t* auto_index,
                   MarkedString* out) {
  const size_t bang = field.find('!');
  const std::string_view name = field.substr(0, bang);
  const std::string_view conversion = bang == std::string_view::npos ? "" : field.substr(bang);
  if (name.find_first_of(":.[") != std::string_view::npos ||
      (conversion != "" && conversion != "!r" && conversion != "!s")) {
    return Unimplemented(StrCat("str.format field '{", field, "}' is not supported"));
  }
  const Value* value = nullptr;
  if (name.empty()) {
    value = *auto_index < args.positional.size() ? &args.positional[(*auto_index)++] : nullptr;
  } else if (std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    const size_t index = std::strtoul(std::string(name).c_str(), nullptr, 10);
    value = index < args.positional.size() ? &args.positional[index] : nullptr;
  } else {
    value = args.Keyword(name);
  }
  if (value == nullptr) {
    return InvalidArgument(StrCat("IndexError: Replacement index ", name, " out of range"));
  }
  if (conversion == "!r") {
    out->Append(Repr(*value), value->ContainsUserText());
  } else {
    out->Append(ToStr(*value));
  }
  return Status::Ok();
}

Result<Value> Format(const Value& self, const CallArgs& args) {
  const MarkedString& text = self.AsString();
  MarkedString out;
  size_t auto_index = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t brace = text.text().find_first_of("{}", pos);
    if (brace == std::string::npos) break;
    out.Append(text.Substr(pos, brace));
    const char c = text.text()[brace];
    if (brace + 1 < text.size() && text.text()[brace + 1] == c) {  // "{{" or "}}"
      out.Append(std::string_view(&c, 1), false);
      pos = brace + 2;
      continue;
    }
    if (c == '}') return InvalidArgument("ValueError: Single '}' encountered in format string");
    const size_t close = text.text().find('}', brace);
    if (close == std::string::npos) {
      return InvalidArgument("ValueError: Single '{' encountered in format string");
    }
    MTPLX_RETURN_IF_ERROR(
        FormatField(std::string_view(text.text()).substr(brace + 1, close - brace - 1), args,
                    &auto_index, &out));
    pos = close + 1;
  }
  out.Append(text.Substr(pos, text.size()));
  return Value::String(std::move(out));
}

template <bool (*Predicate)(char32_t)>
Result<Value> AllCodePoints(const Value& self, const CallArgs& args) {
  MTPLX_RETURN_IF_ERROR(CheckArity("is...", args, 0));
  const std::string& text = self.text();
  if (text.empty()) return Value::Bool(false);
  for (size_t pos = 0; pos < text.size();) {
    char32_t c;
    pos += DecodeUtf8(text, pos, &c);
    if (!Predicate(c)) return Value::Bool(false);
  }
  return Value::Bool(true);
}

bool IsDigitCp(char32_t c) { return c >= '0' && c <= '9'; }
bool IsAlphaCp(char32_t c) { return IsCased(c) || c >= 0x2E80; }  // cased letters and CJK
bool IsAlnumCp(char32_t c) { return IsDigitCp(c) || IsAlphaCp(c); }

// islower/isupper: at least one cased character and none of the other case.
Result<Value> CaseCheck(const Value& self, bool want_lower) {
  bool cased = false;
  const std::string& text = self.text();
  for (size_t pos = 0; pos < text.size();) {
    char32_t c;
    pos += DecodeUtf8(text, pos, &c);
    if (want_lower ? IsUpperCase(c) : IsLowerCase(c)) return Value::Bool(false);
    cased |= IsCased(c);
  }
  return Value::Bool(cased);
}

Result<Value> IsLower(const Value& self, const CallArgs& args) { return CaseCheck(self, true); }
Result<Value> IsUpper(const Value& self, const CallArgs& args) { return CaseCheck(self, false); }

Result<Value> RemoveAffix(const Value& self, const CallArgs& args, bool prefix) {
  MTPLX_ASSIGN_OR_RETURN(const Value* affix, RequiredString(args, 0, "affix", "removeprefix"));
  const std::string& text = self.text();
  const std::string& a = affix->text();
  if (prefix && StartsWith(text, a))
    return Value::String(self.AsString().Substr(a.size(), text.size()));
  if (!prefix && EndsWith(text, a))
    return Value::String(self.AsString().Substr(0, text.size() - a.size()));
  return self;
}

Result<Value> RemovePrefix(const Value& self, const CallArgs& args) {
  return RemoveAffix(self, args, true);
}
Result<Value> RemoveSuffix(const Value& self, const CallArgs& args) {
  return RemoveAffix(self, args, false);
}

Result<Value> Unsupported(const Value&, const CallArgs&) {
  return Unimplemented("this str method is not supported in chat templates");
}

struct NamedMethod {
  std::string_view name;
  MethodImpl impl;
};

constexpr NamedMethod kStringMethods[] = {
    {"capitalize", Capitalize},
    {"center", Center},
    {"count", Count},
    {"endswith", EndsWithMethod},
    {"find", Find},
    {"format", Format},
    {"index", Index},
    {"isascii", IsAscii},
    {"isalnum", AllCodePoints<IsAlnumCp>},
    {"isalpha", AllCodePoints<IsAlphaCp>},
    {"isdecimal", AllCodePoints<IsDigitCp>},
    {"isdigit", AllCodePoints<IsDigitCp>},
    {"islower", IsLower},
    {"isnumeric", AllCodePoints<IsDigitCp>},
    {"isspace", AllCodePoints<IsPySpace>},
    {"isupper", IsUpper},
    {"join", Join},
    {"ljust", LJust},
    {"lower", Lower},
    {"lstrip", LStrip},
    {"partition", Partition},
    {"removeprefix", RemovePrefix},
    {"removesuffix", RemoveSuffix},
    {"replace", Replace},
    {"rfind", RFind},
    {"rindex", RIndex},
    {"rjust", RJust},
    {"rpartition", RPartition},
    {"rsplit", RSplit},
    {"rstrip", RStrip},
    {"split", Split},
    {"splitlines", SplitLines},
    {"startswith", StartsWithMethod},
    {"strip", StripBoth},
    {"swapcase", SwapCase},
    {"title", Title},
    {"upper", Upper},
    {"zfill", ZFill},
};

}  // namespace

MethodImpl FindStringMethod(std::string_view name) {
  for (const NamedMethod& method : kStringMethods) {
    if (method.name == name) return method.impl;
  }
  // Python has these too; they exist (`is defined` holds) but calling them is refused.
  static constexpr std::string_view kUnsupported[] = {"casefold",   "encode",       "expandtabs",
                                                      "format_map", "isidentifier", "isprintable",
                                                      "istitle",    "maketrans",    "translate"};
  for (std::string_view unsupported : kUnsupported) {
    if (unsupported == name) return Unsupported;
  }
  return nullptr;
}

}  // namespace mtplx::chat
