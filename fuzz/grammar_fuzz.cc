// Grammar sources from untrusted requests: GBNF text, JSON schemas and their regex patterns. The
// first byte picks the parser; the text up to the first NUL is the source, the bytes after it are
// fed to a matcher of the compiled grammar. Nothing may crash, hang or leak. Then a vocabulary is
// cut from those bytes, and the token masks composed from shared walks (MaskOracle::Mask) must
// equal a plain scan of every token at each state along a few accepted tokens.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/constraint.h"
#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "grammar/regex.h"

using namespace mtplx::grammar;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1 || size > 4096) return 0;
  const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  const size_t nul = input.find('\0');
  const std::string_view source = input.substr(0, nul);
  const std::string_view text = nul == std::string_view::npos ? "" : input.substr(nul + 1);
  mtplx::Result<Grammar> g = mtplx::InvalidArgument("none");
  switch (data[0] % 3) {
    case 0:
      g = ParseGbnf(source);
      break;
    case 1:
      g = CompileJsonSchema(source);
      break;
    default: {
      auto expr = RegexToGbnf(source, data[0] & 4);
      if (expr.ok()) g = ParseGbnf("root ::= " + *expr);
      break;
    }
  }
  if (!g.ok()) return 0;
  auto grammar = std::make_shared<const Grammar>(std::move(g).value());
  (void)grammar->ToString();
  Matcher m(grammar);
  MatchState state = m.Start();
  m.AdvanceBytes(state, text);

  std::vector<std::string> tokens;
  for (size_t i = 0; i < text.size() && tokens.size() < 96; ++i)
    for (size_t n = 1; n <= 3 && i + n <= text.size(); ++n) tokens.emplace_back(text.substr(i, n));
  for (int b : {'"', '{', '}', ' ', 'a', '0'}) tokens.emplace_back(1, static_cast<char>(b));
  tokens.emplace_back();  // an end token
  const int32_t end_id = static_cast<int32_t>(tokens.size()) - 1;
  auto vocabulary = Vocabulary::FromBytes(std::move(tokens));
  TokenConstraint c(grammar, vocabulary, {end_id});
  for (int step = 0; step < 8; ++step) {
    const TokenMask allowed = c.Allowed();
    if (allowed != c.AllowedByScan()) __builtin_trap();
    std::vector<int32_t> ids;
    for (int32_t id = 0; id < end_id; ++id)
      if ((allowed[id >> 6] >> (id & 63)) & 1) ids.push_back(id);
    const int32_t pick = ids.empty() ? -1 : ids[(step * 7) % ids.size()];
    if (pick < 0 || !c.Accept(pick)) break;
  }
  return 0;
}
