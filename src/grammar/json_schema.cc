#include "grammar/json_schema.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "base/strings.h"
#include "grammar/gbnf.h"
#include "grammar/regex.h"

namespace mtplx::grammar {
namespace {

// Ordered: properties are generated in the order the schema lists them.
using Json = nlohmann::ordered_json;

constexpr const char* kPrimitives = R"(
{p}ws ::= ("" | " " | "\n" [ \t]{0,20})
{p}char ::= [^"\\\x00-\x1f] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})
{p}string ::= "\"" {p}char* "\""
{p}int ::= "-"? ("0" | [1-9] [0-9]{0,15})
{p}number ::= {p}int ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,3})?
{p}boolean ::= "true" | "false"
{p}null ::= "null"
{p}value ::= {p}object | {p}array | {p}string | {p}number | {p}boolean | {p}null
{p}object ::= "{" {p}ws ({p}string {p}ws ":" {p}ws {p}value {p}ws ("," {p}ws {p}string {p}ws ":" {p}ws {p}value {p}ws)*)? "}"
{p}array ::= "[" {p}ws ({p}value {p}ws ("," {p}ws {p}value {p}ws)*)? "]"
{p}raw-plain ::= [^<]
)";

// The longest string a schema's maxLength may ask for (CountedRepeat).
constexpr int64_t kMostCharacters = 1000000;
// Raw text is counted together with its tag matcher's state up to this many characters (a rule
// for each count and state); past it the counted characters leave out "<".
constexpr int64_t kMostTrackedRawCharacters = 256;

// The tag that ends a Qwen XML parameter's value.
constexpr std::string_view kParameterClose = "</parameter>";

// The alternatives that read one character in state k of a matcher of kParameterClose's
// prefixes (k: how many of the tag's first characters the text ends in), each followed by the
// rule next(new state). The tag's only "<" is its first character, so a mismatch leads back to
// state 1 after a "<" and to state 0 after anything else; no state lets its last character in.
template <typename Next>
std::string TagStep(size_t k, const Next& next) {
  std::string alternatives;
  if (k + 1 < kParameterClose.size())
    alternatives = StrCat("\"", kParameterClose[k], "\" ", next(k + 1), " | ");
  if (k > 0) alternatives += StrCat("\"<\" ", next(1), " | ");
  const std::string other = k > 0 ? std::string(1, kParameterClose[k]) : "";
  return alternatives + StrCat("[^", other, "<] ", next(0));
}

// The primitives with their rule names prefixed, and raw-string (RawTextRules).
std::string Primitives(const std::string& prefix) {
  std::string primitives = kPrimitives;
  for (size_t at = primitives.find("{p}"); at != std::string::npos; at = primitives.find("{p}", at))
    primitives.replace(at, 3, prefix);
  return primitives + RawTextRules(prefix + "raw-string");
}

const std::set<std::string>& Annotations() {
  static const std::set<std::string> kSet = {
      "title",    "description", "default",  "examples",  "$schema",          "$id",
      "$comment", "deprecated",  "readOnly", "writeOnly", "contentMediaType", "contentEncoding",
      "$defs",    "definitions", "strict"};
  return kSet;
}

const std::set<std::string>& Supported() {
  static const std::set<std::string> kSet = {"type",
                                             "properties",
                                             "required",
                                             "additionalProperties",
                                             "enum",
                                             "const",
                                             "anyOf",
                                             "oneOf",
                                             "allOf",
                                             "$ref",
                                             "items",
                                             "prefixItems",
                                             "minItems",
                                             "maxItems",
                                             "minLength",
                                             "maxLength",
                                             "pattern",
                                             "minimum",
                                             "maximum",
                                             "exclusiveMinimum",
                                             "exclusiveMaximum",
                                             "format"};
  return kSet;
}

std::string Digits(int64_t v) { return std::to_string(v); }

