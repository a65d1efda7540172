// Structured output: what a request asks its reply to be, turned into a grammar for the engine
// (which then samples only tokens that keep the reply inside it, exactly, with or without MTP).
//
//   OpenAI response_format {"type": "json_schema", "json_schema": {"schema": ...}}: the schema's
//     JSON (grammar/json_schema.h); {"type": "json_object"}: any JSON object.
//   "grammar": a GBNF string (grammar/gbnf.h), for power users (chat and completions).
//   A forced tool call (OpenAI tool_choice "required" or a named function, Anthropic "any" or
//     "tool"): after the opening markup ForceToolCall puts in the prompt, the rest of one call in
//     the model's own dialect, its arguments following the tool's input schema (Qwen XML
//     parameters typed by it, or hermes JSON), then the closing markup; the reply ends there.
//
// Structured replies are not reasoned first: thinking is turned off for them, as for forced
// tool calls. Schemas keep the property order of the request, so the raw body is read again
// with its key order when a schema is used. A schema or grammar the compiler cannot honour is a
// 400 naming the keyword and its path.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "api/chat_call.h"
#include "api/fields.h"

namespace mtplx::api {

// `body` is the parsed request, `raw_body` its text; `prefix` what ForceToolCall returned.
MaybeError ApplyStructuredOutput(const nlohmann::json& body, std::string_view raw_body,
                                 const ServeDefaults& defaults, const std::string& prefix,
                                 ChatCall& call);

// The response_format field's shape, checked while the request is read (type text,
// json_object or json_schema with a schema object).
MaybeError CheckResponseFormat(const FieldReader& f);

}  // namespace mtplx::api
