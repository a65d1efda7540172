#include "grammar/gbnf.h"

#include <gtest/gtest.h>

#include <memory>

#include "grammar/matcher.h"

namespace mtplx::grammar {
namespace {

// Whether the whole of `text` is a sentence of the grammar.
bool Matches(const std::shared_ptr<const Grammar>& g, std::string_view text) {
  Matcher m(g);
  MatchState s = m.Start();
  return m.AdvanceBytes(s, text) && s.CanEnd();
}

std::shared_ptr<const Grammar> Parse(std::string_view text) {
  auto g = ParseGbnf(text);
  EXPECT_TRUE(g.ok()) << g.status().message();
  return std::make_shared<const Grammar>(std::move(*g));
}

TEST(GbnfTest, LiteralsAlternativesAndGroups) {
  auto g = Parse("root ::= \"ab\" (\"c\" | \"d\" x) \nx ::= [0-9]");
  EXPECT_TRUE(Matches(g, "abc"));
  EXPECT_TRUE(Matches(g, "abd7"));
  EXPECT_FALSE(Matches(g, "abd"));
  EXPECT_FALSE(Matches(g, "ab"));
  EXPECT_FALSE(Matches(g, "abcc"));
}

TEST(GbnfTest, Repetitions) {
  auto g = Parse("root ::= \"a\"* \"b\"+ \"c\"? [x]{2} [y]{1,3} [z]{2,}");
  EXPECT_TRUE(Matches(g, "bxxyzz"));
  EXPECT_TRUE(Matches(g, "aaabbcxxyyyzzzz"));
  EXPECT_FALSE(Matches(g, "xxyzz"));      // b+ needs one
  EXPECT_FALSE(Matches(g, "bxyzz"));      // x{2}
  EXPECT_FALSE(Matches(g, "bxxyyyyzz"));  // y{1,3}
  EXPECT_FALSE(Matches(g, "bxxyz"));      // z{2,}
  EXPECT_FALSE(Matches(g, "bccxxyzz"));   // c?
}

TEST(GbnfTest, ClassesEscapesAndUnicode) {
  auto g = Parse(R"(root ::= [^"\\] "\n" [α-ω] "\x41" "\u00e9" . [\]\-]
)");
  EXPECT_TRUE(Matches(g, "q\nβAé☃]"));
  EXPECT_TRUE(Matches(g, "q\nωAé\x01-"));
  EXPECT_FALSE(Matches(g, "\"\nβAé☃]"));
  EXPECT_FALSE(Matches(g, "q\nbAé☃]"));
}

TEST(GbnfTest, MultiLineRulesAndComments) {
  auto g = Parse(R"(# a comment
root ::= item ("," item)*   # trailing comment
item ::= "x"
       | "y"
)");
  EXPECT_TRUE(Matches(g, "x,y,x"));
  EXPECT_FALSE(Matches(g, "x,"));
}

TEST(GbnfTest, RecursionStaysShallow) {
  // Right recursion pops as it goes: a long list does not grow the stacks.
  auto g = Parse("root ::= \"[\" list \"]\"\nlist ::= \"a\" list | \"\"");
  std::string text = "[" + std::string(5000, 'a') + "]";
  Matcher m(g);
  MatchState s = m.Start();
  ASSERT_TRUE(m.AdvanceBytes(s, text));
  EXPECT_TRUE(s.Done());
  EXPECT_LT(m.interned_stacks(), 20u);
  auto nested = Parse("root ::= \"(\" root \")\" | \"x\"");
  EXPECT_TRUE(Matches(nested, "(((x)))"));
  EXPECT_FALSE(Matches(nested, "((x)"));
}

TEST(GbnfTest, ErrorsNameTheCause) {
  struct Case {
    const char* text;
    const char* message;
  } cases[] = {
      {"root ::= missing", "rule 'missing' is never defined"},
      {"root ::= root \"a\" | \"b\"", "left-recursive"},
      {"root ::= a\na ::= b? a \"x\"\nb ::= \"y\"", "left-recursive"},
      {"root ::= \"abc", "unterminated string literal"},
      {"root ::= [a-", "unterminated character class"},
      {"root ::= \"\\q\"", "unknown escape"},
      {"root ::= \"a\"{3,1}", "below the minimum"},
      {"root ::= (\"a\"", "expected ')'"},
      {"root := \"a\"", "expected '::='"},
      {"start ::= \"a\"", "no rule 'root'"},
      {"root ::= \"a\"\nroot ::= \"b\"", "defined twice"},
  };
  for (const Case& c : cases) {
    auto g = ParseGbnf(c.text);
    ASSERT_FALSE(g.ok()) << c.text;
    EXPECT_NE(g.status().message().find(c.message), std::string::npos)
        << c.text << " -> " << g.status().message();
  }
  auto g = ParseGbnf("root ::= \"a\"\n  x ::= @");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("line 2"), std::string::npos) << g.status().message();
}

TEST(GbnfTest, DeepNestingIsRefusedOrBoundedNotACrash) {
  auto nested = ParseGbnf("root ::= " + std::string(1000, '(') + "\"a\"" + std::string(1000, ')'));
  ASSERT_FALSE(nested.ok());
  EXPECT_NE(nested.status().message().find("nest deeper"), std::string::npos);
  // A chain of 2,000 rules before the first character: the matcher drops paths past its depth
  // bound instead of running out of stack.
  std::string chain = "root ::= r0\n";
  for (int i = 0; i < 2000; ++i)
    chain += "r" + std::to_string(i) + " ::= r" + std::to_string(i + 1) + "\n";
  chain += "r2000 ::= \"a\"\n";
  auto g = ParseGbnf(chain);
  ASSERT_TRUE(g.ok()) << g.status().message();
  auto shared = std::make_shared<const Grammar>(std::move(*g));
  EXPECT_FALSE(Matches(shared, "a"));
  auto shallow = Parse("root ::= a\na ::= b\nb ::= \"a\"");
  EXPECT_TRUE(Matches(shallow, "a"));
}

TEST(GbnfTest, ToStringRoundTrips) {
  auto g = Parse("root ::= \"a\" [b-d]* x\nx ::= [^\"] | \"\"");
  auto again = ParseGbnf(g->ToString());
  ASSERT_TRUE(again.ok()) << again.status().message() << "\n" << g->ToString();
  auto g2 = std::make_shared<const Grammar>(std::move(*again));
  for (const char* text : {"a", "abcd", "abz", "a\"", "b", "abd\""})
    EXPECT_EQ(Matches(g, text), Matches(g2, text)) << text;
}

TEST(GbnfTest, PartialUtf8KeepsOnlyFittingStacks) {
  auto g = Parse("root ::= [α-ω] | \"a\"");
  Matcher m(g);
  MatchState s = m.Start();
  MatchState next;
  m.AdvanceByte(s, 0xce, next);  // lead byte of U+0380..U+03BF: α-ο fit
  EXPECT_FALSE(next.dead());
  m.AdvanceByte(s, 0xd0, next);  // Cyrillic lead byte: nothing fits
  EXPECT_TRUE(next.dead());
  m.AdvanceByte(s, 0x80, next);  // a stray continuation byte
  EXPECT_TRUE(next.dead());
}

}  // namespace
}  // namespace mtplx::grammar