// GBNF for the decimal strings of the integers in [lo, hi] with lo, hi of the same length
// (no leading zeros unless the length is 1).
std::string SameLength(const std::string& lo, const std::string& hi) {
  if (lo.empty()) return "\"\"";
  if (lo == hi) return GbnfLiteral(lo);
  const size_t rest = lo.size() - 1;
  const std::string any_rest = rest ? StrCat(" [0-9]{", rest, "}") : "";
  const bool lo_zeros = lo.find_first_not_of('0', 1) == std::string::npos;
  const bool hi_nines = hi.find_first_not_of('9', 1) == std::string::npos;
  if (lo[0] == hi[0])
    return StrCat(GbnfLiteral(lo.substr(0, 1)), " (", SameLength(lo.substr(1), hi.substr(1)), ")");
  std::vector<std::string> alts;
  char from = lo[0], to = hi[0];
  if (!lo_zeros) {
    alts.push_back(StrCat(GbnfLiteral(lo.substr(0, 1)), " (",
                          SameLength(lo.substr(1), std::string(rest, '9')), ")"));
    ++from;
  }
  if (!hi_nines) --to;
  if (from <= to)
    alts.push_back(StrCat("[", std::string(1, from), "-", std::string(1, to), "]", any_rest));
  if (!hi_nines)
    alts.push_back(StrCat(GbnfLiteral(hi.substr(0, 1)), " (",
                          SameLength(std::string(rest, '0'), hi.substr(1)), ")"));
  std::string out = "(";
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
  return out + ")";
}

// Non-negative integers in [lo, hi] (hi < 0: no upper bound), written without leading zeros.
std::string NonNegativeRange(int64_t lo, int64_t hi) {
  std::vector<std::string> alts;
  const std::string los = Digits(lo);
  const size_t max_len = hi < 0 ? 19 : Digits(hi).size();
  for (size_t len = los.size(); len <= max_len; ++len) {
    const std::string first = len == los.size() ? los : "1" + std::string(len - 1, '0');
    std::string last = std::string(len, '9');
    if (hi >= 0 && len == max_len) last = Digits(hi);
    if (len == 19 && hi < 0) last = "9223372036854775807";
    if (len == 1 && first == "0" && last == "0") {
      alts.push_back("\"0\"");
      continue;
    }
    alts.push_back(SameLength(first, last));
  }
  std::string out = "(";
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
  return out + ")";
}

std::string IntegerRange(std::optional<int64_t> lo, std::optional<int64_t> hi) {
  std::vector<std::string> alts;
  // Negative part: -x for x in [max(1, -hi), -lo].
  if (!lo || *lo < 0) {
    const int64_t neg_lo = hi && *hi < 0 ? -*hi : 1;
    const int64_t neg_hi = lo ? -*lo : -1;
    if (neg_hi < 0 || neg_lo <= neg_hi) alts.push_back("\"-\" " + NonNegativeRange(neg_lo, neg_hi));
  }
  if (!hi || *hi >= 0) alts.push_back(NonNegativeRange(lo && *lo > 0 ? *lo : 0, hi ? *hi : -1));
  std::string out = "(";
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
  return out + ")";
}

class Compiler {
 public:
  Compiler(const Json& root, std::string prefix) : root_(root), p_(std::move(prefix)) {}

  Result<std::string> Run(const std::string& root_name, ValueForm form) {
    std::string body;
    MTPLX_RETURN_IF_ERROR(Value(root_, "#", form, body));
    std::string out = StrCat(root_name, " ::= ", body, "\n");
    // Rules for $refs, added while compiling (a ref may add more).
    while (!pending_refs_.empty()) {
      const std::string ref = *pending_refs_.begin();
      pending_refs_.erase(pending_refs_.begin());
      const Json* target = nullptr;
      MTPLX_RETURN_IF_ERROR(Resolve(ref, target));
      std::string ref_body;
      MTPLX_RETURN_IF_ERROR(Value(*target, ref, ValueForm::kJson, ref_body));
      out += StrCat(ref_rules_[ref], " ::= ", ref_body, "\n");
    }
    out += rules_;
    return out + Primitives(p_);
  }

 private:
  Status Error(const std::string& path, const std::string& what) const {
    return InvalidArgument(StrCat("schema ", path, ": ", what));
  }
  std::string P(const std::string& name) const { return p_ + name; }

  Status Resolve(const std::string& ref, const Json*& out) const {
    if (ref == "#") {
      out = &root_;
      return Status::Ok();
    }
    if (ref.rfind("#/", 0) != 0)
      return Error(ref, "only local references (#/$defs/NAME) are supported");
    const Json* at = &root_;
    size_t start = 2;
    while (start <= ref.size()) {
      size_t end = ref.find('/', start);
      if (end == std::string::npos) end = ref.size();
      std::string key = ref.substr(start, end - start);
      for (size_t i; (i = key.find("~1")) != std::string::npos;) key.replace(i, 2, "/");
      for (size_t i; (i = key.find("~0")) != std::string::npos;) key.replace(i, 2, "~");
      if (!at->is_object() || !at->contains(key)) return Error(ref, "the reference points nowhere");
      at = &(*at)[key];
      start = end + 1;
    }
    out = at;
    return Status::Ok();
  }

