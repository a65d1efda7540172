#include "chat/lexer.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "base/strings.h"
#include "chat/py_text.h"

namespace mtplx::chat {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsZero(char c) { return c == '0'; }
bool IsBinDigit(char c) { return c == '0' || c == '1'; }
bool IsOctDigit(char c) { return c >= '0' && c <= '7'; }
bool IsHexDigit(char c) { return IsDigit(c) || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f'); }
bool IsNameStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsNameChar(char c) { return IsNameStart(c) || IsDigit(c); }

// Jinja2 normalizes \r\n and \r to \n and, without keep_trailing_newline, drops one final "\n".
std::string NormalizeNewlines(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out.push_back('\n');
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out.push_back(source[i]);
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

bool AllPySpace(std::string_view text) {
  if (text.empty()) return false;  // Jinja's \s+ needs at least one character
  for (size_t pos = 0; pos < text.size();) {
    char32_t c;
    pos += DecodeUtf8(text, pos, &c);
    if (!IsPySpace(c)) return false;
  }
  return true;
}

class Lexer {
 public:
  explicit Lexer(std::string_view source) : src_(NormalizeNewlines(source)) {
    line_starts_.push_back(0);
    for (size_t i = 0; i < src_.size(); ++i) {
      if (src_[i] == '\n') line_starts_.push_back(i + 1);
    }
  }

  Result<std::vector<Token>> Run() {
    while (pos_ < src_.size()) MTPLX_RETURN_IF_ERROR(LexRootStep());
    Token eof;
    eof.pos = PosAt(src_.size());
    tokens_.push_back(std::move(eof));
    return std::move(tokens_);
  }

 private:
  enum class Opener { kVariable, kBlock, kComment };

  SourcePos PosAt(size_t offset) const {
    const auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
    const size_t line = it - line_starts_.begin();
    return {static_cast<int>(line), static_cast<int>(offset - line_starts_[line - 1] + 1)};
  }

  Status Error(size_t offset, const std::string& message) const {
    return InvalidArgument(
        StrCat("chat template: ", FormatPos(PosAt(offset)), ": syntax error: ", message));
  }

  void Emit(TokenType type, std::string value, size_t offset) {
    Token token;
    token.type = type;
    token.value = std::move(value);
    token.pos = PosAt(offset);
    tokens_.push_back(std::move(token));
  }

  size_t SkipPySpace(size_t pos) const {
    while (pos < src_.size()) {
      char32_t c;
      const size_t len = DecodeUtf8(src_, pos, &c);
      if (!IsPySpace(c)) break;
      pos += len;
    }
    return pos;
  }

  bool StartsAt(size_t pos, std::string_view what) const {
    return pos <= src_.size() && src_.compare(pos, what.size(), what) == 0;
  }

  // Applies "-" (strip all whitespace before the tag) and lstrip_blocks to the text before a tag.
  std::string_view StripBefore(std::string_view text, char sign, bool is_variable) const {
    if (sign == '-') return text.substr(0, PyStripRange(text, nullptr, false, true).second);
    if (sign == '+' || is_variable) return text;
    const size_t line_begin = text.rfind('\n') + 1;  // npos + 1 == 0
    if ((line_begin > 0 || line_starting_) && AllPySpace(text.substr(line_begin))) {
      return text.substr(0, line_begin);
    }
    return text;
  }

  // Finds the next "{{", "{%" or "{#" at or after pos_.
  size_t FindOpener(Opener* kind) const {
    for (size_t at = src_.find('{', pos_); at != std::string::npos; at = src_.find('{', at + 1)) {
      if (at + 1 >= src_.size()) break;
      const char next = src_[at + 1];
      if (next == '{' || next == '%' || next == '#') {
        *kind = next == '{' ? Opener::kVariable : next == '%' ? Opener::kBlock : Opener::kComment;
        return at;
      }
    }
    return std::string::npos;
  }

  // Matches "{% raw %}" (with optional "-"/"+" signs) at `at`; returns the end offset or npos.
  size_t MatchRawBegin(size_t at) const {
    size_t p = at + 2;
    if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) ++p;
    p = SkipPySpace(p);
    if (!StartsAt(p, "raw")) return std::string::npos;
    p = SkipPySpace(p + 3);
    if (StartsAt(p, "-%}")) return SkipPySpace(p + 3);
    if (StartsAt(p, "%}")) return p + 2;
    return std::string::npos;
  }

  Status LexRootStep() {
    Opener kind;
    const size_t at = FindOpener(&kind);
    if (at == std::string::npos) {
      Emit(TokenType::kData, src_.substr(pos_), pos_);
      line_starting_ = src_.back() == '\n';
      pos_ = src_.size();
      return Status::Ok();
    }
    const char sign =
        at + 2 < src_.size() && (src_[at + 2] == '-' || src_[at + 2] == '+') ? src_[at + 2] : '\0';
    const std::string_view before = StripBefore(std::string_view(src_).substr(pos_, at - pos_),
                                                sign, kind == Opener::kVariable);
    if (!before.empty()) Emit(TokenType::kData, std::string(before), pos_);
    if (kind == Opener::kBlock) {
      const size_t raw_end = MatchRawBegin(at);
      if (raw_end != std::string::npos) return LexRaw(at, raw_end);
    }
    pos_ = at + 2 + (sign ? 1 : 0);
    line_starting_ = false;
    if (kind == Opener::kComment) return LexComment(at);
    Emit(kind == Opener::kVariable ? TokenType::kVariableBegin : TokenType::kBlockBegin,
         std::string(src_.substr(at, pos_ - at)), at);
    return LexTag(kind == Opener::kVariable ? TokenType::kVariableEnd : TokenType::kBlockEnd);
  }

  Status LexComment(size_t begin) {
    for (size_t p = pos_; p + 1 < src_.size(); ++p) {
      if (StartsAt(p, "+#}")) return FinishTagEnd(p + 3);
      if (StartsAt(p, "-#}")) return FinishTagEnd(SkipPySpace(p + 3));
      if (StartsAt(p, "#}")) return FinishTagEnd(p + 2 + (StartsAt(p + 2, "\n") ? 1 : 0));
    }
    return Error(begin, "Missing end of comment tag");
  }

  Status LexRaw(size_t begin, size_t body) {
    line_starting_ = src_[body - 1] == '\n';
    for (size_t p = src_.find("{%", body); p != std::string::npos; p = src_.find("{%", p + 1)) {
      size_t q = p + 2;
      const char sign = q < src_.size() && (src_[q] == '-' || src_[q] == '+') ? src_[q] : '\0';
      if (sign) ++q;
      q = SkipPySpace(q);
      if (!StartsAt(q, "endraw")) continue;
      q = SkipPySpace(q + 6);
      size_t end;
      if (StartsAt(q, "+%}")) {
        end = q + 3;
      } else if (StartsAt(q, "-%}")) {
        end = SkipPySpace(q + 3);
      } else if (StartsAt(q, "%}")) {
        end = q + 2 + (StartsAt(q + 2, "\n") ? 1 : 0);
      } else {
        continue;
      }
      const std::string_view text =
          StripBefore(std::string_view(src_).substr(body, p - body), sign, false);
      if (!text.empty()) Emit(TokenType::kData, std::string(text), body);
      return FinishTagEnd(end);
    }
    return Error(begin, "Missing end of raw directive");
  }

  Status FinishTagEnd(size_t end) {
    line_starting_ = end > 0 && src_[end - 1] == '\n';
    pos_ = end;
    return Status::Ok();
  }

  // Returns the end offset of the tag end at pos_, or npos.
  size_t MatchTagEnd(TokenType end_type) const {
    if (end_type == TokenType::kBlockEnd) {
      if (StartsAt(pos_, "+%}")) return pos_ + 3;
      if (StartsAt(pos_, "-%}")) return SkipPySpace(pos_ + 3);
      if (StartsAt(pos_, "%}")) return pos_ + 2 + (StartsAt(pos_ + 2, "\n") ? 1 : 0);
      return std::string::npos;
    }
    if (StartsAt(pos_, "-}}")) return SkipPySpace(pos_ + 3);
    if (StartsAt(pos_, "}}")) return pos_ + 2;
    return std::string::npos;
  }

  Status LexTag(TokenType end_type) {
    brackets_.clear();
    while (pos_ < src_.size()) {
      if (brackets_.empty()) {
        const size_t end = MatchTagEnd(end_type);
        if (end != std::string::npos) {
          Emit(end_type, "", pos_);
          return FinishTagEnd(end);
        }
      }
      const size_t after_space = SkipPySpace(pos_);
      if (after_space != pos_) {
        pos_ = after_space;
        continue;
      }
      MTPLX_RETURN_IF_ERROR(LexTagToken());
    }
    return Status::Ok();  // the parser reports the missing tag end at EOF
  }

  Status LexTagToken() {
    const char c = src_[pos_];
    if (IsDigit(c)) return LexNumber();
    if (IsNameStart(c)) {
      size_t end = pos_;
      while (end < src_.size() && IsNameChar(src_[end])) ++end;
      Emit(TokenType::kName, src_.substr(pos_, end - pos_), pos_);
      pos_ = end;
      return Status::Ok();
    }
    if (c == '\'' || c == '"') return LexString();
    return LexOperator();
  }

  // Digits with single "_" separators, as in Python literals.
  size_t ScanDigits(size_t p, bool (*is_digit)(char)) const {
    const size_t start = p;
    while (p < src_.size()) {
      if (is_digit(src_[p])) {
        ++p;
      } else if (src_[p] == '_' && p > start && p + 1 < src_.size() && is_digit(src_[p + 1])) {
        ++p;
      } else {
        break;
      }
    }
    return p;
  }

  // The end of a float literal at pos_, or npos if there is none.
  size_t MatchFloat() const {
    if (pos_ > 0 && src_[pos_ - 1] == '.') return std::string::npos;
    size_t p = ScanDigits(pos_, IsDigit);
    size_t fraction_end = std::string::npos;
    if (p + 1 < src_.size() && src_[p] == '.' && IsDigit(src_[p + 1])) {
      fraction_end = ScanDigits(p + 1, IsDigit);
    }
    size_t q = fraction_end != std::string::npos ? fraction_end : p;
    if (q < src_.size() && (src_[q] == 'e' || src_[q] == 'E')) {
      size_t r = q + 1;
      if (r < src_.size() && (src_[r] == '+' || src_[r] == '-')) ++r;
      if (r < src_.size() && IsDigit(src_[r])) return ScanDigits(r, IsDigit);
    }
    return fraction_end;
  }

  Status LexNumber() {
    const size_t float_end = MatchFloat();
    if (float_end != std::string::npos) {
      std::string text;
      for (size_t i = pos_; i < float_end; ++i) {
        if (src_[i] != '_') text.push_back(src_[i]);
      }
      Emit(TokenType::kFloat, text, pos_);
      tokens_.back().float_value = std::strtod(text.c_str(), nullptr);
      pos_ = float_end;
      return Status::Ok();
    }
    int base = 10;
    size_t p = pos_;
    size_t end;
    const char prefix = pos_ + 1 < src_.size() ? (src_[pos_ + 1] | 0x20) : '\0';
    if (src_[pos_] == '0' && (prefix == 'b' || prefix == 'o' || prefix == 'x')) {
      base = prefix == 'b' ? 2 : prefix == 'o' ? 8 : 16;
      p += 2;
      if (p < src_.size() && src_[p] == '_') ++p;
      end = ScanDigits(p, base == 16 ? IsHexDigit : base == 8 ? IsOctDigit : IsBinDigit);
      if (end == p) return Error(pos_, "invalid integer literal");
    } else if (src_[pos_] == '0') {
      end = ScanDigits(p, IsZero);
    } else {
      end = ScanDigits(p, IsDigit);
    }
    std::string digits;
    for (size_t i = p; i < end; ++i) {
      if (src_[i] != '_') digits.push_back(src_[i]);
    }
    errno = 0;
    const long long value = std::strtoll(digits.c_str(), nullptr, base);
    if (errno == ERANGE) return Error(pos_, "integer literal is too large");
    Emit(TokenType::kInteger, src_.substr(pos_, end - pos_), pos_);
    tokens_.back().int_value = value;
    pos_ = end;
    return Status::Ok();
  }

  Status LexString();
  Status LexOperator();
  Status DecodeEscape(size_t* p, std::string* out);

  std::string src_;
  size_t pos_ = 0;
  bool line_starting_ = true;
  std::vector<size_t> line_starts_;
  std::vector<Token> tokens_;
  std::vector<char> brackets_;  // expected closers of open (, [, {
};

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f') return (c | 0x20) - 'a' + 10;
  return -1;
}

// One backslash escape at *p (pointing after the backslash), as Python's unicode-escape codec.
Status Lexer::DecodeEscape(size_t* p, std::string* out) {
  const char c = src_[*p];
  const auto simple = [&](char value) {
    out->push_back(value);
    ++*p;
    return Status::Ok();
  };
  switch (c) {
    case '\n':
      ++*p;
      return Status::Ok();  // line continuation
    case '\\':
      return simple('\\');
    case '\'':
      return simple('\'');
    case '"':
      return simple('"');
    case 'a':
      return simple('\a');
    case 'b':
      return simple('\b');
    case 'f':
      return simple('\f');
    case 'n':
      return simple('\n');
    case 'r':
      return simple('\r');
    case 't':
      return simple('\t');
    case 'v':
      return simple('\v');
    default:
      break;
  }
  if (c >= '0' && c <= '7') {
    char32_t value = 0;
    for (int i = 0; i < 3 && *p < src_.size() && src_[*p] >= '0' && src_[*p] <= '7'; ++i) {
      value = value * 8 + (src_[(*p)++] - '0');
    }
    AppendUtf8(value, out);
    return Status::Ok();
  }
  const int digits = c == 'x' ? 2 : c == 'u' ? 4 : c == 'U' ? 8 : 0;
  if (digits == 0) {
    out->push_back('\\');  // unknown escapes keep their backslash
    return Status::Ok();
  }
  char32_t value = 0;
  for (int i = 1; i <= digits; ++i) {
    const int digit = *p + i < src_.size() ? HexValue(src_[*p + i]) : -1;
    if (digit < 0) return Error(*p, StrCat("truncated \\", c, " escape"));
    value = value * 16 + digit;
  }
  if (value > 0x10FFFF) return Error(*p, "illegal Unicode character");
  // Python allows lone surrogates in str; UTF-8 cannot hold them.
  if (value >= 0xD800 && value <= 0xDFFF) value = 0xFFFD;
  AppendUtf8(value, out);
  *p += digits + 1;
  return Status::Ok();
}

Status Lexer::LexString() {
  const char quote = src_[pos_];
  std::string value;
  size_t p = pos_ + 1;
  while (p < src_.size() && src_[p] != quote) {
    if (src_[p] == '\\' && p + 1 < src_.size()) {
      ++p;
      MTPLX_RETURN_IF_ERROR(DecodeEscape(&p, &value));
    } else {
      value.push_back(src_[p++]);
    }
  }
  if (p >= src_.size())
    return Error(pos_, "unexpected char " + PyStringRepr(std::string(1, quote)));
  Emit(TokenType::kString, std::move(value), pos_);
  pos_ = p + 1;
  return Status::Ok();
}

Status Lexer::LexOperator() {
  static constexpr std::string_view kTwoChar[] = {"//", "**", "==", "!=", ">=", "<="};
  for (std::string_view op : kTwoChar) {
    if (StartsAt(pos_, op)) {
      Emit(TokenType::kOperator, std::string(op), pos_);
      pos_ += 2;
      return Status::Ok();
    }
  }
  const char c = src_[pos_];
  if (std::string_view("+-/*%~[](){}><=.:|,;").find(c) == std::string_view::npos) {
    char32_t code_point;
    const size_t len = DecodeUtf8(src_, pos_, &code_point);
    return Error(pos_, "unexpected char " + PyStringRepr(src_.substr(pos_, len)));
  }
  if (c == '(' || c == '[' || c == '{') {
    brackets_.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
  } else if (c == ')' || c == ']' || c == '}') {
    if (brackets_.empty()) return Error(pos_, StrCat("unexpected '", c, "'"));
    const char expected = brackets_.back();
    brackets_.pop_back();
    if (expected != c)
      return Error(pos_, StrCat("unexpected '", c, "', expected '", expected, "'"));
  }
  Emit(TokenType::kOperator, std::string(1, c), pos_);
  ++pos_;
  return Status::Ok();
}

}  // namespace

std::string FormatPos(const SourcePos& pos) { return StrCat(pos.line, ":", pos.column); }

Result<std::vector<Token>> Tokenize(std::string_view source) { return Lexer(source).Run(); }

}  // namespace mtplx::chat
