#include "chat/template.h"

namespace mtplx::chat {

Result<Template> Template::Parse(std::string_view source, const ParseLimits& limits) {
  MTPLX_ASSIGN_OR_RETURN(Body body, ParseTemplate(source, limits));
  return Template(std::make_shared<const Body>(std::move(body)));
}

Result<MarkedString> Template::Render(const Value& context, const RenderLimits& limits) const {
  Interpreter interpreter(limits);
  return interpreter.Render(*body_, context);
}

}  // namespace mtplx::chat
