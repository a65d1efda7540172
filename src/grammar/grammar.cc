#include "grammar/grammar.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>

#include "base/strings.h"

namespace mtplx::grammar {

std::vector<CharRange> Normalize(std::vector<CharRange> ranges) {
  std::sort(ranges.begin(), ranges.end(),
            [](const CharRange& a, const CharRange& b) { return a.lo < b.lo; });
  std::vector<CharRange> out;
  for (const CharRange& r : ranges) {
    if (!out.empty() && r.lo <= out.back().hi + 1)
      out.back().hi = std::max(out.back().hi, r.hi);
    else
      out.push_back(r);
  }
  return out;
}

bool Grammar::MatchesAnyIn(const Element& e, uint32_t lo, uint32_t hi) const {
  if (!e.negated) {
    for (uint32_t i = e.first; i < e.first + e.count; ++i)
      if (ranges_[i].lo <= hi && lo <= ranges_[i].hi) return true;
    return false;
  }
  // Some code point of [lo, hi] is outside every range (the ranges are sorted and merged).
  uint32_t next = lo;
  for (uint32_t i = e.first; i < e.first + e.count; ++i) {
    const CharRange& r = ranges_[i];
    if (r.hi < next) continue;
    if (r.lo > next) return true;
    if (r.hi >= hi) return false;
    next = r.hi + 1;
  }
  return next <= hi;
}

namespace {

void AppendCodePoint(std::string& out, uint32_t c, bool in_class) {
  const char* special = in_class ? "]\\-^" : "\"\\";
  if (c == '\n') {
    out += "\\n";
  } else if (c == '\r') {
    out += "\\r";
  } else if (c == '\t') {
    out += "\\t";
  } else if (c < 0x20 || c >= 0x7f) {
    char buf[16];
    snprintf(buf, sizeof buf, c < 0x80 ? "\\x%02x" : c <= 0xffff ? "\\u%04x" : "\\U%08x", c);
    out += buf;
  } else {
    if (std::strchr(special, static_cast<char>(c))) out += '\\';
    out += static_cast<char>(c);
  }
}

}  // namespace

std::string Grammar::ToString() const {
  std::string out;
  for (uint32_t rule = 0; rule < names_.size(); ++rule) {
    out += names_[rule] + " ::=";
    const auto& alts = alternatives_[rule];
    for (size_t a = 0; a < alts.size(); ++a) {
      if (a > 0) out += " |";
      for (uint32_t pos = alts[a]; elements_[pos].kind != ElementKind::kEnd; ++pos) {
        const Element& e = elements_[pos];
        out += ' ';
        if (e.kind == ElementKind::kRule) {
          out += names_[e.rule];
          continue;
        }
        out += e.negated ? "[^" : "[";
        for (uint32_t i = e.first; i < e.first + e.count; ++i) {
          AppendCodePoint(out, ranges_[i].lo, true);
          if (ranges_[i].hi != ranges_[i].lo) {
            out += '-';
            AppendCodePoint(out, ranges_[i].hi, true);
          }
        }
        out += ']';
      }
    }
    out += '\n';
  }
  return out;
}

uint32_t GrammarBuilder::Rule(const std::string& name) {
  const auto [it, added] = index_.emplace(name, static_cast<uint32_t>(names_.size()));
  if (added) {
    names_.push_back(name);
    rules_.emplace_back();
    defined_.push_back(false);
  }
  return it->second;
}

uint32_t GrammarBuilder::FreshRule(const std::string& base) {
  std::string name = base;
  int& next = fresh_[base];
  while (index_.count(name)) name = StrCat(base, "-", ++next);
  return Rule(name);
}

void GrammarBuilder::AddAlternative(uint32_t rule, Alternative alternative) {
  for (Symbol& s : alternative)
    if (!s.is_rule) s.ranges = Normalize(std::move(s.ranges));
  rules_[rule].push_back(std::move(alternative));
  defined_[rule] = true;
}

void Repeat(GrammarBuilder& builder, Alternative item, int min, int max, Alternative& out) {
  Symbol unit;
  if (item.size() == 1) {
    unit = std::move(item[0]);
  } else {
    const uint32_t rule = builder.FreshRule("item");
    builder.AddAlternative(rule, std::move(item));
    unit = Symbol::Rule(rule);
  }
  for (int i = 0; i < min; ++i) out.push_back(unit);
  if (max < 0) {
    const uint32_t star = builder.FreshRule("star");
    builder.AddAlternative(star, {unit, Symbol::Rule(star)});
    builder.AddAlternative(star, {});
    out.push_back(Symbol::Rule(star));
    return;
  }
  // up to (max - min) more: R1 ::= X | (empty); Rk ::= X R(k-1) | (empty).
  uint32_t previous = 0;
  for (int k = 1; k <= max - min; ++k) {
    const uint32_t rule = builder.FreshRule("opt");
    Alternative alt{unit};
    if (k > 1) alt.push_back(Symbol::Rule(previous));
    builder.AddAlternative(rule, std::move(alt));
    builder.AddAlternative(rule, {});
    previous = rule;
  }
  if (max > min) out.push_back(Symbol::Rule(previous));
}

namespace {

// Rules that can match the empty string (a fixpoint over the alternatives).
std::vector<bool> NullableRules(const std::vector<std::vector<Alternative>>& rules) {
  std::vector<bool> nullable(rules.size(), false);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < rules.size(); ++r) {
      if (nullable[r]) continue;
      for (const Alternative& alt : rules[r]) {
        const bool empty = std::all_of(
            alt.begin(), alt.end(), [&](const Symbol& s) { return s.is_rule && nullable[s.rule]; });
        if (empty) {
          nullable[r] = changed = true;
          break;
        }
      }
    }
  }
  return nullable;
}

}  // namespace

