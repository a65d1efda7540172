// GBNF, the grammar text format of llama.cpp, read into a Grammar:
//
//   root   ::= object            # a rule: name ::= alternatives
//   object ::= "{" ws ( pair ( "," ws pair )* )? "}"
//   pair   ::= string ":" ws value
//   digit  ::= [0-9]             # classes: ranges, ^ negates; . is any character
//   ws     ::= [ \t\n]{0,20}     # * + ? {m} {m,} {m,n} repeat the symbol before them
//
// Literals and classes take the escapes \n \r \t \\ \" \] \- \xHH \uHHHH \UHHHHHHHH. A rule
// ends at the end of its line unless inside parentheses or continued by a line starting with
// "|". Errors name the line and column.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"
#include "grammar/grammar.h"

namespace mtplx::grammar {

// The most a repeat may count ({m}, {m,n}): each repetition becomes rules.
inline constexpr int kMaxRepeat = 10000;

// Adds the rules of `text` to `builder` (so several sources can share one grammar).
Status ParseGbnfInto(std::string_view text, GrammarBuilder& builder);

// The grammar of `text`, starting at its rule `root`.
Result<Grammar> ParseGbnf(std::string_view text, const std::string& root = "root");

// "\"" + text + "\"" with GBNF escapes, for generated grammars.
std::string GbnfLiteral(std::string_view utf8);

}  // namespace mtplx::grammar
