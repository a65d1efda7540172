// Jinja's filters over sequences: map, select, reject, sort, unique, join, first, last, ...
// Jinja returns generators from some of these (map, select, unique); we return lists, which
// behave the same under |list, |join, for-loops and tests.
#include <algorithm>

#include "base/strings.h"
#include "chat/builtins_internal.h"
#include "chat/py_text.h"
#include "chat/value_ops.h"

namespace mtplx::chat::internal {
namespace {

// Jinja's ignore_case postprocessing: strings compare lowercased.
Value IgnoreCase(const Value& value) {
  if (!value.is_string()) return value;
  return Value::String(PyLower(value.text()));
}

// The sort key of an item: its attribute (when given), case-folded unless case_sensitive.
Result<Value> SortKey(const Value& item, const Value& attribute, bool case_sensitive) {
  Value key = item;
  if (!attribute.is_none() && !attribute.is_undefined()) {
    if (attribute.is_string() && attribute.text().find(',') != std::string::npos) {
      std::vector<Value> parts;
      for (const std::string& part : StrSplit(attribute.text(), ',')) {
        MTPLX_ASSIGN_OR_RETURN(Value sub, LookupAttribute(item, part));
        parts.push_back(case_sensitive ? sub : IgnoreCase(sub));
      }
      return Value::Tuple(std::move(parts));
    }
    MTPLX_ASSIGN_OR_RETURN(key, LookupAttribute(item, ToStr(attribute).text()));
  }
  return case_sensitive ? key : IgnoreCase(key);
}

// Stable sort of items by precomputed keys; Python's reverse=True keeps equal items in order.
Result<std::vector<Value>> SortByKeys(std::vector<Value> items, const std::vector<Value>& keys,
                                      bool reverse) {
  std::vector<size_t> order(items.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  Status status;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (!status.ok()) return false;
    Result<int> c = Compare(keys[a], keys[b]);
    if (!c.ok()) {
      status = c.status();
      return false;
    }
    return reverse ? *c > 0 : *c < 0;
  });
  if (!status.ok()) return status;
  std::vector<Value> sorted;
  sorted.reserve(items.size());
  for (size_t i : order) sorted.push_back(std::move(items[i]));
  return sorted;
}

Result<Value> SelectOrReject(Interpreter& in, const Value& subject, const CallArgs& args,
                             bool lookup_attr, bool select) {
  MTPLX_ASSIGN_OR_RETURN(const std::vector<Value> items, Iterate(subject));
  size_t offset = 0;
  Value attribute;
  if (lookup_attr) {
    if (args.positional.empty()) return TypeError("Missing parameter for attribute name");
    attribute = args.positional[0];
    offset = 1;
  }
  CallArgs test_args;
  test_args.keyword = args.keyword;
  const Value* test_name = offset < args.positional.size() ? &args.positional[offset] : nullptr;
  if (test_name != nullptr) {
    test_args.positional.assign(args.positional.begin() + offset + 1, args.positional.end());
  }
  std::vector<Value> kept;
  for (const Value& item : items) {
    Value probe = item;
    if (lookup_attr) {
      MTPLX_ASSIGN_OR_RETURN(probe, LookupAttribute(item, ToStr(attribute).text()));
    }
    bool passed = probe.Truthy();
    if (test_name != nullptr) {
      MTPLX_ASSIGN_OR_RETURN(passed, in.ApplyTest(ToStr(*test_name).text(), probe, test_args));
    }
    if (passed == select) kept.push_back(item);
  }
  return Value::List(std::move(kept));
}

Result<Value> MinOrMax(const Value& subject, const CallArgs& args, bool want_max) {
  MTPLX_ASSIGN_OR_RETURN(const std::vector<Value> items, Iterate(subject));
  if (items.empty()) return Value::Undefined("No aggregated item, sequence was empty.");
  const bool case_sensitive = BoolArg(args, 0, "case_sensitive", false);
  const Value attribute = ArgOr(args, 1, "attribute", Value::None());
  size_t best = 0;
  MTPLX_ASSIGN_OR_RETURN(Value best_key, SortKey(items[0], attribute, case_sensitive));
  for (size_t i = 1; i < items.size(); ++i) {
    MTPLX_ASSIGN_OR_RETURN(Value key, SortKey(items[i], attribute, case_sensitive));
    MTPLX_ASSIGN_OR_RETURN(const int c, Compare(key, best_key));
    if (want_max ? c > 0 : c < 0) {
      best = i;
      best_key = std::move(key);
    }
  }
  return items[best];
}

}  // namespace

Result<Value> LookupAttribute(const Value& item, std::string_view path,
                              const std::optional<Value>& fallback) {
  Value current = item;
  for (const std::string& part : StrSplit(path, '.')) {
    const bool numeric = !part.empty() && std::all_of(part.begin(), part.end(),
                                                      [](char c) { return c >= '0' && c <= '9'; });
    const Value key =
        numeric ? Value::Int(std::strtoll(part.c_str(), nullptr, 10)) : Value::String(part);
    MTPLX_ASSIGN_OR_RETURN(current, GetItem(current, key));
  }
  if (fallback && current.is_undefined()) return *fallback;
  return current;
}

