#include "grammar/json_schema.h"

#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "grammar/gbnf.h"
#include "grammar/matcher.h"
#include "support/test_support.h"

namespace mtplx::grammar {
namespace {

using Json = nlohmann::json;

std::shared_ptr<const Grammar> Compile(const std::string& schema) {
  auto g = CompileJsonSchema(schema);
  EXPECT_TRUE(g.ok()) << schema << ": " << g.status().message();
  if (!g.ok()) return nullptr;
  return std::make_shared<const Grammar>(std::move(*g));
}

bool Matches(const std::shared_ptr<const Grammar>& g, std::string_view text) {
  Matcher m(g);
  MatchState s = m.Start();
  return m.AdvanceBytes(s, text) && s.CanEnd();
}

struct Case {
  const char* schema;
  std::vector<const char*> valid;
  std::vector<const char*> invalid;
};

TEST(JsonSchemaTest, AcceptsWhatTheSchemaAllowsAndNothingElse) {
  const Case cases[] = {
      {R"({"type": "string"})",
       {R"("")", R"("a b")", R"("q\"\\\u00e9\n")", "\"é\""},
       {R"(")", R"("a)", "\"\n\"", "1", R"("\x")"}},
      {R"({"type": "integer"})", {"0", "-7", "123456"}, {"01", "1.5", "-", "+1", "\"1\""}},
      {R"({"type": "number"})", {"0", "-1.25", "3e10", "2.5E-3"}, {"1.", ".5", "1e", "NaN"}},
      {R"({"type": "boolean"})", {"true", "false"}, {"True", "1"}},
      {R"({"type": "null"})", {"null"}, {"nil", ""}},
      {R"({"type": ["string", "null"]})", {"null", R"("x")"}, {"1"}},
      {R"({"enum": ["red", 2, null, {"a": 1}]})",
       {R"("red")", "2", "null", R"({"a":1})"},
       {R"("blue")", "3"}},
      {R"({"const": "fixed"})", {R"("fixed")"}, {R"("other")"}},
      {R"({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
          "required": ["a"]})",
       {R"({"a": 1})", R"({"a":1,"b":"x"})", "{\n  \"a\": 1,\n  \"b\": \"x\"\n}"},
       {R"({})", R"({"b":"x"})", R"({"a":1,"c":2})", R"({"a":"1"})", R"({"a":1,})"}},
      {R"({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}})",
       {"{}", R"({"a":1})", R"({"b":2})", R"({"a":1,"b":2})"},
       {R"({"b":2,"a":1})", R"({,"b":2})"}},
      {R"({"type": "object", "additionalProperties": {"type": "integer"}})",
       {"{}", R"({"x": 1, "y": 2})"},
       {R"({"x": "1"})"}},
      {R"({"type": "object", "properties": {"a": {"type": "integer"}},
          "additionalProperties": true})",
       {R"({"a": 1, "z": [true]})", R"({"z": null})"},
       {R"({"a": "x"})"}},
      {R"({"type": "object", "properties": {"max-tokens": {"type": "integer"}},
          "additionalProperties": {"type": "string"}})",
       {R"({"max-tokens": 1})", R"({"max-tokenz": "x"})", R"({"max": "x", "max-tokens2": "y"})",
        R"({"max-tokens": 1, "a\"b": "c"})"},
       {R"({"max-tokens": "x"})", R"({"max": 1})"}},
      {R"({"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3})",
       {"[1]", "[1, 2, 3]"},
       {"[]", "[1,2,3,4]", "[\"a\"]", "[1,]"}},
      {R"({"type": "array"})", {"[]", R"([1, "a", {"b": []}])"}, {"[", "[1 2]"}},
      {R"({"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}],
          "items": false})",
       {"[]", R"(["a"])", R"(["a", 1])"},
       {R"([1])", R"(["a", 1, 2])"}},
      {R"({"type": "string", "minLength": 2, "maxLength": 3})",
       {R"("ab")", R"("abc")"},
       {R"("a")", R"("abcd")"}},
      {R"({"type": "string", "pattern": "^wf_[a-z0-9-]{6,}$"})",
       {R"("wf_abc-123")"},
       {R"("wf_abc")", R"("xwf_abcdefg")", R"("wf_ABCDEFG")"}},
      {R"({"type": "string", "pattern": "[0-9]{3}"})", {R"("a123b")", R"("999")"}, {R"("12")"}},
      {R"({"type": "string", "pattern": "^(cat|dog)s?$"})",
       {R"("cat")", R"("dogs")"},
       {R"("cow")", R"("cats!")"}},
      {R"({"type": "string", "format": "date"})",
       {R"("2026-12-02")", R"("2024-02-29")", R"("2000-02-29")", R"("0400-02-29")",
        R"("0004-02-29")", R"("2026-02-28")", R"("1996-02-29")"},
       {R"("2026-1-2")", R"("2023-02-29")", R"("1900-02-29")", R"("2024-02-30")", R"("0000-02-29")",
        R"("2026-04-31")", R"("2022-02-29")"}},
      {R"({"type": "string", "format": "date-time"})",
       {R"("2026-12-02T03:04:05Z")", R"("2026-12-02T03:04:05.123+01:00")"},
       {R"("2026-12-02 03:04:05")"}},
      {R"({"type": "string", "format": "uuid"})",
       {R"("123e4567-e89b-12d3-a456-426614174000")"},
       {R"("123e4567")"}},
      {R"({"type": "integer", "minimum": 10, "maximum": 250})",
       {"10", "99", "100", "250"},
       {"9", "251", "-10", "1000"}},
      {R"({"type": "integer", "exclusiveMinimum": 0})", {"1", "42"}, {"0", "-1"}},
      {R"({"type": "integer", "minimum": -5, "maximum": 5})", {"-5", "0", "5"}, {"-6", "6", "-0"}},
      {R"({"type": "number", "minimum": 0})", {"0", "1.5"}, {"-1"}},
      {R"({"anyOf": [{"type": "integer"}, {"type": "object", "properties": {"x": {"type": "null"}},
          "required": ["x"]}]})",
       {"3", R"({"x": null})"},
       {R"({})", R"("3")"}},
      {R"({"$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer"},
          "next": {"anyOf": [{"$ref": "#/$defs/node"}, {"type": "null"}]}}, "required": ["v", "next"]}},
          "$ref": "#/$defs/node"})",
       {R"({"v": 1, "next": null})",
        R"({"v": 1, "next": {"v": 2, "next": {"v": 3, "next": null}}})"},
       {R"({"v": 1})", R"({"v": 1, "next": {"v": 2}})"}},
      {R"({"type": "object", "properties": {"child": {"$ref": "#"}}})",
       {"{}", R"({"child": {"child": {}}})"},
       {R"({"child": 1})"}},
      {R"({"allOf": [{"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
          {"properties": {"b": {"type": "boolean"}}, "required": ["b"]}]})",
       {R"({"a": 1, "b": true})"},
       {R"({"a": 1})"}},
      {R"({"allOf": [{"type": "object", "properties": {"a": {"type": "integer"},
          "b": {"type": "integer"}}, "additionalProperties": false},
          {"properties": {"b": {"type": "integer"}, "c": {"type": "integer"}}}]})",
       {R"({"a": 1})", R"({"a": 1, "b": 2})"},
       {R"({"c": 3})"}},
      {R"({})", {"1", R"({"a": [null]})", R"("s")"}, {"", "{"}},
      {"true", {"[]"}, {"]"}},
  };
  for (const Case& c : cases) {
    auto g = Compile(c.schema);
    if (!g) continue;
    for (const char* doc : c.valid)
      EXPECT_TRUE(Matches(g, doc)) << c.schema << "\n  valid: " << doc;
    for (const char* doc : c.invalid)
      EXPECT_FALSE(Matches(g, doc)) << c.schema << "\n  invalid: " << doc;
  }
}

