// The tool-call parser is a small state machine over a buffer of not-yet-consumed text. Every
// decision it takes (this is a tag, this name is declared, this value is complete) depends only on
// the text, never on where the pieces were cut, so any chunking of the same text gives the same
// content and the same calls.
//
// Malformed markup and repair:
//   - Before a call is announced (kCallStart), the markup read so far is kept in `raw_`. If it
//     turns out malformed (no "<function=" or "{" after "<tool_call>", a bad or undeclared
//     function name, a hermes body that is not valid JSON naming a declared tool), the opening tag
//     is released as text and everything after it is scanned again, so nothing is dropped and a
//     well-formed call later in that text is still found.
//   - Once kCallStart is out, the call cannot be taken back. Anything inside the function body
//     that is not a <parameter=...> or </function> tag ends the call there (repaired with the
//     parameters parsed so far) and the rest is scanned again as text. A call still open when the
//     text ends is closed the same way; a parameter value cut short is kept as far as it got (less
//     a trailing piece of "</parameter>"), a parameter tag cut short is dropped.
//   - A hermes body still open at the end is completed only when appending "}" or "}}" makes it
//     parse; otherwise it is released as text.
//   - A second <function=...> inside one <tool_call> wrapper is a call of its own.
//   - Whitespace between calls and after the last call is dropped, and so is an unfinished
//     closing tag ("</tool_c") after a finished call.
#include "api/tool_calls.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <initializer_list>
#include <optional>
#include <random>
#include <utility>

