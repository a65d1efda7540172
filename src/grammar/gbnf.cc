#include "grammar/gbnf.h"

#include <cstdio>

#include "base/strings.h"

namespace mtplx::grammar {
namespace {

// Parentheses nest at most this deep (the parser and the matcher recurse on them).
constexpr int kMaxNesting = 128;

class Parser {
 public:
  Parser(std::string_view text, GrammarBuilder& builder) : text_(text), b_(builder) {}

  Status ParseAll() {
    SkipSpace(true);
    while (!AtEnd()) {
      MTPLX_RETURN_IF_ERROR(ParseRule());
      SkipSpace(true);
    }
    return Status::Ok();
  }

 private:
  bool AtEnd() const { return pos_ >= text_.size(); }
  char Peek(size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }

  Status Error(const std::string& what) const {
    int line = 1, column = 1;
    for (size_t i = 0; i < pos_ && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    return InvalidArgument(StrCat("grammar line ", line, " column ", column, ": ", what));
  }

  // Spaces, tabs and comments; newlines too when `newlines`.
  void SkipSpace(bool newlines) {
    while (!AtEnd()) {
      const char c = Peek();
      if (c == '#') {
        while (!AtEnd() && Peek() != '\n') ++pos_;
      } else if (c == ' ' || c == '\t' || c == '\r' || (newlines && c == '\n')) {
        ++pos_;
      } else {
        break;
      }
    }
  }

  static bool NameChar(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_';
  }

  std::string ParseName() {
    const size_t start = pos_;
    while (!AtEnd() && NameChar(Peek())) ++pos_;
    return std::string(text_.substr(start, pos_ - start));
  }

  Status ParseRule() {
    const std::string name = ParseName();
    if (name.empty()) return Error(StrCat("expected a rule name, found '", Peek(), "'"));
    SkipSpace(false);
    if (text_.substr(pos_, 3) != "::=") return Error(StrCat("expected '::=' after '", name, "'"));
    pos_ += 3;
    const uint32_t rule = b_.Rule(name);
    if (b_.Defined(rule)) return Error(StrCat("rule '", name, "' is defined twice"));
    return ParseAlternatives(rule, false);
  }

  // Alternatives separated by '|' into `rule`.
  Status ParseAlternatives(uint32_t rule, bool nested) {
    for (;;) {
      Alternative alt;
      MTPLX_RETURN_IF_ERROR(ParseSequence(alt, nested));
      b_.AddAlternative(rule, std::move(alt));
      // At the top level a '|' may start the next line.
      const size_t save = pos_;
      SkipSpace(true);
      if (Peek() == '|') {
        ++pos_;
        continue;
      }
      if (!nested) pos_ = save;
      return Status::Ok();
    }
  }

  Status ParseSequence(Alternative& alt, bool nested) {
    for (;;) {
      SkipSpace(nested);
      const char c = Peek();
      if (AtEnd() || c == '|' || c == ')' || c == '\n') return Status::Ok();
      size_t symbol_start = alt.size();
      if (c == '"') {
        ++pos_;
        while (!AtEnd() && Peek() != '"') {
          uint32_t cp = 0;
          MTPLX_RETURN_IF_ERROR(ParseChar(cp, false));
          alt.push_back(Symbol::Char(cp));
        }
        if (AtEnd()) return Error("unterminated string literal");
        ++pos_;
        if (alt.size() == symbol_start) {  // "" matches the empty string
          MTPLX_RETURN_IF_ERROR(MaybeRepeat(alt, symbol_start));
          continue;
        }
      } else if (c == '[') {
        Symbol s;
        MTPLX_RETURN_IF_ERROR(ParseClass(s));
        alt.push_back(std::move(s));
      } else if (c == '.') {
        ++pos_;
        alt.push_back(Symbol::Chars({}, true));
      } else if (c == '(') {
        ++pos_;
        if (++nesting_ > kMaxNesting)
          return Error(StrCat("parentheses nest deeper than ", kMaxNesting));
        const uint32_t group = b_.FreshRule("group");
        MTPLX_RETURN_IF_ERROR(ParseAlternatives(group, true));
        --nesting_;
        SkipSpace(true);
        if (Peek() != ')') return Error("expected ')'");
        ++pos_;
        alt.push_back(Symbol::Rule(group));
      } else if (NameChar(c)) {
        const size_t before = pos_;
        const std::string name = ParseName();
        // A name followed by ::= starts the next rule: this sequence has ended.
        const size_t after = pos_;
        SkipSpace(false);
        if (text_.substr(pos_, 3) == "::=") {
          pos_ = before;
          return Error(StrCat("rule '", name, "' starts before the previous rule ended"));
        }
        pos_ = after;
        alt.push_back(Symbol::Rule(b_.Rule(name)));
      } else {
        return Error(StrCat("unexpected '", c, "'"));
      }
      MTPLX_RETURN_IF_ERROR(MaybeRepeat(alt, symbol_start));
    }
  }

  // A repetition operator after the symbol(s) alt[start..]: the symbols become a rule X and
  // are replaced by the expansion.
  Status MaybeRepeat(Alternative& alt, size_t start) {
    const char c = Peek();
    int min = 0, max = -1;
    if (c == '*') {
      ++pos_;
    } else if (c == '+') {
      ++pos_;
      min = 1;
    } else if (c == '?') {
      ++pos_;
      max = 1;
    } else if (c == '{') {
      ++pos_;
      MTPLX_RETURN_IF_ERROR(ParseBounds(min, max));
    } else {
      return Status::Ok();
    }
    Alternative item(alt.begin() + static_cast<std::ptrdiff_t>(start), alt.end());
    alt.resize(start);
    Repeat(b_, std::move(item), min, max, alt);
    return Status::Ok();
  }

  Status ParseBounds(int& min, int& max) {
    auto number = [&](int& out) -> bool {
      const size_t start = pos_;
      long value = 0;
      while (!AtEnd() && Peek() >= '0' && Peek() <= '9') {
        value = value * 10 + (Peek() - '0');
        if (value > kMaxRepeat) return false;
        ++pos_;
      }
      out = static_cast<int>(value);
      return pos_ > start;
    };
    SkipSpace(false);
    if (!number(min)) return Error(StrCat("expected a repeat count up to ", kMaxRepeat));
    SkipSpace(false);
    max = min;
    if (Peek() == ',') {
      ++pos_;
      SkipSpace(false);
      max = -1;
      if (Peek() != '}' && !number(max))
        return Error(StrCat("expected a repeat count up to ", kMaxRepeat));
      SkipSpace(false);
    }
    if (Peek() != '}') return Error("expected '}'");
    ++pos_;
    if (max >= 0 && max < min) return Error("the repeat maximum is below the minimum");
    return Status::Ok();
  }

  Status ParseClass(Symbol& s) {
    ++pos_;  // '['
    s.negated = Peek() == '^';
    if (s.negated) ++pos_;
    while (!AtEnd() && Peek() != ']') {
      uint32_t lo = 0;
      MTPLX_RETURN_IF_ERROR(ParseChar(lo, true));
      uint32_t hi = lo;
      if (Peek() == '-' && Peek(1) != ']' && Peek(1) != '\0') {
        ++pos_;
        MTPLX_RETURN_IF_ERROR(ParseChar(hi, true));
        if (hi < lo) return Error("a character range ends below its start");
      }
      s.ranges.push_back({lo, hi});
    }
    if (AtEnd()) return Error("unterminated character class");
    ++pos_;
    return Status::Ok();
  }

  Status ParseHex(int digits, uint32_t& out) {
    out = 0;
    for (int i = 0; i < digits; ++i) {
      const char c = Peek();
      uint32_t v;
      if (c >= '0' && c <= '9')
        v = c - '0';
      else if (c >= 'a' && c <= 'f')
        v = c - 'a' + 10;
      else if (c >= 'A' && c <= 'F')
        v = c - 'A' + 10;
      else
        return Error(StrCat("expected ", digits, " hex digits"));
      out = out * 16 + v;
      ++pos_;
    }
    if (out > 0x10ffff) return Error("code point beyond U+10FFFF");
    return Status::Ok();
  }

  // One character of a literal or class: an escape or a UTF-8 sequence.
  Status ParseChar(uint32_t& out, bool in_class) {
    const unsigned char c = static_cast<unsigned char>(Peek());
    if (c == '\\') {
      ++pos_;
      const char e = Peek();
      ++pos_;
      switch (e) {
        case 'n':
          out = '\n';
          return Status::Ok();
        case 'r':
          out = '\r';
          return Status::Ok();
        case 't':
          out = '\t';
          return Status::Ok();
        case '\\':
        case '"':
        case '[':
        case ']':
        case '-':
        case '^':
        case '/':
          out = static_cast<unsigned char>(e);
          return Status::Ok();
        case 'x':
          return ParseHex(2, out);
        case 'u':
          return ParseHex(4, out);
        case 'U':
          return ParseHex(8, out);
        default:
          --pos_;
          return Error(StrCat("unknown escape '\\", e, "'"));
      }
    }
    if (c == '\n' && !in_class) return Error("a newline inside a string literal");
    int extra = c < 0x80 ? 0 : (c >> 5) == 6 ? 1 : (c >> 4) == 14 ? 2 : (c >> 3) == 30 ? 3 : -1;
    if (extra < 0) return Error("invalid UTF-8");
    out = extra == 0 ? c : c & (0x3f >> extra);
    ++pos_;
    for (int i = 0; i < extra; ++i) {
      const unsigned char k = static_cast<unsigned char>(Peek());
      if ((k & 0xc0) != 0x80) return Error("invalid UTF-8");
      out = (out << 6) | (k & 0x3f);
      ++pos_;
    }
    return Status::Ok();
  }

  std::string_view text_;
  GrammarBuilder& b_;
  size_t pos_ = 0;
  int nesting_ = 0;
};

}  // namespace

Status ParseGbnfInto(std::string_view text, GrammarBuilder& builder) {
  return Parser(text, builder).ParseAll();
}

Result<Grammar> ParseGbnf(std::string_view text, const std::string& root) {
  GrammarBuilder builder;
  MTPLX_RETURN_IF_ERROR(ParseGbnfInto(text, builder));
  return std::move(builder).Build(root);
}

std::string GbnfLiteral(std::string_view utf8) {
  std::string out = "\"";
  for (char c : utf8) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7f) {
      char buf[8];
      snprintf(buf, sizeof buf, "\\x%02x", u);
      out += buf;
    } else {
      out += c;  // UTF-8 passes through
    }
  }
  return out + "\"";
}

}  // namespace mtplx::grammar
