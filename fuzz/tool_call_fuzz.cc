// libFuzzer target for the streaming parsers of the API layer: ToolCallParser (Qwen XML and
// hermes JSON tool calls) and ReasoningSplitter (<think> blocks).
//
// Input layout: byte 0 holds the number of chunk-size bytes that follow in its low 4 bits (0: the
// text goes in one piece), whether the prompt opened <think> (bit 4) and whether the reasoning
// split is disabled (bit 5); the chunk sizes (0 to 63, cycled; 0 pushes an empty piece) come
// next, and the rest is the generated text. Each parser is run twice, on the chunked text and on
// the whole text, and these must hold (__builtin_trap otherwise; an escaping exception also
// aborts):
//   - the stream is well formed: kCallStart, kCallArguments..., kCallEnd per call, indices 0, 1,
//     ..., no text inside a call, and calls() holds exactly the kCallEnd calls;
//   - every call's arguments parse as a JSON object and equal its fragments joined;
//   - with no calls, the text comes back unchanged (only call markup and the whitespace around
//     calls may be removed);
//   - chunking changes nothing: same text, same calls, same fragments;
//   - the reasoning split is the same for both chunkings, loses no bytes when disabled, and never
//     adds any.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "api/reasoning.h"
#include "api/tool_calls.h"

namespace {

using mtplx::api::ReasoningPiece;
using mtplx::api::ReasoningSplitter;
using mtplx::api::ToolCall;
using mtplx::api::ToolCallParser;
using mtplx::api::ToolStreamPiece;
using Kind = ToolStreamPiece::Kind;

void Require(bool condition) {
  if (!condition) __builtin_trap();
}

const nlohmann::json& Tools() {
  static const nlohmann::json* tools = new nlohmann::json(nlohmann::json::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "parameters": {
      "type": "object", "properties": {
        "city": {"type": "string"}, "days": {"type": "integer"}, "celsius": {"type": "boolean"},
        "ratio": {"type": "number"}, "options": {"type": "object"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "either": {"anyOf": [{"type": "integer"}, {"type": "null"}]}}}}},
    {"name": "search", "input_schema": {"type": "object", "properties": {
      "query": {"type": "string"}, "limit": {"type": ["integer", "null"]}}}}
  ])"));
  return *tools;
}

struct ToolOutcome {
  std::string text;
  std::vector<ToolCall> calls;
  std::vector<std::string> fragments;  // every kCallArguments fragment, in order
};

class ToolChecker {
 public:
  void Add(const std::vector<ToolStreamPiece>& pieces) {
    for (const ToolStreamPiece& piece : pieces) Add(piece);
  }

  ToolOutcome Finish(const ToolCallParser& parser) {
    Require(!open_);
    Require(parser.calls().size() == outcome_.calls.size());
    for (size_t i = 0; i < outcome_.calls.size(); ++i) {
      Require(parser.calls()[i].id == outcome_.calls[i].id);
      Require(parser.calls()[i].arguments == outcome_.calls[i].arguments);
    }
    return outcome_;
  }

 private:
  void Add(const ToolStreamPiece& piece) {
    const int index = static_cast<int>(outcome_.calls.size());
    switch (piece.kind) {
      case Kind::kText:
        Require(!open_ && !piece.text.empty());
        outcome_.text += piece.text;
        return;
      case Kind::kCallStart:
        Require(!open_ && piece.index == index && !piece.call.name.empty());
        Require(piece.call.id.rfind("call_" + std::to_string(index) + "_", 0) == 0);
        open_ = true;
        start_ = piece.call;
        arguments_.clear();
        return;
      case Kind::kCallArguments:
        Require(open_ && piece.index == index);
        arguments_ += piece.text;
        outcome_.fragments.push_back(piece.text);
        return;
      case Kind::kCallEnd:
        Require(open_ && piece.index == index);
        Require(piece.call.id == start_.id && piece.call.name == start_.name);
        Require(piece.call.arguments == arguments_);
        Require(nlohmann::json::parse(arguments_, nullptr, false).is_object());
        open_ = false;
        outcome_.calls.push_back(piece.call);
        return;
    }
    Require(false);
  }

  ToolOutcome outcome_;
  bool open_ = false;
  ToolCall start_;
  std::string arguments_;
};

ToolOutcome RunTools(const std::vector<std::string_view>& chunks) {
  ToolCallParser parser(Tools());
  ToolChecker checker;
  for (const std::string_view chunk : chunks) checker.Add(parser.Push(chunk));
  checker.Add(parser.Finish());
  return checker.Finish(parser);
}

ReasoningPiece RunReasoning(const std::vector<std::string_view>& chunks, bool starts_open,
                            bool enabled) {
  ReasoningSplitter splitter(starts_open, enabled);
  ReasoningPiece all;
  for (const std::string_view chunk : chunks) {
    const ReasoningPiece piece = splitter.Push(chunk);
    all.reasoning += piece.reasoning;
    all.content += piece.content;
  }
  const ReasoningPiece last = splitter.Finish();
  all.reasoning += last.reasoning;
  all.content += last.content;
  return all;
}

void CheckTools(std::string_view text, const std::vector<std::string_view>& chunks) {
  const ToolOutcome chunked = RunTools(chunks);
  const ToolOutcome whole = RunTools({text});
  Require(chunked.text == whole.text);
  Require(chunked.fragments == whole.fragments);
  Require(chunked.calls.size() == whole.calls.size());
  for (size_t i = 0; i < whole.calls.size(); ++i) {
    Require(chunked.calls[i].name == whole.calls[i].name);
    Require(chunked.calls[i].arguments == whole.calls[i].arguments);
  }
  if (whole.calls.empty()) Require(whole.text == text);
  Require(whole.text.size() <= text.size());
}

void CheckReasoning(std::string_view text, const std::vector<std::string_view>& chunks,
                    bool starts_open, bool enabled) {
  const ReasoningPiece chunked = RunReasoning(chunks, starts_open, enabled);
  const ReasoningPiece whole = RunReasoning({text}, starts_open, enabled);
  Require(chunked.reasoning == whole.reasoning && chunked.content == whole.content);
  Require(whole.reasoning.size() + whole.content.size() <= text.size());
  if (!enabled) Require(whole.content == text && whole.reasoning.empty());
  if (enabled && !starts_open && text.find("<think>") == std::string_view::npos) {
    Require(whole.content == text && whole.reasoning.empty());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t control = data[0];
  const size_t size_bytes = std::min<size_t>(control & 0x0f, size - 1);
  const bool starts_open = (control & 0x10) != 0;
  const bool enabled = (control & 0x20) == 0;
  const uint8_t* sizes = data + 1;
  const std::string_view text(reinterpret_cast<const char*>(data + 1 + size_bytes),
                              size - 1 - size_bytes);

  std::vector<std::string_view> chunks;
  if (size_bytes == 0) {
    chunks.push_back(text);
  } else {
    // Sizes that are all zero would never move forward: they count as 1.
    size_t cycle = 0;
    for (size_t i = 0; i < size_bytes; ++i) cycle += sizes[i] % 64;
    for (size_t at = 0, i = 0; at < text.size(); ++i) {
      const size_t wanted = cycle == 0 ? 1 : sizes[i % size_bytes] % 64;
      const size_t n = std::min(wanted, text.size() - at);
      chunks.push_back(text.substr(at, n));
      at += n;
    }
  }
  CheckTools(text, chunks);
  CheckReasoning(text, chunks, starts_open, enabled);
  return 0;
}