namespace mtplx::api {
namespace {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

constexpr std::string_view kWrapOpen = "<tool_call>";
constexpr std::string_view kWrapClose = "</tool_call>";
constexpr std::string_view kFunctionOpen = "<function=";
constexpr std::string_view kFunctionClose = "</function>";
constexpr std::string_view kParameterOpen = "<parameter=";
constexpr std::string_view kParameterClose = "</parameter>";
constexpr std::string_view kSpace = " \t\r\n";

// A function or parameter name longer than this, or with a newline or '<' in it, is not a tag:
// prose that happens to contain "<function=" is released instead of held indefinitely.
constexpr size_t kMaxNameBytes = 256;
// JSON nested deeper than this is refused (kept as a string or released as text): dump() and the
// schema walk recurse, and no real argument is nested this deep.
constexpr int kMaxJsonDepth = 128;
constexpr int kMaxSchemaDepth = 16;

bool StartsWith(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

// True when `text` is non-empty and a proper prefix of `tag`: more text could complete the tag.
bool IsPartialTag(std::string_view text, std::string_view tag) {
  return !text.empty() && text.size() < tag.size() && StartsWith(tag, text);
}

// The length of the longest suffix of `text` that is a proper prefix of `tag`.
size_t PartialTagSuffix(std::string_view text, std::string_view tag) {
  for (size_t n = std::min(text.size(), tag.size() - 1); n > 0; --n) {
    if (StartsWith(tag, text.substr(text.size() - n))) return n;
  }
  return 0;
}

std::string_view Trim(std::string_view text) {
  const size_t begin = text.find_first_not_of(kSpace);
  if (begin == std::string_view::npos) return {};
  const size_t end = text.find_last_not_of(kSpace);
  return text.substr(begin, end - begin + 1);
}

void DropLeadingSpace(std::string& text) {
  const size_t begin = text.find_first_not_of(kSpace);
  text.erase(0, begin == std::string::npos ? text.size() : begin);
}

bool IsNameSafe(std::string_view name) { return name.find_first_of("\n<") == name.npos; }

// Nesting depth of a JSON text, counting brackets outside strings (a cheap bound checked before
// parsing; invalid text may be miscounted, which only matters if it parses, and then it is valid).
bool JsonDepthWithin(std::string_view text, int limit) {
  int depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return false;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return true;
}

// Parses without exceptions; a failure (or too deep a text) is a discarded value.
template <typename JsonType>
JsonType ParseJson(std::string_view text) {
  if (!JsonDepthWithin(text, kMaxJsonDepth)) return JsonType(JsonType::value_t::discarded);
  return JsonType::parse(std::string(text), nullptr, /*allow_exceptions=*/false);
}

// Compact, and invalid UTF-8 becomes U+FFFD instead of an exception.
template <typename JsonType>
std::string Dump(const JsonType& value) {
  return value.dump(-1, ' ', false, JsonType::error_handler_t::replace);
}

enum TypeBit : unsigned {
  kString = 1,
  kInteger = 2,
  kNumber = 4,
  kBoolean = 8,
  kObject = 16,
  kArray = 32,
  kNull = 64,
};

unsigned TypeBitFor(const Json& name) {
  if (!name.is_string()) return 0;
  const std::string& type = name.get_ref<const std::string&>();
  if (type == "string") return kString;
  if (type == "integer") return kInteger;
  if (type == "number") return kNumber;
  if (type == "boolean") return kBoolean;
  if (type == "object") return kObject;
  if (type == "array") return kArray;
  if (type == "null") return kNull;
  return 0;
}

// The JSON types a schema admits: "type" (a name or a list of names), and the types of its
// anyOf / oneOf / allOf branches. A schema without any type but with "properties" or "items" is
// an object or an array.
unsigned SchemaTypes(const Json& schema, int depth) {
  if (!schema.is_object() || depth > kMaxSchemaDepth) return 0;
  unsigned types = 0;
  if (const auto type = schema.find("type"); type != schema.end()) {
    if (type->is_array()) {
      for (const Json& name : *type) types |= TypeBitFor(name);
    } else {
      types |= TypeBitFor(*type);
    }
  }
  for (const char* key : {"anyOf", "oneOf", "allOf"}) {
    const auto branches = schema.find(key);
    if (branches == schema.end() || !branches->is_array()) continue;
    for (const Json& branch : *branches) types |= SchemaTypes(branch, depth + 1);
  }
  if (types == 0 && schema.contains("properties")) types |= kObject;
  if (types == 0 && schema.contains("items")) types |= kArray;
  return types;
}

bool IsFiniteNumber(const Json& value) {
  return value.is_number() && (!value.is_number_float() || std::isfinite(value.get<double>()));
}

// Whether a parsed value has one of the schema's non-string types. A float with an integral value
// is an integer (JSON Schema counts 3.0 as one).
bool Admits(unsigned types, const Json& value) {
  if ((types & kInteger) && IsFiniteNumber(value)) {
    if (!value.is_number_float()) return true;
    const double number = value.get<double>();
    if (std::floor(number) == number) return true;
  }
  if ((types & kNumber) && IsFiniteNumber(value)) return true;
  if ((types & kBoolean) && value.is_boolean()) return true;
  if ((types & kObject) && value.is_object()) return true;
  if ((types & kArray) && value.is_array()) return true;
  if ((types & kNull) && value.is_null()) return true;
  return false;
}

// Models trained on Python sometimes write booleans as True / False.
std::optional<bool> PythonBoolean(std::string_view text) {
  text = Trim(text);
  if (text == "True") return true;
  if (text == "False") return false;
  return std::nullopt;
}

struct HermesCall {
  std::string name;
  std::string arguments;
};

}  // namespace

Json TypeParameterValue(std::string value, const nlohmann::json& schema) {
  const unsigned types = SchemaTypes(schema, 0);
  if ((types & ~unsigned{kString}) == 0) return Json(std::move(value));
  if (types & kBoolean) {
    if (const std::optional<bool> boolean = PythonBoolean(value)) return Json(*boolean);
  }
  Json parsed = ParseJson<Json>(value);
  if (!parsed.is_discarded() && Admits(types, parsed)) return parsed;
  return Json(std::move(value));
}

struct ToolCallParser::Impl {
  enum class State {
    kText,            // plain content, watching for "<tool_call>" or "<function="
    kWrapperOpen,     // after "<tool_call>": waiting for "<function=" or "{"
    kFunctionName,    // after "<function=": reading the name up to '>'
    kFunctionBody,    // inside a function (call announced): between parameters
    kParameterName,   // after "<parameter=": reading the key up to '>'
    kParameterValue,  // reading a value up to "</parameter>"
    kAfterFunction,   // after "</function>" inside a wrapper: expecting "</tool_call>"
    kJsonBody,        // after "<tool_call>" and "{": a hermes JSON body up to "</tool_call>"
  };

