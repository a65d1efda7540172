// Compares our renders with Python jinja2 as transformers drives it, on the goldens that
// tools/chat/make_chat_goldens.py wrote into tests/data/chat/goldens/: every conversation of the
// real Qwen 3, 3.5, 3.6 and Qwen3-Coder templates and a set of Jinja snippets must render byte
// for byte the same, or fail where Python fails. Also checks how errors are reported.
#include "chat/chat_template.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/file.h"
#include "base/strings.h"
#include "chat/json_value.h"
#include "chat/template.h"
#include "support/test_support.h"

namespace mtplx::chat {
namespace {

Value EmptyContext() { return *ParseJson("{}", /*from_user=*/false); }

using Json = nlohmann::ordered_json;

struct Jsonl {
  Json header;
  std::vector<Json> records;
};

Jsonl LoadJsonl(const std::string& relative) {
  Jsonl out;
  const Result<std::string> text = ReadTextFile(testing::TestDataPath(relative));
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  if (!text.ok()) return out;
  const std::vector<std::string> lines = StrSplit(*text, '\n');
  out.header = Json::parse(lines.at(0));
  for (size_t i = 1; i < lines.size(); ++i) {
    if (!lines[i].empty()) out.records.push_back(Json::parse(lines[i]));
  }
  EXPECT_EQ(out.records.size(), out.header.at("count").get<size_t>()) << relative;
  return out;
}

std::string ReadTemplate(const std::string& name) {
  const Result<std::string> text = ReadTextFile(testing::TestDataPath("chat/templates/" + name));
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  return text.ok() ? *text : "";
}

std::string Escaped(const std::string& text) { return Json(text).dump(); }

RenderOptions OptionsFor(const Json& record, const Json& header) {
  RenderOptions options;
  const Json& flags = record.at("options");
  options.add_generation_prompt = flags.value("add_generation_prompt", false);
  if (flags.contains("enable_thinking")) options.enable_thinking = flags["enable_thinking"];
  if (flags.contains("preserve_thinking")) options.preserve_thinking = flags["preserve_thinking"];
  const Json& special = header.at("special_tokens");
  if (special.contains("eos_token")) options.eos_token = special["eos_token"];
  if (special.contains("pad_token")) options.pad_token = special["pad_token"];
  return options;
}

// Checks one rendered (or failed) golden; returns whether it matched.
bool Matches(const Json& record, const Result<RenderedPrompt>& rendered, std::string* why) {
  if (record.contains("expected")) {
    if (!rendered.ok()) {
      *why = "failed: " + rendered.status().message();
      return false;
    }
    std::string joined;
    for (const PromptSegment& segment : rendered->segments) joined += segment.text;
    if (joined != rendered->text) {
      *why = "segments do not add up to the text";
      return false;
    }
    if (rendered->text != record["expected"].get<std::string>()) {
      *why = "expected " + Escaped(record["expected"]) + "\n  got      " + Escaped(rendered->text);
      return false;
    }
    return true;
  }
  if (rendered.ok()) {
    *why = "rendered " + Escaped(rendered->text) + " but Python failed with " +
           record["error"].get<std::string>();
    return false;
  }
  // raise_exception messages must come through; other errors need only fail.
  if (record["kind"] == "raise" &&
      rendered.status().message().find(record["error"].get<std::string>()) == std::string::npos) {
    *why = "error " + rendered.status().message() + " lacks " + record["error"].dump();
    return false;
  }
  return true;
}

class ConversationGoldens : public ::testing::TestWithParam<std::string> {};

TEST_P(ConversationGoldens, RenderByteIdentical) {
  const std::string name = GetParam();
  const Result<ChatTemplate> chat_template =
      ChatTemplate::FromString(ReadTemplate(name + ".jinja"));
  ASSERT_TRUE(chat_template.ok()) << chat_template.status().ToString();
  const Jsonl goldens = LoadJsonl("chat/goldens/conversations_" + name + ".jsonl");
  ASSERT_GE(goldens.records.size(), 100u);
  int failures = 0;
  for (const Json& record : goldens.records) {
    const Result<Conversation> conversation = Conversation::FromJson(record["conversation"].dump());
    ASSERT_TRUE(conversation.ok()) << conversation.status().ToString();
    const Result<RenderedPrompt> rendered =
        chat_template->Render(*conversation, OptionsFor(record, goldens.header));
    std::string why;
    if (!Matches(record, rendered, &why) && ++failures <= 5) {
      ADD_FAILURE() << name << " conversation " << record["id"] << ": " << why;
    }
  }
  EXPECT_EQ(failures, 0) << name << ": " << failures << " of " << goldens.records.size()
                         << " goldens differ";
}

INSTANTIATE_TEST_SUITE_P(QwenTemplates, ConversationGoldens,
                         ::testing::Values("qwen3", "qwen3.5-4b", "qwen3.6", "qwen3-coder"),
                         [](const auto& param_info) {
                           std::string name = param_info.param;
                           for (char& c : name) {
                             if (c == '.' || c == '-') c = '_';
                           }
                           return name;
                         });

TEST(JinjaSnippetGoldens, MatchPythonJinja) {
  const Jsonl goldens = LoadJsonl("chat/goldens/jinja_snippets.jsonl");
  ASSERT_GE(goldens.records.size(), 100u);
  int failures = 0;
  for (const Json& record : goldens.records) {
    const std::string source = record["template"];
    const Result<Value> context = ParseJson(record["context"].dump(), /*from_user=*/false);
    ASSERT_TRUE(context.ok()) << context.status().ToString();
    Result<RenderedPrompt> rendered = Internal("not rendered");
    const Result<Template> parsed = Template::Parse(source);
    if (!parsed.ok()) {
      rendered = parsed.status();
    } else {
      const Result<MarkedString> text = parsed->Render(*context);
      rendered = text.ok() ? Result<RenderedPrompt>(RenderedPrompt::FromMarked(*text))
                           : Result<RenderedPrompt>(text.status());
    }
    std::string why;
    if (!Matches(record, rendered, &why) && ++failures <= 10) {
      ADD_FAILURE() << "snippet " << record["id"] << " " << Escaped(source) << ": " << why;
    }
  }
  EXPECT_EQ(failures, 0) << failures << " of " << goldens.records.size() << " snippets differ";
}

std::string ErrorOf(std::string_view source, std::string_view context_json = "{}") {
  const Result<Template> parsed = Template::Parse(source);
  if (!parsed.ok()) return parsed.status().message();
  const Result<MarkedString> text = parsed->Render(*ParseJson(context_json, false));
  return text.ok() ? "rendered: " + text->text() : text.status().message();
}

TEST(ChatTemplateErrors, SyntaxErrorsGiveLineAndColumn) {
  EXPECT_EQ(ErrorOf("{% if true %}\n  {{ 1 + }}\n{% endif %}"),
            "chat template: 2:10: syntax error: unexpected 'end of print statement'");
  EXPECT_EQ(ErrorOf("ok\n{% for x in y %}\n{% endif %}"),
            "chat template: 3:4: syntax error: Encountered unknown tag 'endif'. Jinja was looking "
            "for the following tags: 'endfor' or 'else'.");
  EXPECT_EQ(ErrorOf("{{ 'open"), "chat template: 1:4: syntax error: unexpected char \"'\"");
  EXPECT_EQ(ErrorOf("a\n\n {# never closed"),
            "chat template: 3:2: syntax error: Missing end of comment tag");
  const std::string eof = ErrorOf("{% if x %}\nbody");
  EXPECT_NE(eof.find("chat template: 2:5: syntax error: Unexpected end of template"),
            std::string::npos)
      << eof;
}

TEST(ChatTemplateErrors, RaiseExceptionMessageSurfaces) {
  const Result<Template> parsed =
      Template::Parse("line one\n  {{- raise_exception('No user query found in messages.') }}");
  ASSERT_TRUE(parsed.ok());
  const Result<MarkedString> text = parsed->Render(EmptyContext());
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(text.status().message(), "chat template: 2:7: No user query found in messages.");
}

TEST(ChatTemplateErrors, RuntimeErrorsNameTheProblem) {
  EXPECT_EQ(ErrorOf("{{ messages[0].content }}"),
            "chat template: 1:12: UndefinedError: 'messages' is undefined");
  EXPECT_EQ(ErrorOf("{{ x.y.z }}", R"({"x": {}})"),
            "chat template: 1:7: UndefinedError: 'dict object' has no attribute 'y'");
  EXPECT_EQ(ErrorOf("\n{{ 'a' + 1 }}"),
            "chat template: 2:8: TypeError: can only concatenate str (not \"int\") to str");
  EXPECT_EQ(ErrorOf("{% for a in [1] %}{{ a|nope }}{% endfor %}"),
            "chat template: 1:24: No filter named 'nope'.");
}

TEST(ChatTemplateErrors, ErrorsInsideMacrosPointIntoTheMacro) {
  EXPECT_EQ(ErrorOf("{% macro m() %}\n  {{ raise_exception('inner') }}\n{% endmacro %}\n{{ m() }}"),
            "chat template: 2:6: inner");
}

}  // namespace
}  // namespace mtplx::chat