Result<Value> FilterMap(Interpreter& in, const Value& subject, const CallArgs& args) {
  MTPLX_ASSIGN_OR_RETURN(const std::vector<Value> items, Iterate(subject));
  std::vector<Value> mapped;
  mapped.reserve(items.size());
  if (args.positional.empty() && args.Keyword("attribute") != nullptr) {
    const std::string attribute = ToStr(*args.Keyword("attribute")).text();
    std::optional<Value> fallback;
    if (const Value* d = args.Keyword("default"); d != nullptr && !d->is_none()) fallback = *d;
    for (const auto& [key, value] : args.keyword) {
      if (key != "attribute" && key != "default") {
        return TypeError(StrCat("Unexpected keyword argument '", key, "'"));
      }
    }
    for (const Value& item : items) {
      MTPLX_ASSIGN_OR_RETURN(Value value, LookupAttribute(item, attribute, fallback));
      mapped.push_back(std::move(value));
    }
    return Value::List(std::move(mapped));
  }
  if (args.positional.empty()) return TypeError("map requires a filter argument");
  const std::string filter = ToStr(args.positional[0]).text();
  CallArgs filter_args;
  filter_args.positional.assign(args.positional.begin() + 1, args.positional.end());
  filter_args.keyword = args.keyword;
  for (const Value& item : items) {
    MTPLX_ASSIGN_OR_RETURN(Value value, in.ApplyFilter(filter, item, filter_args));
    mapped.push_back(std::move(value));
  }
  return Value::List(std::move(mapped));
}

Result<Value> FilterSelect(Interpreter& in, const Value& subject, const CallArgs& args) {
  return SelectOrReject(in, subject, args, false, true);
}

Result<Value> FilterReject(Interpreter& in, const Value& subject, const CallArgs& args) {
  return SelectOrReject(in, subject, args, false, false);
}

Result<Value> FilterSelectAttr(Interpreter& in, const Value& subject, const CallArgs& args) {
  return SelectOrReject(in, subject, args, true, true);
}

Result<Value> FilterRejectAttr(Interpreter& in, const Value& subject, const CallArgs& args) {
  return SelectOrReject(in, subject, args, true, false);
}

Result<Value> FilterSort(Interpreter& in, const Value& subject, const CallArgs& args) {
  MTPLX_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(subject));
  const bool reverse = BoolArg(args, 0, "reverse", false);
  const bool case_sensitive = BoolArg(args, 1, "case_sensitive", false);
  const Value attribute = ArgOr(args, 2, "attribute", Value::None());
  std::vector<Value> keys;
  keys.reserve(items.size());
  for (const Value& item : items) {
    MTPLX_ASSIGN_OR_RETURN(Value key, SortKey(item, attribute, case_sensitive));
    keys.push_back(std::move(key));
  }
  MTPLX_ASSIGN_OR_RETURN(std::vector<Value> sorted, SortByKeys(std::move(items), keys, reverse));
  return Value::List(std::move(sorted));
}

Result<Value> FilterDictSort(Interpreter& in, const Value& subject, const CallArgs& args) {
  if (!subject.is_dict()) return TypeError("dictsort requires a mapping");
  const bool case_sensitive = BoolArg(args, 0, "case_sensitive", false);
  const Value by = ArgOr(args, 1, "by", Value::String("key"));
  const bool reverse = BoolArg(args, 2, "reverse", false);
  const std::string by_text = ToStr(by).text();
  if (by_text != "key" && by_text != "value") {
    return InvalidArgument("FilterArgumentError: You can only sort by either \"key\" or \"value\"");
  }
  std::vector<Value> pairs;
  std::vector<Value> keys;
  for (const auto& [key, value] : subject.AsDict().entries) {
    pairs.push_back(Value::Tuple({DecodeDictKey(key), value}));
    const Value& sort_on = by_text == "key" ? pairs.back().items()[0] : value;
    keys.push_back(case_sensitive ? sort_on : IgnoreCase(sort_on));
  }
  MTPLX_ASSIGN_OR_RETURN(std::vector<Value> sorted, SortByKeys(std::move(pairs), keys, reverse));
  return Value::List(std::move(sorted));
}

Result<Value> FilterUnique(Interpreter& in, const Value& subject, const CallArgs& args) {
  MTPLX_ASSIGN_OR_RETURN(const std::vector<Value> items, Iterate(subject));
  const bool case_sensitive = BoolArg(args, 0, "case_sensitive", false);
  const Value attribute = ArgOr(args, 1, "attribute", Value::None());
  std::vector<Value> seen;
  std::vector<Value> unique;
  for (const Value& item : items) {
    MTPLX_ASSIGN_OR_RETURN(Value key, SortKey(item, attribute, case_sensitive));
    MTPLX_RETURN_IF_ERROR(in.CountSteps(static_cast<int64_t>(seen.size())));
    const bool known = std::any_of(seen.begin(), seen.end(),
                                   [&](const Value& other) { return Equals(key, other); });
    if (known) continue;
    seen.push_back(std::move(key));
    unique.push_back(item);
  }
  return Value::List(std::move(unique));
}

