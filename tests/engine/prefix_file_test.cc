// The prefix cache's file format: a capture comes back bit for bit; a truncated, corrupted or
// foreign file is an error naming the file, never a crash; the disk tier indexes, replaces,
// evicts and serves lookups.
#include "engine/prefix_file.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "base/file.h"
#include "base/rng.h"
#include "engine/bank_store.h"
#include "support/test_support.h"

namespace mtplx::engine {
namespace {

constexpr int64_t kHeads = 2, kHeadDim = 4, kHidden = 8;

state::StateLayout Layout() {
  state::StateLayout l;
  l.is_attention = {false, true, false};
  l.kv_width = kHeads * kHeadDim;
  l.kv_heads = kHeads;
  l.conv_channels = 6;
  l.conv_history = 3;
  l.recurrent_size = 10;
  return l;
}

std::vector<float> Values(size_t n, uint64_t seed) {
  SplitMix64 rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(rng.Next() % 1000) / 7.0f - 50.0f;
  return v;
}

// An f32 KV cache array of n elements.
std::vector<uint8_t> KvBytes(size_t n, uint64_t seed) {
  const std::vector<float> v = Values(n, seed);
  std::vector<uint8_t> bytes(n * sizeof(float));
  if (n) std::memcpy(bytes.data(), v.data(), bytes.size());
  return bytes;
}

std::vector<state::DeltaNetState> Deltas(uint64_t seed) {
  std::vector<state::DeltaNetState> d(2);
  for (auto& s : d) {
    s.conv = Values(18, seed++);
    s.recurrent = Values(10, seed++);
  }
  return d;
}

// A capture of `n` tokens with checkpoints at the given positions (the shapes of Layout()).
PrefixCapture MakeCapture(int n, std::vector<int64_t> at, uint64_t seed, bool mtp = true) {
  PrefixCapture c;
  for (int i = 0; i < n; ++i) c.tokens.push_back(static_cast<int32_t>((i * 31 + seed) % 900));
  for (int64_t p : at) {
    PrefixCheckpoint cp;
    cp.position = p;
    cp.hidden = Values(kHidden, seed + p);
    cp.delta = std::make_shared<const DeltaStates>(Deltas(seed + 2 * p));
    c.checkpoints.push_back(std::move(cp));
  }
  auto trunk = std::make_shared<state::SequenceSnapshot>();
  trunk->position = n;
  trunk->attention.resize(1);
  trunk->attention[0].capacity = n;
  trunk->attention[0].keys = KvBytes(kHeads * n * kHeadDim, seed + 100);
  trunk->attention[0].values = KvBytes(kHeads * n * kHeadDim, seed + 101);
  c.trunk = trunk;
  if (mtp) {
    auto m = std::make_shared<state::SequenceSnapshot>();
    m->position = n - 1;
    m->attention.resize(1);
    m->attention[0].capacity = n - 1;
    m->attention[0].keys = KvBytes(kHeads * (n - 1) * kHeadDim, seed + 200);
    m->attention[0].values = KvBytes(kHeads * (n - 1) * kHeadDim, seed + 201);
    c.mtp = m;
  }
  return c;
}

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * 4) == 0;
}

void ExpectSame(const PrefixCapture& a, const PrefixCapture& b) {
  EXPECT_EQ(a.tokens, b.tokens);
  ASSERT_EQ(a.checkpoints.size(), b.checkpoints.size());
  for (size_t i = 0; i < a.checkpoints.size(); ++i) {
    EXPECT_EQ(a.checkpoints[i].position, b.checkpoints[i].position);
    EXPECT_TRUE(SameBits(a.checkpoints[i].hidden, b.checkpoints[i].hidden));
    ASSERT_EQ(a.checkpoints[i].delta->size(), b.checkpoints[i].delta->size());
    for (size_t l = 0; l < a.checkpoints[i].delta->size(); ++l) {
      EXPECT_TRUE(SameBits((*a.checkpoints[i].delta)[l].conv, (*b.checkpoints[i].delta)[l].conv));
      EXPECT_TRUE(
          SameBits((*a.checkpoints[i].delta)[l].recurrent, (*b.checkpoints[i].delta)[l].recurrent));
    }
  }
  EXPECT_EQ(a.trunk->position, b.trunk->position);
  EXPECT_EQ(a.trunk->attention[0].type, b.trunk->attention[0].type);
  EXPECT_EQ(a.trunk->attention[0].keys, b.trunk->attention[0].keys);
  EXPECT_EQ(a.trunk->attention[0].values, b.trunk->attention[0].values);
  ASSERT_EQ(a.mtp != nullptr, b.mtp != nullptr);
  if (a.mtp) {
    EXPECT_EQ(a.mtp->attention[0].type, b.mtp->attention[0].type);
    EXPECT_EQ(a.mtp->attention[0].keys, b.mtp->attention[0].keys);
  }
  EXPECT_EQ(a.Bytes(), b.Bytes());
}

