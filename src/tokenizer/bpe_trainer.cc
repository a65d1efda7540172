#include "tokenizer/bpe_trainer.h"

#include <map>
#include <unordered_map>
#include <unordered_set>

namespace mtplx::tokenizer {
namespace {

struct Word {
  std::vector<int32_t> symbols;
  int64_t count;
};

uint64_t PairKey(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(left) << 32) | static_cast<uint32_t>(right);
}

// Unique pieces of the corpus with their counts, in byte order so training is reproducible.
std::vector<Word> CountWords(std::string_view corpus, const RegexSplitter& splitter) {
  std::vector<std::string_view> pieces;
  splitter.Split(corpus, &pieces);
  std::map<std::string_view, int64_t> counts;
  for (const std::string_view piece : pieces) ++counts[piece];
  std::vector<Word> words;
  words.reserve(counts.size());
  for (const auto& [piece, count] : counts) {
    Word word{{}, count};
    for (const char c : piece) word.symbols.push_back(static_cast<unsigned char>(c));
    words.push_back(std::move(word));
  }
  return words;
}

// The most frequent pair whose merged bytes are not yet a token; false when none is left.
bool BestPair(const std::vector<Word>& words, const std::vector<std::string>& tokens,
              const std::unordered_set<std::string>& known, uint64_t* best_key) {
  std::unordered_map<uint64_t, int64_t> counts;
  for (const Word& word : words) {
    for (size_t i = 0; i + 1 < word.symbols.size(); ++i) {
      counts[PairKey(word.symbols[i], word.symbols[i + 1])] += word.count;
    }
  }
  int64_t best_count = 0;
  for (const auto& [key, count] : counts) {
    if (count < best_count || (count == best_count && key > *best_key)) continue;
    const std::string merged = tokens[key >> 32] + tokens[key & 0xFFFFFFFF];
    if (known.count(merged)) continue;
    best_count = count;
    *best_key = key;
  }
  return best_count > 0;
}

void ApplyMerge(int32_t left, int32_t right, int32_t merged, std::vector<Word>* words) {
  for (Word& word : *words) {
    std::vector<int32_t>& symbols = word.symbols;
    size_t out = 0;
    for (size_t i = 0; i < symbols.size(); ++i) {
      if (i + 1 < symbols.size() && symbols[i] == left && symbols[i + 1] == right) {
        symbols[out++] = merged;
        ++i;
      } else {
        symbols[out++] = symbols[i];
      }
    }
    symbols.resize(out);
  }
}

}  // namespace

TrainedBpe TrainByteLevelBpe(std::string_view corpus, const RegexSplitter& splitter,
                             size_t max_merges) {
  TrainedBpe result;
  std::unordered_set<std::string> known;
  for (int byte = 0; byte < 256; ++byte) {
    result.tokens.emplace_back(1, static_cast<char>(byte));
    known.insert(result.tokens.back());
  }
  std::vector<Word> words = CountWords(corpus, splitter);
  while (result.merges.size() < max_merges) {
    uint64_t key = 0;
    if (!BestPair(words, result.tokens, known, &key)) break;
    const auto left = static_cast<int32_t>(key >> 32);
    const auto right = static_cast<int32_t>(key & 0xFFFFFFFF);
    const auto merged = static_cast<int32_t>(result.tokens.size());
    result.tokens.push_back(result.tokens[left] + result.tokens[right]);
    known.insert(result.tokens.back());
    result.merges.emplace_back(left, right);
    ApplyMerge(left, right, merged, &words);
  }
  return result;
}

}  // namespace mtplx::tokenizer
