// Continuous batching is exact: sequences stepped together, joining and leaving at different
// steps, produce the same tokens (greedy and seeded sampling, plain and speculative, cold and
// from a cached prefix) as each run alone.
#include "engine/sequence.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "base/rng.h"
#include "engine/prefix.h"
#include "engine/speculative.h"
#include "support/test_support.h"

namespace mtplx::engine {
namespace {

std::unique_ptr<model::Model> LoadTrained() {
  model::LoadOptions options;
  options.show_progress = false;
  options.threads = 2;
  options.activations = kernels::Activations::kInt8;
  options.draft_head_bits = 4;
  options.draft_vocab = model::kAutoDraftVocab;
  options.draft_layer_bits = 4;
  auto m = model::Model::Load(testing::TrainedModelDir(), options);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(m).value() : nullptr;
}

// A request of the mix: prompt length, sampler, budget and mode vary with `i`.
struct Mix {
  GenerateRequest request;
  bool speculative = true;
  SpeculativeOptions options;
};

Mix MakeMix(int i, const PrefixState* prefix) {
  Mix mix;
  SplitMix64 rng(1000 + i);
  GenerateRequest& r = mix.request;
  if (prefix) r.prompt = prefix->tokens;
  const int length = 3 + static_cast<int>(rng.Next() % (i % 3 == 0 ? 600 : 40));
  for (int t = 0; t < length; ++t) r.prompt.push_back(static_cast<int32_t>(rng.Next() % 4000));
  r.prefix = prefix;
  r.max_tokens = 12 + static_cast<int>(rng.Next() % 40);
  r.seed = 77 + i;
  r.depth_may_vary = i % 2 == 0;  // greedy: a full batch may cut its drafts
  if (i % 2 == 1) {
    r.sampling.temperature = 0.8;
    r.sampling.top_p = 0.95;
    r.sampling.top_k = 40;
  } else {
    r.sampling.temperature = 0.0;  // greedy
  }
  mix.speculative = i % 4 != 3;
  mix.options.depth = 1 + i % 3;
  mix.options.adaptive = i % 5 == 0;
  if (mix.options.adaptive) mix.options.depth = 3;
  return mix;
}

Result<std::unique_ptr<Sequence>> Open(const model::Model& m, const Mix& mix) {
  return mix.speculative ? Sequence::Speculative(m, mix.request, mix.options, nullptr)
                         : Sequence::Plain(m, mix.request, nullptr);
}

// Batched: requests join two steps apart; up to 5 run at once; each leaves when done. With
// max_rows, full steps cut the drafts of the greedy requests.
std::vector<std::vector<int32_t>> RunBatched(const model::Model& m, const std::vector<Mix>& mixes,
                                             int max_rows, int* most_running, int64_t* cuts) {
  const int n = static_cast<int>(mixes.size());
  std::vector<std::unique_ptr<Sequence>> sequences(n);
  std::vector<std::vector<int32_t>> out(n);
  int next = 0, running = 0, step = 0;
  *most_running = 0;
  *cuts = 0;
  while (next < n || running > 0) {
    if (next < n && step % 2 == 0 && running < 5) {
      auto s = Open(m, mixes[next]);
      EXPECT_TRUE(s.ok());
      sequences[next++] = std::move(s).value();
    }
    std::vector<Sequence*> active;
    for (auto& s : sequences)
      if (s && !s->finished()) active.push_back(s.get());
    EXPECT_TRUE(Step(m, active, max_rows).ok());
    running = 0;
    for (int i = 0; i < n; ++i) {
      if (!sequences[i]) continue;
      if (sequences[i]->finished()) {
        auto r = sequences[i]->TakeResult();
        EXPECT_TRUE(r.ok());
        out[i] = r->result.tokens;
        for (size_t d = 0; d < r->speculative.cycles_by_depth.size(); ++d)
          if (d < static_cast<size_t>(mixes[i].options.depth))
            *cuts += r->speculative.cycles_by_depth[d];
        sequences[i].reset();
      } else {
        ++running;
      }
    }
    *most_running = std::max(*most_running, running);
    ++step;
  }
  return out;
}

TEST(SequenceBatchTest, BatchedRequestsEqualEachRunAlone) {
  if (testing::TrainedModelDir().empty()) GTEST_SKIP();
  auto m = LoadTrained();
  ASSERT_TRUE(m);
  std::vector<int32_t> shared;
  for (int t = 0; t < 50; ++t) shared.push_back(static_cast<int32_t>((t * 131 + 7) % 4000));
  auto prefix = BuildPrefix(*m, shared);
  ASSERT_TRUE(prefix.ok()) << prefix.status().ToString();
  constexpr int kRequests = 8;
  std::vector<Mix> mixes;
  for (int i = 0; i < kRequests; ++i) mixes.push_back(MakeMix(i, i % 4 == 2 ? &*prefix : nullptr));

  std::vector<std::vector<int32_t>> alone;
  for (const Mix& mix : mixes) {
    auto s = Open(*m, mix);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    auto r = RunAlone(*m, **s);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    alone.push_back(r->result.tokens);
  }

  int max_running = 0;
  int64_t shallow_cycles = 0;
  const auto batched = RunBatched(*m, mixes, 0, &max_running, &shallow_cycles);
  int most_when_full = 0;
  int64_t cut_cycles = 0;
  const auto full = RunBatched(*m, mixes, 6, &most_when_full, &cut_cycles);
  EXPECT_GT(cut_cycles, shallow_cycles);  // the row budget did cut drafts
  EXPECT_GE(max_running, 3);
  for (int i = 0; i < kRequests; ++i) {
    EXPECT_FALSE(alone[i].empty());
    EXPECT_EQ(batched[i], alone[i]) << "request " << i;
    EXPECT_EQ(full[i], alone[i]) << "request " << i << " in full steps";
  }
}

TEST(SequenceBatchTest, CancelledAndZeroTokenRequestsFinishAtOnce) {
  auto m = LoadTrained();
  ASSERT_TRUE(m);
  GenerateRequest none;
  none.prompt = {1, 2, 3};
  none.max_tokens = 0;
  auto s = Sequence::Plain(*m, none, nullptr);
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE((*s)->finished());
  auto r = (*s)->TakeResult();
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->result.tokens.empty());
  EXPECT_EQ(r->result.finish_reason, "length");

  std::atomic<bool> cancel{false};
  GenerateRequest request;
  request.prompt = std::vector<int32_t>(700, 5);  // two prefill chunks
  request.cancel = &cancel;
  SpeculativeOptions options;
  auto c = Sequence::Speculative(*m, request, options, nullptr);
  ASSERT_TRUE(c.ok());
  Sequence* const one[] = {c->get()};
  ASSERT_TRUE(Step(*m, one).ok());
  EXPECT_TRUE((*c)->prefilling());
  cancel = true;
  ASSERT_TRUE(Step(*m, one).ok());
  EXPECT_TRUE((*c)->finished());
  auto rc = (*c)->TakeResult();
  ASSERT_TRUE(rc.ok());
  EXPECT_EQ(rc->result.finish_reason, "cancelled");
  EXPECT_TRUE(rc->result.tokens.empty());
}

}  // namespace
}  // namespace mtplx::engine
