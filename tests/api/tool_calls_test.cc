// Tests of ToolCallParser (Qwen XML and hermes JSON tool calls in streamed text) and
// TypeParameterValue.
#include "api/tool_calls.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace mtplx::api {
namespace {

using Json = nlohmann::json;
using Kind = ToolStreamPiece::Kind;

const char* const kSchema = R"({
  "type": "object",
  "properties": {
    "city": {"type": "string"},
    "days": {"type": "integer"},
    "zip": {"type": "string"},
    "celsius": {"type": "boolean"},
    "ratio": {"type": "number"},
    "options": {"type": "object"},
    "tags": {"type": "array", "items": {"type": "string"}},
    "limit": {"type": ["integer", "null"]},
    "either": {"anyOf": [{"type": "integer"}, {"type": "string"}]}
  },
  "required": ["city"]
})";

Json OpenAiTools() {
  Json tools = Json::array();
  tools.push_back({{"type", "function"},
                   {"function", {{"name", "get_weather"}, {"parameters", Json::parse(kSchema)}}}});
  tools.push_back(Json::parse(R"({"type": "function", "function": {"name": "search",
      "parameters": {"type": "object", "properties": {"query": {"type": "string"}}}}})"));
  return tools;
}

Json AnthropicTools() {
  Json tools = Json::array();
  tools.push_back({{"name", "get_weather"}, {"input_schema", Json::parse(kSchema)}});
  tools.push_back({{"name", "ping"}});  // no schema at all
  return tools;
}

// Everything one parse produced, checked for the stream's own consistency on the way.
struct Outcome {
  std::string text;                  // all kText joined
  std::vector<ToolCall> calls;       // from kCallEnd, in order
  std::vector<std::string> streams;  // per call: its kCallArguments fragments, '|'-separated
  std::vector<Kind> kinds;           // the piece kinds, consecutive kText merged
};

class Recorder {
 public:
  void Add(const std::vector<ToolStreamPiece>& pieces) {
    for (const ToolStreamPiece& piece : pieces) Add(piece);
  }

  Outcome Take(const ToolCallParser& parser) {
    EXPECT_FALSE(open_) << "a call was started and never ended";
    EXPECT_EQ(parser.calls().size(), outcome_.calls.size());
    for (size_t i = 0; i < parser.calls().size() && i < outcome_.calls.size(); ++i) {
      EXPECT_EQ(parser.calls()[i].id, outcome_.calls[i].id);
      EXPECT_EQ(parser.calls()[i].arguments, outcome_.calls[i].arguments);
    }
    return outcome_;
  }

 private:
  void Add(const ToolStreamPiece& piece) {
    if (outcome_.kinds.empty() || piece.kind != Kind::kText ||
        outcome_.kinds.back() != Kind::kText) {
      outcome_.kinds.push_back(piece.kind);
    }
    switch (piece.kind) {
      case Kind::kText:
        EXPECT_FALSE(open_) << "text inside a call";
        EXPECT_FALSE(piece.text.empty());
        outcome_.text += piece.text;
        break;
      case Kind::kCallStart:
        EXPECT_FALSE(open_);
        EXPECT_EQ(piece.index, static_cast<int>(outcome_.calls.size()));
        EXPECT_FALSE(piece.call.name.empty());
        EXPECT_EQ(piece.call.id.rfind("call_" + std::to_string(piece.index) + "_", 0), 0u);
        open_ = true;
        start_ = piece.call;
        arguments_.clear();
        outcome_.streams.emplace_back();
        break;
      case Kind::kCallArguments:
        EXPECT_TRUE(open_);
        EXPECT_EQ(piece.index, static_cast<int>(outcome_.calls.size()));
        arguments_ += piece.text;
        if (!outcome_.streams.back().empty()) outcome_.streams.back() += "|";
        outcome_.streams.back() += piece.text;
        break;
      case Kind::kCallEnd: {
        EXPECT_TRUE(open_);
        EXPECT_EQ(piece.index, static_cast<int>(outcome_.calls.size()));
        EXPECT_EQ(piece.call.id, start_.id);
        EXPECT_EQ(piece.call.name, start_.name);
        EXPECT_EQ(piece.call.arguments, arguments_) << "fragments must add up to the arguments";
        const Json parsed = Json::parse(piece.call.arguments, nullptr, false);
        EXPECT_TRUE(parsed.is_object()) << piece.call.arguments;
        open_ = false;
        outcome_.calls.push_back(piece.call);
        break;
      }
    }
  }