  std::string NewRule(const std::string& base, const std::string& body) {
    const std::string name = StrCat(p_, base, "-", ++counter_);
    rules_ += StrCat(name, " ::= ", body, "\n");
    return name;
  }

  Status CheckKeywords(const Json& s, const std::string& path) const {
    for (const auto& [key, value] : s.items()) {
      (void)value;
      if (Annotations().count(key) || Supported().count(key)) continue;
      return Error(StrCat(path, "/", key), StrCat("the keyword '", key, "' is not supported"));
    }
    return Status::Ok();
  }

  static Result<std::optional<int64_t>> IntBound(const Json& s, const char* key, int64_t adjust,
                                                 const std::string& path) {
    if (!s.contains(key)) return std::optional<int64_t>();
    const Json& v = s[key];
    if (!v.is_number()) return InvalidArgument(StrCat("schema ", path, "/", key, ": not a number"));
    double d = v.get<double>();
    d = adjust > 0 ? std::floor(d) + 1 : adjust < 0 ? std::ceil(d) - 1 : d;
    if (key == std::string("minimum")) d = std::ceil(v.get<double>());
    if (key == std::string("maximum")) d = std::floor(v.get<double>());
    if (!(std::fabs(d) < 9.2e18)) return std::optional<int64_t>();
    return std::optional<int64_t>(static_cast<int64_t>(d));
  }

  Status Integer(const Json& s, const std::string& path, std::string& out) {
    std::optional<int64_t> lo, hi;
    MTPLX_ASSIGN_OR_RETURN(auto min, IntBound(s, "minimum", 0, path));
    MTPLX_ASSIGN_OR_RETURN(auto xmin, IntBound(s, "exclusiveMinimum", 1, path));
    MTPLX_ASSIGN_OR_RETURN(auto max, IntBound(s, "maximum", 0, path));
    MTPLX_ASSIGN_OR_RETURN(auto xmax, IntBound(s, "exclusiveMaximum", -1, path));
    lo = min;
    if (xmin && (!lo || *xmin > *lo)) lo = xmin;
    hi = max;
    if (xmax && (!hi || *xmax < *hi)) hi = xmax;
    if (lo && hi && *lo > *hi) return Error(path, "no integer lies within the bounds");
    if (!lo && !hi) {
      out = P("int");
      return Status::Ok();
    }
    out = NewRule("int", IntegerRange(lo, hi));
    return Status::Ok();
  }

  Status Number(const Json& s, const std::string& path, std::string& out) {
    out = P("number");
    for (const char* key : {"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"}) {
      if (!s.contains(key)) continue;
      const Json& v = s[key];
      const bool non_negative =
          (std::string(key) == "minimum" || std::string(key) == "exclusiveMinimum") &&
          v.is_number() && v.get<double>() == 0.0;
      if (!non_negative)
        return Error(StrCat(path, "/", key),
                     "bounds on a number are supported only as minimum 0 (use an integer type "
                     "for other bounds)");
      out = NewRule("nonneg-number", StrCat("(\"0\" | [1-9] [0-9]{0,15}) (\".\" [0-9]{1,16})?"));
    }
    return Status::Ok();
  }

