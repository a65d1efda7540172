// mtplx: exact native-MTP speculative decoding for Qwen 3.5 / 3.6 / Qwen3-Next.
#include <cstdio>
#include <map>
#include <string>

#include "cli/commands.h"

namespace mtplx::cli {

int ReportError(const std::string& message) {
  std::fprintf(stderr, "[mtplx] error: %s\n", message.c_str());
  return 1;
}

}  // namespace mtplx::cli

int main(int argc, char** argv) {
  CLI::App app{"mtplx: fast, exact Qwen 3.5 inference with the model's own MTP head"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "mtplx 0.1.0");
  std::map<CLI::App*, mtplx::cli::Runner> runners;
  auto add = [&](mtplx::cli::Runner (*factory)(CLI::App&)) {
    const size_t before = app.get_subcommands({}).size();
    mtplx::cli::Runner runner = factory(app);
    runners[app.get_subcommands({})[before]] = std::move(runner);
  };
  add(mtplx::cli::AddRunCommand);
  add(mtplx::cli::AddChatCommand);
  add(mtplx::cli::AddScoreCommand);
  add(mtplx::cli::AddSynthCommand);
  add(mtplx::cli::AddConvertCommand);
  add(mtplx::cli::AddBenchCommand);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  for (auto& [sub, runner] : runners)
    if (sub->parsed()) return runner();
  return 1;
}
