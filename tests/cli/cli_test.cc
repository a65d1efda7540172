// The mtplx executable end to end: commands a user types, and the errors bad input must give.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "support/test_support.h"

namespace mtplx {
namespace {

using Outcome = testing::CommandOutcome;

Outcome Mtplx(const std::string& args, bool merge_stderr = true) {
  return testing::RunMtplx(args, merge_stderr);
}

TEST(CliTest, HardwareDescribesTheMachineAndItsKernels) {
  const Outcome text = Mtplx("hardware");
  ASSERT_EQ(text.exit_code, 0) << text.output;
  for (const char* line : {"CPU:", "Caches:", "Memory:", "Kernels:"})
    EXPECT_NE(text.output.find(line), std::string::npos) << text.output;
  const Outcome json = Mtplx("hardware --json", /*merge_stderr=*/false);
  ASSERT_EQ(json.exit_code, 0) << json.output;
  const auto h = nlohmann::json::parse(json.output);
  EXPECT_GE(h["logical_cpus"].get<int>(), 1);
  EXPECT_GE(h["usable_cpus"].get<int>(), 1);
  EXPECT_LE(h["usable_cpus"].get<int>(), h["logical_cpus"].get<int>());
  EXPECT_GT(h["memory"]["total_bytes"].get<uint64_t>(), 0u);
  EXPECT_TRUE(h["features"].is_object());
  const std::string matmul = h["kernels"]["quantized_matmul"];
  EXPECT_TRUE(matmul == "amx-int8" || matmul == "avx512-vnni" || matmul == "avx-vnni" ||
              matmul == "avx512-vnni-256" || matmul == "avx2" || matmul == "neon-dotprod" ||
              matmul == "portable")
      << matmul;
  // MTPLX_KERNELS caps what runs, and the report says so.
  const Outcome capped = testing::RunMtplxWithEnv("MTPLX_KERNELS=portable", "hardware --json",
                                                  /*merge_stderr=*/false);
  ASSERT_EQ(capped.exit_code, 0);
  const auto c = nlohmann::json::parse(capped.output);
  EXPECT_EQ(c["kernels"]["quantized_matmul"], "portable");
  EXPECT_EQ(c["kernels"]["mtplx_kernels_cap"], "portable");
  EXPECT_FALSE(c["kernels"]["avx512_kernels"].get<bool>());
}

TEST(CliTest, InspectReadsAPackWithoutLoadingIt) {
  const std::string model = testing::TrainedModelDir();
  const Outcome out = Mtplx("inspect '" + model + "' --json --context 1000", false);
  ASSERT_EQ(out.exit_code, 0) << out.output;
  const auto j = nlohmann::json::parse(out.output);
  EXPECT_EQ(j["architecture"]["layers"], 8);
  EXPECT_EQ(j["architecture"]["full_attention_layers"], 2);
  EXPECT_EQ(j["weights"]["quantization"]["bits"], 8);
  EXPECT_EQ(j["mtp"]["present"], true);
  EXPECT_EQ(j["mtp"]["tensors"], 31);
  EXPECT_EQ(j["contract"]["valid"], true);
  EXPECT_EQ(j["memory"]["context"], 1000);
  EXPECT_EQ(j["memory"]["total_bytes_at_context"].get<uint64_t>(),
            j["weights"]["bytes"].get<uint64_t>() +
                1000 * j["memory"]["kv_bytes_per_token"].get<uint64_t>() +
                j["memory"]["recurrent_bytes"].get<uint64_t>());
  // bf16 KV rows by default, as `run` and `serve` keep them; f32 takes twice the bytes.
  EXPECT_EQ(j["memory"]["kv_cache"], "bf16");
  const Outcome f32 = Mtplx("inspect '" + model + "' --json --kv-cache f32", false);
  ASSERT_EQ(f32.exit_code, 0) << f32.output;
  EXPECT_EQ(nlohmann::json::parse(f32.output)["memory"]["kv_bytes_per_token"].get<uint64_t>(),
            2 * j["memory"]["kv_bytes_per_token"].get<uint64_t>());
  const Outcome text = Mtplx("inspect '" + model + "'");
  EXPECT_NE(text.output.find("contract: valid"), std::string::npos) << text.output;
  // A contract that contradicts the tensors: reported, exit 1.
  const std::string dir = testing::MakeTempDir("mtplx-inspect-");
  for (const char* name : {"config.json", "model.safetensors", "model.safetensors.index.json",
                           "mtp.safetensors", "tokenizer.json"})
    std::filesystem::create_symlink(model + "/" + name, dir + "/" + name);
  auto contract = nlohmann::json::parse(std::ifstream(model + "/mtplx_runtime.json"));
  contract["mtp_tensor_count"] = 3;
  std::ofstream(dir + "/mtplx_runtime.json") << contract.dump();
  const Outcome bad = Mtplx("inspect '" + dir + "'");
  EXPECT_EQ(bad.exit_code, 1) << bad.output;
  EXPECT_NE(bad.output.find("INVALID"), std::string::npos) << bad.output;
  EXPECT_NE(bad.output.find("'mtp_tensor_count' is 3 but the checkpoint has 31"), std::string::npos)
      << bad.output;
  EXPECT_NE(Mtplx("inspect /nonexistent").exit_code, 0);
}

// A hub cache entry (blobs, refs/main, a snapshot of links) and a pack, from the bundled model.
std::string FakeCaches() {
  namespace fs = std::filesystem;
  const std::string model = testing::TrainedModelDir();
  const std::string root = testing::MakeTempDir("mtplx-caches-");
  const fs::path entry = fs::path(root) / "hub" / "models--acme--tiny";
  fs::create_directories(entry / "blobs");
  fs::create_directories(entry / "refs");
  fs::create_directories(entry / "snapshots" / "abc123");
  std::ofstream(entry / "refs" / "main") << "abc123\n";
  for (const char* name :
       {"config.json", "model.safetensors", "model.safetensors.index.json", "mtp.safetensors",
        "tokenizer.json", "tokenizer_config.json", "mtplx_runtime.json"}) {
    fs::copy_file(model + "/" + name, entry / "blobs" / name);
    fs::create_symlink(fs::path("../../blobs") / name, entry / "snapshots" / "abc123" / name);
  }
  fs::create_directories(fs::path(root) / "home" / "models");
  fs::copy(model, fs::path(root) / "home" / "models" / "me--pack", fs::copy_options::recursive);
  return root;
}

TEST(CliTest, ModelsListsTheCachesAndRemoveStaysInsideThem) {
  namespace fs = std::filesystem;
  const std::string root = FakeCaches();
  const std::string env = "HF_HUB_CACHE='" + root + "/hub' MTPLX_HOME='" + root + "/home'";
  const Outcome list = testing::RunMtplxWithEnv(env, "models --json", false);
  ASSERT_EQ(list.exit_code, 0) << list.output;
  const auto models = nlohmann::json::parse(list.output);
  ASSERT_EQ(models.size(), 2u) << list.output;
  EXPECT_EQ(models[0]["name"], "acme/tiny");
  EXPECT_EQ(models[0]["source"], "hub");
  EXPECT_EQ(models[0]["mtp"], true);
  EXPECT_EQ(models[0]["quantization"], "8-bit g64");
  EXPECT_GT(models[0]["bytes"].get<uint64_t>(), 10u << 20);
  EXPECT_EQ(models[1]["name"], "me/pack");
  // The snapshot runs as a model folder.
  const Outcome run =
      Mtplx("run hi --max-tokens 2 --model '" + models[0]["path"].get<std::string>() + "'");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  // No --yes and no terminal: refused; unknown names list what there is.
  EXPECT_NE(testing::RunMtplxWithEnv(env, "remove acme/tiny < /dev/null").exit_code, 0);
  const Outcome unknown = testing::RunMtplxWithEnv(env, "remove nothing --yes");
  EXPECT_NE(unknown.exit_code, 0);
  EXPECT_NE(unknown.output.find("there are: acme/tiny, me/pack"), std::string::npos)
      << unknown.output;
  // An entry that leads outside the cache is never deleted.
  const std::string outside = testing::MakeTempDir("mtplx-outside-");
  fs::copy_file(testing::TrainedModelDir() + "/config.json", outside + "/config.json");
  fs::create_symlink(outside, root + "/home/models/sneaky");
  const Outcome sneaky = testing::RunMtplxWithEnv(env, "remove sneaky --yes");
  EXPECT_NE(sneaky.exit_code, 0);
  EXPECT_NE(sneaky.output.find("is not inside"), std::string::npos) << sneaky.output;
  EXPECT_TRUE(fs::exists(outside + "/config.json"));
  // inspect takes the cached name too.
  const Outcome inspected = testing::RunMtplxWithEnv(env, "inspect acme/tiny --json", false);
  EXPECT_EQ(inspected.exit_code, 0) << inspected.output;
  EXPECT_NE(inspected.output.find("\"valid\": true"), std::string::npos) << inspected.output;
  // Removing for real.
  const Outcome removed = testing::RunMtplxWithEnv(env, "remove acme/tiny --yes");
  EXPECT_EQ(removed.exit_code, 0) << removed.output;
  EXPECT_NE(removed.output.find("Removed acme/tiny"), std::string::npos) << removed.output;
  EXPECT_FALSE(fs::exists(root + "/hub/models--acme--tiny"));
  EXPECT_TRUE(fs::exists(root + "/home/models/me--pack/config.json"));
}

// --model ORG/NAME runs a cached model; on a CPU without fast bf16 (this one capped to AVX2
// stands for it) a model chosen by name goes to its FP16 sibling, a folder never does; a name
// that is not cached suggests `mtplx pull`.
TEST(CliTest, ModelsByNameAndTheFp16Sibling) {
  const std::string root = FakeCaches();
  const std::string env = "HF_HUB_CACHE='" + root + "/hub' MTPLX_HOME='" + root + "/home'";
  const Outcome fp16 =
      Mtplx("fp16 '" + testing::TrainedModelDir() + "' '" + root + "/home/models/acme--tiny-FP16'");
  ASSERT_EQ(fp16.exit_code, 0) << fp16.output;
  const Outcome named = testing::RunMtplxWithEnv(env, "run hi --max-tokens 2 --model acme/tiny");
  EXPECT_EQ(named.exit_code, 0) << named.output;
  const Outcome routed = testing::RunMtplxWithEnv(env + " MTPLX_KERNELS=avx2",
                                                  "run hi --max-tokens 2 --model acme/tiny");
  EXPECT_EQ(routed.exit_code, 0) << routed.output;
  EXPECT_NE(routed.output.find("using the FP16 sibling"), std::string::npos) << routed.output;
  EXPECT_NE(routed.output.find("acme--tiny-FP16"), std::string::npos) << routed.output;
  const Outcome folder = testing::RunMtplxWithEnv(
      env + " MTPLX_KERNELS=avx2",
      "run hi --max-tokens 2 --model '" + root + "/hub/models--acme--tiny/snapshots/abc123'");
  EXPECT_EQ(folder.exit_code, 0) << folder.output;
  EXPECT_EQ(folder.output.find("FP16 sibling"), std::string::npos) << folder.output;
  // A relative folder that reads like ORG/NAME is still the folder.
  const Outcome relative =
      testing::RunMtplxWithEnv("cd '" + root + "/hub/models--acme--tiny' && " + env,
                               "run hi --max-tokens 2 --model snapshots/abc123");
  EXPECT_EQ(relative.exit_code, 0) << relative.output;
  const Outcome missing = testing::RunMtplxWithEnv(env, "run hi --model nobody/nothing");
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.output.find("mtplx pull nobody/nothing"), std::string::npos) << missing.output;
}

TEST(CliTest, RunOnTheDefaultModelPrintsTextAndStats) {
  const Outcome o = Mtplx("run \"Write a haiku about autumn\" --max-tokens 12 --seed 1");
  EXPECT_EQ(o.exit_code, 0) << o.output;
  // AR or MTP depending on the bundled model (the trained one speculates; a synthetic one fails
  // the MTP check); at most 12 tokens (the reply may end sooner).
  EXPECT_TRUE(std::regex_search(
      o.output, std::regex(R"(\[mtplx\] mode=(AR depth=0|MTP depth=[1-4]) tokens=([0-9]|1[0-2]) )"
                           R"(tok/s=[0-9.]+ prefill_tok/s=[0-9.]+ finish=(stop|length))")))
      << o.output;
}

TEST(CliTest, RunJsonHasTextTokensAndStats) {
  const Outcome o = Mtplx("run \"hello\" --max-tokens 5 --json --temperature 0");
  ASSERT_EQ(o.exit_code, 0) << o.output;
  const auto j = nlohmann::json::parse(o.output, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << o.output;
  EXPECT_TRUE(j["text"].is_string());
  EXPECT_GE(j["token_ids"].size(), 1u);
  EXPECT_LE(j["token_ids"].size(), 5u);
  EXPECT_EQ(j["finish_reason"], j["token_ids"].size() == 5u ? "length" : "stop");
  for (const char* key : {"mode", "depth", "tokens", "tok_s", "prefill_tok_s"})
    EXPECT_TRUE(j["stats"].contains(key)) << key;
}

TEST(CliTest, GreedyRunsAreReproducible) {
  const Outcome a = Mtplx("run \"same\" --max-tokens 8 --json --temperature 0");
  const Outcome b = Mtplx("run \"same\" --max-tokens 8 --json --temperature 0");
  ASSERT_EQ(a.exit_code, 0);
  EXPECT_EQ(nlohmann::json::parse(a.output)["token_ids"],
            nlohmann::json::parse(b.output)["token_ids"]);
}

// Presence and frequency penalties reach the sampler (the same seed samples another reply) and
// are range-checked like the other sampling flags.
TEST(CliTest, PenaltiesChangeTheSampledReplyAndAreRangeChecked) {
  const std::string base = "run \"def fibonacci(n):\" --max-tokens 48 --json --seed 3";
  const Outcome plain = Mtplx(base);
  const Outcome penalised = Mtplx(base + " --presence-penalty 2 --frequency-penalty 1");
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  ASSERT_EQ(penalised.exit_code, 0) << penalised.output;
  EXPECT_NE(nlohmann::json::parse(plain.output)["token_ids"],
            nlohmann::json::parse(penalised.output)["token_ids"]);
  const Outcome bad = Mtplx("run hi --presence-penalty 3");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.output.find("presence-penalty"), std::string::npos) << bad.output;
}

// The bundled pack's mtplx_runtime.json sets presence_penalty 0.5 (the 10 M model loops on one
// token without it): a run without the flag samples with it, and the flag overrides it.
TEST(CliTest, ThePacksPresencePenaltyIsTheDefault) {
  const std::string base = "run \"def fibonacci(n):\" --max-tokens 40 --json --seed 0";
  const Outcome by_default = Mtplx(base);
  const Outcome explicit_pack = Mtplx(base + " --presence-penalty 0.5");
  const Outcome none = Mtplx(base + " --presence-penalty 0");
  for (const Outcome* o : {&by_default, &explicit_pack, &none}) ASSERT_EQ(o->exit_code, 0);
  const auto ids = [](const Outcome& o) { return nlohmann::json::parse(o.output)["token_ids"]; };
  EXPECT_EQ(ids(by_default), ids(explicit_pack));
  EXPECT_NE(ids(by_default), ids(none));
}

TEST(CliTest, StopStringEndsTheReplyBeforeTheMatch) {
  const Outcome full = Mtplx("run hi --max-tokens 30 --temperature 0 --json");
  ASSERT_EQ(full.exit_code, 0);
  const std::string text = nlohmann::json::parse(full.output)["text"];
  // A shell-safe stop string taken from the reply itself: two letters or digits past its start.
  size_t at = 2;
  while (at + 2 <= text.size() && !(std::isalnum(static_cast<unsigned char>(text[at])) &&
                                    std::isalnum(static_cast<unsigned char>(text[at + 1]))))
    ++at;
  ASSERT_LT(at + 2, text.size() + 1) << "reply has no two alphanumerics in a row: " << text;
  const std::string stop = text.substr(at, 2);
  const Outcome cut = Mtplx("run hi --max-tokens 30 --temperature 0 --json --stop '" + stop + "'");
  ASSERT_EQ(cut.exit_code, 0) << cut.output;
  const auto j = nlohmann::json::parse(cut.output);
  EXPECT_EQ(j["finish_reason"], "stop");
  EXPECT_EQ(j["text"], text.substr(0, text.find(stop)));
}

TEST(CliTest, PromptFromStdin) {
  const std::string command =
      "echo 'from stdin' | " + testing::BinaryDir() + "/bin/mtplx run - --max-tokens 3 --json 2>&1";
  std::FILE* pipe = popen(command.c_str(), "r");
  ASSERT_TRUE(pipe);
  char buffer[8192];
  const size_t n = std::fread(buffer, 1, sizeof(buffer), pipe);
  EXPECT_EQ(pclose(pipe), 0);
  const auto j = nlohmann::json::parse(std::string(buffer, n), nullptr, false);
  EXPECT_FALSE(j.is_discarded());
}

TEST(CliTest, BadInputGivesAClearErrorAndNonZeroExit) {
  struct Case {
    const char* args;
    const char* needle;
  } cases[] = {
      {"run \"\"", "prompt is empty"},
      {"run hi --model /nonexistent/dir", "the model folder '/nonexistent/dir' does not exist"},
      {"run hi --model /etc/hostname", "'/etc/hostname' is a file, not a model folder"},
      {"run hi --model /tmp", "'/tmp' is not a model folder: it has no config.json"},
      {"run hi --model /tmp", "a model folder holds config.json, tokenizer.json"},
      {"run hi --frobnicate", "frobnicate"},
      {"run hi --raw --system be-brief", "--raw excludes --system"},
      {"run hi --raw --think off", "--raw excludes --think"},
      {"run hi --max-tokens 0", "--max-tokens: must be at least 1 (got 0)"},
      {"run hi --top-k -1", "--top-k: must not be negative (got -1)"},
      {"run hi --threads 100000", "--threads: must be 0 (one per core) to 1024 (got 100000)"},
      {"serve --threads -1", "--threads: must be 0 (one per core) to 1024 (got -1)"},
      {"bench --context 0", "--context: must be at least 1 (got 0)"},
      {"score --model /nonexistent --tokens 1", "'/nonexistent' does not exist"},
      {"bench --model /nonexistent", "'/nonexistent' does not exist"},
      {"synth --preset nope --out /tmp/x", "nope"},
      {"", "Usage"},
      {"rn hi", "unknown command 'rn' — did you mean 'run'?"},
      {"chta", "did you mean 'chat'?"},
      {"conv a b", "did you mean 'convert'?"},
      {"frobnicate", "unknown command 'frobnicate'; the commands are: run, chat"},
  };
  for (const auto& c : cases) {
    const Outcome o = Mtplx(c.args);
    EXPECT_NE(o.exit_code, 0) << c.args;
    EXPECT_NE(o.output.find(c.needle), std::string::npos) << c.args << "\n" << o.output;
    EXPECT_EQ(o.output.find("internal error"), std::string::npos) << c.args;
  }
}

// CLI11's range checks let NaN through, and `inf` is a number to strtod: every floating-point
// flag must refuse both, naming itself.
TEST(CliTest, NumericFlagsRefuseNanAndInfinity) {
  for (const char* flag : {"--temperature", "--top-p", "--min-p", "--presence-penalty",
                           "--frequency-penalty", "--draft-temperature", "--draft-top-p"}) {
    for (const char* value : {"nan", "inf", "-inf", "NaN", "infinity"}) {
      const Outcome o = Mtplx(std::string("run hi --max-tokens 2 ") + flag + " " + value);
      EXPECT_NE(o.exit_code, 0) << flag << " " << value;
      EXPECT_NE(o.output.find(flag), std::string::npos) << flag << " " << value << o.output;
      EXPECT_EQ(o.output.find("[mtplx] mode="), std::string::npos) << "it generated: " << flag;
    }
  }
  const Outcome nan_t = Mtplx("run hi --temperature nan");
  EXPECT_NE(nan_t.output.find("'nan' is not a finite number"), std::string::npos) << nan_t.output;
  const Outcome bench = Mtplx("bench --acceptance 0.9,nan --prefill none");
  EXPECT_NE(bench.exit_code, 0);
  EXPECT_NE(bench.output.find("--acceptance"), std::string::npos) << bench.output;
  const Outcome prefill = Mtplx("bench --prefill inf");
  EXPECT_NE(prefill.exit_code, 0);
  EXPECT_NE(prefill.output.find("--prefill"), std::string::npos) << prefill.output;
}

TEST(CliTest, ChatKeepsHistoryAndHandlesCommands) {
  const std::string command =
      "printf 'hello\\n/stats\\n/mtp off\\n/bogus\\n/reset\\nagain\\n/exit\\n' | " +
      testing::BinaryDir() + "/bin/mtplx chat --max-tokens 4 2>&1";
  std::FILE* pipe = popen(command.c_str(), "r");
  ASSERT_TRUE(pipe);
  std::string output;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) output.append(buffer, n);
  EXPECT_EQ(pclose(pipe), 0) << output;
  EXPECT_NE(output.find("mtplx chat:"), std::string::npos) << output;
  EXPECT_NE(output.find("\"mode\":\""), std::string::npos) << output;       // /stats
  EXPECT_NE(output.find("(plain decoding)"), std::string::npos) << output;  // /mtp off
  EXPECT_NE(output.find("unknown command"), std::string::npos) << output;
  EXPECT_NE(output.find("(conversation cleared)"), std::string::npos) << output;
  // Two replies with their stats lines, and the line /stats printed.
  size_t lines = 0;
  for (size_t p = output.find("[mtplx] mode="); p != std::string::npos;
       p = output.find("[mtplx] mode=", p + 1))
    ++lines;
  EXPECT_EQ(lines, 3u) << output;
}

