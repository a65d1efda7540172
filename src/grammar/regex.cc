#include "grammar/regex.h"

#include <cstdio>

#include "base/strings.h"
#include "grammar/gbnf.h"

namespace mtplx::grammar {
namespace {

// What the dot and a negated class may produce.
constexpr const char* kJsonExcluded = "\"\\\\\\x00-\\x1f";  // GBNF class text: " \ and controls
constexpr const char* kRawExcluded = "\\n";

std::string ClassChar(uint32_t c) {
  char buf[16];
  if (c == ']' || c == '\\' || c == '-' || c == '^')
    return std::string("\\") + static_cast<char>(c);
  if (c < 0x20 || c == 0x7f) {
    snprintf(buf, sizeof buf, "\\x%02x", c);
    return buf;
  }
  if (c > 0x7f) {
    snprintf(buf, sizeof buf, c <= 0xffff ? "\\u%04x" : "\\U%08x", c);
    return buf;
  }
  return std::string(1, static_cast<char>(c));
}

class RegexParser {
 public:
  RegexParser(std::string_view p, bool json) : p_(p), json_(json) {}

  Result<std::string> Translate() {
    bool anchored_start = false, anchored_end = false;
    if (!p_.empty() && p_.front() == '^') {
      anchored_start = true;
      p_.remove_prefix(1);
    }
    if (!p_.empty() && p_.back() == '$' && (p_.size() < 2 || p_[p_.size() - 2] != '\\')) {
      anchored_end = true;
      p_.remove_suffix(1);
    }
    std::string body;
    MTPLX_RETURN_IF_ERROR(Alternation(body));
    if (pos_ < p_.size()) return Error(StrCat("unexpected '", p_[pos_], "'"));
    const std::string any = StrCat("[^", json_ ? kJsonExcluded : "", "]*");
    std::string out = "(";
    if (!anchored_start) out += any + " ";
    out += "(" + body + ")";
    if (!anchored_end) out += " " + any;
    return out + ")";
  }

 private:
  Status Error(const std::string& what) const {
    return InvalidArgument(StrCat("pattern at offset ", pos_, ": ", what));
  }
  bool AtEnd() const { return pos_ >= p_.size(); }

  Status Alternation(std::string& out) {
    std::string seq;
    MTPLX_RETURN_IF_ERROR(Sequence(seq));
    out = "(" + seq;
    while (!AtEnd() && p_[pos_] == '|') {
      ++pos_;
      seq.clear();
      MTPLX_RETURN_IF_ERROR(Sequence(seq));
      out += " | " + seq;
    }
    out += ")";
    return Status::Ok();
  }

  Status Sequence(std::string& out) {
    out = "\"\"";
    while (!AtEnd() && p_[pos_] != '|' && p_[pos_] != ')') {
      std::string atom;
      MTPLX_RETURN_IF_ERROR(Atom(atom));
      MTPLX_RETURN_IF_ERROR(Quantifier(atom));
      out += " " + atom;
    }
    return Status::Ok();
  }

  Status Quantifier(std::string& atom) {
    if (AtEnd()) return Status::Ok();
    const char c = p_[pos_];
    if (c == '*' || c == '+' || c == '?') {
      ++pos_;
      atom = "(" + atom + ")" + c;
    } else if (c == '{') {
      const size_t close = p_.find('}', pos_);
      if (close == std::string_view::npos) return Error("unterminated {");
      const std::string_view bounds = p_.substr(pos_ + 1, close - pos_ - 1);
      for (char b : bounds)
        if (!(b >= '0' && b <= '9') && b != ',') return Error("malformed {m,n}");
      if (bounds.empty() || bounds.front() == ',') return Error("malformed {m,n}");
      atom = "(" + atom + "){" + std::string(bounds) + "}";
      pos_ = close + 1;
    } else {
      return Status::Ok();
    }
    if (!AtEnd() && (p_[pos_] == '?' || p_[pos_] == '+')) ++pos_;  // lazy / possessive
    if (!AtEnd() && (p_[pos_] == '*' || p_[pos_] == '+' || p_[pos_] == '{'))
      return Error("a quantifier follows a quantifier");
    return Status::Ok();
  }

