// `mtplx tokenize`: the ids and pieces a model's tokenizer gives for a text, to debug prompts and
// templates; `--jsonl` tokenizes {"text": ...} lines from stdin in bulk.
#include <cstdio>
#include <iostream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "base/file.h"
#include "cli/commands.h"
#include "cli/default_model.h"
#include "tokenizer/tokenizer.h"

namespace mtplx::cli {
namespace {

struct TokenizeFlags {
  std::string text;
  std::string model_dir;
  std::string tokenizer_file;
  bool json = false;
  bool jsonl = false;
  bool no_special = false;
};

Result<tokenizer::Tokenizer> LoadTokenizer(const TokenizeFlags& f) {
  std::string path = f.tokenizer_file;
  if (path.empty()) {
    MTPLX_ASSIGN_OR_RETURN(const std::string dir, ResolveModelDir(f.model_dir));
    path = JoinPath(dir, "tokenizer.json");
  }
  if (!FileExists(path))
    return NotFound(path + " does not exist (pass --model DIR or --tokenizer FILE)");
  return tokenizer::Tokenizer::FromJsonFile(path);
}

// A token's text for people: the bytes it decodes to, escaped when not printable.
std::string Shown(const tokenizer::Tokenizer& tok, int32_t id) {
  return nlohmann::json(tok.Decode(std::vector<int32_t>{id}))
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// {"text": ...} lines in, {"ids": [...]} lines out; a bad line gets {"error": ...}.
int RunJsonl(const tokenizer::Tokenizer& tok, bool special) {
  std::string line;
  int bad = 0;
  while (std::getline(std::cin, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const nlohmann::json in = nlohmann::json::parse(line, nullptr, false);
    nlohmann::json out;
    if (!in.is_object() || !in.contains("text") || !in["text"].is_string()) {
      out = {{"error", "each line must be a JSON object with a string \"text\""}};
      ++bad;
    } else {
      out = {{"ids", tok.Encode(in["text"].get<std::string>(), special)}};
    }
    std::printf("%s\n", out.dump().c_str());
  }
  return bad ? 1 : 0;
}

int RunTokenize(TokenizeFlags f) {
  auto tok = LoadTokenizer(f);
  if (!tok.ok()) return ReportError(tok.status().message());
  const bool special = !f.no_special;
  if (f.jsonl) return RunJsonl(*tok, special);
  if (f.text.empty() || f.text == "-")
    f.text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  const std::vector<int32_t> ids = tok->Encode(f.text, special);
  if (f.json) {
    nlohmann::json pieces = nlohmann::json::array();
    for (int32_t id : ids) pieces.push_back(tok->Decode(std::vector<int32_t>{id}));
    std::printf("%s\n", nlohmann::json({{"ids", ids}, {"pieces", pieces}, {"count", ids.size()}})
                            .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
                            .c_str());
    return 0;
  }
  for (int32_t id : ids) std::printf("%8d  %s\n", id, Shown(*tok, id).c_str());
  std::printf("%zu tokens\n", ids.size());
  return 0;
}

}  // namespace

Runner AddTokenizeCommand(CLI::App& app) {
  auto f = std::make_shared<TokenizeFlags>();
  CLI::App* cmd = app.add_subcommand("tokenize", "Print the token ids and pieces of a text");
  cmd->add_option("text", f->text, "The text (default or -: stdin)");
  auto* model =
      cmd->add_option("--model", f->model_dir, "Model folder (default: the bundled model)");
  cmd->add_option("--tokenizer", f->tokenizer_file, "A tokenizer.json file")->excludes(model);
  auto* json = cmd->add_flag("--json", f->json, "One JSON object: ids, pieces, count");
  cmd->add_flag("--jsonl", f->jsonl,
                "Read {\"text\": ...} lines from stdin, write {\"ids\": [...]} lines")
      ->excludes(json);
  cmd->add_flag("--no-special", f->no_special,
                "Special-token text (<|im_start|>) stays plain text instead of its id");
  return [f] { return RunTokenize(*f); };
}

}  // namespace mtplx::cli
