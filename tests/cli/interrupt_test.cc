// Ctrl-C and SIGTERM: `run` stops generating, keeps what it wrote, prints its stats line with the
// reason and exits 128 + signal; `chat` returns to its prompt, and a signal at the prompt exits.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/child_process.h"
#include "support/test_support.h"

namespace mtplx {
namespace {

using testing::ChildProcess;

std::string Mtplx() { return testing::BinaryDir() + "/bin/mtplx"; }

// A reply that cannot end on its own within the test: past end tokens, far more tokens than a
// few seconds generate.
std::vector<std::string> LongRun(std::vector<std::string> extra = {}) {
  std::vector<std::string> argv = {Mtplx(),        "run",   "def fibonacci(n):", "--ignore-eos",
                                   "--max-tokens", "30000", "--threads",         "1"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

void ExpectInterruptedRun(int signo) {
  ChildProcess run(LongRun());
  ASSERT_TRUE(run.started());
  // Some text has streamed: generation is under way.
  ASSERT_TRUE(run.WaitFor("def", 120)) << run.out() << run.err();
  ASSERT_TRUE(run.WaitFor("\n", 30)) << run.out();
  run.Signal(signo);
  EXPECT_EQ(run.Wait(60), 128 + signo) << run.err();
  EXPECT_GT(run.out().size(), 3u);
  EXPECT_EQ(run.out().back(), '\n') << "the partial reply ends with a newline";
  EXPECT_NE(run.err().find("finish=interrupted"), std::string::npos) << run.err();
  EXPECT_NE(run.err().find("[mtplx] mode="), std::string::npos) << run.err();
}

TEST(InterruptTest, SigintStopsRunKeepsTheTextAndPrintsStats) { ExpectInterruptedRun(SIGINT); }

TEST(InterruptTest, SigtermStopsRunTheSameWay) { ExpectInterruptedRun(SIGTERM); }

TEST(InterruptTest, JsonSaysInterrupted) {
  ChildProcess run(LongRun({"--json"}));
  ASSERT_TRUE(run.started());
  // --json prints nothing until the end: give it time to load the model and start generating
  // (the handlers are installed after loading; 30,000 tokens take far longer than this).
  sleep(3);
  run.Signal(SIGINT);
  ASSERT_EQ(run.Wait(60), 130) << run.err();
  const auto j = nlohmann::json::parse(run.out(), nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << run.out();
  EXPECT_EQ(j["finish_reason"], "interrupted");
  EXPECT_EQ(j["token_ids"].size(), j["stats"]["tokens"].get<size_t>());
  EXPECT_GT(j["token_ids"].size(), 0u);
  EXPECT_LT(j["token_ids"].size(), 30000u);
}

TEST(InterruptTest, ChatReturnsToThePromptAndASecondSignalThereExits) {
  ChildProcess chat({Mtplx(), "chat", "--ignore-eos", "--max-tokens", "30000", "--threads", "1"});
  ASSERT_TRUE(chat.started());
  ASSERT_TRUE(chat.WaitFor("mtplx chat:", 120)) << chat.err();
  chat.Write("tell me a long story\n");
  // The reply streams (output past the banner line).
  ASSERT_TRUE(chat.WaitForBytes(chat.out().size() + 8, 60)) << chat.out() << chat.err();
  chat.Signal(SIGINT);
  ASSERT_TRUE(chat.WaitFor("(interrupted)", 30)) << chat.out();
  ASSERT_TRUE(chat.WaitFor("finish=interrupted", 30, /*in_stderr=*/true)) << chat.err();
  // Still alive and answering commands: the partial reply is in the history.
  chat.Write("/stats\n");
  ASSERT_TRUE(chat.WaitFor("\"mode\"", 30)) << chat.out();
  usleep(200 * 1000);  // back at the prompt, reading
  chat.Signal(SIGINT);
  EXPECT_EQ(chat.Wait(30), 130) << chat.out() << chat.err();
}

}  // namespace
}  // namespace mtplx
