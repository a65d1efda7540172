// From a conversation to prompt token ids: render the model's chat template, then encode with
// added tokens recognised only in template text, never inside user-provided content.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "chat/chat_template.h"
#include "chat/conversation.h"
#include "tokenizer/tokenizer.h"

namespace mtplx::engine {

Result<std::vector<int32_t>> BuildPrompt(const chat::ChatTemplate& chat_template,
                                         const tokenizer::Tokenizer& tokenizer,
                                         const chat::Conversation& conversation,
                                         const chat::RenderOptions& options);

// The ids of a rendered prompt (exposed for tests).
std::vector<int32_t> EncodeRendered(const tokenizer::Tokenizer& tokenizer,
                                    const chat::RenderedPrompt& rendered);

}  // namespace mtplx::engine
