// Tests of Conversation::FromJson and ChatTemplate::FromModelDir.
#include "chat/conversation.h"

#include <gtest/gtest.h>

#include <string>

#include "base/file.h"
#include "chat/chat_template.h"
#include "chat/json_value.h"
#include "support/test_support.h"

namespace mtplx::chat {
namespace {

std::string Json(const Value& value) { return *ValueToJson(value); }

TEST(Conversation, ParsesOpenAiMessages) {
  const Result<Conversation> conversation = Conversation::FromJson(R"([
      {"role": "system", "content": "S"},
      {"role": "user", "content": [{"type": "text", "text": "look"},
                                   {"type": "image_url", "image_url": {"url": "http://x/a.png"}},
                                   {"type": "video", "video": "v.mp4"}]},
      {"role": "assistant", "content": null, "tool_calls": [
        {"id": "c1", "type": "function",
         "function": {"name": "f", "arguments": "{\"b\": 1, \"a\": [true, null]}"}}]},
      {"role": "tool", "tool_call_id": "c1", "content": "r", "name": "f"}])");
  ASSERT_TRUE(conversation.ok()) << conversation.status().ToString();
  ASSERT_EQ(conversation->messages.size(), 4u);
  const Message& user = conversation->messages[1];
  ASSERT_TRUE(user.content_is_parts);
  ASSERT_EQ(user.parts.size(), 3u);
  EXPECT_EQ(user.parts[1].type, ContentPart::Type::kImage);
  EXPECT_EQ(user.parts[1].url, "http://x/a.png");
  EXPECT_EQ(user.parts[2].type, ContentPart::Type::kVideo);
  const Message& assistant = conversation->messages[2];
  EXPECT_FALSE(assistant.content.has_value());
  ASSERT_EQ(assistant.tool_calls.size(), 1u);
  EXPECT_TRUE(assistant.tool_calls[0].arguments.is_string());
  EXPECT_EQ(Json(conversation->MessagesValue()),
            R"([{"role":"system","content":"S"},)"
            R"({"role":"user","content":[{"type":"text","text":"look"},)"
            R"({"type":"image","image":"http://x/a.png"},{"type":"video","video":"v.mp4"}]},)"
            R"({"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":)"
            R"({"name":"f","arguments":"{\"b\": 1, \"a\": [true, null]}"}}]},)"
            R"({"role":"tool","content":"r","tool_call_id":"c1","name":"f"}])");
  Conversation parsed = *conversation;
  parsed.ParseStringArguments();
  EXPECT_EQ(Json(parsed.messages[2].tool_calls[0].arguments), R"({"b":1,"a":[true,null]})");
  EXPECT_TRUE(conversation->ToolsValue().is_none());
}

TEST(Conversation, AliasesReasoningLikeTransformers) {
  const Result<Conversation> conversation = Conversation::FromJson(R"({"messages": [
      {"role": "assistant", "content": "a", "reasoning_content": "r"},
      {"role": "assistant", "content": "b", "reasoning": "r2", "extra": 1}],
      "tools": [{"type": "function", "function": {"name": "f"}}]})");
  ASSERT_TRUE(conversation.ok()) << conversation.status().ToString();
  EXPECT_EQ(Json(conversation->MessagesValue()),
            R"([{"thinking":"r","role":"assistant","content":"a","reasoning_content":"r"},)"
            R"({"thinking":"r2","role":"assistant","content":"b","reasoning":"r2","extra":1,)"
            R"("reasoning_content":"r2"}])");
  EXPECT_EQ(Json(conversation->ToolsValue()), R"([{"type":"function","function":{"name":"f"}}])");
}

TEST(Conversation, RejectsMalformedMessages) {
  EXPECT_FALSE(Conversation::FromJson("{").ok());
  EXPECT_FALSE(Conversation::FromJson(R"({"messages": 3})").ok());
  EXPECT_FALSE(Conversation::FromJson(R"([{"content": "no role"}])").ok());
  EXPECT_FALSE(Conversation::FromJson(R"([{"role": "user", "content": 5}])").ok());
  EXPECT_FALSE(
      Conversation::FromJson(R"([{"role": "user", "content": [{"type": "audio"}]}])").ok());
  EXPECT_FALSE(
      Conversation::FromJson(R"([{"role": "assistant", "tool_calls": [{"id": "x"}]}])").ok());
  const Result<Conversation> bad = Conversation::FromJson(R"([{"role": "user"}, {"role": 1}])");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("message 1"), std::string::npos);
}

