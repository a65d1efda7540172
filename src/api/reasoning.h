// Splits generated text into reasoning (inside <think> ... </think>) and content, while it
// streams. Qwen 3.5 templates open <think> in the prompt itself (the reply starts inside the
// block); Qwen 3 models write <think> themselves. A tag split across pieces ("</thi" + "nk>") is
// held back until it is resolved. Text before a <think> that the model opens itself is content;
// a reply that ends inside an unclosed block is reasoning. Only the first think block is split
// out; one newline right after <think>, whitespace right before </think> and whitespace right
// after </think> belong to neither (Qwen templates render "<think>\n...\n</think>\n\n"), nor
// does whitespace before a <think> that opens the reply. Whitespace inside the block is held
// until what follows it shows whether it is reasoning or the space before </think>.
#pragma once

#include <string>
#include <string_view>

namespace mtplx::api {

struct ReasoningPiece {
  std::string reasoning;  // text inside the think block
  std::string content;    // text outside it
};

class ReasoningSplitter {
 public:
  // `starts_open`: the prompt ended inside a <think> block. `enabled` false: everything is
  // content (the client asked for no reasoning split).
  ReasoningSplitter(bool starts_open, bool enabled = true);

  ReasoningPiece Push(std::string_view text);
  ReasoningPiece Finish();

  bool inside() const { return inside_; }

 private:
  // Moves what is settled from held_ to `out`, until more text is needed (or, at the end, all).
  void Run(bool at_end, ReasoningPiece& out);
  bool StepInside(bool at_end, ReasoningPiece& out);
  bool StepOutside(bool at_end, ReasoningPiece& out);
  void Open();  // the first <think> was read

  bool enabled_;
  bool inside_;
  bool seen_block_ = false;    // only the first think block is reasoning
  bool at_start_ = false;      // nothing but whitespace read yet, and no block open
  bool drop_newline_ = false;  // just after <think>: one newline there is not reasoning
  bool skip_space_ = false;    // just after </think>: leading whitespace is not content
  std::string held_;           // text not settled yet (a tag piece, or whitespace)
};

}  // namespace mtplx::api