  Status String(const Json& s, const std::string& path, ValueForm form, std::string& out) {
    const bool raw = form == ValueForm::kRaw;
    // Raw text holds anything but "</parameter>", except that raw text counted past
    // kMostTrackedRawCharacters never holds "<" (each of its characters then counts once).
    const std::string ch = raw ? P("raw-plain") : P("char");
    auto quote = [&](const std::string& body) {
      return raw ? body : StrCat("\"\\\"\" ", body, " \"\\\"\"");
    };
    if (s.contains("format") && s["format"].is_string()) {
      const std::string f = s["format"];
      // Calendar-exact: months 01-12, days within the month (February 29 in leap years only),
      // hours 00-23, minutes and seconds 00-59. Years 0001-9999 (there is no year 0).
      const char* kYear =
          "([1-9] [0-9]{3} | \"0\" ([1-9] [0-9]{2} | \"0\" ([1-9] [0-9] | \"0\" [1-9])))";
      // Two digits that are a non-zero multiple of 4 (04-96). A leap year ends in them, or is
      // them followed by 00 (a multiple of 400).
      const std::string by4 = "(\"0\" [48] | [2468] [048] | [13579] [26])";
      const std::string leap_year = StrCat("([0-9] [0-9] ", by4, " | ", by4, " \"00\")");
      const std::string day31 = "(\"0\" [1-9] | [12] [0-9] | \"3\" [01])";
      const std::string day30 = "(\"0\" [1-9] | [12] [0-9] | \"30\")";
      const std::string day28 = "(\"0\" [1-9] | \"1\" [0-9] | \"2\" [0-8])";
      const std::string date = StrCat("(", kYear, " \"-\" ((\"0\" [13578] | \"1\" [02]) \"-\" ",
                                      day31, " | (\"0\" [469] | \"11\") \"-\" ", day30,
                                      " | \"02-\" ", day28, ") | ", leap_year, " \"-02-29\")");
      const std::string hms = "([01] [0-9] | \"2\" [0-3]) \":\" [0-5] [0-9] \":\" [0-5] [0-9]";
      const std::string offset = "(\"Z\" | [+-] ([01] [0-9] | \"2\" [0-3]) \":\" [0-5] [0-9])";
      const std::string time = StrCat(hms, " (\".\" [0-9]{1,9})? ", offset);
      if (f == "date") {
        out = NewRule("date", quote(date));
        return Status::Ok();
      }
      if (f == "time") {
        out = NewRule("time", quote(time));
        return Status::Ok();
      }
      if (f == "date-time") {
        out = NewRule("date-time", quote(StrCat(date, " \"T\" ", time)));
        return Status::Ok();
      }
      if (f == "uuid") {
        out = NewRule("uuid", quote("[0-9a-f]{8} \"-\" [0-9a-f]{4} \"-\" [0-9a-f]{4} \"-\" "
                                    "[0-9a-f]{4} \"-\" [0-9a-f]{12}"));
        return Status::Ok();
      }
    }
    if (s.contains("pattern")) {
      if (!s["pattern"].is_string()) return Error(path + "/pattern", "not a string");
      auto expr = RegexToGbnf(s["pattern"].get<std::string>(), !raw);
      if (!expr.ok()) return Error(path + "/pattern", expr.status().message());
      out = NewRule("pattern", quote(*expr));
      return Status::Ok();
    }
    int64_t min = 0, max = -1;  // -1: no maximum
    if (s.contains("minLength")) {
      if (!s["minLength"].is_number_unsigned()) return Error(path + "/minLength", "not a count");
      min = s["minLength"].get<int64_t>();
    }
    if (s.contains("maxLength")) {
      if (!s["maxLength"].is_number_unsigned()) return Error(path + "/maxLength", "not a count");
      max = s["maxLength"].get<int64_t>();
    }
    if (max >= 0 && min > max) return Error(path, "minLength is above maxLength");
    if (min > kMaxRepeat) return Error(path + "/minLength", StrCat("above ", kMaxRepeat));
    if (max > kMostCharacters)
      return Error(path + "/maxLength", StrCat("above ", kMostCharacters, " is not supported"));
    if (min == 0 && max < 0) {
      out = raw ? P("raw-string") : P("string");
      return Status::Ok();
    }
    if (raw && (max < 0 ? min : max) <= kMostTrackedRawCharacters) {
      out = CountedRawText(min, max);
      return Status::Ok();
    }
    const std::string rest = raw ? P("raw-string") : P("char") + "*";
    out = NewRule("string",
                  quote(max < 0 ? StrCat(ch, "{", min, "} ", rest) : CountedRepeat(ch, min, max)));
    return Status::Ok();
  }

  // Raw text of min to max characters (max < 0: no maximum) without "</parameter>": the tag
  // matcher's states (RawTextRules) counted out a character at a time, a rule for each count and
  // reachable state; past the last count an open range goes on as raw-string.
  std::string CountedRawText(int64_t min, int64_t max) {
    const std::string base = StrCat(p_, "raw-count-", ++counter_);
    const int64_t top = max < 0 ? min : max;
    auto name = [&](int64_t count, size_t k) {
      return count == top && max < 0 ? StrCat(P("raw-string"), "-", k)
                                     : StrCat(base, "-", count, "-", k);
    };
    for (int64_t count = 0; count < top || (count == top && max >= 0); ++count) {
      auto next = [&](size_t k) { return name(count + 1, k); };
      for (size_t k = 0; k < kParameterClose.size() && static_cast<int64_t>(k) <= count; ++k) {
        std::string alternatives = count >= min ? "\"\"" : "";
        if (count < top)
          alternatives += StrCat(alternatives.empty() ? "" : " | ", TagStep(k, next));
        rules_ += StrCat(name(count, k), " ::= ", alternatives, "\n");
      }
    }
    return name(0, 0);
  }

