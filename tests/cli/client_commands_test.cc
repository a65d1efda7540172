// The commands around the server: `tokenize` (the same ids as Hugging Face tokenizers),
// `connect` (a client's configuration for the running server; OpenCode's written merge-
// preserving) and `start` (chat on a running server, or on one it starts).
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "base/file.h"
#include "support/child_process.h"
#include "support/test_support.h"

namespace mtplx {
namespace {

using Json = nlohmann::json;
using testing::ChildProcess;

std::string Mtplx() { return testing::BinaryDir() + "/bin/mtplx"; }

int FreePort() {
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t length = sizeof(addr);
  getsockname(s, reinterpret_cast<sockaddr*>(&addr), &length);
  close(s);
  return ntohs(addr.sin_port);
}

// A `mtplx serve` on a free port, for the life of the test.
class RunningServer {
 public:
  RunningServer()
      : port_(FreePort()),
        process_({Mtplx(), "serve", "--port", std::to_string(port_), "--quiet", "--threads", "1"}) {
    ready_ = process_.WaitFor("mtplx is ready", 120);
  }
  ~RunningServer() {
    process_.Signal(SIGTERM);
    process_.Wait(30);
  }
  bool ready() const { return ready_; }
  int port() const { return port_; }
  std::string log() const { return process_.out() + process_.err(); }
  // Reads the server's output until `needle` shows up in its log (stderr).
  bool LogShows(const std::string& needle) { return process_.WaitFor(needle, 30, true); }

