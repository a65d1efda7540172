// The built-in training text of the synthetic tokenizer: English prose, Python code and a few
// lines of other scripts, written for this project.
#pragma once

#include <string_view>

namespace mtplx::tokenizer {

std::string_view SyntheticTrainingCorpus();

}  // namespace mtplx::tokenizer