TEST(JsonSchemaTest, IntegerRangesAreExact) {
  const std::pair<int64_t, int64_t> ranges[] = {{0, 0},    {0, 9},     {3, 7},    {7, 13},
                                                {10, 99},  {15, 1234}, {-20, -3}, {-105, 37},
                                                {99, 101}, {1, 1000},  {-1, 0},   {400, 409}};
  for (auto [lo, hi] : ranges) {
    const std::string schema = Json{{"type", "integer"}, {"minimum", lo}, {"maximum", hi}}.dump();
    auto g = Compile(schema);
    ASSERT_TRUE(g);
    for (int64_t v = lo - 120; v <= hi + 120; ++v)
      EXPECT_EQ(Matches(g, std::to_string(v)), v >= lo && v <= hi) << schema << " " << v;
  }
  auto open = Compile(R"({"type": "integer", "minimum": 95})");
  for (int64_t v : {int64_t{94}, int64_t{95}, int64_t{96}, int64_t{100}, int64_t{999},
                    int64_t{123456789}, int64_t{9007199254740991}})
    EXPECT_EQ(Matches(open, std::to_string(v)), v >= 95) << v;
  auto below = Compile(R"({"type": "integer", "maximum": -95})");
  for (int64_t v : {int64_t{-94}, int64_t{-95}, int64_t{-96}, int64_t{-100}, int64_t{-123456789}})
    EXPECT_EQ(Matches(below, std::to_string(v)), v <= -95) << v;
}

