// The Anthropic Messages API: POST /v1/messages and POST /v1/messages/count_tokens, as Claude Code
// and the Anthropic SDKs use it. Requests become the same chat calls as OpenAI ones (system as a
// string or blocks, a system role inside messages, tool_use / tool_result / thinking blocks);
// replies stream the full event grammar (message_start, content_block_start / delta / stop with
// text, thinking and input_json deltas, message_delta with stop_reason, message_stop, ping).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>

#include "api/chat_call.h"
#include "api/formatter.h"
#include "engine/engine.h"

namespace mtplx::api {

MaybeError ParseMessages(const nlohmann::json& body, const engine::Engine& engine,
                         const ServeDefaults& defaults, ChatCall& out);

std::unique_ptr<ResponseFormatter> NewMessagesFormatter(const ChatCall& call,
                                                        const std::string& prefix);

// POST /v1/messages/count_tokens: {"input_tokens": N} for the prompt the request would run.
MaybeError CountTokens(const nlohmann::json& body, const engine::Engine& engine,
                       const ServeDefaults& defaults, nlohmann::json& out);

// The text of the system blocks Claude Code sends that change with every request (the
// "x-anthropic-billing-header: ..." block): dropped, so the prompt prefix stays cacheable.
bool IsVolatileSystemBlock(const std::string& text);

}  // namespace mtplx::api
