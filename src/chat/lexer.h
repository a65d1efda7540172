// Lexer for Jinja2 templates with the environment transformers uses for chat templates:
// trim_blocks=True (a newline right after a block tag is dropped), lstrip_blocks=True (spaces
// before a block or comment tag at the start of a line are dropped), keep_trailing_newline=False
// (one trailing newline of the template is dropped), "-" and "+" whitespace control on tags, and
// {% raw %} blocks. Comments are dropped here; raw blocks become plain text.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace mtplx::chat {

// 1-based line and column (in bytes) of a token in the template source.
struct SourcePos {
  int line = 1;
  int column = 1;
};

enum class TokenType {
  kData,           // template text outside tags
  kVariableBegin,  // {{
  kVariableEnd,    // }}
  kBlockBegin,     // {%
  kBlockEnd,       // %}
  kName,
  kString,  // value holds the decoded literal
  kInteger,
  kFloat,
  kOperator,  // value holds the operator text: "+", "//", "==", "(", ...
  kEof,
};

struct Token {
  TokenType type = TokenType::kEof;
  std::string value;
  int64_t int_value = 0;
  double float_value = 0.0;
  SourcePos pos;
};

// Splits a template into tokens; the last token is kEof. Errors carry "line:column".
Result<std::vector<Token>> Tokenize(std::string_view source);

// "3:14: message", the prefix every template error carries.
std::string FormatPos(const SourcePos& pos);

}  // namespace mtplx::chat
