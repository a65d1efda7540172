// The engine that `run`, `chat` and `serve` share: events in order, stop strings, the queue
// limit, cancellation, the context window, logprobs, and a prefix cache whose restores give the
// same tokens as cold runs.
#include "engine/engine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <future>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "base/file.h"
#include "base/strings.h"
#include "engine/text_stream.h"
#include "engine/tune.h"
#include "support/test_support.h"

namespace mtplx::engine {
namespace {

std::unique_ptr<Engine> OpenTrained(uint64_t cache_bytes = 0, bool no_mtp = false,
                                    int max_queue = 16,
                                    std::optional<double> known_acceptance = std::nullopt,
                                    int parallel = 1) {
  EngineOptions options;
  options.model_dir = testing::TrainedModelDir();
  options.load.show_progress = false;
  options.load.threads = 1;
  options.load.activations = kernels::Activations::kInt8;
  options.load.draft_head_bits = 4;
  options.load.draft_vocab = -1;
  options.cache_bytes = cache_bytes;
  options.no_mtp = no_mtp;
  options.max_queue = max_queue;
  options.known_mtp_acceptance = known_acceptance;
  options.parallel = parallel;
  auto engine = Engine::Open(options);
  EXPECT_TRUE(engine.ok()) << engine.status().ToString();
  return engine.ok() ? std::move(engine).value() : nullptr;
}

chat::Message Text(std::string role, std::string content) {
  chat::Message m;
  m.role = std::move(role);
  m.content = std::move(content);
  return m;
}

Request ChatRequest(const Engine& engine, std::vector<chat::Message> messages, int max_tokens,
                    double temperature = 0.0, uint64_t seed = 0) {
  Request r = engine.NewRequest();
  r.conversation.messages = std::move(messages);
  r.max_tokens = max_tokens;
  r.sampling.temperature = temperature;
  r.seed = seed;
  return r;
}

TEST(EngineTest, EventsArriveInOrderAndTheTextAddsUp) {
  auto engine = OpenTrained();
  ASSERT_TRUE(engine);
  std::vector<Event::Type> types;
  std::string streamed;
  size_t streamed_tokens = 0;
  auto done = engine->Run(
      ChatRequest(*engine, {Text("user", "Write a function that adds two numbers.")}, 48),
      [&](const Event& e) {
        types.push_back(e.type);
        if (e.type == Event::Type::kText) {
          streamed += e.text;
          streamed_tokens += e.tokens.size();
        }
        if (e.type == Event::Type::kStarted) {
          EXPECT_GT(e.prompt_tokens, 5);
        }
      });
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  ASSERT_GE(types.size(), 3u);
  EXPECT_EQ(types.front(), Event::Type::kStarted);
  EXPECT_EQ(types.back(), Event::Type::kFinished);
  EXPECT_EQ(streamed, done->text);
  EXPECT_LE(streamed_tokens, done->tokens.size());
  EXPECT_EQ(done->stats.completion_tokens, static_cast<int64_t>(done->tokens.size()));
  EXPECT_GT(done->ttft_seconds, 0.0);
  EXPECT_EQ(done->cache_miss_reason, "cache_off");
}

// The engine's greedy output through speculation equals its plain output (the same model loaded
// twice), which equals what the runner functions give.
TEST(EngineTest, GreedySpeculativeEqualsPlain) {
  auto spec = OpenTrained();
  auto plain = OpenTrained(0, /*no_mtp=*/true);
  ASSERT_TRUE(spec && plain);
  ASSERT_GT(spec->depth(), 0) << spec->notice();
  EXPECT_EQ(plain->depth(), 0);
  for (const char* prompt : {"def fibonacci(n):", "Tell me about the sea.", "import os\n"}) {
    auto a = spec->Run(ChatRequest(*spec, {Text("user", prompt)}, 64));
    auto b = plain->Run(ChatRequest(*plain, {Text("user", prompt)}, 64));
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(a->tokens, b->tokens) << prompt;
    EXPECT_GT(a->speculative.cycles, 0);
  }
}

// The load check runs once per model (the CLI stores its result): a known acceptance is judged
// as a measured one would be, without the probe run.
TEST(EngineTest, AKnownCheckResultReplacesTheProbeRun) {
  auto measured = OpenTrained();
  ASSERT_TRUE(measured);
  ASSERT_TRUE(measured->measured_mtp_acceptance());
  EXPECT_GT(*measured->measured_mtp_acceptance(), 0.5);
  auto known = OpenTrained(0, false, 16, *measured->measured_mtp_acceptance());
  ASSERT_TRUE(known);
  EXPECT_FALSE(known->measured_mtp_acceptance());
  EXPECT_EQ(known->depth(), measured->depth());
  auto collapsed = OpenTrained(0, false, 16, 0.02);
  ASSERT_TRUE(collapsed);
  EXPECT_EQ(collapsed->depth(), 0);
  EXPECT_NE(collapsed->notice().find("accepted 2% of greedy drafts"), std::string::npos)
      << collapsed->notice();
}

TEST(EngineTest, StopStringsCutTheTextAndAreReported) {
  auto engine = OpenTrained();
  ASSERT_TRUE(engine);
  auto full = engine->Run(ChatRequest(*engine, {Text("user", "def fibonacci(n):")}, 40));
  ASSERT_TRUE(full.ok());
  ASSERT_GT(full->text.size(), 12u);
  const std::string stop = full->text.substr(6, 3);
  Request r = ChatRequest(*engine, {Text("user", "def fibonacci(n):")}, 40);
  r.stop = {stop, "never-appears-anywhere"};
  std::string streamed;
  auto cut = engine->Run(std::move(r), [&](const Event& e) {
    if (e.type == Event::Type::kText) streamed += e.text;
  });
  ASSERT_TRUE(cut.ok());
  EXPECT_EQ(cut->finish_reason, "stop");
  EXPECT_EQ(cut->stop_string, stop);
  EXPECT_EQ(cut->text, full->text.substr(0, full->text.find(stop)));
  EXPECT_EQ(streamed, cut->text);
}

// The pack's recommended_draft_sampler replaces the request's values in the draft sampler only;
// the CLI's --draft-* options replace the pack's.
TEST(EngineTest, DraftSamplerFollowsThePackThenTheOptions) {
  namespace fs = std::filesystem;
  const std::string dir = testing::TrainedModelCopy("mtplx-draft-sampler");
  ASSERT_FALSE(dir.empty());
  auto contract = ReadTextFile(dir + "/mtplx_runtime.json");
  ASSERT_TRUE(contract.ok());
  auto json = nlohmann::json::parse(*contract);
  EngineOptions options;
  options.model_dir = dir;
  options.load.show_progress = false;
  options.load.threads = 1;
  sample::SamplingParams target;
  target.temperature = 1.0;
  target.top_p = 0.95;
  target.top_k = 20;
  {
    auto engine = Engine::Open(options);
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    EXPECT_FALSE((*engine)->DraftSampling(target));  // nothing recommended: the target's
  }
  json["recommended_draft_sampler"] = {{"temperature", 0.7}, {"top_k", 8}};
  ASSERT_TRUE(WriteTextFile(dir + "/mtplx_runtime.json", json.dump()).ok());
  {
    auto engine = Engine::Open(options);
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    auto draft = (*engine)->DraftSampling(target);
    ASSERT_TRUE(draft);
    EXPECT_DOUBLE_EQ(draft->temperature, 0.7);
    EXPECT_DOUBLE_EQ(draft->top_p, 0.95);  // not recommended: the request's
    EXPECT_EQ(draft->top_k, 8);
  }
  options.draft_temperature = 0.5;
  auto engine = Engine::Open(options);
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  auto draft = (*engine)->DraftSampling(target);
  ASSERT_TRUE(draft);
  EXPECT_DOUBLE_EQ(draft->temperature, 0.5);
  EXPECT_EQ(draft->top_k, 8);
  fs::remove_all(dir);
}

// One thread on a copy of the trained pack whose mtp_depth_max is `depth_max` (an empty
// model_dir when the copy failed).
EngineOptions CappedPackOptions(const std::string& name, int depth_max) {
  EngineOptions options;
  options.model_dir =
      testing::TrainedModelCopy(name, StrCat(R"({"mtp_depth_max": )", depth_max, "}"));
  options.load.show_progress = false;
  options.load.threads = 1;
  options.skip_mtp_check = true;
  return options;
}

// A pack's mtp_depth_max caps every depth: a pinned one (with a notice), the ones adaptive depth
// tries, and the ones tune measures.
TEST(EngineTest, ThePacksMtpDepthMaxCapsEveryDepth) {
  EngineOptions options = CappedPackOptions("mtplx-depth-max", 2);
  ASSERT_FALSE(options.model_dir.empty());
  options.depth = 4;
  {
    auto engine = Engine::Open(options);
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    EXPECT_EQ((*engine)->depth(), 2);
    EXPECT_EQ((*engine)->max_depth(), 2);
    EXPECT_NE((*engine)->notice().find("capped at 2"), std::string::npos) << (*engine)->notice();
  }
  options.depth = 0;  // the pack's default (1), adapting up to the ceiling
  // Verify rows priced nearly free whatever this host's regime: on one that splits 256-bit
  // instructions (Zen 1), where the 11 MB pack streams from its 8 MB L3, the prior keeps depth 1.
  options.cycle_costs = {1.0, 1.05, 1.1, 1.15, 1.2};
  auto engine = Engine::Open(options);
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  EXPECT_EQ((*engine)->depth(), 1);
  EXPECT_EQ((*engine)->notice(), "");
  auto done = (*engine)->Run(ChatRequest(**engine, {Text("user", "def fibonacci(n):")}, 96));
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  const std::vector<int64_t>& cycles = done->speculative.cycles_by_depth;
  ASSERT_GE(cycles.size(), 3u);
  EXPECT_GT(cycles[2], 0);  // greedy on the trained head: adaptive depth reaches the ceiling
  for (size_t d = 3; d < cycles.size(); ++d) EXPECT_EQ(cycles[d], 0) << "depth " << d;
  TuneOptions tune;
  tune.depths = {3};
  tune.max_tokens = 4;
  auto tuned = RunTune(**engine, tune, nullptr);
  ASSERT_FALSE(tuned.ok());
  EXPECT_NE(tuned.status().message().find("mtp_depth_max"), std::string::npos);
}

// Past the depths given, tune measures one deeper depth at a time, each beside plain decoding
// again, only while the deepest measured depth is the one kept, and never past the pack's ceiling.
TEST(EngineTest, TuneClimbsOnlyWhileTheDeepestDepthWins) {
  const EngineOptions options = CappedPackOptions("mtplx-climb", 3);
  ASSERT_FALSE(options.model_dir.empty());
  auto engine = Engine::Open(options);
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  TuneOptions tune;
  tune.depths = {1};
  tune.climb_to = 5;  // above the pack's 3: capped
  tune.max_tokens = 16;
  tune.prompts = {TunePrompts()[0], TunePrompts()[1]};
  int calls = 0, last_done = 0, last_total = 0;
  auto report = RunTune(**engine, tune, [&](int done, int total) {
    ++calls;
    last_done = done;
    last_total = total;
  });
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  const std::vector<TuneMeasurement>& results = report->results;
  ASSERT_GE(results.size(), 2u);
  ASSERT_LE(results.size(), 4u);
  for (size_t i = 0; i < results.size(); ++i) EXPECT_EQ(results[i].depth, static_cast<int>(i));
  for (size_t k = 3; k <= results.size(); ++k) {
    // Depth k-1 was measured because depth k-2 was the winner among the rows before it.
    const std::vector<TuneMeasurement> before(results.begin(), results.begin() + (k - 1));
    EXPECT_EQ(ChooseDepth(before, nullptr), static_cast<int>(k) - 2) << "climbed to " << k - 1;
  }
  if (results.size() < 4) {
    EXPECT_NE(report->best_depth, results.back().depth);
  }
  EXPECT_EQ(report->best_depth, ChooseDepth(results, nullptr));
  const int runs = 2 * 2 + 2 * 2 * (static_cast<int>(results.size()) - 2);
  EXPECT_EQ(calls, runs);
  EXPECT_EQ(last_done, runs);
  EXPECT_EQ(last_total, runs);
  for (const TuneMeasurement& m : results) EXPECT_GT(m.tok_s, 0.0) << "depth " << m.depth;
}

TEST(EngineTest, PromptsBeyondTheContextWindowAreRefusedAndMaxTokensClamped) {
  EngineOptions options;
  options.model_dir = testing::TrainedModelDir();
  options.load.show_progress = false;
  options.context_window = 64;
  auto engine = Engine::Open(options);
  ASSERT_TRUE(engine.ok());
  std::string long_text;
  for (int i = 0; i < 80; ++i) long_text += "word ";
  auto refused = (*engine)->Run(ChatRequest(**engine, {Text("user", long_text)}, 8));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(refused.status().message().find("context window is 64"), std::string::npos);
  Request r = ChatRequest(**engine, {Text("user", "hi")}, 1000);
  r.ignore_eos = true;
  auto clamped = (*engine)->Run(std::move(r));
  ASSERT_TRUE(clamped.ok());
  EXPECT_EQ(clamped->prompt_tokens + clamped->effective_max_tokens, 64);
  EXPECT_LE(static_cast<int64_t>(clamped->tokens.size()), clamped->effective_max_tokens);
}

TEST(EngineTest, CancelStopsARunningRequestAndSkipsAQueuedOne) {
  auto engine = OpenTrained(0, false, /*max_queue=*/1);
  ASSERT_TRUE(engine);
  Request running = ChatRequest(*engine, {Text("user", "Tell a long story.")}, 20000);
  running.ignore_eos = true;
  auto cancel_running = running.cancel;
  std::atomic<int> pieces{0};
  std::promise<Completion> first_done;
  ASSERT_TRUE(engine
                  ->Submit(std::move(running),
                           [&](const Event& e) {
                             if (e.type == Event::Type::kText) ++pieces;
                             if (e.type == Event::Type::kFinished)
                               first_done.set_value(*e.completion);
                           })
                  .ok());
  Request queued = ChatRequest(*engine, {Text("user", "hi")}, 8);
  auto cancel_queued = queued.cancel;
  std::promise<Completion> second_done;
  // The queue (one waiting request) fills once the first one runs.
  while (!engine->status().busy) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(engine
                  ->Submit(std::move(queued),
                           [&](const Event& e) {
                             if (e.type == Event::Type::kFinished)
                               second_done.set_value(*e.completion);
                           })
                  .ok());
  const Status full = engine->Submit(ChatRequest(*engine, {Text("user", "x")}, 4), nullptr);
  EXPECT_EQ(full.code(), StatusCode::kResourceExhausted) << full.ToString();
  while (pieces < 3) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  cancel_queued->store(true);
  cancel_running->store(true);
  const Completion first = first_done.get_future().get();
  EXPECT_EQ(first.finish_reason, "cancelled");
  EXPECT_GT(first.tokens.size(), 0u);
  EXPECT_LT(first.tokens.size(), 20000u);
  const Completion second = second_done.get_future().get();
  EXPECT_EQ(second.finish_reason, "cancelled");
  EXPECT_TRUE(second.tokens.empty());
}

// Eight requests submitted at once to an engine that decodes four at a time (with a prefix
// cache they partly share) give exactly what a one-at-a-time engine gives each of them.
TEST(EngineTest, ConcurrentRequestsGetTheirSoloTokens) {
  auto batched = OpenTrained(uint64_t{64} << 20, false, 16, std::nullopt, /*parallel=*/4);
  auto solo = OpenTrained();
  ASSERT_TRUE(batched && solo);
  auto request = [](const Engine& e, int i) {
    const std::string topic[] = {"sorting", "a web server", "prime numbers", "JSON parsing"};
    Request r = ChatRequest(e,
                            {Text("system", "You write short Python functions."),
                             Text("user", "Write a function about " + topic[i % 4] + ".")},
                            24 + 5 * i, i % 2 ? 0.7 : 0.0, 100 + i);
    r.ignore_eos = true;
    return r;
  };
  constexpr int kRequests = 8;
  std::vector<std::promise<Completion>> done(kRequests);
  for (int i = 0; i < kRequests; ++i)
    ASSERT_TRUE(batched
                    ->Submit(request(*batched, i),
                             [&done, i](const Event& e) {
                               if (e.type == Event::Type::kFinished)
                                 done[i].set_value(*e.completion);
                               if (e.type == Event::Type::kFailed)
                                 done[i].set_exception(std::make_exception_ptr(
                                     std::runtime_error(e.error.ToString())));
                             })
                    .ok());
  int most_running = 0;
  for (int spins = 0; spins < 2000 && most_running < 2; ++spins) {
    most_running = std::max(most_running, batched->status().running);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  for (int i = 0; i < kRequests; ++i) {
    const Completion got = done[i].get_future().get();
    auto want = solo->Run(request(*solo, i));
    ASSERT_TRUE(want.ok()) << want.status().ToString();
    EXPECT_EQ(got.tokens, want->tokens) << "request " << i;
    EXPECT_EQ(got.text, want->text) << "request " << i;
  }
  EXPECT_GE(most_running, 2);
  EXPECT_LE(most_running, 4);
}

// A conversation of three turns, each extending the last: with the prefix cache, later turns
// restore the earlier prompt and prefill only what is new, and give exactly the tokens of an
// engine without a cache, greedy and sampled with a seed, speculating or not.
void ExpectCacheIsExact(bool no_mtp, double temperature) {
  auto cached = OpenTrained(uint64_t{256} << 20, no_mtp);
  auto cold = OpenTrained(0, no_mtp);
  ASSERT_TRUE(cached && cold);
  std::vector<chat::Message> history = {
      Text("system", "You are a helpful assistant who writes Python code for the user."),
      Text("user", "Write a function that returns the largest item of a list.")};
  int64_t previous_header = 0, previous_reply = 0;
  const auto im_start = cached->tokenizer().AddedTokenId("<|im_start|>");
  ASSERT_TRUE(im_start);
  for (int turn = 0; turn < 3; ++turn) {
    auto prompt = cached->PromptTokens(ChatRequest(*cached, history, 40));
    ASSERT_TRUE(prompt.ok());
    auto a = cached->Run(ChatRequest(*cached, history, 40, temperature, 7 + turn));
    auto b = cold->Run(ChatRequest(*cold, history, 40, temperature, 7 + turn));
    ASSERT_TRUE(a.ok() && b.ok()) << a.status().ToString() << b.status().ToString();
    EXPECT_EQ(a->tokens, b->tokens) << "turn " << turn;
    EXPECT_EQ(b->cached_tokens, 0);
    if (turn == 0) {
      EXPECT_EQ(a->cached_tokens, 0);
      EXPECT_EQ(a->cache_miss_reason, "empty_cache");
    } else {
      // The previous prompt is restored up to its assistant header (the turn boundary it cut
      // at); the previous reply, re-rendered, and the new message are prefilled.
      EXPECT_EQ(a->cached_tokens, previous_header) << a->cache_miss_reason;
      EXPECT_LE(a->prompt_tokens - a->cached_tokens, previous_reply + 30) << a->cache_miss_reason;
    }
    previous_header =
        std::find(prompt->rbegin(), prompt->rend(), *im_start).base() - prompt->begin() - 1;
    previous_reply = static_cast<int64_t>(a->tokens.size());
    history.push_back(Text("assistant", a->text));
    history.push_back(Text("user", turn == 0 ? "Now make it handle an empty list."
                                             : "Add a docstring and type hints."));
  }
  EXPECT_GT(cached->status().cache_entries, 0u);
}

TEST(EngineTest, PrefixCacheRestoresAreExactGreedySpeculative) { ExpectCacheIsExact(false, 0.0); }
TEST(EngineTest, PrefixCacheRestoresAreExactSampledSpeculative) { ExpectCacheIsExact(false, 0.8); }
TEST(EngineTest, PrefixCacheRestoresAreExactGreedyPlain) { ExpectCacheIsExact(true, 0.0); }

// The prefix cache's disk tier: a conversation's first turn, then the server restarts, and the
// second turn restores the first turn's prompt from disk and gives the tokens of a cold engine.
TEST(EngineTest, TheDiskCacheSurvivesARestart) {
  const std::string dir = testing::MakeTempDir("mtplx-cache-dir");
  auto open = [&]() {
    EngineOptions options;
    options.model_dir = testing::TrainedModelDir();
    options.load.show_progress = false;
    options.load.threads = 1;
    options.cache_bytes = uint64_t{64} << 20;
    options.cache_dir = dir;
    options.engine_version = "test";
    auto engine = Engine::Open(options);
    EXPECT_TRUE(engine.ok()) << engine.status().ToString();
    return engine.ok() ? std::move(engine).value() : nullptr;
  };
  std::vector<chat::Message> history = {
      Text("system", "You are a helpful assistant who writes Python code for the user."),
      Text("user", "Write a function that returns the largest item of a list.")};
  {
    auto first = open();
    ASSERT_TRUE(first);
    auto turn = first->Run(ChatRequest(*first, history, 24, 0.8, 3));
    ASSERT_TRUE(turn.ok());
    history.push_back(Text("assistant", turn->text));
    history.push_back(Text("user", "Now make it handle an empty list."));
  }  // closing the engine writes what is still queued
  size_t files = 0;
  for (const auto& f : std::filesystem::directory_iterator(dir)) files += f.is_regular_file();
  EXPECT_EQ(files, 1u);
  auto restarted = open();
  auto cold = OpenTrained();
  ASSERT_TRUE(restarted && cold);
  auto warm = restarted->Run(ChatRequest(*restarted, history, 24, 0.8, 4));
  auto want = cold->Run(ChatRequest(*cold, history, 24, 0.8, 4));
  ASSERT_TRUE(warm.ok() && want.ok());
  EXPECT_GT(warm->cached_tokens, 20) << warm->cache_miss_reason;
  EXPECT_EQ(warm->tokens, want->tokens);
}

TEST(EngineTest, LogprobsOfGeneratedAndPromptTokens) {
  auto engine = OpenTrained();
  ASSERT_TRUE(engine);
  Request r = engine->NewRequest();
  r.kind = PromptKind::kText;
  r.text = "def add(a, b):\n    return";
  r.max_tokens = 6;
  r.sampling.temperature = 0.0;
  r.top_logprobs = 3;
  r.prompt_logprobs = true;
  auto done = engine->Run(std::move(r));
  ASSERT_TRUE(done.ok());
  ASSERT_EQ(done->logprobs.size(), done->tokens.size());
  EXPECT_EQ(done->depth, 0);  // logprobs decode plainly
  for (const TokenLogprob& lp : done->logprobs) {
    ASSERT_EQ(lp.top.size(), 3u);
    EXPECT_EQ(lp.top[0].first, lp.token);  // greedy picks the best
    EXPECT_DOUBLE_EQ(lp.top[0].second, lp.logprob);
    EXPECT_GE(lp.top[0].second, lp.top[1].second);
    EXPECT_GE(lp.top[1].second, lp.top[2].second);
    EXPECT_LE(lp.logprob, 0.0);
  }
  EXPECT_EQ(done->prompt_logprobs.size(), static_cast<size_t>(done->prompt_tokens - 1));
  for (const TokenLogprob& lp : done->prompt_logprobs) EXPECT_TRUE(std::isfinite(lp.logprob));
}

TEST(TextStreamTest, HoldsBackWhatAStopStringCouldStartAndCutsAtTheMatch) {
  auto tok = tokenizer::Tokenizer::FromJsonFile(testing::TrainedModelDir() + "/tokenizer.json");
  ASSERT_TRUE(tok.ok());
  const std::vector<int32_t> ids = tok->Encode("hello world, hello moon", false);
  TextStream none(&*tok, {});
  std::string all;
  for (int32_t id : ids) all += none.Push(id);
  all += none.Finish();
  EXPECT_EQ(all, "hello world, hello moon");
  EXPECT_FALSE(none.stopped());

  TextStream stream(&*tok, {"o m", ""});
  std::string shown;
  for (int32_t id : ids) {
    shown += stream.Push(id);
    EXPECT_TRUE(stream.text().rfind(shown, 0) == 0);
    // Never shows text that a stop string could still begin in.
    if (!stream.stopped()) {
      EXPECT_LE(shown.size() + 2, std::max<size_t>(stream.text().size(), 2));
    }
  }
  shown += stream.Finish();
  EXPECT_TRUE(stream.stopped());
  EXPECT_EQ(stream.matched_stop(), "o m");
  EXPECT_EQ(shown, "hello world, hell");
  EXPECT_EQ(stream.text(), shown);
}

// Bank bookkeeping on hand-made captures: the longest usable checkpoint wins, an extended entry
// is replaced (keeping its checkpoints up to the restore point), the budget evicts the least
// recently used.
PrefixCapture FakeCapture(std::vector<int32_t> tokens, std::vector<int64_t> checkpoints,
                          size_t kv_floats) {
  PrefixCapture c;
  c.tokens = std::move(tokens);
  auto trunk = std::make_shared<state::SequenceSnapshot>();
  trunk->position = static_cast<int64_t>(c.tokens.size());
  trunk->attention.resize(1);
  trunk->attention[0].keys.assign(kv_floats * sizeof(float), 0);
  c.trunk = trunk;
  c.mtp = std::make_shared<state::SequenceSnapshot>();
  for (int64_t p : checkpoints) c.checkpoints.push_back({p, nullptr, {}});
  return c;
}

TEST(SessionBankTest, LongestCheckpointExtensionAndLeastRecentlyUsedEviction) {
  SessionBank bank(100000);
  EXPECT_EQ(bank.Lookup(std::vector<int32_t>{1, 2, 3}, false, false).miss_reason, "empty_cache");
  bank.Insert(FakeCapture({1, 2, 3, 4, 5, 6, 7, 8}, {2, 5, 8}, 1000), 0);
  // Shares 6 tokens: restores at checkpoint 5.
  auto hit = bank.Lookup(std::vector<int32_t>{1, 2, 3, 4, 5, 6, 9, 9}, true, false);
  ASSERT_TRUE(hit.prefix);
  EXPECT_EQ(hit.prefix->size(), 5);
  EXPECT_EQ(hit.matched, 6);
  // The whole entry plus more: the last checkpoint; never the whole prompt.
  EXPECT_EQ(
      bank.Lookup(std::vector<int32_t>{1, 2, 3, 4, 5, 6, 7, 8, 9}, true, false).prefix->size(), 8);
  EXPECT_EQ(bank.Lookup(std::vector<int32_t>{1, 2, 3, 4, 5, 6, 7, 8}, true, false).prefix->size(),
            5);
  EXPECT_EQ(bank.Lookup(std::vector<int32_t>{7, 7}, true, false).miss_reason, "new_prompt");
  EXPECT_EQ(bank.Lookup(std::vector<int32_t>{1, 2, 3}, true, true).miss_reason,
            "mtp_configuration");
  // An extension restored at 5 replaces the entry and keeps checkpoints 2 and 5.
  bank.Insert(FakeCapture({1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 12}, {11}, 1000), 5);
  EXPECT_EQ(bank.size(), 1u);
  auto again = bank.Lookup(std::vector<int32_t>{1, 2, 3, 4, 5, 6, 7, 9}, true, false);
  ASSERT_TRUE(again.prefix);
  EXPECT_EQ(again.prefix->size(), 5);
  // Budget: each entry is ~8 KB of floats; the least recently used goes first.
  SessionBank small(20000);
  small.Insert(FakeCapture({1, 1}, {1}, 2000), 0);
  small.Insert(FakeCapture({2, 2}, {1}, 2000), 0);
  EXPECT_EQ(small.size(), 2u);
  ASSERT_TRUE(small.Lookup(std::vector<int32_t>{1, 1, 5}, false, false).prefix);  // 1 is fresh
  small.Insert(FakeCapture({3, 3}, {1}, 2000), 0);
  EXPECT_EQ(small.size(), 2u);
  EXPECT_FALSE(small.Lookup(std::vector<int32_t>{2, 2, 5}, false, false).prefix);
  EXPECT_TRUE(small.Lookup(std::vector<int32_t>{1, 1, 5}, false, false).prefix);
  EXPECT_LE(small.bytes(), small.budget());
  small.Insert(FakeCapture({4, 4}, {1}, 100000), 0);  // larger than the whole budget: not kept
  EXPECT_FALSE(small.Lookup(std::vector<int32_t>{4, 4, 5}, false, false).prefix);
}

TEST(PrefillPartitionTest, CutsAtTheGridAndAtGivenPositionsThenTheLastRowAlone) {
  const std::vector<int64_t> cuts = {3, 700, 1030};
  const auto parts = PrefillPartition(0, 1100, cuts);
  std::vector<std::pair<int64_t, int64_t>> got;
  for (const auto& p : parts) got.emplace_back(p.begin, p.count);
  const std::vector<std::pair<int64_t, int64_t>> want = {
      {0, 3}, {3, 509}, {512, 188}, {700, 324}, {1024, 6}, {1030, 69}, {1099, 1}};
  EXPECT_EQ(got, want);
  // From a restored prefix at a cut, the same chunks as the cold run.
  const auto warm = PrefillPartition(700, 1100, cuts);
  ASSERT_EQ(warm.size(), 4u);
  EXPECT_EQ(warm[0].begin, 700);
  EXPECT_EQ(warm[0].count, 324);
  // No cuts and a short prompt: the body, then the last row.
  const auto simple = PrefillPartition(0, 10);
  ASSERT_EQ(simple.size(), 2u);
  EXPECT_EQ(simple[0].count, 9);
  EXPECT_EQ(PrefillPartition(0, 1).size(), 1u);
}

}  // namespace
}  // namespace mtplx::engine