  Outcome outcome_;
  bool open_ = false;
  ToolCall start_;
  std::string arguments_;
};

Outcome ParseChunks(const Json& tools, const std::vector<std::string>& chunks) {
  ToolCallParser parser(tools);
  Recorder recorder;
  for (const std::string& chunk : chunks) recorder.Add(parser.Push(chunk));
  recorder.Add(parser.Finish());
  return recorder.Take(parser);
}

Outcome Parse(const std::string& text, const Json& tools = OpenAiTools()) {
  return ParseChunks(tools, {text});
}

std::vector<std::string> Bytes(const std::string& text) {
  std::vector<std::string> chunks;
  for (const char c : text) chunks.emplace_back(1, c);
  return chunks;
}

std::vector<std::string> RandomChunks(const std::string& text, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<size_t> size(0, 12);
  std::vector<std::string> chunks;
  for (size_t at = 0; at < text.size();) {
    const size_t n = std::min(size(rng), text.size() - at);  // empty pieces too
    chunks.push_back(text.substr(at, n));
    at += n;
  }
  return chunks;
}

Json Arguments(const ToolCall& call) { return Json::parse(call.arguments); }

const char* const kWeatherXml =
    "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
    "<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>";

TEST(ToolCallParserTest, QwenXmlCall) {
  const Outcome outcome = Parse(std::string("Let me check.\n\n") + kWeatherXml);
  EXPECT_EQ(outcome.text, "Let me check.\n\n");
  ASSERT_EQ(outcome.calls.size(), 1u);
  EXPECT_EQ(outcome.calls[0].name, "get_weather");
  EXPECT_EQ(outcome.calls[0].arguments, R"({"city":"Paris","days":3})");
  EXPECT_EQ(outcome.streams[0], R"({|"city":"Paris"|,"days":3|})");
  EXPECT_EQ(outcome.kinds, (std::vector<Kind>{Kind::kText, Kind::kCallStart, Kind::kCallArguments,
                                              Kind::kCallArguments, Kind::kCallArguments,
                                              Kind::kCallArguments, Kind::kCallEnd}));
  const std::string& id = outcome.calls[0].id;
  ASSERT_EQ(id.size(), std::string("call_0_").size() + 8);
  EXPECT_EQ(id.find_first_not_of("0123456789abcdef", 7), std::string::npos) << id;
}

TEST(ToolCallParserTest, StreamsEachStepAsSoonAsItIsCertain) {
  ToolCallParser parser(OpenAiTools());
  std::vector<ToolStreamPiece> pieces = parser.Push("Sure. <tool_");
  ASSERT_EQ(pieces.size(), 1u);
  EXPECT_EQ(pieces[0].text, "Sure. ");

  pieces = parser.Push("call>\n<function=get_weather");
  EXPECT_TRUE(pieces.empty());
  pieces = parser.Push(">\n<parameter=city>\nPar");
  ASSERT_EQ(pieces.size(), 2u);
  EXPECT_EQ(pieces[0].kind, Kind::kCallStart);
  EXPECT_EQ(pieces[0].call.name, "get_weather");
  EXPECT_EQ(pieces[0].index, 0);
  EXPECT_EQ(pieces[1].kind, Kind::kCallArguments);
  EXPECT_EQ(pieces[1].text, "{");

  pieces = parser.Push("is\n</param");
  EXPECT_TRUE(pieces.empty());
  pieces = parser.Push("eter>\n");
  ASSERT_EQ(pieces.size(), 1u);
  EXPECT_EQ(pieces[0].text, R"("city":"Paris")");

  pieces = parser.Push("</function>\n</tool_call>");
  ASSERT_EQ(pieces.size(), 2u);
  EXPECT_EQ(pieces[0].text, "}");
  EXPECT_EQ(pieces[1].kind, Kind::kCallEnd);
  EXPECT_EQ(pieces[1].call.arguments, R"({"city":"Paris"})");
  EXPECT_EQ(pieces[1].call.id, parser.calls().at(0).id);
  EXPECT_TRUE(parser.Finish().empty());
}

