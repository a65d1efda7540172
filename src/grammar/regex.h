// A JSON Schema `pattern` as a GBNF expression. The subset: literal characters, escapes (\d \w
// \s and their negations, \. \\ \/ \- and the other punctuation, \n \r \t, \uHHHH), classes
// [a-z0-9_] and [^...], the dot (any character but a newline), groups ( ) and (?: ), alternation
// |, and the quantifiers * + ? {m} {m,} {m,n} (a lazy ? after them is accepted and means the
// same here). ^ and $ are allowed only at the very start and end; a side without its anchor
// matches any text there, as JSON Schema's unanchored search does. Backreferences, lookaround
// and named classes are errors.
//
// In `json_string` form the expression matches the pattern's text as it appears inside a JSON
// string: a literal " or \ is written escaped, and classes never produce ", \ or control
// characters (the model writes those only through literals).
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace mtplx::grammar {

Result<std::string> RegexToGbnf(std::string_view pattern, bool json_string);

}  // namespace mtplx::grammar
