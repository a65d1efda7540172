// Constrained decoding is exact with speculation: greedy output under a grammar is the same
// token for token with and without MTP drafting, every reply is a sentence of the grammar, and
// sampled replies follow the same (masked) distribution either way. On the bundled trained
// model, whose MTP head drafts well, so drafts are accepted, corrected and completed by bonus
// tokens under the grammar. At int8 activations, as `run` and `serve` decode.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <memory>
#include <span>

#include "engine/generator.h"
#include "engine/prefix.h"
#include "engine/speculative.h"
#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "model/model.h"
#include "sample/test_stats.h"
#include "support/test_support.h"
#include "tokenizer/tokenizer.h"

namespace mtplx::engine {
namespace {

struct Loaded {
  std::unique_ptr<model::Model> model;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;
  std::shared_ptr<const grammar::Vocabulary> vocabulary;
  int32_t im_end = 0;
};

Loaded Load() {
  Loaded s;
  model::LoadOptions options;
  options.show_progress = false;
  options.threads = 1;
  options.activations = kernels::Activations::kInt8;  // as `run` and `serve` decode
  auto m = model::Model::Load(testing::TrainedModelDir(), options);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  if (!m.ok()) return s;
  s.model = std::move(m).value();
  auto tok = tokenizer::Tokenizer::FromJsonFile(testing::TrainedModelDir() + "/tokenizer.json");
  EXPECT_TRUE(tok.ok());
  s.tokenizer = std::make_unique<tokenizer::Tokenizer>(std::move(tok).value());
  s.vocabulary = grammar::Vocabulary::FromTokenizer(
      *s.tokenizer, static_cast<int32_t>(s.model->config().vocab_size));
  s.im_end = *s.tokenizer->AddedTokenId("<|im_end|>");
  return s;
}

std::shared_ptr<const grammar::Grammar> Schema(const std::string& schema) {
  auto g = grammar::CompileJsonSchema(schema);
  EXPECT_TRUE(g.ok()) << g.status().message();
  return std::make_shared<const grammar::Grammar>(std::move(*g));
}

GenerateRequest Request(const Loaded& s, const std::string& user,
                        std::shared_ptr<const grammar::Grammar> g) {
  GenerateRequest r;
  r.prompt = s.tokenizer->Encode(
      "<|im_start|>user\n" + user + "<|im_end|>\n<|im_start|>assistant\n", true);
  r.stop_ids = {s.im_end};
  r.grammar = std::move(g);
  r.vocabulary = s.vocabulary;
  return r;
}

// The reply is a sentence of the grammar (complete when it ended with "stop").
void ExpectInGrammar(const Loaded& s, const GenerateResult& result,
                     const std::shared_ptr<const grammar::Grammar>& g) {
  std::vector<int32_t> tokens = result.tokens;
  if (!tokens.empty() && tokens.back() == s.im_end) tokens.pop_back();
  const std::string text = s.tokenizer->Decode(tokens);
  grammar::Matcher matcher(g);
  grammar::MatchState state = matcher.Start();
  ASSERT_TRUE(matcher.AdvanceBytes(state, text)) << text;
  if (result.finish_reason == "stop") {
    EXPECT_TRUE(state.CanEnd()) << text;
  }
}

const char* kPersonSchema = R"({"type": "object", "properties": {
    "name": {"type": "string", "maxLength": 24},
    "age": {"type": "integer", "minimum": 0, "maximum": 120},
    "languages": {"type": "array", "items": {"enum": ["python", "c++", "rust"]}, "maxItems": 3},
    "active": {"type": "boolean"}},
    "required": ["name", "age", "languages", "active"]})";

