#include "tokenizer/test_tokenizers.h"

#include "base/check.h"
#include "support/test_support.h"
#include "tokenizer/synthetic_tokenizer.h"

namespace mtplx::tokenizer::testing {

const Tokenizer& Qwen3Tokenizer() {
  static const Tokenizer* tokenizer = [] {
    Result<Tokenizer> loaded =
        Tokenizer::FromJsonFile(mtplx::testing::TestDataPath("tokenizers/qwen3/tokenizer.json"));
    MTPLX_CHECK(loaded.ok(), loaded.status().ToString().c_str());
    return new Tokenizer(std::move(loaded).value());
  }();
  return *tokenizer;
}

const Tokenizer& RealSizeSyntheticTokenizer() {
  static const Tokenizer* tokenizer = [] {
    Result<std::string> json = BuildSyntheticTokenizerJson({.added_token_base = 248044});
    MTPLX_CHECK(json.ok(), json.status().ToString().c_str());
    Result<Tokenizer> loaded = Tokenizer::FromJsonString(*json);
    MTPLX_CHECK(loaded.ok(), loaded.status().ToString().c_str());
    return new Tokenizer(std::move(loaded).value());
  }();
  return *tokenizer;
}

}  // namespace mtplx::tokenizer::testing