TEST(ToolCallParserTest, CertainTextIsNotHeldBack) {
  ToolCallParser parser(OpenAiTools());
  std::vector<ToolStreamPiece> pieces = parser.Push("a < b and <b>bold</b> <tool");
  ASSERT_EQ(pieces.size(), 1u);
  EXPECT_EQ(pieces[0].text, "a < b and <b>bold</b> ");
  pieces = parser.Push("box> <func");
  ASSERT_EQ(pieces.size(), 1u);
  EXPECT_EQ(pieces[0].text, "<toolbox> ");
  pieces = parser.Finish();
  ASSERT_EQ(pieces.size(), 1u);
  EXPECT_EQ(pieces[0].text, "<func");
  EXPECT_TRUE(parser.calls().empty());
}

TEST(ToolCallParserTest, TypesParametersFromTheSchema) {
  const Outcome outcome = Parse(
      "<tool_call>\n<function=get_weather>\n"
      "<parameter=city>\n42\n</parameter>\n"
      "<parameter=days>\n7\n</parameter>\n"
      "<parameter=zip>\n02134\n</parameter>\n"
      "<parameter=celsius>\ntrue\n</parameter>\n"
      "<parameter=ratio>\n0.25\n</parameter>\n"
      "<parameter=options>\n{\"units\": \"metric\", \"hourly\": [1, 2]}\n</parameter>\n"
      "<parameter=tags>\n[\"a\", \"b\"]\n</parameter>\n"
      "<parameter=limit>\nnull\n</parameter>\n"
      "<parameter=either>\n5\n</parameter>\n"
      "<parameter=unknown>\n5\n</parameter>\n"
      "</function>\n</tool_call>");
  ASSERT_EQ(outcome.calls.size(), 1u);
  const Json args = Arguments(outcome.calls[0]);
  EXPECT_EQ(args["city"], "42");  // a string that looks like a number stays a string
  EXPECT_EQ(args["days"], 7);
  EXPECT_EQ(args["zip"], "02134");
  EXPECT_EQ(args["celsius"], true);
  EXPECT_DOUBLE_EQ(args["ratio"].get<double>(), 0.25);
  EXPECT_EQ(args["options"], Json::parse(R"({"units": "metric", "hourly": [1, 2]})"));
  EXPECT_EQ(args["tags"], Json::parse(R"(["a", "b"])"));
  EXPECT_TRUE(args["limit"].is_null());
  EXPECT_EQ(args["either"], 5);
  EXPECT_EQ(args["unknown"], "5");  // not in the schema: kept as written
  EXPECT_EQ(outcome.text, "");
}

TEST(ToolCallParserTest, ValuesOfTheWrongTypeStayStrings) {
  const Outcome outcome = Parse(
      "<function=get_weather>\n"
      "<parameter=days>\nthree\n</parameter>\n"
      "<parameter=celsius>\nyes\n</parameter>\n"
      "<parameter=options>\n[1]\n</parameter>\n"
      "<parameter=tags>\n{\"a\": 1}\n</parameter>\n"
      "<parameter=ratio>\n1e999\n</parameter>\n"
      "</function>");
  ASSERT_EQ(outcome.calls.size(), 1u);
  const Json args = Arguments(outcome.calls[0]);
  EXPECT_EQ(args["days"], "three");
  EXPECT_EQ(args["celsius"], "yes");
  EXPECT_EQ(args["options"], "[1]");
  EXPECT_EQ(args["tags"], "{\"a\": 1}");
  EXPECT_EQ(args["ratio"], "1e999");
}

