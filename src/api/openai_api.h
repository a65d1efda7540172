// The OpenAI API: POST /v1/chat/completions, POST /v1/completions, GET /v1/models, and the
// tokenizer endpoints. Requests are parsed into typed calls (every field type- and range-checked,
// errors naming the field); replies are built by formatters from the engine's events.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "api/chat_call.h"
#include "api/formatter.h"
#include "engine/engine.h"

namespace mtplx::api {

// POST /v1/chat/completions body -> a chat call.
MaybeError ParseChatCompletion(const nlohmann::json& body, const engine::Engine& engine,
                               const ServeDefaults& defaults, ChatCall& out);

// POST /v1/completions body -> a call on raw text (or token ids); `echo` / `logprobs` kept.
struct CompletionCall {
  ChatCall call;  // call.request.kind is kText or kTokens
  bool echo = false;
  int logprobs = -1;  // top alternatives per token (-1: none)
};
MaybeError ParseCompletion(const nlohmann::json& body, const engine::Engine& engine,
                           const ServeDefaults& defaults, CompletionCall& out);

std::unique_ptr<ResponseFormatter> NewChatFormatter(const ChatCall& call,
                                                    const engine::Engine& engine,
                                                    const std::string& prefix);
std::unique_ptr<ResponseFormatter> NewCompletionFormatter(const CompletionCall& call,
                                                          const engine::Engine& engine);

// GET /v1/models and GET /v1/models/{id}.
nlohmann::json ModelsJson(const engine::Engine& engine, const ServeDefaults& defaults);
nlohmann::json ModelJson(const engine::Engine& engine, const ServeDefaults& defaults);

// POST /tokenize {"prompt" | "content" | "text": string, or "messages": [...], "add_special",
// "with_pieces"} and POST /detokenize {"tokens": [...]}.
MaybeError Tokenize(const nlohmann::json& body, const engine::Engine& engine,
                    const ServeDefaults& defaults, nlohmann::json& out);
MaybeError Detokenize(const nlohmann::json& body, const engine::Engine& engine,
                      nlohmann::json& out);

// OpenAI usage of a completion.
nlohmann::json UsageJson(const engine::Completion& done, int64_t reasoning_tokens);

}  // namespace mtplx::api
