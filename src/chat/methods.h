// Python methods of str, dict and list that templates call (content.split('</think>'),
// d.items(), ...), looked up by Jinja's getattr and bound to their receiver.
#pragma once

#include <string_view>

#include "base/status.h"
#include "chat/value.h"

namespace mtplx::chat {

using MethodImpl = Result<Value> (*)(const Value& self, const CallArgs& args);

// The implementation of str.NAME, or nullptr.
MethodImpl FindStringMethod(std::string_view name);
// The implementation of dict.NAME / list.NAME, or nullptr. Mutating methods are not listed:
// the sandbox transformers renders in forbids them.
MethodImpl FindDictMethod(std::string_view name);
MethodImpl FindListMethod(std::string_view name);
// Whether NAME is a mutating method of the receiver's type (list.append, dict.update, ...).
bool IsUnsafeMethod(const Value& self, std::string_view name);

// A method bound to its receiver, as a callable value.
Value BindMethod(const Value& self, std::string_view name, MethodImpl impl);

// Checks that a call passed at most `max` positional arguments and only the named keywords.
Status CheckArity(std::string_view function, const CallArgs& args, size_t max,
                  std::initializer_list<std::string_view> keywords = {});

}  // namespace mtplx::chat