TEST(JsonSchemaTest, ReportsWhatItCannotHonour) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"type": "string", "not": {"const": "x"}})", "schema #/not: the keyword 'not'"},
      {R"({"type": "object", "properties": {"a": {"type": "integer", "multipleOf": 3}}})",
       "#/properties/a/multipleOf"},
      {R"({"type": "strin"})", "unknown type 'strin'"},
      {R"({"$ref": "#/$defs/missing"})", "points nowhere"},
      {R"({"$ref": "https://example.com/s.json"})", "only local references"},
      {R"x({"type": "string", "pattern": "(a)\\1"})x", "backreferences"},
      {R"x({"type": "string", "pattern": "(?=a)"})x", "lookaround"},
      {R"({"type": "integer", "minimum": 5, "maximum": 1})", "no integer"},
      {R"({"type": "object", "required": ["x"]})", "'x' is required but has no schema"},
      {R"({"type": "number", "maximum": 3.5})", "bounds on a number"},
      {"false", "matches nothing"},
      {R"({"allOf": [{"type": "object", "properties": {"a": {}}, "required": ["a"]}],
          "additionalProperties": false})",
       "no object satisfies every part"},
      {"{", "not valid JSON"},
  };
  for (auto [schema, message] : cases) {
    auto g = CompileJsonSchema(schema);
    ASSERT_FALSE(g.ok()) << schema;
    EXPECT_NE(g.status().message().find(message), std::string::npos)
        << schema << " -> " << g.status().message();
  }
}

TEST(JsonSchemaTest, LongStringsKeepTheirExactBounds) {
  const std::string a5000(5000, 'a'), a20000(20000, 'a');
  auto open = Compile(R"({"type": "string", "minLength": 1})");
  EXPECT_TRUE(Matches(open, "\"" + a5000 + "\""));
  EXPECT_FALSE(Matches(open, "\"\""));
  auto bounded = Compile(R"({"type": "string", "minLength": 10, "maxLength": 20000})");
  EXPECT_TRUE(Matches(bounded, "\"" + a20000 + "\""));
  EXPECT_FALSE(Matches(bounded, "\"" + a20000 + "a\""));
  for (size_t n : {10, 99, 100, 10009, 10010, 19999})
    EXPECT_TRUE(Matches(bounded, "\"" + std::string(n, 'b') + "\"")) << n;
  EXPECT_FALSE(Matches(bounded, "\"" + std::string(9, 'b') + "\""));
  auto huge = CompileJsonSchema(R"({"type": "string", "maxLength": 2000000})");
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("maxLength"), std::string::npos);
}

