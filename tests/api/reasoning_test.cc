// Tests of ReasoningSplitter: <think> blocks opened by the prompt or by the model, tags split
// across pieces, the whitespace rules, and that chunking never changes the split.
#include "api/reasoning.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace mtplx::api {
namespace {

struct Split {
  bool starts_open = false;
  bool enabled = true;
};

ReasoningPiece SplitAll(const std::vector<std::string>& chunks, Split split) {
  ReasoningSplitter splitter(split.starts_open, split.enabled);
  ReasoningPiece all;
  for (const std::string& chunk : chunks) {
    const ReasoningPiece piece = splitter.Push(chunk);
    all.reasoning += piece.reasoning;
    all.content += piece.content;
  }
  const ReasoningPiece last = splitter.Finish();
  all.reasoning += last.reasoning;
  all.content += last.content;
  return all;
}

ReasoningPiece SplitAll(const std::string& text, Split split) {
  return SplitAll(std::vector<std::string>{text}, split);
}

constexpr Split kOpen{/*starts_open=*/true, /*enabled=*/true};
constexpr Split kClosed{/*starts_open=*/false, /*enabled=*/true};

TEST(ReasoningSplitterTest, PromptOpensTheBlock) {
  const ReasoningPiece piece = SplitAll("Let me think.\nStep two.\n</think>\n\nThe answer.", kOpen);
  EXPECT_EQ(piece.reasoning, "Let me think.\nStep two.");
  EXPECT_EQ(piece.content, "The answer.");
}

TEST(ReasoningSplitterTest, ModelOpensTheBlock) {
  const ReasoningPiece piece = SplitAll("<think>\nhmm\n</think>\n\nHi there", kClosed);
  EXPECT_EQ(piece.reasoning, "hmm");
  EXPECT_EQ(piece.content, "Hi there");
}

TEST(ReasoningSplitterTest, LeadingWhitespaceBeforeTheModelsThink) {
  const ReasoningPiece piece = SplitAll("\n \n<think>\nx\n</think>\ny", kClosed);
  EXPECT_EQ(piece.reasoning, "x");
  EXPECT_EQ(piece.content, "y");
}

TEST(ReasoningSplitterTest, TextBeforeTheModelsThinkIsContent) {
  const ReasoningPiece piece = SplitAll("Sure. <think>x</think> done", kClosed);
  EXPECT_EQ(piece.reasoning, "x");
  EXPECT_EQ(piece.content, "Sure. done");
}

TEST(ReasoningSplitterTest, NoThinkIsAllContent) {
  EXPECT_EQ(SplitAll("Just an answer.\n", kClosed).content, "Just an answer.\n");
  EXPECT_EQ(SplitAll("  \n", kClosed).content, "  \n");
  EXPECT_EQ(SplitAll("a </think> b <thin", kClosed).content, "a </think> b <thin");
  EXPECT_EQ(SplitAll("a </think> b <thin", kClosed).reasoning, "");
}

TEST(ReasoningSplitterTest, OnlyTheFirstBlockIsReasoning) {
  const ReasoningPiece piece = SplitAll("<think>a</think>b<think>c</think>", kClosed);
  EXPECT_EQ(piece.reasoning, "a");
  EXPECT_EQ(piece.content, "b<think>c</think>");
  const ReasoningPiece open = SplitAll("a</think>b<think>c</think>", kOpen);
  EXPECT_EQ(open.reasoning, "a");
  EXPECT_EQ(open.content, "b<think>c</think>");
}

TEST(ReasoningSplitterTest, TagsSplitAcrossPiecesAreHeldBack) {
  ReasoningSplitter splitter(/*starts_open=*/false);
  ReasoningPiece piece = splitter.Push("<thi");
  EXPECT_EQ(piece.reasoning, "");
  EXPECT_EQ(piece.content, "");
  EXPECT_FALSE(splitter.inside());
  piece = splitter.Push("nk>\nab");
  EXPECT_EQ(piece.reasoning, "ab");
  EXPECT_TRUE(splitter.inside());
  piece = splitter.Push("c</th");
  EXPECT_EQ(piece.reasoning, "c");
  piece = splitter.Push("ink>\n\nd");
  EXPECT_EQ(piece.reasoning, "");
  EXPECT_EQ(piece.content, "d");
  EXPECT_FALSE(splitter.inside());
  piece = splitter.Finish();
  EXPECT_EQ(piece.reasoning, "");
  EXPECT_EQ(piece.content, "");
}

TEST(ReasoningSplitterTest, ContentPieceThatLooksLikeATagIsReleased) {
  ReasoningSplitter splitter(/*starts_open=*/false);
  EXPECT_EQ(splitter.Push("Hello").content, "Hello");
  EXPECT_EQ(splitter.Push(" <th").content, " ");
  EXPECT_EQ(splitter.Push("ing>").content, "<thing>");
}

TEST(ReasoningSplitterTest, WhitespaceInsideIsHeldUntilItsRoleIsKnown) {
  ReasoningSplitter splitter(/*starts_open=*/true);
  EXPECT_EQ(splitter.Push("a \n").reasoning, "a");
  EXPECT_EQ(splitter.Push("b").reasoning, " \nb");
  EXPECT_EQ(splitter.Push("\n\n").reasoning, "");
  const ReasoningPiece piece = splitter.Push("</think>  \n");
  EXPECT_EQ(piece.reasoning, "");
  EXPECT_EQ(piece.content, "");
  EXPECT_EQ(splitter.Push("  x ").content, "x ");
  EXPECT_EQ(splitter.Push(" y").content, " y");
}

TEST(ReasoningSplitterTest, OnlyOneNewlineAfterThinkIsDropped) {
  EXPECT_EQ(SplitAll("<think>\n\nx</think>", kClosed).reasoning, "\nx");
  EXPECT_EQ(SplitAll("<think> x</think>", kClosed).reasoning, " x");
  EXPECT_EQ(SplitAll("\nx</think>", kOpen).reasoning, "x");
}

TEST(ReasoningSplitterTest, UnclosedBlockIsReasoning) {
  const ReasoningPiece piece = SplitAll("still thinking \n\n", kOpen);
  EXPECT_EQ(piece.reasoning, "still thinking");
  EXPECT_EQ(piece.content, "");
  EXPECT_EQ(SplitAll("<think>\nhalf </thi", kClosed).reasoning, "half </thi");
  EXPECT_EQ(SplitAll("<think>", kClosed).reasoning, "");
  EXPECT_EQ(SplitAll("", kOpen).reasoning, "");
}

TEST(ReasoningSplitterTest, InsideFollowsTheBlock) {
  ReasoningSplitter open(/*starts_open=*/true);
  EXPECT_TRUE(open.inside());
  open.Push("x</think>y");
  EXPECT_FALSE(open.inside());

  ReasoningSplitter closed(/*starts_open=*/false);
  EXPECT_FALSE(closed.inside());
  closed.Push("<think>");
  EXPECT_TRUE(closed.inside());
}

TEST(ReasoningSplitterTest, DisabledIsAllContent) {
  ReasoningSplitter splitter(/*starts_open=*/true, /*enabled=*/false);
  EXPECT_FALSE(splitter.inside());
  const ReasoningPiece piece = splitter.Push("<think>\nx\n</think>\n\ny <thi");
  EXPECT_EQ(piece.reasoning, "");
  EXPECT_EQ(piece.content, "<think>\nx\n</think>\n\ny <thi");
  const ReasoningPiece last = splitter.Finish();
  EXPECT_EQ(last.reasoning, "");
  EXPECT_EQ(last.content, "");
}

std::vector<std::string> RandomChunks(const std::string& text, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<size_t> size(0, 10);
  std::vector<std::string> chunks;
  for (size_t at = 0; at < text.size();) {
    const size_t n = std::min(size(rng), text.size() - at);
    chunks.push_back(text.substr(at, n));
    at += n;
  }
  return chunks;
}

std::vector<std::string> Bytes(const std::string& text) {
  std::vector<std::string> chunks;
  for (const char c : text) chunks.emplace_back(1, c);
  return chunks;
}

TEST(ReasoningSplitterTest, ChunkingDoesNotChangeTheSplit) {
  const std::vector<std::string> corpus = {
      "<think>\nStep 1.\n\nStep 2. </thin </think>\n\n  Answer <think> here </think>\n",
      " \n\t<think>\n\n a \n b \n</think>  \t\nc \n",
      "pre <think> x </think> post",
      "reasoning only \n \n",
      "<thin <think> <think></think></think>",
      "</think></think>",
      "   ",
      "\n</think>\n",
      "a<t<th<thi<thin<think>b</t</th</thi</thin</think>c",
  };
  for (const std::string& text : corpus) {
    for (const Split split : {kOpen, kClosed, Split{false, false}}) {
      const ReasoningPiece whole = SplitAll(text, split);
      const std::string label = text + (split.starts_open ? " (open)" : " (closed)");
      const ReasoningPiece bytes = SplitAll(Bytes(text), split);
      EXPECT_EQ(bytes.reasoning, whole.reasoning) << label;
      EXPECT_EQ(bytes.content, whole.content) << label;
      for (unsigned seed = 0; seed < 200; ++seed) {
        const ReasoningPiece chunked = SplitAll(RandomChunks(text, seed), split);
        EXPECT_EQ(chunked.reasoning, whole.reasoning) << label << " seed " << seed;
        EXPECT_EQ(chunked.content, whole.content) << label << " seed " << seed;
      }
    }
  }
}

TEST(ReasoningSplitterTest, ChunkingCorpusResults) {
  ReasoningPiece piece = SplitAll(" \n\t<think>\n\n a \n b \n</think>  \t\nc \n", kClosed);
  EXPECT_EQ(piece.reasoning, "\n a \n b");
  EXPECT_EQ(piece.content, "c \n");
  piece = SplitAll("a<t<th<thi<thin<think>b</t</th</thi</thin</think>c", kClosed);
  EXPECT_EQ(piece.content, "a<t<th<thi<thinc");
  EXPECT_EQ(piece.reasoning, "b</t</th</thi</thin");
  piece = SplitAll("<thin <think> <think></think></think>", kClosed);
  EXPECT_EQ(piece.content, "<thin </think>");
  EXPECT_EQ(piece.reasoning, " <think>");
}

}  // namespace
}  // namespace mtplx::api
