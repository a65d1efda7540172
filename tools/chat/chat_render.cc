// chat_render: renders a chat template from the command line, for checking goldens by hand.
//
//   chat_render TEMPLATE.jinja --context CONTEXT.json       variables from a JSON object
//   chat_render TEMPLATE.jinja --conversation CHAT.json [--add-generation-prompt]
//               [--enable-thinking=true|false] [--preserve-thinking=true|false] [--segments]
//
// Prints the rendered text (or, with --segments, one JSON line per segment) to stdout; errors go
// to stderr with exit status 1.
#include <cstdio>
#include <iostream>
#include <string>
#include <string_view>

#include "base/file.h"
#include "chat/chat_template.h"
#include "chat/py_text.h"

namespace {

using mtplx::chat::ChatTemplate;
using mtplx::chat::Conversation;
using mtplx::chat::RenderedPrompt;
using mtplx::chat::RenderOptions;

int Fail(const std::string& message) {
  std::cerr << "chat_render: " << message << "\n";
  return 1;
}

bool ParseFlag(std::string_view arg, std::string_view name, std::optional<bool>* out) {
  if (arg.substr(0, name.size()) != name) return false;
  *out = arg.substr(name.size()) != "=false";
  return true;
}

void Print(const RenderedPrompt& prompt, bool segments) {
  if (!segments) {
    std::cout << prompt.text;
    return;
  }
  for (const auto& segment : prompt.segments) {
    std::string json;
    mtplx::chat::AppendJsonString(segment.text, false, &json);
    std::cout << (segment.from_user ? "user " : "tmpl ") << json << "\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    return Fail("usage: chat_render TEMPLATE.jinja (--context|--conversation) FILE [options]");
  }
  auto source = mtplx::ReadTextFile(argv[1]);
  if (!source.ok()) return Fail(source.status().ToString());
  auto chat_template = ChatTemplate::FromString(*source);
  if (!chat_template.ok()) return Fail(chat_template.status().message());
  auto input = mtplx::ReadTextFile(argv[3]);
  if (!input.ok()) return Fail(input.status().ToString());
  const std::string_view mode = argv[2];
  RenderOptions options;
  bool segments = false;
  for (int i = 4; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--add-generation-prompt") {
      options.add_generation_prompt = true;
    } else if (arg == "--segments") {
      segments = true;
    } else if (!ParseFlag(arg, "--enable-thinking", &options.enable_thinking) &&
               !ParseFlag(arg, "--preserve-thinking", &options.preserve_thinking)) {
      return Fail("unknown option " + std::string(arg));
    }
  }
  mtplx::Result<RenderedPrompt> prompt = mtplx::Internal("unreachable");
  if (mode == "--context") {
    prompt = chat_template->RenderJson(*input);
  } else if (mode == "--conversation") {
    auto conversation = Conversation::FromJson(*input);
    if (!conversation.ok()) return Fail(conversation.status().message());
    options.eos_token = "<|im_end|>";
    options.pad_token = "<|endoftext|>";
    prompt = chat_template->Render(*conversation, options);
  } else {
    return Fail("expected --context or --conversation");
  }
  if (!prompt.ok()) return Fail(prompt.status().message());
  Print(*prompt, segments);
  return 0;
}
