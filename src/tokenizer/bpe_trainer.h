// A small, deterministic byte-level BPE trainer for synthetic test tokenizers. It is written
// for corpora of a few kilobytes; it recounts all pairs per merge instead of maintaining
// incremental counts.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/regex_splitter.h"

namespace mtplx::tokenizer {

struct TrainedBpe {
  std::vector<std::string> tokens;                  // raw bytes by id; ids 0..255 = bytes
  std::vector<std::pair<int32_t, int32_t>> merges;  // merge i joins two ids into id 256 + i
};

// Learns up to max_merges merges over the pieces that splitter cuts corpus into. Each step
// merges the most frequent adjacent pair (ties: smallest left id, then right id), skipping
// pairs whose concatenation is already a token so that every merge adds exactly one new
// token. Stops early when no pair is left.
TrainedBpe TrainByteLevelBpe(std::string_view corpus, const RegexSplitter& splitter,
                             size_t max_merges);

}  // namespace mtplx::tokenizer
