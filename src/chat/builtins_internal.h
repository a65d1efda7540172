// Helpers and filter implementations shared by the builtin filter files. Internal to the chat
// library.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "chat/builtins.h"
#include "chat/interpreter.h"
#include "chat/value.h"

namespace mtplx::chat::internal {

// Argument helpers: the positional argument at `index` or keyword `name`, else the fallback.
Value ArgOr(const CallArgs& args, size_t index, std::string_view name, Value fallback);
bool BoolArg(const CallArgs& args, size_t index, std::string_view name, bool fallback);
Status TypeError(const std::string& message);

// Jinja's make_attrgetter: "a.b.0" looked up item-first; `fallback` replaces an undefined result
// when it is set.
Result<Value> LookupAttribute(const Value& item, std::string_view path,
                              const std::optional<Value>& fallback = std::nullopt);

// Sequence filters (filters_seq.cc).
Result<Value> FilterMap(Interpreter& in, const Value& subject, const CallArgs& args);
Result<Value> FilterSelect(Interpreter& in, const Value& subject, const CallArgs& args);
Result<Value> FilterReject(Interpreter& in, const Value& subject, const CallArgs& args);
Result<Value> FilterSelectAttr(Interpreter& in, const Value& subject, const CallArgs& args);
Result<Value> FilterRejectAttr(Interpreter& in, const Value& subject, const CallArgs& args);
Result<Value> FilterSort(Interpreter& in, const Value& subject, const CallArgs& args);
Result<Value> FilterDictSort(Interpreter& in, const Value& subject, const CallArgs& args);
Result<Value> FilterUnique(Interpreter& in, const Value& subject, const CallArgs& args);
Result<Value> FilterMax(Interpreter& in, const Value& subject, const CallArgs& args);
Result<Value> FilterMin(Interpreter& in, const Value& subject, const CallArgs& args);
Result<Value> FilterSum(Interpreter& in, const Value& subject, const CallArgs& args);
Result<Value> FilterJoin(Interpreter& in, const Value& subject, const CallArgs& args);
Result<Value> FilterFirst(Interpreter& in, const Value& subject, const CallArgs& args);
Result<Value> FilterLast(Interpreter& in, const Value& subject, const CallArgs& args);
Result<Value> FilterList(Interpreter& in, const Value& subject, const CallArgs& args);
Result<Value> FilterReverse(Interpreter& in, const Value& subject, const CallArgs& args);
Result<Value> FilterItems(Interpreter& in, const Value& subject, const CallArgs& args);
Result<Value> FilterBatch(Interpreter& in, const Value& subject, const CallArgs& args);

}  // namespace mtplx::chat::internal