  // `unit` min to max times in GBNF, whose counts go up to kMaxRepeat: a wider range is
  // hundreds of units at a time and then up to 99 single ones, with the last hundred kept apart
  // so that the total never passes max.
  static std::string CountedRepeat(const std::string& unit, int64_t min, int64_t max) {
    if (max - min <= kMaxRepeat) return StrCat(unit, "{", min, ",", max, "}");
    const int64_t extra = max - min, hundreds = extra / 100, rest = extra % 100;
    const std::string hundred = StrCat("(", unit, "{100})");
    return StrCat(min > 0 ? StrCat(unit, "{", min, "} ") : "", "(", hundred, "{0,", hundreds - 1,
                  "} ", unit, "{0,99} | ", hundred, "{", hundreds, "} ", unit, "{0,", rest, "})");
  }

  Status Array(const Json& s, const std::string& path, std::string& out) {
    std::vector<std::string> items;  // prefixItems, then the repeated item (may be none)
    if (s.contains("prefixItems")) {
      if (!s["prefixItems"].is_array()) return Error(path + "/prefixItems", "not an array");
      for (size_t i = 0; i < s["prefixItems"].size(); ++i) {
        std::string item;
        MTPLX_RETURN_IF_ERROR(
            Value(s["prefixItems"][i], StrCat(path, "/prefixItems/", i), ValueForm::kJson, item));
        items.push_back(item);
      }
    }
    std::string rest = P("value");
    bool rest_allowed = true;
    if (s.contains("items")) {
      if (s["items"].is_boolean()) {
        rest_allowed = s["items"].get<bool>();
      } else {
        MTPLX_RETURN_IF_ERROR(Value(s["items"], path + "/items", ValueForm::kJson, rest));
      }
    }
    int64_t min = 0, max = -1;
    if (s.contains("minItems")) {
      if (!s["minItems"].is_number_unsigned()) return Error(path + "/minItems", "not a count");
      min = s["minItems"].get<int64_t>();
    }
    if (s.contains("maxItems")) {
      if (!s["maxItems"].is_number_unsigned()) return Error(path + "/maxItems", "not a count");
      max = s["maxItems"].get<int64_t>();
    }
    if (max >= 0 && min > max) return Error(path, "minItems is above maxItems");
    if (min > 1000 || max > 1000) return Error(path, "item counts above 1000 are not supported");
    const int64_t fixed = static_cast<int64_t>(items.size());
    if (!rest_allowed) max = max < 0 ? fixed : std::min(max, fixed);
    if (max >= 0 && max < fixed) items.resize(max), min = std::min(min, max);
    // Elements: position i is items[i] for i < fixed, else `rest`. Elements past min optional.
    const std::string sep = StrCat("\",\" ", P("ws"), " ");
    std::string body;
    const int64_t total_prefix = static_cast<int64_t>(items.size());
    std::string tail;  // what may follow after the prefix items
    const int64_t rest_min = std::max<int64_t>(0, min - total_prefix);
    const int64_t rest_max = max < 0 ? -1 : max - total_prefix;
    if (rest_allowed && rest_max != 0) {
      const std::string one = StrCat(rest, " ", P("ws"));
      tail = rest_max < 0 ? StrCat("(", sep, one, ")", "{", rest_min, ",}")
                          : StrCat("(", sep, one, ")", "{", rest_min, ",", rest_max, "}");
    }
    if (total_prefix == 0) {
      // [ (item (, item){min-1, max-1})? ]
      if (!rest_allowed || rest_max == 0) {
        out = NewRule("array", StrCat("\"[\" ", P("ws"), " \"]\""));
        return Status::Ok();
      }
      const std::string one = StrCat(rest, " ", P("ws"));
      const int64_t more_min = std::max<int64_t>(0, min - 1);
      const std::string more = max < 0 ? StrCat("(", sep, one, "){", more_min, ",}")
                                       : StrCat("(", sep, one, "){", more_min, ",", max - 1, "}");
      body = StrCat("(", one, " ", more, ")");
      if (min == 0) body += "?";
      out = NewRule("array", StrCat("\"[\" ", P("ws"), " ", body, " \"]\""));
      return Status::Ok();
    }
    // Prefix items: the first min of them required, then each further one optional in a chain.
    std::string chain = tail;
    for (int64_t i = total_prefix - 1; i >= 0; --i) {
      const std::string one = StrCat(i == 0 ? "" : sep, items[i], " ", P("ws"), " ", chain);
      chain = i + 1 > min && i > 0 ? StrCat("(", one, ")?") : StrCat("(", one, ")");
    }
    body = min == 0 ? StrCat(chain, "?") : chain;
    out = NewRule("array", StrCat("\"[\" ", P("ws"), " ", body, " \"]\""));
    return Status::Ok();
  }

