// mtplx: exact native-MTP speculative decoding for Qwen 3.5 / 3.6 / Qwen3-Next.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "base/strings.h"
#include "cli/commands.h"

namespace mtplx::cli {

int ReportError(const std::string& message) {
  std::fprintf(stderr, "[mtplx] error: %s\n", message.c_str());
  return 1;
}

const CLI::Validator& FiniteNumber() {
  static const CLI::Validator validator(
      [](std::string& text) -> std::string {
        char* end = nullptr;
        const double value = std::strtod(text.c_str(), &end);
        if (end != text.c_str() && !std::isfinite(value))
          return "'" + text + "' is not a finite number";
        return "";
      },
      "FINITE");
  return validator;
}

namespace {

// A validator that refuses numbers outside [least, most] with `what` as the reason;
// text that is no number passes, for the option's own conversion to refuse.
CLI::Validator NumberWithin(double least, double most, const std::string& what,
                            const std::string& name) {
  return CLI::Validator(
      [least, most, what](std::string& text) -> std::string {
        char* end = nullptr;
        const double value = std::strtod(text.c_str(), &end);
        if (end == text.c_str() || *end != '\0') return "";
        if (value < least || value > most) return StrCat(what, " (got ", text, ")");
        return "";
      },
      name);
}

}  // namespace

const CLI::Validator& AtLeastOne() {
  static const CLI::Validator validator =
      NumberWithin(1, HUGE_VAL, "must be at least 1", "POSITIVE");
  return validator;
}

const CLI::Validator& NotNegative() {
  static const CLI::Validator validator =
      NumberWithin(0, HUGE_VAL, "must not be negative", "NONNEGATIVE");
  return validator;
}

const CLI::Validator& ThreadCount() {
  static const CLI::Validator validator =
      NumberWithin(0, kMaxThreads, StrCat("must be 0 (one per core) to ", kMaxThreads), "THREADS");
  return validator;
}

namespace {

// Levenshtein distance, for "did you mean".
size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1] ? 1 : 0)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The message for a first argument that names no command, with the closest command when one is
// near enough to be a typo.
std::string UnknownCommandMessage(const std::string& word, const std::vector<std::string>& names) {
  std::string best;
  size_t best_distance = 3;  // at most two edits away
  for (const auto& name : names) {
    const size_t d = EditDistance(word, name);
    const bool prefix = name.rfind(word, 0) == 0 && word.size() >= 2;
    if (d < best_distance || (prefix && best.empty())) {
      best = name;
      best_distance = prefix ? 0 : d;
    }
  }
  std::string message = "unknown command '" + word + "'";
  if (!best.empty()) return message + " — did you mean '" + best + "'?";
  return message + "; the commands are: " + StrJoin(names, ", ") + " (mtplx --help)";
}

}  // namespace
}  // namespace mtplx::cli

int main(int argc, char** argv) {
  CLI::App app{"mtplx: fast, exact Qwen 3.5 inference with the model's own MTP head"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "mtplx 0.1.0");
  std::map<CLI::App*, mtplx::cli::Runner> runners;
  std::vector<std::string> names;
  auto add = [&](mtplx::cli::Runner (*factory)(CLI::App&)) {
    const size_t before = app.get_subcommands({}).size();
    mtplx::cli::Runner runner = factory(app);
    CLI::App* sub = app.get_subcommands({})[before];
    names.push_back(sub->get_name());
    runners[sub] = std::move(runner);
  };
  add(mtplx::cli::AddRunCommand);
  add(mtplx::cli::AddChatCommand);
  add(mtplx::cli::AddScoreCommand);
  add(mtplx::cli::AddSynthCommand);
  add(mtplx::cli::AddConvertCommand);
  add(mtplx::cli::AddFp16Command);
  add(mtplx::cli::AddBenchCommand);
  add(mtplx::cli::AddTuneCommand);
  add(mtplx::cli::AddTokenizeCommand);
  add(mtplx::cli::AddHardwareCommand);
  add(mtplx::cli::AddInspectCommand);
  add(mtplx::cli::AddModelsCommand);
  add(mtplx::cli::AddRemoveCommand);
#ifdef MTPLX_WITH_PULL
  add(mtplx::cli::AddPullCommand);
#endif
#ifdef MTPLX_WITH_SERVER
  add(mtplx::cli::AddServeCommand);
  add(mtplx::cli::AddStartCommand);
  add(mtplx::cli::AddConnectCommand);
#endif
  if (argc < 2) {
    std::fprintf(stderr, "%s", app.help().c_str());
    return 1;
  }
  const std::string first = argv[1];
  if (!first.empty() && first[0] != '-') {
    bool known = false;
    for (const auto& name : names) known = known || name == first;
    if (!known) return mtplx::cli::ReportError(mtplx::cli::UnknownCommandMessage(first, names));
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  for (auto& [sub, runner] : runners)
    if (sub->parsed()) return runner();
  return 1;
}
