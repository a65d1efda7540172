// Template: a parsed Jinja template that renders a context into marked text.
#pragma once

#include <memory>
#include <string_view>

#include "base/status.h"
#include "chat/ast.h"
#include "chat/interpreter.h"
#include "chat/marked_string.h"
#include "chat/parser.h"
#include "chat/value.h"

namespace mtplx::chat {

class Template {
 public:
  // Syntax errors read "chat template: LINE:COLUMN: syntax error: ...".
  static Result<Template> Parse(std::string_view source, const ParseLimits& limits = {});

  // Renders with the entries of `context` (a dict Value) as variables. Runtime errors read
  // "chat template: LINE:COLUMN: ..."; raise_exception('msg') reads "chat template: L:C: msg".
  // Thread-safe: each call has its own interpreter state.
  Result<MarkedString> Render(const Value& context, const RenderLimits& limits = {}) const;

 private:
  explicit Template(std::shared_ptr<const Body> body) : body_(std::move(body)) {}

  std::shared_ptr<const Body> body_;  // immutable, shared by copies
};

}  // namespace mtplx::chat