TEST(ToolCallParserTest, MultiLineValuesKeepInnerNewlinesAndMarkupLookalikes) {
  const std::string code = "def f(x):\n    return x < 3 and \"<tool_call>\" != '<function=g>'\n";
  const Outcome outcome = Parse("<tool_call>\n<function=search>\n<parameter=query>\n" + code +
                                "\n</parameter>\n</function>\n</tool_call>");
  ASSERT_EQ(outcome.calls.size(), 1u);
  EXPECT_EQ(Arguments(outcome.calls[0])["query"], code);
}

TEST(ToolCallParserTest, OnlyOneNewlineEachSideIsStripped) {
  const Outcome outcome = Parse(
      "<function=search>\n<parameter=query>\n\n  spaced  \n\n</parameter>\n"
      "<parameter=city>Paris</parameter>\n</function>");
  ASSERT_EQ(outcome.calls.size(), 1u);
  const Json args = Arguments(outcome.calls[0]);
  EXPECT_EQ(args["query"], "\n  spaced  \n");
  EXPECT_EQ(args["city"], "Paris");
}

TEST(ToolCallParserTest, BareFunctionBlockWithoutWrapper) {
  const Outcome outcome =
      Parse("Calling.\n<function=search>\n<parameter=query>\nmtplx\n</parameter>\n</function>");
  EXPECT_EQ(outcome.text, "Calling.\n");
  ASSERT_EQ(outcome.calls.size(), 1u);
  EXPECT_EQ(outcome.calls[0].name, "search");
  EXPECT_EQ(outcome.calls[0].arguments, R"({"query":"mtplx"})");
}

TEST(ToolCallParserTest, SeveralCallsGetIndicesAndUniqueIds) {
  const std::string text = std::string(kWeatherXml) + "\n" + kWeatherXml + "\n\n" +
                           "<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"q\"}}"
                           "\n</tool_call>\n";
  const Outcome outcome = Parse(text);
  EXPECT_EQ(outcome.text, "");  // whitespace between and after calls is dropped
  ASSERT_EQ(outcome.calls.size(), 3u);
  EXPECT_EQ(outcome.calls[0].name, "get_weather");
  EXPECT_EQ(outcome.calls[1].name, "get_weather");
  EXPECT_EQ(outcome.calls[2].name, "search");
  const std::set<std::string> ids = {outcome.calls[0].id, outcome.calls[1].id, outcome.calls[2].id};
  EXPECT_EQ(ids.size(), 3u);
  EXPECT_EQ(outcome.calls[2].id.rfind("call_2_", 0), 0u);
}

TEST(ToolCallParserTest, TextAroundCallsIsContent) {
  const Outcome outcome = Parse("Before.\n" + std::string(kWeatherXml) + "\n\nAfter.\n");
  EXPECT_EQ(outcome.text, "Before.\n\n\nAfter.\n");
  EXPECT_EQ(outcome.calls.size(), 1u);
}

TEST(ToolCallParserTest, HermesJsonCall) {
  const Outcome outcome = Parse(
      "I'll search.\n<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"weather\", "
      "\"extra\": [1, {\"b\": 2, \"a\": 1}]}}\n</tool_call>");
  EXPECT_EQ(outcome.text, "I'll search.\n");
  ASSERT_EQ(outcome.calls.size(), 1u);
  EXPECT_EQ(outcome.calls[0].name, "search");
  // Compact, in the model's key order.
  EXPECT_EQ(outcome.calls[0].arguments, R"({"query":"weather","extra":[1,{"b":2,"a":1}]})");
  EXPECT_EQ(outcome.kinds, (std::vector<Kind>{Kind::kText, Kind::kCallStart, Kind::kCallArguments,
                                              Kind::kCallEnd}));
}

