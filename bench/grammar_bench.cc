// Token-mask cost of constrained decoding on the real Qwen3 vocabulary (151,643 tokens, logit
// rows of 151,936). Run: build/bench/grammar_bench.
//
//   BM_VocabularyBuild      the vocabulary trie, built once per engine
//   BM_MaskFirstVisit/<s>   a state's first mask: the walk of the trie (then cached)
//   BM_MaskCached           a cached mask applied to a logit row
//   BM_DocumentPerToken     a JSON document of a schema fed token by token (Qwen3 encoding),
//                           with the mask computed and applied before every token as decoding
//                           does: the counters give the per-token median, p90 and maximum
//   BM_DocumentPerTokenRepeated  the same for a later request of the schema (shared oracle)
//   BM_RawValuePerToken     an HTML file as a tool call's raw XML parameter value, the same way
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <vector>

#include "grammar/constraint.h"
#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "tokenizer/tokenizer.h"

namespace {

using mtplx::grammar::TokenConstraint;
using mtplx::grammar::Vocabulary;

constexpr int32_t kLogits = 151936;

const mtplx::tokenizer::Tokenizer* Qwen3() {
  static auto tok = mtplx::tokenizer::Tokenizer::FromJsonFile(
      MTPLX_SOURCE_DIR "/tests/data/tokenizers/qwen3/tokenizer.json");
  return tok.ok() ? &*tok : nullptr;
}

std::shared_ptr<const Vocabulary> Vocab() {
  static std::shared_ptr<const Vocabulary> v =
      Qwen3() ? Vocabulary::FromTokenizer(*Qwen3(), kLogits) : nullptr;
  return v;
}

const char* kSchema = R"({"type": "object", "properties": {
  "name": {"type": "string"}, "age": {"type": "integer", "minimum": 0, "maximum": 150},
  "email": {"type": "string", "format": "uuid"},
  "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 8},
  "address": {"type": "object", "properties": {"street": {"type": "string"},
    "city": {"type": "string"}, "zip": {"type": "string", "pattern": "^[0-9]{5}$"}},
    "required": ["street", "city", "zip"]},
  "active": {"type": "boolean"}, "score": {"type": "number"}},
  "required": ["name", "age", "tags", "address", "active", "score"]})";

const char* kDocument = R"({"name": "Ada Lovelace, the first programmer", "age": 36,
  "tags": ["mathematics", "analytical engine", "poetry", "notes on the engine"],
  "address": {"street": "12 St James's Square", "city": "London", "zip": "20001"},
  "active": false, "score": 98.25})";

std::shared_ptr<const mtplx::grammar::Grammar> Schema() {
  static auto g = std::make_shared<const mtplx::grammar::Grammar>(
      std::move(mtplx::grammar::CompileJsonSchema(kSchema).value()));
  return g;
}

void BM_VocabularyBuild(benchmark::State& state) {
  if (!Qwen3()) return state.SkipWithError("no tests/data/tokenizers/qwen3/tokenizer.json");
  for (auto _ : state) benchmark::DoNotOptimize(Vocabulary::FromTokenizer(*Qwen3(), kLogits));
}
BENCHMARK(BM_VocabularyBuild)->Unit(benchmark::kMillisecond);

// The state after `prefix` of the document: 0 the start, 1 inside a string, 2 inside a number.
void BM_MaskFirstVisit(benchmark::State& state) {
  if (!Vocab()) return state.SkipWithError("no Qwen3 vocabulary");
  const char* prefixes[] = {"", "{\"name\": \"Ada", "{\"name\": \"A\", \"age\": 3"};
  const std::string prefix = prefixes[state.range(0)];
  const std::vector<int32_t> ids = Qwen3()->Encode(prefix, false);
  uint64_t allowed = 0, checks = 0, ranges = 0;
  for (auto _ : state) {
    state.PauseTiming();
    TokenConstraint c(Schema(), Vocab(), {151645});
    for (int32_t id : ids) c.Accept(id);
    state.ResumeTiming();
    const auto& bits = c.Allowed();
    allowed = 0;
    for (uint64_t w : bits) allowed += __builtin_popcountll(w);
    checks = c.oracle().stats().context_checks;
    ranges = c.oracle().stats().resumed;
  }
  state.counters["allowed_tokens"] = static_cast<double>(allowed);
  state.counters["context_checks"] = static_cast<double>(checks);
  state.counters["resumed"] = static_cast<double>(ranges);
}
BENCHMARK(BM_MaskFirstVisit)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond);