  // A literal code point as it is written in the output.
  std::string Literal(uint32_t c) const {
    std::string utf8;
    AppendUtf8(utf8, c);
    if (!json_) return GbnfLiteral(utf8);
    if (c == '"') return GbnfLiteral("\\\"");
    if (c == '\\') return GbnfLiteral("\\\\");
    if (c == '\n') return GbnfLiteral("\\n");
    if (c == '\r') return GbnfLiteral("\\r");
    if (c == '\t') return GbnfLiteral("\\t");
    if (c < 0x20) {
      char buf[8];
      snprintf(buf, sizeof buf, "\\u%04x", c);
      return GbnfLiteral(buf);
    }
    return GbnfLiteral(utf8);
  }

  static void AppendUtf8(std::string& out, uint32_t c) {
    if (c < 0x80) {
      out += static_cast<char>(c);
    } else if (c < 0x800) {
      out += static_cast<char>(0xc0 | (c >> 6));
      out += static_cast<char>(0x80 | (c & 0x3f));
    } else if (c < 0x10000) {
      out += static_cast<char>(0xe0 | (c >> 12));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (c & 0x3f));
    } else {
      out += static_cast<char>(0xf0 | (c >> 18));
      out += static_cast<char>(0x80 | ((c >> 12) & 0x3f));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (c & 0x3f));
    }
  }

  // One code point of the pattern (UTF-8).
  uint32_t NextCodePoint() {
    const unsigned char c = static_cast<unsigned char>(p_[pos_++]);
    if (c < 0x80) return c;
    const int extra = (c >> 5) == 6 ? 1 : (c >> 4) == 14 ? 2 : 3;
    uint32_t cp = c & (0x3f >> extra);
    for (int i = 0; i < extra && !AtEnd(); ++i)
      cp = (cp << 6) | (static_cast<unsigned char>(p_[pos_++]) & 0x3f);
    return cp;
  }

  // A class escape's GBNF class body (\d, \w, \s) or "" when `e` is not one; `negated` for the
  // upper-case forms.
  static std::string ClassEscape(char e, bool& negated) {
    negated = e == 'D' || e == 'W' || e == 'S';
    switch (e) {
      case 'd':
      case 'D':
        return "0-9";
      case 'w':
      case 'W':
        return "a-zA-Z0-9_";
      case 's':
      case 'S':
        return " \\t\\n\\r\\x0b\\x0c";
      default:
        return "";
    }
  }

