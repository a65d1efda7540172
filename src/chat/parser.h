// Recursive-descent parser from tokens to the syntax tree, following Jinja2's grammar and
// operator precedence (jinja2/parser.py): conditional expressions, or, and, not, comparisons
// (==, !=, <, <=, >, >=, in, not in), + -, ~, * / // %, **, unary - +, then postfix
// (.attr, [index], [a:b:c], calls) with filters (|f) and tests (is t) binding tighter than any
// binary operator.
#pragma once

#include <string_view>

#include "base/status.h"
#include "chat/ast.h"

namespace mtplx::chat {

struct ParseLimits {
  int max_nesting = 128;     // nested brackets, unary operators and block statements
  int max_expr_depth = 256;  // height of any expression tree (long a+b+c+... chains)
};

// Parses a whole template. Syntax errors read "chat template: LINE:COLUMN: syntax error: ...".
Result<Body> ParseTemplate(std::string_view source, const ParseLimits& limits = {});

}  // namespace mtplx::chat
