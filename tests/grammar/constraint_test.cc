#include "grammar/constraint.h"

#include <gtest/gtest.h>

#include <memory>
#include <random>

#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "support/test_support.h"
#include "tokenizer/tokenizer.h"

namespace mtplx::grammar {
namespace {

std::shared_ptr<const Grammar> Schema(const std::string& schema) {
  auto g = CompileJsonSchema(schema);
  EXPECT_TRUE(g.ok()) << g.status().message();
  return std::make_shared<const Grammar>(std::move(*g));
}

// A vocabulary like a byte-level BPE one: every single byte, then random pieces of JSON-ish
// text and UTF-8 (whole and cut characters).
std::shared_ptr<const Vocabulary> RandomVocabulary(int size, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::string> tokens;
  for (int b = 0; b < 256; ++b) tokens.push_back(std::string(1, static_cast<char>(b)));
  const std::vector<std::string> pieces = {
      "{",   "}", "[", "]",  "\"", ":", ",", " ", "\n", "  ", "true", "false", "null", "name",
      "age", "0", "1", "23", "-",  ".", "e", "a", "b",  "é",  "☃",    "\\",    "\\n",  "x"};
  while (static_cast<int>(tokens.size()) < size) {
    std::string t;
    const int parts = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < parts; ++i) t += pieces[rng() % pieces.size()];
    if (rng() % 7 == 0) t.pop_back();  // may cut a UTF-8 character
    if (t.empty()) continue;
    tokens.push_back(t);
  }
  tokens.push_back("");  // a special token: no bytes
  return Vocabulary::FromBytes(std::move(tokens));
}

std::vector<int32_t> Ids(const std::vector<uint64_t>& bits, int32_t size) {
  std::vector<int32_t> ids;
  for (int32_t i = 0; i < size; ++i)
    if ((bits[i >> 6] >> (i & 63)) & 1) ids.push_back(i);
  return ids;
}

// Walks random allowed tokens; at every state the trie walk must equal the per-token scan.
void CheckWalks(const std::shared_ptr<const Grammar>& g, const std::shared_ptr<const Vocabulary>& v,
                int32_t end_id, int walks, int steps) {
  std::mt19937 rng(7);
  for (int w = 0; w < walks; ++w) {
    TokenConstraint c(g, v, {end_id});
    std::string text;
    for (int s = 0; s < steps; ++s) {
      const std::vector<int32_t> allowed = Ids(c.Allowed(), v->size());
      ASSERT_EQ(allowed, Ids(c.AllowedByScan(), v->size())) << "walk " << w << " step " << s;
      ASSERT_FALSE(allowed.empty()) << "walk " << w << " step " << s << " after " << text;
      EXPECT_EQ(c.IsAllowed(end_id), c.CanEnd());
      const int32_t pick = allowed[rng() % allowed.size()];
      if (pick == end_id) break;
      ASSERT_TRUE(c.Accept(pick));
      text += std::string(v->bytes(pick)) + "|";
      if (c.Done()) {
        EXPECT_EQ(Ids(c.Allowed(), v->size()), std::vector<int32_t>{end_id});
        break;
      }
    }
  }
}

TEST(TokenConstraintTest, TrieWalkEqualsScanOnRandomVocabularies) {
  auto v = RandomVocabulary(3000, 1);
  const int32_t end_id = v->size() - 1;
  CheckWalks(Schema(R"({"type": "object", "properties": {"name": {"type": "string"},
      "age": {"type": "integer", "minimum": 0, "maximum": 150}, "tags": {"type": "array",
      "items": {"enum": ["a", "b", "é"]}}}, "required": ["name"]})"),
             v, end_id, 20, 60);
  CheckWalks(Schema(R"({"type": "string", "pattern": "^[a-zé☃]{1,8}$"})"), v, end_id, 20, 20);
  auto gbnf = ParseGbnf("root ::= [^\\x00-\\x7f]+ \"x\"");
  ASSERT_TRUE(gbnf.ok());
  CheckWalks(std::make_shared<const Grammar>(std::move(*gbnf)), v, end_id, 10, 10);
}

// Tokens that run past the end of the rule they start in (and of the rules around it), empty
// alternatives, nesting, ambiguity (several stacks at once) and multi-byte characters: the
// masks composed from per-position walks must equal the scan at every step.
TEST(TokenConstraintTest, MasksAcrossRuleEndsEqualTheScan) {
  auto v = RandomVocabulary(3000, 11);
  const int32_t end_id = v->size() - 1;
  const char* grammars[] = {
      "root ::= a b\na ::= \"x\" | \"xy\" | \"\"\nb ::= \"y\" c | \"z\" | \"a\" a\n"
      "c ::= [a-z]* \" \"?",
      "root ::= \"[\" (v (\",\" v)*)? \"]\"\nv ::= [0-9]+ | \"\\\"\" [a-zé]* \"\\\"\" | root",
      "root ::= (\"ab\" | \"a\" \"b\"? | [a-c]+)* \"\\n\"",
      "root ::= x x x\nx ::= (\"é\" | \"☃\" | \" \")?",
  };
  for (const char* text : grammars) {
    auto g = ParseGbnf(text);
    ASSERT_TRUE(g.ok()) << text << ": " << g.status().message();
    CheckWalks(std::make_shared<const Grammar>(std::move(*g)), v, end_id, 12, 25);
  }
}