  explicit Impl(const Json& tools);

  bool enabled() const { return !schemas_.empty(); }
  void Feed(std::string_view text) {
    buf_.append(text);
    Run(/*at_end=*/false);
  }
  void Run(bool at_end) {
    while (Step(at_end)) {
    }
  }
  std::vector<ToolStreamPiece> TakeOutput() { return std::exchange(out_, {}); }

 private:
  // One transition; false when nothing more can happen until more text arrives.
  bool Step(bool at_end);
  bool StepText(bool at_end);
  bool StepWrapperOpen(bool at_end);
  bool StepFunctionName(bool at_end);
  bool StepFunctionBody(bool at_end);
  bool StepParameterName(bool at_end);
  bool StepParameterValue(bool at_end);
  bool StepAfterFunction(bool at_end);
  bool StepJsonBody(bool at_end);

  void AddTool(const Json& tool);
  const Json& PropertySchema(const std::string& function, const std::string& property) const;
  std::optional<HermesCall> ParseHermes(std::string_view body) const;

  void BeginMarkup(std::string_view tag);
  void Release();
  void StartCall(std::string name);
  void EmitParameter();
  void EndCall();
  void AbandonParameterTag();
  bool TryHermes(std::string_view body);
  std::string NewId();
  void EmitText(std::string_view text);
  void Emit(ToolStreamPiece::Kind kind, std::string text);

  std::map<std::string, Json, std::less<>> schemas_;  // declared tool -> its parameters schema
  std::mt19937 rng_;

  State state_ = State::kText;
  std::string buf_;          // text not consumed yet
  std::string raw_;          // markup consumed before its call was announced (see Release)
  size_t tag_size_ = 0;      // the opening tag at the start of `raw_`
  size_t name_start_ = 0;    // where the function name starts in `raw_`
  size_t body_start_ = 0;    // where the hermes JSON body starts in `raw_`
  bool wrapped_ = false;     // the current markup opened with "<tool_call>"
  bool after_call_ = false;  // a call just ended: hold whitespace, drop it if markup follows

  int next_index_ = 0;
  ToolCall call_;  // the open call; `arguments` holds the fragments emitted so far
  int parameter_count_ = 0;
  std::string key_;
  std::string value_;