TEST(ToolCallParserTest, HermesArgumentsAsAStringOrNamedParameters) {
  Outcome outcome = Parse(
      "<tool_call>\n{\"name\": \"search\", \"arguments\": \"{\\\"query\\\": \\\"x\\\"}\"}\n"
      "</tool_call>");
  ASSERT_EQ(outcome.calls.size(), 1u);
  EXPECT_EQ(outcome.calls[0].arguments, R"({"query":"x"})");

  outcome =
      Parse("<tool_call>{\"parameters\": {\"query\": \"y\"}, \"name\": \"search\"}</tool_call>");
  ASSERT_EQ(outcome.calls.size(), 1u);
  EXPECT_EQ(outcome.calls[0].arguments, R"({"query":"y"})");

  outcome = Parse("<tool_call>\n{\"name\": \"search\"}\n</tool_call>");
  ASSERT_EQ(outcome.calls.size(), 1u);
  EXPECT_EQ(outcome.calls[0].arguments, "{}");
}

TEST(ToolCallParserTest, HermesBodiesThatAreNotCallsStayText) {
  for (const std::string& text : std::vector<std::string>{
           "<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": }}\n</tool_call>",
           "<tool_call>\n{\"name\": \"nope\", \"arguments\": {}}\n</tool_call>",
           "<tool_call>\n{\"name\": 3, \"arguments\": {}}\n</tool_call>",
           "<tool_call>\n{\"name\": \"search\", \"arguments\": [1]}\n</tool_call>",
           "<tool_call>\n{\"name\": \"search\", \"arguments\": \"not json\"}\n</tool_call>",
           "<tool_call>\n{\"name\": \"search\"} trailing\n</tool_call>",
       }) {
    const Outcome outcome = Parse("x " + text + " y");
    EXPECT_EQ(outcome.text, "x " + text + " y");
    EXPECT_TRUE(outcome.calls.empty()) << text;
  }
}

TEST(ToolCallParserTest, UndeclaredFunctionIsText) {
  const std::string text =
      "<tool_call>\n<function=delete_everything>\n<parameter=path>\n/\n</parameter>\n"
      "</function>\n</tool_call>";
  const Outcome outcome = Parse(text);
  EXPECT_EQ(outcome.text, text);
  EXPECT_TRUE(outcome.calls.empty());
}

TEST(ToolCallParserTest, MalformedMarkupIsText) {
  for (const std::string& text : std::vector<std::string>{
           "<tool_call>\nhello\n</tool_call>",
           "<tool_call><tool_call></tool_call>",
           "use <function=get weather\nlike this> please",
           "<function=>\n</function>",
           "<function=" + std::string(300, 'a') + ">",
           "<tool_call>\n<function=<b>",
       }) {
    const Outcome outcome = Parse(text);
    EXPECT_EQ(outcome.text, text);
    EXPECT_TRUE(outcome.calls.empty()) << text;
  }
}

TEST(ToolCallParserTest, AWellFormedCallAfterMalformedMarkupIsFound) {
  const Outcome outcome = Parse(
      "<tool_call>oops <tool_call>\n<function=search>\n<parameter=query>\nq\n</parameter>\n"
      "</function>\n</tool_call>");
  EXPECT_EQ(outcome.text, "<tool_call>oops ");
  ASSERT_EQ(outcome.calls.size(), 1u);
  EXPECT_EQ(outcome.calls[0].arguments, R"({"query":"q"})");
}

// Once a call is announced it cannot be withdrawn: text in the function body that is not a
// parameter ends the call there, and the rest is content.
TEST(ToolCallParserTest, GarbageInsideAnAnnouncedCallEndsIt) {
  const Outcome outcome =
      Parse("<function=search>\n<parameter=query>\nx\n</parameter>\nsome prose\n</function>");
  ASSERT_EQ(outcome.calls.size(), 1u);
  EXPECT_EQ(outcome.calls[0].arguments, R"({"query":"x"})");
  EXPECT_EQ(outcome.text, "some prose\n</function>");

  const Outcome bad_key =
      Parse("<function=search>\n<parameter=que\nry>\nx\n</parameter>\n</function>");
  ASSERT_EQ(bad_key.calls.size(), 1u);
  EXPECT_EQ(bad_key.calls[0].arguments, "{}");
  EXPECT_EQ(bad_key.text, "<parameter=que\nry>\nx\n</parameter>\n</function>");
}

