// A context-free grammar over Unicode code points, the form every constraint compiles to (a
// GBNF string, a JSON schema, a forced tool call). Rules are alternatives of sequences of
// elements; an element matches one code point from a set of ranges, or expands another rule.
// Repetition and grouping are rewritten into helper rules by whoever builds the grammar, so the
// matcher (matcher.h) sees only these two kinds of element.
//
// The rules are stored flat: one array of elements in which every alternative is a run of
// elements closed by an kEnd element. A position in the grammar is an index into that array,
// which is what the matcher's stacks hold.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/status.h"

namespace mtplx::grammar {

struct CharRange {
  uint32_t lo = 0;
  uint32_t hi = 0;  // inclusive
};

enum class ElementKind : uint8_t { kChars, kRule, kEnd };

struct Element {
  ElementKind kind = ElementKind::kEnd;
  bool negated = false;  // kChars: matches code points outside the ranges
  uint32_t rule = 0;     // kRule
  uint32_t first = 0;    // kChars: ranges [first, first + count) of Grammar::ranges()
  uint32_t count = 0;
};

// One symbol of an alternative while a grammar is being built.
struct Symbol {
  static Symbol Chars(std::vector<CharRange> ranges, bool negated = false) {
    Symbol s;
    s.ranges = std::move(ranges);
    s.negated = negated;
    return s;
  }
  static Symbol Char(uint32_t c) { return Chars({{c, c}}); }
  static Symbol Rule(uint32_t rule) {
    Symbol s;
    s.is_rule = true;
    s.rule = rule;
    return s;
  }
  bool is_rule = false;
  uint32_t rule = 0;
  bool negated = false;
  std::vector<CharRange> ranges;
};

using Alternative = std::vector<Symbol>;

class Grammar {
 public:
  const std::vector<Element>& elements() const { return elements_; }
  const std::vector<CharRange>& ranges() const { return ranges_; }
  // The first element of each alternative of `rule`.
  const std::vector<uint32_t>& alternatives(uint32_t rule) const { return alternatives_[rule]; }
  uint32_t root() const { return root_; }
  size_t rule_count() const { return names_.size(); }
  const std::string& rule_name(uint32_t rule) const { return names_[rule]; }

  bool Matches(const Element& e, uint32_t c) const {
    bool in = false;
    for (uint32_t i = e.first; i < e.first + e.count && !in; ++i)
      in = ranges_[i].lo <= c && c <= ranges_[i].hi;
    return in != e.negated;
  }
  // Whether some code point in [lo, hi] matches (a partial UTF-8 character could still fit).
  bool MatchesAnyIn(const Element& e, uint32_t lo, uint32_t hi) const;

  // The grammar as GBNF text (for messages and tests).
  std::string ToString() const;

 private:
  friend class GrammarBuilder;
  std::vector<Element> elements_;
  std::vector<CharRange> ranges_;
  std::vector<std::vector<uint32_t>> alternatives_;
  std::vector<std::string> names_;
  uint32_t root_ = 0;
};

class GrammarBuilder {
 public:
  // The rule of that name, declared if new (its alternatives may come later).
  uint32_t Rule(const std::string& name);
  // A new rule with a name derived from `base` that no other rule has.
  uint32_t FreshRule(const std::string& base);
  void AddAlternative(uint32_t rule, Alternative alternative);
  bool Defined(uint32_t rule) const { return defined_[rule]; }
  // Checks that every rule is defined and none is left-recursive (the matcher would loop).
  Result<Grammar> Build(const std::string& root_name) &&;

 private:
  std::vector<std::string> names_;
  std::vector<std::vector<Alternative>> rules_;
  std::vector<bool> defined_;
  std::unordered_map<std::string, uint32_t> index_;
  std::unordered_map<std::string, int> fresh_;  // the next suffix tried for a base name
};

// Appends to `out` what matches `item` repeated min..max times (max < 0: no limit), adding
// helper rules: X* becomes S ::= X S | (empty), bounded repeats a chain of optional rules.
void Repeat(GrammarBuilder& builder, Alternative item, int min, int max, Alternative& out);

// Code point ranges of a set, sorted and merged.
std::vector<CharRange> Normalize(std::vector<CharRange> ranges);

}  // namespace mtplx::grammar