 private:
  int port_;
  ChildProcess process_;
  bool ready_ = false;
};

TEST(TokenizeCommandTest, MatchesHuggingFaceTokenizersOnTheQwen3Goldens) {
  // tests/data/tokenizer/qwen3_goldens.jsonl: 2,400 strings and the ids Hugging Face gives.
  const auto goldens = ReadTextFile(testing::TestDataPath("tokenizer/qwen3_goldens.jsonl"));
  ASSERT_TRUE(goldens.ok());
  std::istringstream lines(*goldens);
  std::string line, input;
  std::vector<Json> expected;
  std::getline(lines, line);  // the header
  while (std::getline(lines, line)) {
    const Json g = Json::parse(line);
    input += Json({{"text", g["text"]}}).dump() + "\n";
    expected.push_back(g["ids"]);
  }
  const std::string in = testing::MakeTempDir("mtplx-tok") + "/in.jsonl";
  ASSERT_TRUE(WriteTextFile(in, input).ok());
  const auto o =
      testing::RunMtplx("tokenize --jsonl --tokenizer " +
                            testing::TestDataPath("tokenizers/qwen3/tokenizer.json") + " < " + in,
                        /*merge_stderr=*/false);
  ASSERT_EQ(o.exit_code, 0);
  std::istringstream out(o.output);
  size_t i = 0;
  while (std::getline(out, line)) {
    ASSERT_LT(i, expected.size());
    EXPECT_EQ(Json::parse(line)["ids"], expected[i]) << "line " << i;
    ++i;
  }
  EXPECT_EQ(i, expected.size());
}

TEST(TokenizeCommandTest, PrintsIdsAndPiecesAndRefusesBadLines) {
  const auto json = testing::RunMtplx("tokenize --json 'Hello <|im_start|> world'", false);
  ASSERT_EQ(json.exit_code, 0) << json.output;
  const Json j = Json::parse(json.output);
  EXPECT_EQ(j["count"], j["ids"].size());
  EXPECT_EQ(j["pieces"].size(), j["ids"].size());
  EXPECT_NE(std::find(j["pieces"].begin(), j["pieces"].end(), "<|im_start|>"), j["pieces"].end());
  const auto plain = testing::RunMtplx("tokenize --json --no-special 'Hello <|im_start|>'", false);
  const Json p = Json::parse(plain.output);
  EXPECT_EQ(std::find(p["pieces"].begin(), p["pieces"].end(), "<|im_start|>"), p["pieces"].end());
  const auto human = testing::RunMtplx("tokenize 'def f():'", false);
  EXPECT_NE(human.output.find("tokens"), std::string::npos) << human.output;
  const auto bad = testing::RunMtplx("tokenize --jsonl < /dev/null", false);
  EXPECT_EQ(bad.exit_code, 0);
  const auto missing = testing::RunMtplx("tokenize hi --tokenizer /nonexistent.json");
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.output.find("/nonexistent.json"), std::string::npos) << missing.output;
}

TEST(ConnectCommandTest, PrintsEachClientsConfigurationForTheRunningServer) {
  RunningServer server;
  ASSERT_TRUE(server.ready()) << server.log();
  const std::string port = std::to_string(server.port());
  const std::string base = "http://127.0.0.1:" + port;
  const auto claude = testing::RunMtplx("connect claude-code --json --port " + port, false);
  ASSERT_EQ(claude.exit_code, 0) << claude.output;
  const Json c = Json::parse(claude.output);
  EXPECT_EQ(c["env"]["ANTHROPIC_BASE_URL"], base);
  EXPECT_EQ(c["env"]["ANTHROPIC_MODEL"], "default");
  EXPECT_FALSE(c.contains("warning"));
  const Json aider = Json::parse(testing::RunMtplx("connect aider --json --port " + port).output);
  EXPECT_EQ(aider["env"]["OPENAI_API_BASE"], base + "/v1");
  const Json webui =
      Json::parse(testing::RunMtplx("connect openwebui --json --port " + port).output);
  EXPECT_NE(webui["command"].get<std::string>().find("host.docker.internal:" + port),
            std::string::npos);
  // Nothing listening: the configuration still, with a warning that says how to start one.
  const auto none = testing::RunMtplx("connect claude-code --port " + std::to_string(FreePort()));
  EXPECT_EQ(none.exit_code, 0);
  EXPECT_NE(none.output.find("mtplx serve"), std::string::npos) << none.output;
}

TEST(ConnectCommandTest, WritesOpenCodeConfigKeepingWhatWasThere) {
  RunningServer server;
  ASSERT_TRUE(server.ready()) << server.log();
  const std::string home = testing::MakeTempDir("mtplx-home");
  const std::string path = home + "/.config/opencode/opencode.json";
  std::filesystem::create_directories(home + "/.config/opencode");
  const Json before = {
      {"theme", "dark"}, {"model", "other/model"}, {"provider", {{"other", {{"npm", "x"}}}}}};
  ASSERT_TRUE(WriteTextFile(path, before.dump()).ok());
  // Through the shell, with this test's HOME.
  const std::string env = "HOME=" + home + " XDG_CONFIG_HOME= ";
  const int rc = std::system((env + Mtplx() + " connect opencode --write --port " +
                              std::to_string(server.port()) + " > /dev/null 2>&1")
                                 .c_str());
  ASSERT_EQ(rc, 0);
  const Json after = Json::parse(*ReadTextFile(path));
  EXPECT_EQ(after["theme"], "dark");
  EXPECT_EQ(after["model"], "other/model");  // the user's choice stays
  EXPECT_TRUE(after["provider"].contains("other"));
  EXPECT_EQ(after["provider"]["mtplx"]["options"]["baseURL"],
            "http://127.0.0.1:" + std::to_string(server.port()) + "/v1");
  EXPECT_EQ(Json::parse(*ReadTextFile(path + ".bak")), before);
  // A config that is not JSON is refused, not overwritten.
  ASSERT_TRUE(WriteTextFile(path, "{not json").ok());
  const int refused = std::system((env + Mtplx() + " connect opencode --write --port " +
                                   std::to_string(server.port()) + " > /dev/null 2>&1")
                                      .c_str());
  EXPECT_NE(refused, 0);
  EXPECT_EQ(*ReadTextFile(path), "{not json");
}

TEST(StartCommandTest, ChatsWithTheRunningServer) {
  RunningServer server;
  ASSERT_TRUE(server.ready()) << server.log();
  ChildProcess start(
      {Mtplx(), "start", "--port", std::to_string(server.port()), "--max-tokens", "12"});
  start.Write("hello\n/stats\n/exit\n");
  start.CloseStdin();
  ASSERT_EQ(start.Wait(120), 0) << start.out() << start.err();
  EXPECT_NE(start.err().find("using the server at"), std::string::npos) << start.err();
  EXPECT_NE(start.out().find("(server at http://127.0.0.1:"), std::string::npos) << start.out();
  EXPECT_NE(start.out().find("\"completion_tokens\""), std::string::npos) << start.out();  // /stats
  EXPECT_TRUE(server.LogShows("POST /v1/chat/completions")) << server.log();
}

TEST(StartCommandTest, StartsAServerWhenNoneAnswersAndLeavesItRunning) {
  const std::string home = testing::MakeTempDir("mtplx-home");
  const int port = FreePort();
  ChildProcess start({Mtplx(), "start", "--port", std::to_string(port), "--max-tokens", "8"},
                     {"HOME=" + home});
  start.Write("hello\n/exit\n");
  start.CloseStdin();
  ASSERT_EQ(start.Wait(180), 0) << start.out() << start.err();
  std::smatch m;
  const std::string err = start.err();
  ASSERT_TRUE(std::regex_search(err, m, std::regex(R"(started mtplx serve \(pid ([0-9]+)\))")))
      << err;
  const pid_t pid = std::stoi(m[1].str());
  // The server outlives the chat; its log is in ~/.mtplx.
  EXPECT_EQ(kill(pid, 0), 0);
  EXPECT_TRUE(FileExists(home + "/.mtplx/serve-" + std::to_string(port) + ".log"));
  kill(pid, SIGTERM);
}

}  // namespace
}  // namespace mtplx