void BM_MaskCached(benchmark::State& state) {
  if (!Vocab()) return state.SkipWithError("no Qwen3 vocabulary");
  TokenConstraint c(Schema(), Vocab(), {151645});
  for (int32_t id : Qwen3()->Encode("{\"name\": \"Ada", false)) c.Accept(id);
  std::vector<float> logits(kLogits, 0.5f);
  c.Allowed();
  for (auto _ : state) {
    c.Rollback(0);
    c.MaskLogits(logits);
    benchmark::DoNotOptimize(logits.data());
  }
}
BENCHMARK(BM_MaskCached)->Unit(benchmark::kMicrosecond);

// Masks and applies before each token of `ids` (as decoding does), timing each mask; false when
// the document leaves the grammar.
bool TimeMasks(TokenConstraint& c, const std::vector<int32_t>& ids, std::vector<float>& logits,
               std::vector<double>& micros) {
  for (int32_t id : ids) {
    const auto start = std::chrono::steady_clock::now();
    c.MaskLogits(logits);
    micros.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
            .count());
    if (!c.Accept(id)) return false;
  }
  return true;
}

// `document` fed token by token to a fresh constraint of `grammar` every iteration (each
// request's first visits included), with the per-token median, p90 and maximum as counters.
void DocumentPerToken(benchmark::State& state,
                      std::shared_ptr<const mtplx::grammar::Grammar> grammar,
                      const std::string& document) {
  const std::vector<int32_t> ids = Qwen3()->Encode(document, false);
  std::vector<float> logits(kLogits, 0.5f);
  std::vector<double> micros;
  for (auto _ : state) {
    TokenConstraint c(grammar, Vocab(), {151645});
    if (!TimeMasks(c, ids, logits, micros))
      return state.SkipWithError("the document left the grammar");
  }
  std::sort(micros.begin(), micros.end());
  state.counters["tokens"] = static_cast<double>(ids.size());
  state.counters["median_us"] = micros[micros.size() / 2];
  state.counters["p90_us"] = micros[micros.size() * 9 / 10];
  state.counters["max_us"] = micros.back();
}

void BM_DocumentPerToken(benchmark::State& state) {
  if (!Vocab()) return state.SkipWithError("no Qwen3 vocabulary");
  DocumentPerToken(state, Schema(), kDocument);
}
BENCHMARK(BM_DocumentPerToken)->Unit(benchmark::kMillisecond);

// The same, for a later request of the same schema: the engine shares the grammar's oracle, so
// its masks are already cached.
void BM_DocumentPerTokenRepeated(benchmark::State& state) {
  if (!Vocab()) return state.SkipWithError("no Qwen3 vocabulary");
  const std::vector<int32_t> ids = Qwen3()->Encode(kDocument, false);
  auto oracle = std::make_shared<mtplx::grammar::MaskOracle>(Schema(), Vocab());
  std::vector<float> logits(kLogits, 0.5f);
  {
    TokenConstraint first(oracle, {151645});
    for (int32_t id : ids) first.Accept(id), first.MaskLogits(logits);
  }
  std::vector<double> micros;
  for (auto _ : state) {
    TokenConstraint c(oracle, {151645});
    TimeMasks(c, ids, logits, micros);
  }
  std::sort(micros.begin(), micros.end());
  state.counters["median_us"] = micros[micros.size() / 2];
  state.counters["max_us"] = micros.back();
}
BENCHMARK(BM_DocumentPerTokenRepeated)->Unit(benchmark::kMillisecond);

// A forced tool call's file content in the Qwen XML form: raw text up to "</parameter>", which
// may hold any other markup (the tag matcher of grammar::RawTextRules), fed token by token.
const char* kHtml = R"(<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Notes on the Analytical Engine</title>
  <style>body { font-family: serif; max-width: 40em; margin: auto; }</style>
</head>
<body>
  <h1>Notes</h1>
  <p>The engine <em>weaves</em> algebraic patterns just as the Jacquard loom weaves flowers and
  leaves. See <a href="/notes/g">Note G</a> for the Bernoulli numbers.</p>
  <ul><li>Note A</li><li>Note B</li><li>Note G</li></ul>
  <script>if (a < b && b > c) { console.log("</p> is text here"); }</script>
</body>
</html>)";

void BM_RawValuePerToken(benchmark::State& state) {
  if (!Vocab()) return state.SkipWithError("no Qwen3 vocabulary");
  auto value = mtplx::grammar::JsonSchemaToGbnfAs(R"({"type": "string"})",
                                                  mtplx::grammar::ValueForm::kRaw, "value", "v-");
  auto grammar = mtplx::grammar::ParseGbnf(
      "root ::= \"<parameter=content>\\n\" value \"\\n</parameter>\\n\"\n" + value.value());
  if (!grammar.ok()) return state.SkipWithError(grammar.status().message().c_str());
  DocumentPerToken(state, std::make_shared<const mtplx::grammar::Grammar>(std::move(*grammar)),
                   std::string("<parameter=content>\n") + kHtml + "\n</parameter>\n");
}
BENCHMARK(BM_RawValuePerToken)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
