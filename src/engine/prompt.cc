#include "engine/prompt.h"

#include <utility>

namespace mtplx::engine {

std::vector<int32_t> EncodeRendered(const tokenizer::Tokenizer& tokenizer,
                                    const chat::RenderedPrompt& rendered) {
  std::vector<std::pair<size_t, size_t>> spans;
  spans.reserve(rendered.user_spans.size());
  for (const chat::ByteSpan& s : rendered.user_spans) spans.emplace_back(s.begin, s.end);
  return tokenizer.EncodeMarked(rendered.text, spans);
}

Result<std::vector<int32_t>> BuildPrompt(const chat::ChatTemplate& chat_template,
                                         const tokenizer::Tokenizer& tokenizer,
                                         const chat::Conversation& conversation,
                                         const chat::RenderOptions& options) {
  MTPLX_ASSIGN_OR_RETURN(chat::RenderedPrompt rendered,
                         chat_template.Render(conversation, options));
  return EncodeRendered(tokenizer, rendered);
}

}  // namespace mtplx::engine