// The walk from a string's characters is shared by every string of the schema: the second
// property's string walks nothing new.
TEST(TokenConstraintTest, StatesWithTheSameTopFramesShareTheirWalk) {
  auto v = RandomVocabulary(2000, 17);
  auto oracle = std::make_shared<MaskOracle>(
      Schema(R"({"type": "object", "properties": {"a": {"type": "string"},
          "b": {"type": "string"}}, "required": ["a", "b"]})"),
      v);
  const auto id = [&](const std::string& bytes) {
    for (int32_t i = 0; i < v->size(); ++i)
      if (v->bytes(i) == bytes) return i;
    return -1;
  };
  TokenConstraint c(oracle, {0});
  for (const char* t :
       {"{", "\"", "a", "\"", ":", "\"", "x", "\"", ",", "\"", "b", "\"", ":", "\"", "x"}) {
    c.Allowed();
    if (std::string(t) == "x" && c.accepted() > 10) {
      const uint64_t walked = oracle->stats().positions;
      ASSERT_TRUE(c.Accept(id(t)));
      c.Allowed();
      EXPECT_EQ(oracle->stats().positions, walked);
      return;
    }
    ASSERT_TRUE(c.Accept(id(t))) << t;
  }
  FAIL() << "the document did not reach the second string";
}

TEST(TokenConstraintTest, RealVocabulary) {
  auto tok = tokenizer::Tokenizer::FromJsonFile(testing::TrainedModelDir() + "/tokenizer.json");
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  auto v = Vocabulary::FromTokenizer(*tok, tok->vocab_size() + 5);
  EXPECT_EQ(v->size(), tok->vocab_size() + 5);
  const int32_t im_end = *tok->AddedTokenId("<|im_end|>");
  EXPECT_TRUE(v->bytes(im_end).empty());  // special: never produced by a grammar
  CheckWalks(Schema(R"({"type": "object", "properties": {"code": {"type": "string"},
      "ok": {"type": "boolean"}}, "required": ["code", "ok"]})"),
             v, im_end, 5, 40);
}

TEST(TokenConstraintTest, RollbackRestoresTheState) {
  auto v = RandomVocabulary(500, 3);
  TokenConstraint c(Schema(R"({"type": "array", "items": {"type": "integer"}})"), v, {0});
  const std::vector<uint64_t> start = c.Allowed();
  const auto id = [&](const std::string& bytes) {
    for (int32_t i = 0; i < v->size(); ++i)
      if (v->bytes(i) == bytes) return i;
    return -1;
  };
  ASSERT_TRUE(c.Accept(id("[")));
  ASSERT_TRUE(c.Accept(id("1")));
  EXPECT_FALSE(c.Accept(id("x")));  // refused: nothing changes
  EXPECT_EQ(c.accepted(), 2u);
  ASSERT_TRUE(c.Accept(id("]")));
  EXPECT_TRUE(c.Done());
  c.Rollback(3);
  EXPECT_EQ(c.accepted(), 0u);
  EXPECT_EQ(c.Allowed(), start);
  EXPECT_FALSE(c.Accept(0));  // an end token before the text is complete
}

TEST(TokenConstraintTest, RequestsOfOneGrammarShareTheirMasks) {
  auto v = RandomVocabulary(800, 9);
  auto oracle = std::make_shared<MaskOracle>(
      Schema(R"({"type": "object", "properties": {"a": {"type": "integer"}}})"), v);
  const auto id = [&](const std::string& bytes) {
    for (int32_t i = 0; i < v->size(); ++i)
      if (v->bytes(i) == bytes) return i;
    return -1;
  };
  const std::vector<std::string> doc = {"{", "\"", "a", "\"", ":", "1", "}"};
  std::vector<TokenMask> first;
  {
    TokenConstraint c(oracle, {0});
    for (const std::string& t : doc) {
      first.push_back(c.Allowed());
      ASSERT_TRUE(c.Accept(id(t))) << t;
    }
    EXPECT_TRUE(c.Done());
  }
  const uint64_t computed = oracle->stats().masks - oracle->stats().cache_hits;
  TokenConstraint again(oracle, {0});
  for (size_t i = 0; i < doc.size(); ++i) {
    EXPECT_EQ(again.Allowed(), first[i]);
    ASSERT_TRUE(again.Accept(id(doc[i])));
  }
  EXPECT_EQ(oracle->stats().masks - oracle->stats().cache_hits, computed);  // all cached
}

TEST(TokenConstraintTest, MaskLogitsLeavesOnlyAllowedTokens) {
  auto v = RandomVocabulary(400, 5);
  TokenConstraint c(Schema(R"({"const": true})"), v, {});
  std::vector<float> logits(v->size() + 3, 1.0f);
  c.MaskLogits(logits);
  const std::vector<int32_t> allowed = Ids(c.Allowed(), v->size());
  for (int32_t i = 0; i < static_cast<int32_t>(logits.size()); ++i) {
    const bool in = std::binary_search(allowed.begin(), allowed.end(), i);
    EXPECT_EQ(logits[i] == 1.0f, in) << i;
  }
}

}  // namespace
}  // namespace mtplx::grammar