// A Qwen XML parameter's value is raw text up to "</parameter>": it may hold any other markup.
TEST(JsonSchemaTest, RawValuesHoldMarkupButNotTheirClosingTag) {
  auto compile_raw = [](const std::string& schema) -> std::shared_ptr<const Grammar> {
    auto gbnf = JsonSchemaToGbnfAs(schema, ValueForm::kRaw, "root", "t-");
    EXPECT_TRUE(gbnf.ok()) << gbnf.status().message();
    auto g = ParseGbnf(*gbnf);
    EXPECT_TRUE(g.ok()) << g.status().message();
    return g.ok() ? std::make_shared<const Grammar>(std::move(*g)) : nullptr;
  };
  for (const char* schema : {R"({"type": "string"})", R"({"type": "string", "minLength": 1})",
                             R"({"type": "string", "maxLength": 40})"}) {
    auto g = compile_raw(schema);
    ASSERT_NE(g, nullptr);
    for (const char* ok : {"<div>\n  <p>hi</p>\n</div>", "a << b </ c", "</parameter", "x<</param",
                           "</parameters>", "<", "ab</"})
      EXPECT_TRUE(Matches(g, ok)) << schema << ": " << ok;
    for (const char* bad : {"a</parameter>b", "</parameter>", "x<</parameter>"})
      EXPECT_FALSE(Matches(g, bad)) << schema << ": " << bad;
  }
  EXPECT_TRUE(Matches(compile_raw(R"({"type": "string"})"), ""));
  auto counted = compile_raw(R"({"type": "string", "minLength": 2, "maxLength": 5})");
  for (const char* ok : {"<a", "<div>", "</p>", "ab"}) EXPECT_TRUE(Matches(counted, ok)) << ok;
  for (const char* bad : {"<", "<div>x", ""}) EXPECT_FALSE(Matches(counted, bad)) << bad;
  // Counted past 256 characters, the counted ones leave out "<".
  auto long_min = compile_raw(R"({"type": "string", "minLength": 300})");
  EXPECT_TRUE(Matches(long_min, std::string(300, 'a') + "</div>"));
  EXPECT_FALSE(Matches(long_min, std::string(299, 'a')));
}

TEST(JsonSchemaTest, CompilesClaudeCodeToolSchemas) {
  std::ifstream in(testing::TestDataPath("clients/claude-code/2.1.328-plain-prompt.json"));
  std::stringstream text;
  text << in.rdbuf();
  const Json request = Json::parse(text.str());
  const Json& body = request.contains("body") ? request["body"] : request;
  int compiled = 0;
  for (const Json& tool : body["tools"]) {
    auto g = CompileJsonSchema(tool["input_schema"].dump());
    EXPECT_TRUE(g.ok()) << tool["name"] << ": " << g.status().message();
    compiled += g.ok();
    auto raw = JsonSchemaToGbnfAs(tool["input_schema"].dump(), ValueForm::kRaw, "root", "t-");
    EXPECT_TRUE(raw.ok()) << tool["name"] << ": " << raw.status().message();
  }
  EXPECT_GE(compiled, 10);
}

TEST(JsonSchemaTest, JsonObjectModeTakesAnyObject) {
  auto g = ParseGbnf(JsonObjectGbnf());
  ASSERT_TRUE(g.ok()) << g.status().message();
  auto shared = std::make_shared<const Grammar>(std::move(*g));
  EXPECT_TRUE(Matches(shared, R"({"a": [1, 2, {"b": null}], "c": "d"})"));
  EXPECT_TRUE(Matches(shared, "{}"));
  EXPECT_FALSE(Matches(shared, "[1]"));
  EXPECT_FALSE(Matches(shared, R"({"a": 1} x)"));
}

}  // namespace
}  // namespace mtplx::grammar

namespace mtplx::grammar {
namespace {

// The corpus tools/make_schema_corpus.py writes (structured_test.py asks the server for a
// document of each): every schema compiles.
TEST(JsonSchemaTest, CompilesTheCorpus) {
  std::ifstream in(testing::TestDataPath("grammar/schemas.json"));
  std::stringstream text;
  text << in.rdbuf();
  const Json corpus = Json::parse(text.str());
  ASSERT_GE(corpus.size(), 100u);
  for (size_t i = 0; i < corpus.size(); ++i) {
    auto g = CompileJsonSchema(corpus[i].dump());
    EXPECT_TRUE(g.ok()) << "schema " << i << ": " << g.status().message();
  }
}

}  // namespace
}  // namespace mtplx::grammar