  std::vector<ToolStreamPiece> out_;
};

ToolCallParser::Impl::Impl(const Json& tools) {
  if (tools.is_array()) {
    for (const Json& tool : tools) AddTool(tool);
  }
  // Ids only need to differ between calls of one parser (the counter does that) and look random
  // across requests; a missing entropy source must not throw out of the constructor.
  std::uint32_t seed = 0;
  try {
    std::random_device device;
    seed = device();
  } catch (...) {
    seed = static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(this));
  }
  rng_.seed(seed);
}

void ToolCallParser::Impl::AddTool(const Json& tool) {
  if (!tool.is_object()) return;
  const Json* declaration = &tool;
  if (const auto function = tool.find("function");
      function != tool.end() && function->is_object()) {
    declaration = &*function;
  }
  const auto name = declaration->find("name");
  if (name == declaration->end() || !name->is_string()) return;
  Json schema;
  for (const char* field : {"parameters", "input_schema"}) {
    if (const auto found = declaration->find(field); found != declaration->end()) {
      schema = *found;
      break;
    }
  }
  schemas_[name->get<std::string>()] = std::move(schema);
}

const Json& ToolCallParser::Impl::PropertySchema(const std::string& function,
                                                 const std::string& property) const {
  static const Json* const kNone = new Json();
  const auto tool = schemas_.find(function);
  if (tool == schemas_.end() || !tool->second.is_object()) return *kNone;
  const auto properties = tool->second.find("properties");
  if (properties == tool->second.end() || !properties->is_object()) return *kNone;
  const auto schema = properties->find(property);
  return schema == properties->end() ? *kNone : *schema;
}

bool ToolCallParser::Impl::Step(bool at_end) {
  switch (state_) {
    case State::kText:
      return StepText(at_end);
    case State::kWrapperOpen:
      return StepWrapperOpen(at_end);
    case State::kFunctionName:
      return StepFunctionName(at_end);
    case State::kFunctionBody:
      return StepFunctionBody(at_end);
    case State::kParameterName:
      return StepParameterName(at_end);
    case State::kParameterValue:
      return StepParameterValue(at_end);
    case State::kAfterFunction:
      return StepAfterFunction(at_end);
    case State::kJsonBody:
      return StepJsonBody(at_end);
  }
  return false;
}

bool ToolCallParser::Impl::StepText(bool at_end) {
  if (buf_.empty()) return false;
  // The first '<' that starts a whole opening tag, or a piece of one that more text could finish.
  size_t markup = std::string::npos;
  std::string_view tag;
  for (size_t at = buf_.find('<'); at != std::string::npos; at = buf_.find('<', at + 1)) {
    const std::string_view rest = std::string_view(buf_).substr(at);
    if (StartsWith(rest, kWrapOpen) || StartsWith(rest, kFunctionOpen)) {
      markup = at;
      tag = StartsWith(rest, kWrapOpen) ? kWrapOpen : kFunctionOpen;
      break;
    }
    if (IsPartialTag(rest, kWrapOpen) || IsPartialTag(rest, kFunctionOpen)) {
      markup = at;
      break;
    }
  }
  if (after_call_) {
    const size_t visible = buf_.find_first_not_of(kSpace);
    if (visible == std::string::npos) {
      if (at_end) buf_.clear();
      return false;
    }
    if (visible == markup) {
      if (tag.empty() && !at_end) return false;  // whitespace, then maybe the next call
      if (!tag.empty()) {
        buf_.erase(0, markup);
        markup = 0;
      }
    }
  }
  after_call_ = false;
  if (markup == std::string::npos || (tag.empty() && at_end)) {
    EmitText(buf_);
    buf_.clear();
    return false;
  }
  EmitText(std::string_view(buf_).substr(0, markup));
  buf_.erase(0, markup);
  if (tag.empty()) return false;  // a piece of a tag: wait for more text
  buf_.erase(0, tag.size());
  BeginMarkup(tag);
  return true;
}

void ToolCallParser::Impl::BeginMarkup(std::string_view tag) {
  raw_.assign(tag);
  tag_size_ = tag.size();
  wrapped_ = tag == kWrapOpen;
  name_start_ = raw_.size();
  state_ = wrapped_ ? State::kWrapperOpen : State::kFunctionName;
}

// The markup in `raw_` is not a call: its opening tag is content, and the text after that tag is
// scanned again (it may hold a real call).
void ToolCallParser::Impl::Release() {
  EmitText(std::string_view(raw_).substr(0, tag_size_));
  buf_.insert(0, raw_, tag_size_);
  raw_.clear();
  state_ = State::kText;
}

bool ToolCallParser::Impl::StepWrapperOpen(bool at_end) {
  const size_t space = std::min(buf_.find_first_not_of(kSpace), buf_.size());
  raw_.append(buf_, 0, space);
  buf_.erase(0, space);
  if (StartsWith(buf_, kFunctionOpen)) {
    raw_.append(kFunctionOpen);
    buf_.erase(0, kFunctionOpen.size());
    name_start_ = raw_.size();
    state_ = State::kFunctionName;
    return true;
  }
  if (!buf_.empty() && buf_[0] == '{') {
    body_start_ = raw_.size();
    state_ = State::kJsonBody;
    return true;
  }
  if ((buf_.empty() || IsPartialTag(buf_, kFunctionOpen)) && !at_end) return false;
  Release();
  return true;
}

bool ToolCallParser::Impl::StepFunctionName(bool at_end) {
  const size_t close = buf_.find('>');
  const std::string_view part = std::string_view(buf_).substr(0, close);
  if (!IsNameSafe(part) || raw_.size() - name_start_ + part.size() > kMaxNameBytes) {
    Release();
    return true;
  }
  raw_.append(part);
  buf_.erase(0, part.size());
  if (close == std::string::npos) {
    if (!at_end) return false;
    Release();
    return true;
  }
  buf_.erase(0, 1);
  std::string name(Trim(std::string_view(raw_).substr(name_start_)));
  raw_.push_back('>');
  if (schemas_.find(name) == schemas_.end()) {
    Release();
    return true;
  }
  raw_.clear();
  StartCall(std::move(name));
  return true;
}

bool ToolCallParser::Impl::StepFunctionBody(bool at_end) {
  DropLeadingSpace(buf_);
  if (StartsWith(buf_, kParameterOpen)) {
    buf_.erase(0, kParameterOpen.size());
    key_.clear();
    state_ = State::kParameterName;
    return true;
  }
  if (StartsWith(buf_, kFunctionClose)) {
    buf_.erase(0, kFunctionClose.size());
    EndCall();
    state_ = wrapped_ ? State::kAfterFunction : State::kText;
    return true;
  }
  const bool maybe_tag =
      buf_.empty() || IsPartialTag(buf_, kParameterOpen) || IsPartialTag(buf_, kFunctionClose);
  if (maybe_tag && !at_end) return false;
  // The text ended, or the body holds something that is not Qwen markup: the call ends here
  // with what it has, and whatever follows (not a tag piece) is scanned as text.
  if (maybe_tag) buf_.clear();
  EndCall();
  state_ = State::kText;
  return true;
}

bool ToolCallParser::Impl::StepParameterName(bool at_end) {
  const size_t close = buf_.find('>');
  const std::string_view part = std::string_view(buf_).substr(0, close);
  if (!IsNameSafe(part) || key_.size() + part.size() > kMaxNameBytes) {
    AbandonParameterTag();
    return true;
  }
  key_.append(part);
  buf_.erase(0, part.size());
  if (close == std::string::npos) {
    if (!at_end) return false;
    EndCall();  // a parameter tag cut short carries no value_: dropped
    state_ = State::kText;
    return true;
  }
  buf_.erase(0, 1);
  key_ = std::string(Trim(key_));
  value_.clear();
  state_ = State::kParameterValue;
  return true;
}

// "<parameter=" not followed by a sane name: the call ends, and the tag is content.
void ToolCallParser::Impl::AbandonParameterTag() {
  buf_.insert(0, std::string(kParameterOpen) + key_);
  EndCall();
  state_ = State::kText;
}

bool ToolCallParser::Impl::StepParameterValue(bool at_end) {
  const size_t close = buf_.find(kParameterClose);
  if (close != std::string::npos) {
    value_.append(buf_, 0, close);
    buf_.erase(0, close + kParameterClose.size());
    EmitParameter();
    state_ = State::kFunctionBody;
    return true;
  }
  // Keep only what could be the start of "</parameter>"; values can be long.
  const size_t keep = PartialTagSuffix(buf_, kParameterClose);
  value_.append(buf_, 0, buf_.size() - keep);
  buf_.erase(0, buf_.size() - keep);
  if (!at_end) return false;
  buf_.clear();  // the start of a closing tag the text never finished
  EmitParameter();
  EndCall();
  state_ = State::kText;
  return true;
}

bool ToolCallParser::Impl::StepAfterFunction(bool at_end) {
  DropLeadingSpace(buf_);
  if (StartsWith(buf_, kWrapClose)) {
    buf_.erase(0, kWrapClose.size());
  } else if (StartsWith(buf_, kFunctionOpen)) {
    // Another function in the same wrapper: a call of its own.
    buf_.erase(0, kFunctionOpen.size());
    BeginMarkup(kFunctionOpen);
    wrapped_ = true;
    return true;
  } else if (buf_.empty() || IsPartialTag(buf_, kWrapClose) || IsPartialTag(buf_, kFunctionOpen)) {
    if (!at_end) return false;
    buf_.clear();
  }
  // Anything else is content, scanned as text.
  state_ = State::kText;
  return true;
}

bool ToolCallParser::Impl::StepJsonBody(bool at_end) {
  const size_t close = buf_.find(kWrapClose);
  if (close != std::string::npos) {
    raw_.append(buf_, 0, close);
    buf_.erase(0, close);
    if (TryHermes(std::string_view(raw_).substr(body_start_))) {
      buf_.erase(0, kWrapClose.size());
    } else {
      Release();
    }
    return true;
  }
  const size_t keep = PartialTagSuffix(buf_, kWrapClose);
  raw_.append(buf_, 0, buf_.size() - keep);
  buf_.erase(0, buf_.size() - keep);
  if (!at_end) return false;
  // Cut short: complete the body only when closing braces are all it lacks.
  const std::string body(Trim(std::string_view(raw_).substr(body_start_)));
  for (const char* completion : {"", "}", "}}"}) {
    if (TryHermes(body + completion)) {
      buf_.clear();
      return true;
    }
  }
  Release();
  return true;
}

std::optional<HermesCall> ToolCallParser::Impl::ParseHermes(std::string_view body) const {
  const OrderedJson parsed = ParseJson<OrderedJson>(body);
  if (!parsed.is_object()) return std::nullopt;
  const auto name = parsed.find("name");
  if (name == parsed.end() || !name->is_string()) return std::nullopt;
  HermesCall result;
  result.name = name->get<std::string>();
  if (schemas_.find(result.name) == schemas_.end()) return std::nullopt;
  auto arguments = parsed.find("arguments");
  if (arguments == parsed.end()) arguments = parsed.find("parameters");
  OrderedJson object = OrderedJson::object();
  if (arguments != parsed.end() && !arguments->is_null()) {
    // Some models write the arguments as a JSON string holding the object.
    object = arguments->is_string()
                 ? ParseJson<OrderedJson>(arguments->get_ref<const std::string&>())
                 : *arguments;
    if (!object.is_object()) return std::nullopt;
  }
  result.arguments = Dump(object);
  return result;
}

bool ToolCallParser::Impl::TryHermes(std::string_view body) {
  std::optional<HermesCall> parsed = ParseHermes(body);
  if (!parsed) return false;
  raw_.clear();
  call_ = ToolCall{NewId(), std::move(parsed->name), ""};
  ToolStreamPiece start;
  start.kind = ToolStreamPiece::Kind::kCallStart;
  start.index = next_index_;
  start.call = call_;
  out_.push_back(std::move(start));
  call_.arguments = parsed->arguments;
  Emit(ToolStreamPiece::Kind::kCallArguments, std::move(parsed->arguments));
  ToolStreamPiece end;
  end.kind = ToolStreamPiece::Kind::kCallEnd;
  end.index = next_index_++;
  end.call = std::move(call_);
  out_.push_back(std::move(end));
  state_ = State::kText;
  after_call_ = true;
  return true;
}

void ToolCallParser::Impl::StartCall(std::string name) {
  call_ = ToolCall{NewId(), std::move(name), "{"};
  parameter_count_ = 0;
  ToolStreamPiece start;
  start.kind = ToolStreamPiece::Kind::kCallStart;
  start.index = next_index_;
  start.call = ToolCall{call_.id, call_.name, ""};
  out_.push_back(std::move(start));
  Emit(ToolStreamPiece::Kind::kCallArguments, "{");
  state_ = State::kFunctionBody;
}

// The Qwen template writes each value as "\n" VALUE "\n"; one newline each side is markup.
void ToolCallParser::Impl::EmitParameter() {
  std::string text = std::exchange(value_, {});
  if (!text.empty() && text.front() == '\n') text.erase(0, 1);
  if (!text.empty() && text.back() == '\n') text.pop_back();
  const Json typed = TypeParameterValue(std::move(text), PropertySchema(call_.name, key_));
  // A repeated key is emitted again: JSON readers keep the last one.
  std::string fragment = parameter_count_++ > 0 ? "," : "";
  fragment += Dump(Json(key_)) + ":" + Dump(typed);
  call_.arguments += fragment;
  Emit(ToolStreamPiece::Kind::kCallArguments, std::move(fragment));
}

void ToolCallParser::Impl::EndCall() {
  call_.arguments += "}";
  Emit(ToolStreamPiece::Kind::kCallArguments, "}");
  ToolStreamPiece end;
  end.kind = ToolStreamPiece::Kind::kCallEnd;
  end.index = next_index_++;
  end.call = std::move(call_);
  call_ = ToolCall{};
  out_.push_back(std::move(end));
  after_call_ = true;
}

std::string ToolCallParser::Impl::NewId() {
  char hex[9];
  std::snprintf(hex, sizeof(hex), "%08x", static_cast<unsigned>(rng_()));
  return "call_" + std::to_string(next_index_) + "_" + hex;
}

void ToolCallParser::Impl::EmitText(std::string_view text) {
  if (text.empty()) return;
  if (!out_.empty() && out_.back().kind == ToolStreamPiece::Kind::kText) {
    out_.back().text.append(text);
    return;
  }
  ToolStreamPiece piece;
  piece.text = std::string(text);
  out_.push_back(std::move(piece));
}

void ToolCallParser::Impl::Emit(ToolStreamPiece::Kind kind, std::string text) {
  ToolStreamPiece piece;
  piece.kind = kind;
  piece.index = next_index_;
  piece.text = std::move(text);
  out_.push_back(std::move(piece));
}

ToolCallParser::ToolCallParser(const nlohmann::json& tools)
    : impl_(std::make_unique<Impl>(tools)) {}
ToolCallParser::~ToolCallParser() = default;
ToolCallParser::ToolCallParser(ToolCallParser&&) noexcept = default;
ToolCallParser& ToolCallParser::operator=(ToolCallParser&&) noexcept = default;

std::vector<ToolStreamPiece> ToolCallParser::Push(std::string_view text) {
  if (!impl_ || !impl_->enabled()) {
    if (text.empty()) return {};
    ToolStreamPiece piece;
    piece.text = std::string(text);
    std::vector<ToolStreamPiece> pieces;
    pieces.push_back(std::move(piece));
    return pieces;
  }
  impl_->Feed(text);
  return Collect();
}

std::vector<ToolStreamPiece> ToolCallParser::Finish() {
  if (!impl_ || !impl_->enabled()) return {};
  impl_->Run(/*at_end=*/true);
  return Collect();
}

std::vector<ToolStreamPiece> ToolCallParser::Collect() {
  std::vector<ToolStreamPiece> pieces = impl_->TakeOutput();
  for (const ToolStreamPiece& piece : pieces) {
    if (piece.kind == ToolStreamPiece::Kind::kCallEnd) calls_.push_back(piece.call);
  }
  return pieces;
}

}  // namespace mtplx::api
