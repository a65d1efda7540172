// Jinja's builtin filters and tests, and the globals transformers adds for chat templates.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "chat/value.h"

namespace mtplx::chat {

using FilterFn = Result<Value> (*)(Interpreter& interpreter, const Value& subject,
                                   const CallArgs& args);
using TestFn = Result<bool> (*)(Interpreter& interpreter, const Value& subject,
                                const CallArgs& args);

// nullptr when there is no such filter or test.
FilterFn FindFilter(std::string_view name);
TestFn FindTest(std::string_view name);

// range, dict, namespace, raise_exception and strftime_now.
std::vector<std::pair<std::string, Value>> BuiltinGlobals();

}  // namespace mtplx::chat