  Status Object(const Json& s, const std::string& path, std::string& out) {
    std::vector<std::pair<std::string, const Json*>> props;
    std::set<std::string> required;
    if (s.contains("properties")) {
      if (!s["properties"].is_object()) return Error(path + "/properties", "not an object");
      for (const auto& [key, value] : s["properties"].items()) props.emplace_back(key, &value);
    }
    if (s.contains("required")) {
      if (!s["required"].is_array()) return Error(path + "/required", "not an array");
      for (const Json& r : s["required"]) {
        if (!r.is_string()) return Error(path + "/required", "not an array of names");
        required.insert(r.get<std::string>());
      }
    }
    for (const std::string& r : required) {
      bool found = false;
      for (const auto& pr : props) found = found || pr.first == r;
      if (!found)
        return Error(path + "/required",
                     StrCat("'", r, "' is required but has no schema in 'properties'"));
    }
    std::string extra;  // the value schema of additional properties, "" when none are allowed
    if (s.contains("additionalProperties")) {
      const Json& a = s["additionalProperties"];
      if (a.is_boolean()) {
        if (a.get<bool>()) extra = P("value");
      } else {
        MTPLX_RETURN_IF_ERROR(Value(a, path + "/additionalProperties", ValueForm::kJson, extra));
      }
    }
    const std::string sep = StrCat("\",\" ", P("ws"), " ");
    auto kv = [&](const std::string& key, const std::string& value) {
      return StrCat(GbnfLiteral(Json(key).dump()), " ", P("ws"), " \":\" ", P("ws"), " ", value,
                    " ", P("ws"));
    };
    std::vector<std::string> values(props.size());
    for (size_t i = 0; i < props.size(); ++i)
      MTPLX_RETURN_IF_ERROR(Value(*props[i].second, StrCat(path, "/properties/", props[i].first),
                                  ValueForm::kJson, values[i]));
    // A(i): the members from i on, none written yet; B(i): some written (a comma comes first).
    std::vector<std::string> names;
    for (const auto& pr : props) names.push_back(pr.first);
    const std::string extra_kv = extra.empty() ? ""
                                               : StrCat(KeyNotIn(names), " ", P("ws"), " \":\" ",
                                                        P("ws"), " ", extra, " ", P("ws"));
    std::string a_next =
        extra.empty() ? "\"\"" : StrCat("(", extra_kv, " (", sep, extra_kv, ")*)?");
    std::string b_next = extra.empty() ? "\"\"" : StrCat("(", sep, extra_kv, ")*");
    for (size_t j = props.size(); j-- > 0;) {
      const std::string member = kv(props[j].first, values[j]);
      const bool req = required.count(props[j].first) > 0;
      const std::string a =
          req ? StrCat(member, " ", b_next) : StrCat(member, " ", b_next, " | ", a_next);
      const std::string b =
          req ? StrCat(sep, member, " ", b_next) : StrCat(sep, member, " ", b_next, " | ", b_next);
      a_next = NewRule("members", a);
      b_next = NewRule("more", b);
    }
    out = NewRule("object", StrCat("\"{\" ", P("ws"), " ", a_next, " \"}\""));
    return Status::Ok();
  }

  // A JSON string that is none of `names` (an additional property may not reuse a declared
  // name with another value schema): a walk down the trie of the names, leaving it at any
  // character no name continues with, closing the string only off the names' ends.
  std::string KeyNotIn(std::vector<std::string> names) {
    if (names.empty()) return P("string");
    return StrCat("\"\\\"\" ", KeyNode(names, ""));
  }
  std::string KeyNode(const std::vector<std::string>& names, const std::string& prefix) {
    std::set<std::string> next;  // the UTF-8 characters that continue some name after prefix
    bool is_name = false;
    for (const std::string& n : names) {
      if (n.size() < prefix.size() || n.compare(0, prefix.size(), prefix) != 0) continue;
      if (n.size() == prefix.size()) {
        is_name = true;
        continue;
      }
      const unsigned char lead = static_cast<unsigned char>(n[prefix.size()]);
      const size_t len = lead < 0x80 ? 1 : (lead >> 5) == 6 ? 2 : (lead >> 4) == 14 ? 3 : 4;
      next.insert(n.substr(prefix.size(), len));
    }
    const std::string close = GbnfLiteral("\"");
    std::vector<std::string> alts;
    if (!is_name) alts.push_back(close);
    std::string excluded;
    for (const std::string& c : next) {
      alts.push_back(StrCat(GbnfLiteral(c), " ", KeyNode(names, prefix + c)));
      if (c.size() == 1 && static_cast<unsigned char>(c[0]) < 0x20) continue;  // excluded anyway
      if (c.size() == 1 && std::strchr("]-^\\\"", c[0])) excluded += '\\';
      excluded += c;
    }
    // Escapes always leave the names (they are matched as written, unescaped).
    alts.push_back(StrCat("([^\"\\\\\\x00-\\x1f", excluded,
                          "] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4})) ", P("char"), "* ",
                          close));
    std::string body = "(";
    for (size_t i = 0; i < alts.size(); ++i) body += (i ? " | " : "") + alts[i];
    return NewRule("key", body + ")");
  }

