// Writes the synthetic tokenizer.json and tokenizer_config.json into a folder, so that
// make_goldens.py can encode with Hugging Face tokenizers what our C++ code generates.
//
//   tokenizer_write_synthetic OUT_DIR [ADDED_TOKEN_BASE [MAX_MERGES]]
#include <cstdio>
#include <cstdlib>
#include <string>

#include "base/file.h"
#include "tokenizer/synthetic_tokenizer.h"

namespace {

int Run(int argc, char** argv) {
  if (argc < 2 || argc > 4) {
    std::fprintf(stderr, "usage: %s OUT_DIR [ADDED_TOKEN_BASE [MAX_MERGES]]\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  mtplx::tokenizer::SyntheticTokenizerOptions options;
  if (argc > 2) options.added_token_base = std::atoi(argv[2]);
  if (argc > 3) options.max_merges = std::atoi(argv[3]);
  mtplx::Result<std::string> json = mtplx::tokenizer::BuildSyntheticTokenizerJson(options);
  mtplx::Status status = json.ok() ? mtplx::MakeDirectories(dir) : json.status();
  if (status.ok()) status = mtplx::WriteTextFile(dir + "/tokenizer.json", *json);
  if (status.ok()) {
    status = mtplx::WriteTextFile(dir + "/tokenizer_config.json",
                                  mtplx::tokenizer::BuildSyntheticTokenizerConfigJson(options));
  }
  if (!status.ok()) {
    std::fprintf(stderr, "%s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return Run(argc, argv); }
