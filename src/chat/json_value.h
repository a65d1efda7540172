// JSON text to Value and back, keeping object key order (Python dicts preserve it, and templates
// iterate tool arguments in the order the request gave them).
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"
#include "chat/value.h"

namespace mtplx::chat {

// Parses JSON text. With from_user, every string (object keys included) is marked as user input.
// Integers that fit int64 become ints, other numbers floats. Nesting deeper than 512 is refused.
Result<Value> ParseJson(std::string_view text, bool from_user);

// Compact JSON (json.dumps with separators=(",", ":")) of a value; for tests and tools.
Result<std::string> ValueToJson(const Value& value);

}  // namespace mtplx::chat