  // An escaped literal after '\': its code point, or an error.
  Status EscapedLiteral(uint32_t& out) {
    if (AtEnd()) return Error("a pattern ends in '\\'");
    const char e = p_[pos_++];
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
      case 'f':
        out = '\f';
        return Status::Ok();
      case 'v':
        out = '\v';
        return Status::Ok();
      case 'u': {
        if (pos_ + 4 > p_.size()) return Error("\\u needs 4 hex digits");
        out = 0;
        for (int i = 0; i < 4; ++i) {
          const char h = p_[pos_++];
          const int v = h >= '0' && h <= '9'   ? h - '0'
                        : h >= 'a' && h <= 'f' ? h - 'a' + 10
                        : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                               : -1;
          if (v < 0) return Error("\\u needs 4 hex digits");
          out = out * 16 + v;
        }
        return Status::Ok();
      }
      default:
        if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || (e >= '0' && e <= '9'))
          return Error(StrCat("the escape '\\", e, "' is not supported"));
        out = static_cast<unsigned char>(e);
        return Status::Ok();
    }
  }

  std::string ClassText(const std::string& body, bool negated) const {
    if (negated) return StrCat("[^", body, json_ ? kJsonExcluded : "", "]");
    if (!json_) return "[" + body + "]";
    // Positive classes in JSON form: the model writes " and \ only through literals.
    return "(" + StrCat("[", body, "]") + ")";
  }

  Status Atom(std::string& out) {
    const char c = p_[pos_];
    if (c == '(') {
      ++pos_;
      if (p_.substr(pos_, 2) == "?:") {
        pos_ += 2;
      } else if (!AtEnd() && p_[pos_] == '?') {
        return Error("lookaround and named groups are not supported");
      }
      MTPLX_RETURN_IF_ERROR(Alternation(out));
      if (AtEnd() || p_[pos_] != ')') return Error("missing ')'");
      ++pos_;
      return Status::Ok();
    }
    if (c == '[') return Class(out);
    if (c == '.') {
      ++pos_;
      out = StrCat("[^", json_ ? kJsonExcluded : "", kRawExcluded, "]");
      return Status::Ok();
    }
    if (c == '^' || c == '$') return Error("anchors are allowed only at the ends");
    if (c == '*' || c == '+' || c == '?' || c == '{')
      return Error("a quantifier with nothing to repeat");
    if (c == '\\') {
      ++pos_;
      if (!AtEnd()) {
        bool negated = false;
        const std::string cls = ClassEscape(p_[pos_], negated);
        if (!cls.empty()) {
          ++pos_;
          out = ClassText(cls, negated);
          return Status::Ok();
        }
        if (p_[pos_] >= '1' && p_[pos_] <= '9') return Error("backreferences are not supported");
        if (p_[pos_] == 'b' || p_[pos_] == 'B') return Error("word boundaries are not supported");
      }
      uint32_t cp = 0;
      MTPLX_RETURN_IF_ERROR(EscapedLiteral(cp));
      out = Literal(cp);
      return Status::Ok();
    }
    out = Literal(NextCodePoint());
    return Status::Ok();
  }

  Status Class(std::string& out) {
    ++pos_;  // '['
    bool negated = false;
    if (!AtEnd() && p_[pos_] == '^') {
      negated = true;
      ++pos_;
    }
    std::string body;
    bool first = true;
    while (!AtEnd() && (p_[pos_] != ']' || first)) {
      first = false;
      uint32_t lo = 0;
      if (p_[pos_] == '\\') {
        ++pos_;
        bool neg = false;
        const std::string cls = AtEnd() ? "" : ClassEscape(p_[pos_], neg);
        if (!cls.empty()) {
          if (neg) return Error("negated class escapes inside [] are not supported");
          ++pos_;
          body += cls;
          continue;
        }
        MTPLX_RETURN_IF_ERROR(EscapedLiteral(lo));
      } else if (p_.substr(pos_, 2) == "[:") {
        return Error("named classes like [:alpha:] are not supported");
      } else {
        lo = NextCodePoint();
      }
      uint32_t hi = lo;
      if (pos_ + 1 < p_.size() && p_[pos_] == '-' && p_[pos_ + 1] != ']') {
        ++pos_;
        if (p_[pos_] == '\\') {
          ++pos_;
          MTPLX_RETURN_IF_ERROR(EscapedLiteral(hi));
        } else {
          hi = NextCodePoint();
        }
        if (hi < lo) return Error("a class range ends below its start");
      }
      if (json_ && !negated) {
        // " \ and control characters are left out of JSON-form classes.
        auto emit = [&](uint32_t a, uint32_t b) {
          if (a > b) return;
          body += ClassChar(a);
          if (b != a) body += "-" + ClassChar(b);
        };
        uint32_t a = std::max<uint32_t>(lo, 0x20);
        const uint32_t excluded[] = {'"', '\\'};
        for (uint32_t x : excluded) {
          if (a <= x && x <= hi) {
            emit(a, x - 1);
            a = x + 1;
          }
        }
        emit(a, hi);
        continue;
      }
      body += ClassChar(lo);
      if (hi != lo) body += "-" + ClassChar(hi);
    }
    if (AtEnd()) return Error("missing ']'");
    ++pos_;
    if (body.empty() && !negated) return Error("a class that matches nothing");
    out = ClassText(body, negated);
    return Status::Ok();
  }

  std::string_view p_;
  bool json_;
  size_t pos_ = 0;
};

}  // namespace

Result<std::string> RegexToGbnf(std::string_view pattern, bool json_string) {
  return RegexParser(pattern, json_string).Translate();
}

}  // namespace mtplx::grammar