TEST(ToolCallParserTest, UnclosedCallsAreRepairedAtTheEnd) {
  const std::string head = "<tool_call>\n<function=get_weather>\n<parameter=city>\n";
  struct Case {
    std::string text;
    std::string arguments;
  };
  for (const Case& c : std::vector<Case>{
           {head + "Par", R"({"city":"Par"})"},
           {head + "Paris\n", R"({"city":"Paris"})"},
           {head + "Paris\n</para", R"({"city":"Paris"})"},
           {head + "Paris\n</parameter>\n", R"({"city":"Paris"})"},
           {head + "Paris\n</parameter>\n<parameter=da", R"({"city":"Paris"})"},
           {head + "Paris\n</parameter>\n<parameter=days>\n4", R"({"city":"Paris","days":4})"},
           {head + "Paris\n</parameter>\n</function>\n</tool_", R"({"city":"Paris"})"},
           {"<function=get_weather>", "{}"},
       }) {
    const Outcome outcome = Parse(c.text);
    ASSERT_EQ(outcome.calls.size(), 1u) << c.text;
    EXPECT_EQ(outcome.calls[0].arguments, c.arguments) << c.text;
    EXPECT_EQ(outcome.text, "") << c.text;
  }
}

TEST(ToolCallParserTest, MarkupCutShortBeforeTheNameIsText) {
  for (const std::string& text :
       std::vector<std::string>{"<tool_call>", "<tool_call>\n", "<tool_call>\n<function=get_wea",
                                "<tool_call>\n<func", "<function=search", "ok <tool_c"}) {
    const Outcome outcome = Parse(text);
    EXPECT_EQ(outcome.text, text);
    EXPECT_TRUE(outcome.calls.empty()) << text;
  }
}

TEST(ToolCallParserTest, HermesBodyCutShortIsCompletedOnlyWhenTrivial) {
  Outcome outcome = Parse("<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"x\"");
  ASSERT_EQ(outcome.calls.size(), 1u);
  EXPECT_EQ(outcome.calls[0].arguments, R"({"query":"x"})");
  EXPECT_EQ(outcome.text, "");

  outcome = Parse("<tool_call>\n{\"name\": \"search\", \"arguments\": {}}\n</tool");
  ASSERT_EQ(outcome.calls.size(), 1u);
  EXPECT_EQ(outcome.text, "");

  const std::string cut = "<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"x";
  outcome = Parse(cut);
  EXPECT_TRUE(outcome.calls.empty());
  EXPECT_EQ(outcome.text, cut);
}

TEST(ToolCallParserTest, RepeatedKeyLastWins) {
  const Outcome outcome = Parse(
      "<function=search>\n<parameter=query>\na\n</parameter>\n<parameter=query>\nb\n</parameter>\n"
      "</function>");
  ASSERT_EQ(outcome.calls.size(), 1u);
  EXPECT_EQ(Arguments(outcome.calls[0])["query"], "b");
}

TEST(ToolCallParserTest, InvalidUtf8StillGivesValidJson) {
  const Outcome outcome =
      Parse("<function=search>\n<parameter=q\xff>\nbad \xc3\x28 bytes\n</parameter>\n</function>");
  ASSERT_EQ(outcome.calls.size(), 1u);
  const Json args = Arguments(outcome.calls[0]);
  ASSERT_TRUE(args.is_object());
  EXPECT_EQ(args.size(), 1u);
}

TEST(ToolCallParserTest, AnthropicToolForm) {
  const Outcome outcome = Parse(
      "<tool_call>\n<function=get_weather>\n<parameter=days>\n2\n</parameter>\n</function>\n"
      "</tool_call><tool_call>\n<function=ping>\n<parameter=n>\n1\n</parameter>\n</function>\n"
      "</tool_call>",
      AnthropicTools());
  ASSERT_EQ(outcome.calls.size(), 2u);
  EXPECT_EQ(outcome.calls[0].arguments, R"({"days":2})");
  EXPECT_EQ(outcome.calls[1].name, "ping");
  EXPECT_EQ(outcome.calls[1].arguments, R"({"n":"1"})");  // no schema: strings
}