class ModelDir : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing::MakeTempDir("chat_model_dir"); }
  void Write(const std::string& name, const std::string& text) {
    ASSERT_TRUE(WriteTextFile(JoinPath(dir_, name), text).ok());
  }
  std::string Render(const ChatTemplate& chat_template) {
    const Result<Conversation> conversation =
        Conversation::FromJson(R"([{"role": "user", "content": "hi"}])");
    const Result<RenderedPrompt> prompt = chat_template.Render(*conversation, RenderOptions());
    return prompt.ok() ? prompt->text : prompt.status().ToString();
  }
  std::string dir_;
};

TEST_F(ModelDir, ReadsTokenizerConfigTemplatesAndSpecialTokens) {
  Write("tokenizer_config.json", R"({
      "bos_token": null,
      "eos_token": {"content": "<|end|>", "special": true},
      "chat_template": [{"name": "tool_use", "template": "tools"},
                        {"name": "default", "template": "{{ messages[0].content }}{{ eos_token }}{{ bos_token }}"}]})");
  const Result<ChatTemplate> chat_template = ChatTemplate::FromModelDir(dir_);
  ASSERT_TRUE(chat_template.ok()) << chat_template.status().ToString();
  EXPECT_EQ(Render(*chat_template), "hi<|end|>");
}

TEST_F(ModelDir, PrefersChatTemplateJinja) {
  Write("tokenizer_config.json", R"({"eos_token": "E", "chat_template": "config"})");
  Write("chat_template.jinja", "jinja {{ eos_token }}\n");
  const Result<ChatTemplate> chat_template = ChatTemplate::FromModelDir(dir_);
  ASSERT_TRUE(chat_template.ok()) << chat_template.status().ToString();
  EXPECT_EQ(Render(*chat_template), "jinja E");
}

TEST_F(ModelDir, ReportsMissingTemplates) {
  EXPECT_EQ(ChatTemplate::FromModelDir(dir_).status().code(), StatusCode::kNotFound);
  Write("tokenizer_config.json", R"({"chat_template": [{"name": "rag", "template": "x"}]})");
  const Result<ChatTemplate> missing = ChatTemplate::FromModelDir(dir_);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("have: rag"), std::string::npos);
  Write("chat_template.jinja", "{% if %}");
  const Result<ChatTemplate> broken = ChatTemplate::FromModelDir(dir_);
  ASSERT_FALSE(broken.ok());
  EXPECT_NE(broken.status().message().find("1:7: syntax error"), std::string::npos)
      << broken.status().message();
}

TEST(ModelDirQwen3, LoadsTheRealTokenizerConfig) {
  const std::string dir = testing::TestDataPath("tokenizers/qwen3");
  if (!FileExists(JoinPath(dir, "tokenizer_config.json"))) GTEST_SKIP() << "no " << dir;
  const Result<ChatTemplate> chat_template = ChatTemplate::FromModelDir(dir);
  ASSERT_TRUE(chat_template.ok()) << chat_template.status().ToString();
  const Result<std::string> copy =
      ReadTextFile(testing::TestDataPath("chat/templates/qwen3.jinja"));
  ASSERT_TRUE(copy.ok());
  EXPECT_EQ(chat_template->source(), *copy);
  RenderOptions options;
  options.add_generation_prompt = true;
  options.enable_thinking = false;
  const Result<Conversation> conversation =
      Conversation::FromJson(R"([{"role": "user", "content": "hi"}])");
  const Result<RenderedPrompt> prompt = chat_template->Render(*conversation, options);
  ASSERT_TRUE(prompt.ok()) << prompt.status().ToString();
  EXPECT_EQ(prompt->text,
            "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
}

}  // namespace
}  // namespace mtplx::chat
