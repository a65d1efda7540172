// From generated token ids to the text a client sees while it streams: bytes are held back until
// their UTF-8 character is complete (StreamDecoder), and text that could still be the start of a
// stop string is held back until it cannot; a stop string ends the text just before it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/stream_decoder.h"
#include "tokenizer/tokenizer.h"

namespace mtplx::engine {

class TextStream {
 public:
  TextStream(const tokenizer::Tokenizer* tokenizer, std::vector<std::string> stop_strings);

  // Adds a token; returns the text that became safe to show (often empty). After a stop string
  // matched, stopped() is true and later tokens add nothing.
  std::string Push(int32_t token);
  // The end of generation: whatever was held back (unless a stop string matched).
  std::string Finish();

  bool stopped() const { return stopped_; }
  // The stop string that matched (empty if none).
  const std::string& matched_stop() const { return matched_; }
  // All text so far, stop string excluded.
  const std::string& text() const { return text_; }

 private:
  std::string TakeSafe();

  tokenizer::StreamDecoder decoder_;
  std::vector<std::string> stops_;
  size_t longest_stop_ = 0;
  std::string text_;
  size_t streamed_ = 0;
  bool stopped_ = false;
  bool finished_ = false;
  std::string matched_;
};

}  // namespace mtplx::engine
