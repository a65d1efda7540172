// Tool calls in generated text, parsed while the text streams. Two dialects are recognised:
//
//   Qwen XML (Qwen 3.5 / 3.6 / Qwen3-Coder chat templates):
//     <tool_call>
//     <function=get_weather>
//     <parameter=city>
//     Paris
//     </parameter>
//     <parameter=days>
//     3
//     </parameter>
//     </function>
//     </tool_call>
//   (the <tool_call> wrapper may be missing: a bare <function=...> block is a call too)
//
//   hermes JSON (Qwen 2.5 / Qwen 3 templates):
//     <tool_call>
//     {"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}
//     </tool_call>
//
// Text that could still become markup is held back until it is resolved; text that turns out not
// to be markup (or markup that is malformed) is released as plain content, never dropped. XML
// parameter values are typed from the tool's JSON schema (integer, number, boolean, object,
// array, null: parsed as JSON when they are valid JSON of that type; otherwise, and for strings,
// kept as the string with one leading and one trailing newline removed). A call whose tags are
// still open when the text ends is repaired (closed) if its function name is known. A call to a
// function the request did not declare, or markup that does not parse, stays plain text. A call
// once announced (kCallStart) is always finished: text inside its function body that is not a
// parameter tag ends it there, with the parameters read so far, and is content. Whitespace
// between and after calls is dropped. XML arguments keep the model's parameter order, and a
// repeated parameter appears twice (JSON readers keep the last); hermes arguments keep the
// model's key order.
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace mtplx::api {

struct ToolCall {
  std::string id;  // "call_<n>_<random hex>", unique per parser
  std::string name;
  std::string arguments;  // a JSON object, compact (nlohmann dump())
};

// One step of the parsed stream, in order.
struct ToolStreamPiece {
  enum class Kind {
    kText,           // plain content
    kCallStart,      // a call began: index, id, name are set
    kCallArguments,  // a fragment of the call's arguments JSON (index, text)
    kCallEnd,        // the call is complete: index, and `call` holds the whole call
  };
  Kind kind = Kind::kText;
  std::string text;  // kText content, or kCallArguments fragment
  int index = 0;     // which call (0, 1, ...) for the kCall* kinds
  ToolCall call;     // kCallStart: id and name; kCallEnd: everything
};

class ToolCallParser {
 public:
  // `tools`: the request's tools, {"type": "function", "function": {"name", "parameters"}}
  // (OpenAI) or {"name", "input_schema"} (Anthropic); both are accepted. With no tools, the
  // parser passes all text through unchanged (markup included).
  explicit ToolCallParser(const nlohmann::json& tools);
  ~ToolCallParser();
  ToolCallParser(ToolCallParser&&) noexcept;
  ToolCallParser& operator=(ToolCallParser&&) noexcept;

  // Feeds the next piece of generated text; returns what became certain.
  std::vector<ToolStreamPiece> Push(std::string_view text);
  // The end of the text: releases held-back text, repairs or gives up on an open call.
  std::vector<ToolStreamPiece> Finish();

  // Complete calls so far.
  const std::vector<ToolCall>& calls() const { return calls_; }

 private:
  struct Impl;  // the parser's state machine (tool_calls.cc)
  // Takes what the state machine produced and records the calls it completed.
  std::vector<ToolStreamPiece> Collect();

  std::unique_ptr<Impl> impl_;
  std::vector<ToolCall> calls_;
};

// Types one XML parameter value from its JSON schema (see the header comment). `value` is the
// text between the tags with the template's newlines already removed; it is not trimmed further.
// The schema's "type" (a name or a list), and the types of its anyOf / oneOf / allOf branches,
// decide; "True" / "False" count as booleans. Never throws.
nlohmann::json TypeParameterValue(std::string value, const nlohmann::json& schema);

}  // namespace mtplx::api