  // allOf of object schemas, merged: properties and required united, other keywords from the
  // first part that sets them. A part with additionalProperties false admits only its own
  // properties, so the merged object may hold only the properties every such part declares.
  Status AllOf(const Json& s, const std::string& path, ValueForm form, std::string& out) {
    if (!s["allOf"].is_array()) return Error(path + "/allOf", "not an array");
    Json merged = s;
    merged.erase("allOf");
    merged.erase("additionalProperties");
    std::vector<const Json*> parts{&s};
    for (const Json& part : s["allOf"]) {
      const Json* p = &part;
      if (part.is_object() && part.contains("$ref"))
        MTPLX_RETURN_IF_ERROR(Resolve(part["$ref"], p));
      if (!p->is_object()) return Error(path + "/allOf", "every part must be an object schema");
      parts.push_back(p);
    }
    std::optional<std::set<std::string>> allowed;
    for (const Json* p : parts) {
      if (p->contains("additionalProperties") && (*p)["additionalProperties"] == Json(false)) {
        std::set<std::string> own;
        if (p->contains("properties"))
          for (const auto& [k, v] : (*p)["properties"].items()) own.insert(k);
        if (allowed) {
          std::set<std::string> both;
          for (const std::string& k : *allowed)
            if (own.count(k)) both.insert(k);
          allowed = both;
        } else {
          allowed = own;
        }
      }
      if (p == &s) continue;
      for (const auto& [k, v] : p->items()) {
        if (k == "properties") {
          for (const auto& [pk, pv] : v.items()) {
            Json& slot = merged["properties"][pk];
            // A property two parts describe must satisfy both.
            slot = slot.is_null() ? pv : Json{{"allOf", Json::array({slot, pv})}};
          }
        } else if (k == "required") {
          for (const Json& r : v) merged["required"].push_back(r);
        } else if (k != "additionalProperties" && !merged.contains(k)) {
          merged[k] = v;
        }
      }
    }
    if (allowed) {
      merged["additionalProperties"] = false;
      if (merged.contains("properties")) {
        Json kept = Json::object();
        for (const auto& [k, v] : merged["properties"].items())
          if (allowed->count(k)) kept[k] = v;
        merged["properties"] = kept;
      }
      if (merged.contains("required"))
        for (const Json& r : merged["required"])
          if (r.is_string() && !allowed->count(r.get<std::string>()))
            return Error(path + "/allOf",
                         StrCat("no object satisfies every part: '", r.get<std::string>(),
                                "' is required but additionalProperties false excludes it"));
    }
    return Value(merged, path, form, out);
  }

  Status Typed(const Json& s, const std::string& type, const std::string& path, ValueForm form,
               std::string& out) {
    const bool raw = form == ValueForm::kRaw;
    if (type == "string") return String(s, path, form, out);
    if (type == "integer") return Integer(s, path, out);
    if (type == "number") return Number(s, path, out);
    if (type == "boolean")
      out = P("boolean");
    else if (type == "null")
      out = P("null");
    else if (type == "object")
      return Object(s, path, out);
    else if (type == "array")
      return Array(s, path, out);
    else
      return Error(path + "/type", StrCat("unknown type '", type, "'"));
    (void)raw;
    return Status::Ok();
  }

  // A literal value (enum / const) in the output form.
  std::string LiteralValue(const Json& v, ValueForm form) const {
    if (form == ValueForm::kRaw && v.is_string()) return GbnfLiteral(v.get<std::string>());
    return GbnfLiteral(v.dump());
  }