TEST(ToolCallParserTest, NoToolsPassesEverythingThrough) {
  for (const Json& tools : {Json(), Json::array(), Json::object(), Json("tools"),
                            Json::parse(R"([{"type": "function"}, 3, {"name": 4}])")}) {
    ToolCallParser parser(tools);
    const std::string text = std::string(kWeatherXml) + " <tool_c";
    const std::vector<ToolStreamPiece> pieces = parser.Push(text);
    ASSERT_EQ(pieces.size(), 1u) << tools;
    EXPECT_EQ(pieces[0].kind, Kind::kText);
    EXPECT_EQ(pieces[0].text, text);
    EXPECT_TRUE(parser.Push("").empty());
    EXPECT_TRUE(parser.Finish().empty());
    EXPECT_TRUE(parser.calls().empty());
  }
}

TEST(ToolCallParserTest, MovedParserKeepsItsState) {
  ToolCallParser first(OpenAiTools());
  Recorder recorder;
  recorder.Add(first.Push("<tool_call>\n<function=search>\n<parameter=query>\nab"));
  ToolCallParser second = std::move(first);
  recorder.Add(second.Push("c\n</parameter>\n</function>\n</tool_call>"));
  recorder.Add(second.Finish());
  const Outcome outcome = recorder.Take(second);
  ASSERT_EQ(outcome.calls.size(), 1u);
  EXPECT_EQ(outcome.calls[0].arguments, R"({"query":"abc"})");
}

// Texts that exercise every state and every way out of it.
std::vector<std::string> ChunkingCorpus() {
  return {
      std::string("Let me check.\n\n") + kWeatherXml + "\n\nDone.",
      std::string(kWeatherXml) + "\n" + kWeatherXml,
      "<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"a</b>\"}}\n</tool_call>\n"
      "<tool_call>\n{\"name\": \"search\", \"arguments\": \"{\\\"query\\\": 1}\"}\n</tool_call>",
      "<function=search>\n<parameter=query>\nx < y </param </parameter>\n</function> tail",
      "<tool_call>\nhello\n</tool_call> <tool_call><function=nope></function></tool_call>",
      "<tool_call>oops <tool_call>\n<function=search>\n<parameter=query>\nq\n</parameter>\n"
      "</function>\n</tool_call>",
      "<function=search>\n<parameter=query>\nx\n</parameter>\nprose\n</function>",
      "<tool_call>\n<function=get_weather>\n<parameter=days>\n12\n</parameter>\n<parameter=ci",
      "<tool_call>\n<function=get_weather>\n<parameter=days>\n12\n</parameter>\n<parameter=city>"
      "\nLon",
      "<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"x\"",
      "<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"x",
      "a <b> <tool <tool_call <function <function=\n <tool_call>\n<func",
      "   \n<tool_call>\n<function=search>\n</function>\n</tool_call>   \n",
      "<tool_call>\n<function=get_weather>\n<parameter=options>\n{\"a\": [1, 2]}\n</parameter>\n"
      "<parameter=celsius>\nFalse\n</parameter>\n</function>\n<function=search>\n</function>\n"
      "</tool_call>",
  };
}

void ExpectSame(const Outcome& expected, const Outcome& actual, const std::string& what) {
  EXPECT_EQ(actual.text, expected.text) << what;
  ASSERT_EQ(actual.calls.size(), expected.calls.size()) << what;
  for (size_t i = 0; i < expected.calls.size(); ++i) {
    EXPECT_EQ(actual.calls[i].name, expected.calls[i].name) << what;
    EXPECT_EQ(actual.calls[i].arguments, expected.calls[i].arguments) << what;
  }
  EXPECT_EQ(actual.streams, expected.streams) << what;
}

TEST(ToolCallParserTest, ChunkingDoesNotChangeTheResult) {
  for (const std::string& text : ChunkingCorpus()) {
    const Outcome whole = Parse(text);
    ExpectSame(whole, ParseChunks(OpenAiTools(), Bytes(text)), "bytes: " + text);
    for (unsigned seed = 0; seed < 200; ++seed) {
      ExpectSame(whole, ParseChunks(OpenAiTools(), RandomChunks(text, seed)),
                 "seed " + std::to_string(seed) + ": " + text);
    }
  }
}