// Runs `mtplx ARGS` with `input` on stdin (written to a file first, so any bytes pass).
Outcome MtplxWithStdin(const std::string& args, const std::string& input) {
  const std::string path = testing::MakeTempDir("mtplx-stdin") + "/in.txt";
  std::FILE* f = std::fopen(path.c_str(), "wb");
  std::fwrite(input.data(), 1, input.size(), f);
  std::fclose(f);
  return Mtplx(args + " < " + path);
}

TEST(CliTest, InvalidUtf8PromptIsRefused) {
  const Outcome o = MtplxWithStdin("run -", std::string("caf\xc3 \xff\xfe bad"));
  EXPECT_NE(o.exit_code, 0);
  EXPECT_NE(o.output.find("not valid UTF-8"), std::string::npos) << o.output;
}

TEST(CliTest, PromptLongerThanTheContextWindowIsRefused) {
  std::string prompt;
  for (int i = 0; i < 3000; ++i) prompt += "lorem ipsum ";  // > 4096 tokens for dense-tiny
  // The synthetic dense-tiny the build writes (context window 4096), not the bundled model.
  const std::string model = testing::BinaryDir() + "/models/default";
  const Outcome o = MtplxWithStdin("run - --no-mtp --model " + model, prompt);
  EXPECT_NE(o.exit_code, 0);
  EXPECT_NE(o.output.find("context window"), std::string::npos) << o.output;
  EXPECT_EQ(o.output.find("internal error"), std::string::npos);
}