TEST(ConstrainedTest, GreedyIsIdenticalWithAndWithoutMtp) {
  if (!std::filesystem::exists(testing::TrainedModelDir() + "/config.json"))
    GTEST_SKIP() << "no trained model";
  Loaded s = Load();
  ASSERT_TRUE(s.model);
  const auto person = Schema(kPersonSchema);
  const auto code = Schema(R"({"type": "object", "properties": {"code": {"type": "string"},
      "lines": {"type": "integer"}}, "required": ["code", "lines"]})");
  int64_t accepted = 0, corrections = 0;
  const std::pair<const char*, std::shared_ptr<const grammar::Grammar>> cases[] = {
      {"Describe a programmer as JSON.", person},
      {"def fibonacci(n):", code},
      {"Write a JSON object.", person},
  };
  for (const auto& [user, g] : cases) {
    GenerateRequest request = Request(s, user, g);
    request.sampling.temperature = 0.0;
    request.max_tokens = 96;
    auto plain = GeneratePlain(*s.model, request, nullptr);
    ASSERT_TRUE(plain.ok()) << plain.status().ToString();
    ExpectInGrammar(s, *plain, g);
    for (int depth = 1; depth <= 3; ++depth) {
      SpeculativeOptions options;
      options.depth = depth;
      auto spec = GenerateSpeculative(*s.model, request, options, nullptr);
      ASSERT_TRUE(spec.ok()) << spec.status().ToString();
      EXPECT_EQ(spec->result.tokens, plain->tokens) << user << " depth " << depth;
      EXPECT_EQ(spec->result.finish_reason, plain->finish_reason);
      for (int d = 1; d <= depth; ++d) accepted += spec->speculative.accepted_by_depth[d];
      corrections += spec->speculative.corrections;
    }
  }
  EXPECT_GT(accepted, 50);  // drafting under the grammar really happened
  EXPECT_GT(corrections, 5);
}

// The first three tokens of a sampled reply (temperature 1, no truncation) under a small
// grammar, with and without MTP: one joint distribution (chi-square homogeneity).
TEST(ConstrainedTest, SampledRepliesFollowTheMaskedDistribution) {
  if (!std::filesystem::exists(testing::TrainedModelDir() + "/config.json"))
    GTEST_SKIP() << "no trained model";
  Loaded s = Load();
  ASSERT_TRUE(s.model);
  auto parsed = grammar::ParseGbnf(
      "root ::= (\"def \" | \"class \" | \"import \") [a-z_]{1,6} (\"(\" | \":\" | \"\\n\")");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  const auto g = std::make_shared<const grammar::Grammar>(std::move(*parsed));
  constexpr int kSamples = 1000;
  std::map<std::vector<int32_t>, int> cells;
  std::vector<int64_t> plain_counts, spec_counts;
  auto count = [&](std::vector<int64_t>& counts, const std::vector<int32_t>& tokens) {
    std::vector<int32_t> head(tokens.begin(), tokens.begin() + std::min<size_t>(3, tokens.size()));
    const auto [it, added] = cells.emplace(head, static_cast<int>(cells.size()));
    if (counts.size() < cells.size()) counts.resize(cells.size(), 0);
    ++counts[it->second];
  };
  GenerateRequest request = Request(s, "Write Python.", g);
  request.sampling.temperature = 1.0;
  request.sampling.top_k = 0;
  request.sampling.top_p = 1.0;
  request.max_tokens = 3;
  // Every sample starts from the state of the prompt but its last token: one prompt row a sample.
  auto prefix = BuildPrefix(
      *s.model, std::span<const int32_t>(request.prompt.data(), request.prompt.size() - 1));
  ASSERT_TRUE(prefix.ok()) << prefix.status().ToString();
  request.prefix = &*prefix;
  int64_t accepted = 0, corrections = 0;
  for (int i = 0; i < kSamples; ++i) {
    request.seed = 1 + i;
    auto plain = GeneratePlain(*s.model, request, nullptr);
    ASSERT_TRUE(plain.ok());
    count(plain_counts, plain->tokens);
    request.seed = 1000001 + i;
    SpeculativeOptions options;
    options.depth = 2;
    options.draft_same_as_target = true;
    auto spec = GenerateSpeculative(*s.model, request, options, nullptr);
    ASSERT_TRUE(spec.ok());
    count(spec_counts, spec->result.tokens);
    accepted += spec->speculative.accepted_by_depth[1] + spec->speculative.accepted_by_depth[2];
    corrections += spec->speculative.corrections;
  }
  plain_counts.resize(cells.size(), 0);
  spec_counts.resize(cells.size(), 0);
  const auto test = test_stats::ChiSquareHomogeneity(plain_counts, spec_counts);
  EXPECT_GT(test.p_value, 1e-3) << "chi2 " << test.statistic << " df " << test.df;
  EXPECT_GT(test.df, 5);
  EXPECT_GT(accepted, kSamples / 2);
  EXPECT_GT(corrections, 20);
}

}  // namespace
}  // namespace mtplx::engine