TEST(PrefixFileTest, RoundTripsBitForBit) {
  const std::string dir = testing::MakeTempDir("mtplx-pfx");
  const PrefixCapture c = MakeCapture(37, {12, 30, 37}, 5);
  ASSERT_TRUE(WritePrefixFile(dir + "/a.mtplxcache", c, "model-x").ok());
  auto back = ReadPrefixFile(dir + "/a.mtplxcache", "model-x");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ExpectSame(*back, c);
  auto info = ReadPrefixFileInfo(dir + "/a.mtplxcache");
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->tokens, c.tokens);
  EXPECT_EQ(info->checkpoints, (std::vector<int64_t>{12, 30, 37}));
  EXPECT_TRUE(info->has_mtp);
  EXPECT_EQ(info->bytes, c.Bytes());
  EXPECT_EQ(ReadPrefixFile(dir + "/a.mtplxcache", "model-y").status().code(),
            StatusCode::kFailedPrecondition);
}

TEST(PrefixFileTest, DamagedFilesAreErrorsNotCrashes) {
  const std::string dir = testing::MakeTempDir("mtplx-pfx");
  const std::string path = dir + "/a.mtplxcache";
  ASSERT_TRUE(WritePrefixFile(path, MakeCapture(20, {8, 20}, 9), "m").ok());
  const std::string good = *ReadTextFile(path);
  // Every truncation, and a flipped byte at many offsets.
  for (size_t keep = 0; keep < good.size(); keep += std::max<size_t>(1, good.size() / 97)) {
    ASSERT_TRUE(WriteTextFile(path, good.substr(0, keep)).ok());
    EXPECT_FALSE(ReadPrefixFile(path, "m").ok()) << "kept " << keep;
    (void)ReadPrefixFileInfo(path);
  }
  for (size_t at = 0; at < good.size(); at += std::max<size_t>(1, good.size() / 131)) {
    std::string bad = good;
    bad[at] = static_cast<char>(bad[at] ^ 0x5A);
    ASSERT_TRUE(WriteTextFile(path, bad).ok());
    EXPECT_FALSE(ReadPrefixFile(path, "m").ok()) << "flipped byte " << at;
    (void)ReadPrefixFileInfo(path);
  }
  ASSERT_TRUE(WriteTextFile(path, good + "x").ok());
  EXPECT_FALSE(ReadPrefixFile(path, "m").ok());
  EXPECT_FALSE(ReadPrefixFile(dir + "/missing", "m").ok());
  // A capacity whose byte count wraps to zero (found by prefix_file_fuzz): an error, not a
  // division by zero.
  const std::string wrapped =
      *ReadTextFile(testing::TestDataPath("fuzz/prefix_file_fuzz/capacity-overflow"));
  const auto parsed = ParsePrefixFile("capacity-overflow", wrapped, "");
  EXPECT_FALSE(parsed.ok());
}

// Files written by an independent writer (tools/make_prefix_seed.py, from the format description
// alone; also the fuzzer's seeds) read back as it describes them.
TEST(PrefixFileTest, ReadsFilesOfTheIndependentWriter) {
  const std::string with_mtp =
      *ReadTextFile(testing::TestDataPath("fuzz/prefix_file_fuzz/with_mtp"));
  auto c = ParsePrefixFile("with_mtp", with_mtp, "seed");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->tokens.size(), 12u);
  EXPECT_EQ(c->tokens.front(), 5);
  ASSERT_EQ(c->checkpoints.size(), 2u);
  EXPECT_EQ(c->checkpoints[1].position, 12);
  EXPECT_EQ(c->checkpoints[0].hidden[3], 0.375f);
  ASSERT_TRUE(c->mtp);
  EXPECT_EQ(c->mtp->attention[0].capacity, 11);
  EXPECT_EQ(c->trunk->attention[0].type, kernels::KvType::kF32);
  float key = 0.0f;
  std::memcpy(&key, c->trunk->attention[0].keys.data() + 5 * sizeof(float), sizeof(float));
  EXPECT_EQ(key, 1.25f);
  // The drafter's cache is bf16 there: two bytes an element.
  EXPECT_EQ(c->mtp->attention[0].type, kernels::KvType::kBf16);
  ASSERT_EQ(c->mtp->attention[0].values.size(), 2u * kHeads * 11 * kHeadDim);
  float value = 0.0f;
  kernels::LoadKvRow(c->mtp->attention[0].values.data() + 3 * 2, 1, kernels::KvType::kBf16, &value);
  EXPECT_EQ(value, -1.5f);
  const std::string trunk_only =
      *ReadTextFile(testing::TestDataPath("fuzz/prefix_file_fuzz/trunk_only"));
  auto t = ParsePrefixFile("trunk_only", trunk_only, "seed");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_FALSE(t->mtp);
  EXPECT_EQ(t->tokens, (std::vector<int32_t>{3, 1, 4, 1, 5}));
}