TEST(CliTest, ScoreWritesLogitsAndTopFive) {
  const std::string dir = testing::MakeTempDir("mtplx-cli");
  const std::string model = testing::BinaryDir() + "/models/default";
  const Outcome o =
      Mtplx("score --model " + model + " --tokens 1,2,3 --logits-out " + dir + "/l.bin");
  ASSERT_EQ(o.exit_code, 0) << o.output;
  const auto j = nlohmann::json::parse(o.output.substr(o.output.find('{')));
  EXPECT_EQ(j["rows"], 3);
  EXPECT_EQ(j["top5"].size(), 3u);
  EXPECT_EQ(j["top5"][0].size(), 5u);
  std::FILE* f = std::fopen((dir + "/l.bin").c_str(), "rb");
  ASSERT_TRUE(f);
  std::fseek(f, 0, SEEK_END);
  EXPECT_EQ(std::ftell(f), 3 * 1024 * 4);
  std::fclose(f);
}

// The bundled 8-bit pack scored with exact activations and with the int8 ones `run` uses: the
// same shape of output, logits within the int8 rounding of each other; an unknown value is
// refused by name.
TEST(CliTest, ScoreActivationsInt8StayCloseToExact) {
  const std::string dir = testing::MakeTempDir("mtplx-cli");
  const std::string model = testing::TrainedModelDir();
  auto logits = [&](const std::string& activations) {
    const std::string out = dir + "/" + activations + ".bin";
    const Outcome o = Mtplx("score --model " + model + " --tokens 5,9,2,77,300 --activations " +
                            activations + " --logits-out " + out);
    EXPECT_EQ(o.exit_code, 0) << o.output;
    std::vector<float> v(5 * 8192);
    std::FILE* f = std::fopen(out.c_str(), "rb");
    EXPECT_TRUE(f);
    if (f) {
      EXPECT_EQ(std::fread(v.data(), sizeof(float), v.size(), f), v.size());
      std::fclose(f);
    }
    return v;
  };
  const std::vector<float> exact = logits("f32"), int8 = logits("int8");
  float worst = 0.0f, scale = 0.0f;
  for (size_t i = 0; i < exact.size(); ++i) {
    worst = std::max(worst, std::fabs(exact[i] - int8[i]));
    scale = std::max(scale, std::fabs(exact[i]));
  }
  EXPECT_GT(worst, 0.0f);  // int8 really ran
  EXPECT_LT(worst, 0.05f * scale);
  const Outcome bad = Mtplx("score --model " + model + " --tokens 1 --activations int4");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.output.find("--activations"), std::string::npos) << bad.output;
}

