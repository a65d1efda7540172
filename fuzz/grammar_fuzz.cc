// Grammar sources from untrusted requests: GBNF text, JSON schemas and their regex patterns. The
// first byte picks the parser; the text up to the first NUL is the source, the bytes after it are
// fed to a matcher of the compiled grammar. Nothing may crash, hang or leak.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

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
  return 0;
}