Result<Value> FilterMax(Interpreter&, const Value& subject, const CallArgs& args) {
  return MinOrMax(subject, args, true);
}

Result<Value> FilterMin(Interpreter&, const Value& subject, const CallArgs& args) {
  return MinOrMax(subject, args, false);
}

Result<Value> FilterSum(Interpreter& in, const Value& subject, const CallArgs& args) {
  MTPLX_ASSIGN_OR_RETURN(const std::vector<Value> items, Iterate(subject));
  const Value attribute = ArgOr(args, 0, "attribute", Value::None());
  Value total = ArgOr(args, 1, "start", Value::Int(0));
  for (const Value& item : items) {
    Value term = item;
    if (!attribute.is_none()) {
      MTPLX_ASSIGN_OR_RETURN(term, LookupAttribute(item, ToStr(attribute).text()));
    }
    if (term.is_string()) return TypeError("unsupported operand type(s) for +: 'int' and 'str'");
    MTPLX_ASSIGN_OR_RETURN(total,
                           EvalBinary(BinaryOp::kAdd, total, term, in.limits().max_output_bytes));
  }
  return total;
}

Result<Value> FilterJoin(Interpreter& in, const Value& subject, const CallArgs& args) {
  MTPLX_ASSIGN_OR_RETURN(const std::vector<Value> items, Iterate(subject));
  const MarkedString separator = ToStr(ArgOr(args, 0, "d", Value::String("")));
  const Value attribute = ArgOr(args, 1, "attribute", Value::None());
  MarkedString out;
  for (size_t i = 0; i < items.size(); ++i) {
    Value item = items[i];
    if (!attribute.is_none()) {
      MTPLX_ASSIGN_OR_RETURN(item, LookupAttribute(item, ToStr(attribute).text()));
    }
    if (i > 0) out.Append(separator);
    out.Append(ToStr(item));
    MTPLX_RETURN_IF_ERROR(in.CheckSize(out.size()));
  }
  return Value::String(std::move(out));
}

Result<Value> FilterFirst(Interpreter&, const Value& subject, const CallArgs& args) {
  MTPLX_ASSIGN_OR_RETURN(const std::vector<Value> items, Iterate(subject));
  if (items.empty()) return Value::Undefined("No first item, sequence was empty.");
  return items.front();
}

Result<Value> FilterLast(Interpreter&, const Value& subject, const CallArgs& args) {
  MTPLX_ASSIGN_OR_RETURN(const std::vector<Value> items, Iterate(subject));
  if (items.empty()) return Value::Undefined("No last item, sequence was empty.");
  return items.back();
}

Result<Value> FilterList(Interpreter&, const Value& subject, const CallArgs& args) {
  MTPLX_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(subject));
  return Value::List(std::move(items));
}

Result<Value> FilterReverse(Interpreter&, const Value& subject, const CallArgs& args) {
  if (subject.is_string()) {
    std::vector<Value> chars = StringChars(subject);
    MarkedString out;
    for (auto it = chars.rbegin(); it != chars.rend(); ++it) out.Append(it->AsString());
    return Value::String(std::move(out));
  }
  Result<std::vector<Value>> items = Iterate(subject);
  if (!items.ok()) return InvalidArgument("FilterArgumentError: argument must be iterable");
  std::reverse(items->begin(), items->end());
  return Value::List(std::move(items).value());
}

Result<Value> FilterItems(Interpreter&, const Value& subject, const CallArgs& args) {
  if (subject.is_undefined()) return Value::List({});
  if (!subject.is_dict()) return TypeError("Can only get item pairs from a mapping.");
  std::vector<Value> pairs;
  for (const auto& [key, value] : subject.AsDict().entries) {
    pairs.push_back(Value::Tuple({DecodeDictKey(key), value}));
  }
  return Value::List(std::move(pairs));
}

Result<Value> FilterBatch(Interpreter&, const Value& subject, const CallArgs& args) {
  MTPLX_ASSIGN_OR_RETURN(const std::vector<Value> items, Iterate(subject));
  const Value count = ArgOr(args, 0, "linecount", Value::Int(0));
  if (!count.is_int() || count.AsInt() <= 0) return TypeError("batch size must be a positive int");
  const Value fill = ArgOr(args, 1, "fill_with", Value::None());
  const size_t size = static_cast<size_t>(count.AsInt());
  std::vector<Value> batches;
  for (size_t i = 0; i < items.size(); i += size) {
    std::vector<Value> batch(items.begin() + i, items.begin() + std::min(items.size(), i + size));
    while (!fill.is_none() && batch.size() < size) batch.push_back(fill);
    batches.push_back(Value::List(std::move(batch)));
  }
  return Value::List(std::move(batches));
}

}  // namespace mtplx::chat::internal