// The draft vocabulary: a quarter of the bundled model's 8192 ids by default, what is asked
// otherwise, all of them with 0; -2 is refused by name.
TEST(CliTest, RunReportsTheDraftVocabulary) {
  const std::string model = testing::TrainedModelDir();
  auto draft_vocab = [&](const std::string& flag) {
    const Outcome o =
        Mtplx("run --raw x --max-tokens 4 --json --skip-mtp-check --model " + model + " " + flag,
              /*merge_stderr=*/false);
    EXPECT_EQ(o.exit_code, 0) << o.output;
    const auto j = nlohmann::json::parse(o.output, nullptr, false);
    return j.is_discarded() ? int64_t{-1} : j["stats"]["draft_vocab"].get<int64_t>();
  };
  EXPECT_EQ(draft_vocab(""), 4096);
  EXPECT_EQ(draft_vocab("--draft-vocab 1000"), 1000);
  EXPECT_EQ(draft_vocab("--draft-vocab 0"), 8192);
  EXPECT_EQ(draft_vocab("--draft-vocab 100000"), 8192);
  const Outcome bad = Mtplx("run --raw x --draft-vocab -2 --model " + model);
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.output.find("--draft-vocab"), std::string::npos) << bad.output;
}

TEST(CliTest, ScoreRejectsTokensOutsideTheVocabulary) {
  const std::string model = testing::BinaryDir() + "/models/default";
  const Outcome o = Mtplx("score --model " + model + " --tokens 1,99999");
  EXPECT_NE(o.exit_code, 0);
  EXPECT_NE(o.output.find("99999"), std::string::npos) << o.output;
}