TEST(ToolCallParserTest, ChunkingCorpusResults) {
  const std::vector<std::string> corpus = ChunkingCorpus();
  EXPECT_EQ(Parse(corpus[3]).text, " tail");
  EXPECT_EQ(Arguments(Parse(corpus[3]).calls.at(0))["query"], "x < y </param ");
  EXPECT_EQ(Parse(corpus[4]).text, corpus[4]);
  EXPECT_EQ(Parse(corpus[7]).calls.at(0).arguments, R"({"days":12})");
  EXPECT_EQ(Parse(corpus[8]).calls.at(0).arguments, R"({"days":12,"city":"Lon"})");
  EXPECT_EQ(Parse(corpus[11]).text, corpus[11]);
  const Outcome leading = Parse(corpus[12]);
  EXPECT_EQ(leading.text, "   \n");
  EXPECT_EQ(leading.calls.size(), 1u);
  const Outcome two = Parse(corpus[13]);
  ASSERT_EQ(two.calls.size(), 2u);
  EXPECT_EQ(two.calls[0].arguments, R"({"options":{"a":[1,2]},"celsius":false})");
  EXPECT_EQ(two.calls[1].name, "search");
  EXPECT_EQ(two.text, "");
}

TEST(TypeParameterValueTest, FollowsTheSchemaType) {
  const Json integer = {{"type", "integer"}};
  EXPECT_EQ(TypeParameterValue("12", integer), 12);
  EXPECT_EQ(TypeParameterValue(" 12 ", integer), 12);
  EXPECT_EQ(TypeParameterValue("3.0", integer), 3.0);
  EXPECT_EQ(TypeParameterValue("3.5", integer), "3.5");
  EXPECT_EQ(TypeParameterValue("", integer), "");
  EXPECT_EQ(TypeParameterValue("12", {{"type", "number"}}), 12);
  EXPECT_EQ(TypeParameterValue("-1.5e3", {{"type", "number"}}), -1500.0);
  EXPECT_EQ(TypeParameterValue("12", {{"type", "string"}}), "12");
  EXPECT_EQ(TypeParameterValue("\"q\"", {{"type", "string"}}), "\"q\"");
  EXPECT_EQ(TypeParameterValue("false", {{"type", "boolean"}}), false);
  EXPECT_EQ(TypeParameterValue("True", {{"type", "boolean"}}), true);
  EXPECT_EQ(TypeParameterValue("null", {{"type", "null"}}), Json());
  EXPECT_EQ(TypeParameterValue("null", integer), "null");
  EXPECT_EQ(TypeParameterValue("[1]", {{"type", "array"}}), Json::parse("[1]"));
  EXPECT_EQ(TypeParameterValue("[1]", {{"items", Json::object()}}), Json::parse("[1]"));
  EXPECT_EQ(TypeParameterValue("{}", {{"properties", Json::object()}}), Json::object());
  EXPECT_EQ(TypeParameterValue("7", {{"type", {"string", "integer"}}}), 7);
  EXPECT_EQ(TypeParameterValue("x", {{"type", {"string", "integer"}}}), "x");
  EXPECT_EQ(TypeParameterValue("7", Json::parse(R"({"oneOf": [{"type": "boolean"},
                                                               {"type": "number"}]})")),
            7);
  EXPECT_EQ(TypeParameterValue("7", Json()), "7");
  EXPECT_EQ(TypeParameterValue("7", Json("integer")), "7");
  EXPECT_EQ(TypeParameterValue("7", {{"type", 5}}), "7");
}

TEST(TypeParameterValueTest, DeeplyNestedValuesStayStrings) {
  const std::string deep = std::string(1000, '[') + std::string(1000, ']');
  EXPECT_EQ(TypeParameterValue(deep, {{"type", "array"}}), deep);
}

}  // namespace
}  // namespace mtplx::api