CaptureShapes Shapes() {
  CaptureShapes s;
  s.trunk = Layout();
  s.head_dim = kHeadDim;
  s.hidden_size = kHidden;
  s.has_mtp = true;
  s.mtp.is_attention = {true};
  s.mtp.kv_width = kHeads * kHeadDim;
  s.mtp.kv_heads = kHeads;
  return s;
}

TEST(BankStoreTest, ServesLookupsAcrossReopensReplacesAndEvicts) {
  const std::string dir = testing::MakeTempDir("mtplx-store");
  const PrefixCapture first = MakeCapture(40, {16, 40}, 3);
  PrefixCapture longer = MakeCapture(60, {16, 40, 60}, 3);
  longer.tokens.resize(40);
  longer.tokens.insert(longer.tokens.end(), 20, 7);  // extends `first`
  {
    auto store = BankStore::Open(dir, "m", uint64_t{1} << 30, Shapes());
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    (*store)->Save(first);
    (*store)->Flush();
    EXPECT_EQ((*store)->files(), 1u);
    (*store)->Save(longer);
    (*store)->Flush();
    EXPECT_EQ((*store)->files(), 1u);  // the longer one replaced the one it extends
  }
  auto store = BankStore::Open(dir, "m", uint64_t{1} << 30, Shapes());
  ASSERT_TRUE(store.ok());
  std::vector<int32_t> prompt(longer.tokens.begin(), longer.tokens.begin() + 50);
  prompt.push_back(1);
  auto hit = (*store)->Best(prompt, true, false, 0);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->position, 40);  // the last checkpoint inside the shared 50 tokens
  EXPECT_FALSE((*store)->Best(prompt, true, false, 40));
  EXPECT_FALSE((*store)->Best(prompt, true, true, 0));  // another hidden variant
  auto loaded = (*store)->Load(hit->info);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  ExpectSame(*loaded, longer);
  // Another fingerprint sees nothing; a tiny budget keeps only the newest.
  auto other = BankStore::Open(dir, "other-model", uint64_t{1} << 30, Shapes());
  ASSERT_TRUE(other.ok());
  EXPECT_EQ((*other)->files(), 0u);
  const PrefixCapture third = MakeCapture(30, {30}, 11);
  // Recency is the files' modification time, which the file system may round to its tick.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  (*store)->Save(third);
  (*store)->Flush();
  EXPECT_EQ((*store)->files(), 2u);
  auto small = BankStore::Open(dir, "m", third.Bytes() + 1, Shapes());
  ASSERT_TRUE(small.ok());
  EXPECT_EQ((*small)->files(), 1u);
  // A capture of the wrong shapes is refused on load (and its file dropped).
  PrefixCapture wrong = MakeCapture(30, {30}, 13);
  auto bad_trunk = std::make_shared<state::SequenceSnapshot>(*wrong.trunk);
  bad_trunk->attention[0].keys.resize(bad_trunk->attention[0].keys.size() - 4 * kHeadDim);
  bad_trunk->attention[0].values.resize(bad_trunk->attention[0].keys.size());
  wrong.trunk = bad_trunk;
  (*small)->Save(wrong);
  (*small)->Flush();
  std::vector<int32_t> wrong_prompt = wrong.tokens;
  wrong_prompt.push_back(2);
  auto wrong_hit = (*small)->Best(wrong_prompt, true, false, 0);
  ASSERT_TRUE(wrong_hit);
  EXPECT_FALSE((*small)->Load(wrong_hit->info).ok());
  EXPECT_FALSE((*small)->Best(wrong_prompt, true, false, 0));
}

}  // namespace
}  // namespace mtplx::engine