TEST(CliTest, BenchJsonHasEveryKeyWithFinitePositiveValues) {
  const Outcome o =
      Mtplx("bench --json --quiet --repeats 1 --prefill 64,256 --bandwidth-mib 16 --threads 2");
  ASSERT_EQ(o.exit_code, 0) << o.output;
  const auto j = nlohmann::json::parse(o.output, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << o.output;
  for (const char* key :
       {"decode_tok_s", "bytes_per_token", "read_bandwidth_gbs", "bandwidth_utilization",
        "draft_cost_ratio", "resident_bytes", "triad_bandwidth_gbs", "threads", "weight_bytes"}) {
    ASSERT_TRUE(j.contains(key) && j[key].is_number()) << key << ": " << o.output;
    EXPECT_TRUE(std::isfinite(j[key].get<double>()) && j[key].get<double>() > 0) << key;
  }
  EXPECT_EQ(j["threads"], 2);
  EXPECT_TRUE(j["model"].is_string());
  auto expect_object = [&](const char* key, std::vector<std::string> members) {
    ASSERT_TRUE(j[key].is_object()) << key;
    EXPECT_EQ(j[key].size(), members.size()) << key;
    for (const auto& member : members) {
      ASSERT_TRUE(j[key].contains(member) && j[key][member].is_number()) << key << member;
      EXPECT_GT(j[key][member].get<double>(), 0) << key << member;
    }
  };
  expect_object("verify_cost", {"1", "2", "3", "4", "5", "6", "7", "8"});
  EXPECT_EQ(j["verify_cost"]["1"], 1.0);
  expect_object("prefill_tok_s", {"64", "256"});
  expect_object("projected_speedup", {"1", "2", "3"});
}

TEST(CliTest, BenchTableShowsEveryQuantity) {
  const Outcome o = Mtplx("bench --quiet --repeats 1 --prefill none --bandwidth-mib 16");
  ASSERT_EQ(o.exit_code, 0) << o.output;
  for (const char* text :
       {"memory read bandwidth", "AR decode", "bytes per token", "bandwidth utilisation",
        "v(8)=", "draft cost ratio c", "resident memory", "depth 3"})
    EXPECT_NE(o.output.find(text), std::string::npos) << text << "\n" << o.output;
}

TEST(CliTest, BenchRefusesAnAcceptanceOutsideZeroToOne) {
  const Outcome o = Mtplx("bench --acceptance 0.9,1.5");
  EXPECT_NE(o.exit_code, 0);
  EXPECT_NE(o.output.find("--acceptance: '1.5'"), std::string::npos) << o.output;
}

}  // namespace
}  // namespace mtplx
