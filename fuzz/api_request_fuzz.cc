// libFuzzer target for the request side of the HTTP APIs: every input is a request body given to
// every endpoint's parser (chat completions, completions, messages, count_tokens, tokenize,
// detokenize) over the bundled model. A body either becomes a call whose prompt the engine
// renders and tokenizes (nothing is generated), or a 4xx error with a message; nothing may
// crash, throw, leak or trip a sanitizer. The reply side of a parsed call is exercised too: a
// formatter is fed a started event, text with tool and reasoning markup, and a completion.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "api/anthropic_api.h"
#include "api/openai_api.h"
#include "engine/engine.h"

namespace {

using mtplx::api::ApiError;
using mtplx::api::MaybeError;

mtplx::engine::Engine* g_engine = nullptr;
mtplx::api::ServeDefaults g_defaults;

void Require(bool condition) {
  if (!condition) __builtin_trap();
}

void RequireClientError(const MaybeError& error) {
  if (!error) return;
  Require(error->http_status >= 400 && error->http_status < 600);
  Require(!error->message.empty());
}

// Renders and tokenizes the call's prompt; then runs its reply formatter over made-up events.
void Exercise(mtplx::api::ChatCall& call, bool anthropic) {
  const std::string prefix = mtplx::api::ForceToolCall(call.tool_choice, g_defaults, call.request);
  const mtplx::Status prepared = g_engine->Prepare(call.request);
  if (!prepared.ok()) {
    RequireClientError(mtplx::api::FromStatus(prepared));
    return;
  }
  auto formatter = anthropic ? mtplx::api::NewMessagesFormatter(call, prefix)
                             : mtplx::api::NewChatFormatter(call, *g_engine, prefix);
  mtplx::engine::Event started;
  started.type = mtplx::engine::Event::Type::kStarted;
  started.prompt_tokens = static_cast<int64_t>(call.request.tokens.size());
  started.reasoning_open = call.request.reasoning_open;
  formatter->OnStarted(started);
  mtplx::engine::Event text;
  text.type = mtplx::engine::Event::Type::kText;
  text.text = "a</think>b<tool_call>\n<function=f>\n<parameter=x>\n1\n";
  text.tokens = {1, 2};
  formatter->OnText(text);
  mtplx::engine::Completion done;
  done.finish_reason = "length";
  done.tokens = {1, 2};
  Require(!formatter->OnFinished(done).empty());
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  mtplx::engine::EngineOptions options;
  const char* dir = std::getenv("MTPLX_MODEL");
  options.model_dir = dir && *dir ? dir : MTPLX_SOURCE_DIR "/models/default";
  options.load.threads = 1;
  options.load.show_progress = false;
  options.skip_mtp_check = true;
  auto engine = mtplx::engine::Engine::Open(options);
  if (!engine.ok()) {
    std::fprintf(stderr, "api_request_fuzz: %s\n", engine.status().ToString().c_str());
    std::abort();
  }
  g_engine = engine->release();
  g_defaults.model_id = "fuzz";
  mtplx::api::DetectTemplateTraits(*g_engine, g_defaults);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  nlohmann::json body;
  if (MaybeError error = mtplx::api::ParseBody(text, body)) {
    RequireClientError(error);
    return 0;
  }
  {
    mtplx::api::ChatCall call;
    const MaybeError error = mtplx::api::ParseChatCompletion(body, *g_engine, g_defaults, call);
    RequireClientError(error);
    if (!error) Exercise(call, false);
  }
  {
    mtplx::api::ChatCall call;
    const MaybeError error = mtplx::api::ParseMessages(body, *g_engine, g_defaults, call);
    RequireClientError(error);
    if (!error) Exercise(call, true);
  }
  {
    mtplx::api::CompletionCall call;
    const MaybeError error = mtplx::api::ParseCompletion(body, *g_engine, g_defaults, call);
    RequireClientError(error);
    if (!error) {
      const mtplx::Status prepared = g_engine->Prepare(call.call.request);
      if (!prepared.ok()) RequireClientError(mtplx::api::FromStatus(prepared));
    }
  }
  nlohmann::json out;
  RequireClientError(mtplx::api::CountTokens(body, *g_engine, g_defaults, out));
  RequireClientError(mtplx::api::Tokenize(body, *g_engine, g_defaults, out));
  RequireClientError(mtplx::api::Detokenize(body, *g_engine, out));
  return 0;
}
