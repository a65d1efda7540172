// `mtplx run "PROMPT"`: renders the prompt with the model's chat template, streams the answer,
// prints a stats line (or one JSON object with --json).
#include <cstdio>
#include <iostream>
#include <iterator>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/interrupt.h"
#include "cli/session.h"
#include "tokenizer/utf8.h"

namespace mtplx::cli {
namespace {

struct RunOptions {
  std::string prompt;
  bool json = false;
  bool raw = false;
  GenerationFlags flags;
};

int RunGenerate(RunOptions o) {
  if (o.prompt == "-")
    o.prompt.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  if (o.prompt.find_first_not_of(" \t\r\n") == std::string::npos)
    return ReportError("the prompt is empty");
  if (!tokenizer::IsValidUtf8(o.prompt) || !tokenizer::IsValidUtf8(o.flags.system))
    return ReportError("the prompt is not valid UTF-8 text");
  const bool chatty = !o.flags.quiet && !o.json;
  auto session = Session::Open(o.flags, chatty);
  if (!session.ok()) return ReportError(session.status().message());
  Session& s = **session;
  InstallInterruptHandlers();
  s.SetInterruptFlag(InterruptFlag());
  if (!s.tuned_notice().empty() && chatty)
    std::fprintf(stderr, "[mtplx] %s\n", s.tuned_notice().c_str());
  if (!s.notice().empty() && chatty) std::fprintf(stderr, "[mtplx] %s\n", s.notice().c_str());

  chat::Conversation conversation;
  if (!o.flags.system.empty())
    conversation.messages.push_back(TextMessage("system", o.flags.system));
  conversation.messages.push_back(TextMessage("user", o.prompt));
  auto stream = [&](std::string_view text) {
    if (o.json) return;
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  };
  auto turn = o.raw ? s.Complete(o.prompt, stream) : s.Reply(conversation, stream);
  if (!turn.ok()) return ReportError(turn.status().message());
  // Ctrl-C / SIGTERM: the reply so far is printed as usual, and the exit code says why it ended.
  const int exit_code = turn->finish_reason == "interrupted" ? 128 + InterruptSignal() : 0;
  if (o.json) {
    nlohmann::json out = {{"text", turn->text},
                          {"token_ids", turn->tokens},
                          {"finish_reason", turn->finish_reason},
                          {"model", s.model().dir()},
                          {"stats", TurnStatsJson(*turn, s.model())}};
    if (!s.notice().empty()) out["notice"] = s.notice();
    std::printf("%s\n", out.dump().c_str());
    return exit_code;
  }
  std::printf("\n");
  std::fflush(stdout);
  if (!o.flags.quiet || exit_code != 0) std::fprintf(stderr, "%s\n", StatsLine(*turn).c_str());
  return exit_code;
}

}  // namespace

Runner AddRunCommand(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand("run", "Generate a reply to a prompt (\"-\" reads stdin)");
  cmd->add_option("prompt", o->prompt, "The prompt, or - for stdin")->required();
  cmd->add_flag("--json", o->json, "Print one JSON object instead of streaming");
  CLI::Option* raw =
      cmd->add_flag("--raw", o->raw, "Continue the prompt text as is, without the chat template");
  AddGenerationFlags(cmd, o->flags);
  // The system prompt and the reasoning switch live in the chat template, which --raw skips:
  // refuse them rather than drop them silently.
  for (const char* templated : {"--system", "--think"}) raw->excludes(cmd->get_option(templated));
  return [o] { return RunGenerate(*o); };
}

}  // namespace mtplx::cli