Result<Grammar> GrammarBuilder::Build(const std::string& root_name) && {
  uint32_t root = 0;
  bool has_root = false;
  for (uint32_t i = 0; i < names_.size(); ++i)
    if (names_[i] == root_name) root = i, has_root = true;
  if (!has_root) return InvalidArgument(StrCat("the grammar has no rule '", root_name, "'"));
  for (uint32_t i = 0; i < names_.size(); ++i)
    if (!defined_[i]) return InvalidArgument(StrCat("rule '", names_[i], "' is never defined"));

  // Left recursion: rule A reaches rule B without consuming a character when B stands in an
  // alternative of A after only nullable rules. A cycle among those edges loops the matcher.
  const std::vector<bool> nullable = NullableRules(rules_);
  std::vector<std::vector<uint32_t>> left(names_.size());
  for (uint32_t r = 0; r < names_.size(); ++r)
    for (const Alternative& alt : rules_[r])
      for (const Symbol& s : alt) {
        if (!s.is_rule) break;
        left[r].push_back(s.rule);
        if (!nullable[s.rule]) break;
      }
  std::vector<int> mark(names_.size(), 0);  // 0 new, 1 on the path, 2 done
  std::string cycle;
  std::function<bool(uint32_t)> visit = [&](uint32_t r) {
    mark[r] = 1;
    for (uint32_t next : left[r]) {
      if (mark[next] == 1 || (mark[next] == 0 && visit(next))) {
        if (cycle.empty()) cycle = names_[next];
        return true;
      }
    }
    mark[r] = 2;
    return false;
  };
  for (uint32_t r = 0; r < names_.size(); ++r)
    if (mark[r] == 0 && visit(r))
      return InvalidArgument(StrCat("rule '", cycle, "' is left-recursive"));

  Grammar g;
  g.names_ = names_;
  g.root_ = root;
  g.alternatives_.resize(names_.size());
  for (uint32_t r = 0; r < names_.size(); ++r) {
    for (const Alternative& alt : rules_[r]) {
      g.alternatives_[r].push_back(static_cast<uint32_t>(g.elements_.size()));
      for (const Symbol& s : alt) {
        Element e;
        if (s.is_rule) {
          e.kind = ElementKind::kRule;
          e.rule = s.rule;
        } else {
          e.kind = ElementKind::kChars;
          e.negated = s.negated;
          e.first = static_cast<uint32_t>(g.ranges_.size());
          e.count = static_cast<uint32_t>(s.ranges.size());
          g.ranges_.insert(g.ranges_.end(), s.ranges.begin(), s.ranges.end());
        }
        g.elements_.push_back(e);
      }
      g.elements_.push_back(Element{});  // kEnd
    }
  }
  return g;
}

}  // namespace mtplx::grammar