  Status Value(const Json& s, const std::string& path, ValueForm form, std::string& out) {
    if (s.is_boolean()) {
      if (!s.get<bool>()) return Error(path, "the schema false matches nothing");
      out = form == ValueForm::kRaw ? P("raw-string") : P("value");
      return Status::Ok();
    }
    if (!s.is_object()) return Error(path, "a schema must be an object or a boolean");
    MTPLX_RETURN_IF_ERROR(CheckKeywords(s, path));
    if (s.contains("$ref")) {
      if (!s["$ref"].is_string()) return Error(path + "/$ref", "not a string");
      const std::string ref = s["$ref"];
      const Json* target = nullptr;
      MTPLX_RETURN_IF_ERROR(Resolve(ref, target));
      auto it = ref_rules_.find(ref);
      if (it == ref_rules_.end()) {
        it = ref_rules_.emplace(ref, StrCat(p_, "ref-", ref_rules_.size() + 1)).first;
        pending_refs_.insert(ref);
      }
      out = it->second;
      return Status::Ok();
    }
    if (s.contains("const")) {
      out = LiteralValue(s["const"], form);
      return Status::Ok();
    }
    if (s.contains("enum")) {
      if (!s["enum"].is_array() || s["enum"].empty())
        return Error(path + "/enum", "not a non-empty array");
      out = "(";
      for (size_t i = 0; i < s["enum"].size(); ++i)
        out += (i ? " | " : "") + LiteralValue(s["enum"][i], form);
      out += ")";
      return Status::Ok();
    }
    for (const char* key : {"anyOf", "oneOf"}) {
      if (!s.contains(key)) continue;
      const Json& alts = s[key];
      if (!alts.is_array() || alts.empty())
        return Error(StrCat(path, "/", key), "not a non-empty array");
      std::string body = "(";
      for (size_t i = 0; i < alts.size(); ++i) {
        // Sibling keywords apply to every branch (a common way to write shared properties).
        Json branch = alts[i];
        if (branch.is_object())
          for (const auto& [k, v] : s.items())
            if (k != key && !branch.contains(k) && k != "$defs" && k != "definitions")
              branch[k] = v;
        std::string alt;
        MTPLX_RETURN_IF_ERROR(Value(branch, StrCat(path, "/", key, "/", i), form, alt));
        body += (i ? " | " : "") + alt;
      }
      out = body + ")";
      return Status::Ok();
    }
    if (s.contains("allOf")) return AllOf(s, path, form, out);
    if (s.contains("type")) {
      const Json& t = s["type"];
      if (t.is_string()) return Typed(s, t.get<std::string>(), path, form, out);
      if (!t.is_array() || t.empty())
        return Error(path + "/type", "not a type name or a list of them");
      out = "(";
      for (size_t i = 0; i < t.size(); ++i) {
        if (!t[i].is_string()) return Error(path + "/type", "not a list of type names");
        std::string alt;
        MTPLX_RETURN_IF_ERROR(Typed(s, t[i].get<std::string>(), path, form, alt));
        out += (i ? " | " : "") + alt;
      }
      out += ")";
      return Status::Ok();
    }
    // No type: inferred from the keywords present, else any value.
    if (s.contains("properties") || s.contains("additionalProperties") || s.contains("required"))
      return Object(s, path, out);
    if (s.contains("items") || s.contains("prefixItems")) return Array(s, path, out);
    out = form == ValueForm::kRaw ? P("raw-string") : P("value");
    return Status::Ok();
  }

  const Json& root_;
  std::string p_;
  std::string rules_;
  int counter_ = 0;
  std::map<std::string, std::string> ref_rules_;
  std::set<std::string> pending_refs_;
};

Result<std::string> Convert(std::string_view schema, ValueForm form, const std::string& root_name,
                            const std::string& prefix) {
  Json parsed = Json::parse(schema, nullptr, false);
  if (parsed.is_discarded()) return InvalidArgument("the schema is not valid JSON");
  return Compiler(parsed, prefix).Run(root_name, form);
}

}  // namespace

Result<std::string> JsonSchemaToGbnf(std::string_view schema, const std::string& root_name,
                                     const std::string& prefix) {
  return Convert(schema, ValueForm::kJson, root_name, prefix);
}

Result<std::string> JsonSchemaToGbnfAs(std::string_view schema, ValueForm form,
                                       const std::string& root_name, const std::string& prefix) {
  return Convert(schema, form, root_name, prefix);
}

Result<Grammar> CompileJsonSchema(std::string_view schema) {
  MTPLX_ASSIGN_OR_RETURN(const std::string gbnf, JsonSchemaToGbnf(schema));
  return ParseGbnf(gbnf);
}

std::string JsonObjectGbnf(const std::string& root_name) {
  return root_name + " ::= object\n" + Primitives("");
}

std::string RawTextRules(const std::string& name) {
  auto state = [&](size_t k) { return StrCat(name, "-", k); };
  std::string out = StrCat(name, " ::= ", state(0), "\n");
  for (size_t k = 0; k < kParameterClose.size(); ++k)
    out += StrCat(state(k), " ::= \"\" | ", TagStep(k, state), "\n");
  return out;
}

}  // namespace mtplx::grammar
