// Python semantics of values: str(), repr(), ==, <, len(), iteration, `in`, arithmetic,
// attribute and item lookup (Jinja's sandboxed getattr/getitem) and json.dumps. Errors are
// returned without a source position; the interpreter adds it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "chat/ast.h"
#include "chat/value.h"

namespace mtplx::chat {

// Python's type name: "int", "str", "list", "dict", "NoneType", ...
std::string TypeName(const Value& value);

// str(value). Strings keep their marks; a container's text is marked whole when any string
// inside it came from the user.
MarkedString ToStr(const Value& value);
std::string Repr(const Value& value);

// The error Jinja raises when an undefined value is used ("'x' is undefined").
Status UndefinedError(const Value& value);

bool Equals(const Value& a, const Value& b);
// -1, 0 or 1 for a < b, a == b, a > b; TypeError when Python cannot order the two.
Result<int> Compare(const Value& a, const Value& b);
Result<bool> EvalCompare(CompareOp op, const Value& a, const Value& b);

// len(value); Undefined has length 0 as in Jinja.
Result<size_t> Length(const Value& value);
// list(value): list items, dict keys, string characters; Undefined yields nothing.
Result<std::vector<Value>> Iterate(const Value& value);
// Items of a string as one-character strings (keeping marks).
std::vector<Value> StringChars(const Value& value);

Result<Value> EvalBinary(BinaryOp op, const Value& a, const Value& b, size_t max_size);
Result<Value> EvalUnary(ExprKind kind, const Value& value);

// Jinja's sandboxed environment.getattr (obj.name) and getitem (obj[key]).
Result<Value> GetAttr(const Value& object, std::string_view name);
// Python's getattr alone, without Jinja's fallback to obj[name] (the |attr filter).
Result<Value> GetPythonAttr(const Value& object, std::string_view name);
Result<Value> GetItem(const Value& object, const Value& key);
// obj[start:stop:step]; any bound may be None/undefined.
Result<Value> GetSlice(const Value& object, const Value& start, const Value& stop,
                       const Value& step);

struct JsonOptions {
  bool ensure_ascii = false;
  bool sort_keys = false;
  bool indent_set = false;
  std::string indent;  // per level, when indent_set
  std::string item_separator = ", ";
  std::string key_separator = ": ";
};
// json.dumps(value, ...) as transformers' tojson filter calls it.
Result<std::string> ToJson(const Value& value, const JsonOptions& options);

}  // namespace mtplx::chat
