// The mtplx subcommands. Each registers its flags on a CLI11 app and returns a runner that
// yields the process exit code.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace mtplx::cli {

using Runner = std::function<int()>;

Runner AddSynthCommand(CLI::App& app);
Runner AddConvertCommand(CLI::App& app);
Runner AddScoreCommand(CLI::App& app);
Runner AddRunCommand(CLI::App& app);
Runner AddChatCommand(CLI::App& app);
Runner AddBenchCommand(CLI::App& app);
Runner AddTokenizeCommand(CLI::App& app);
Runner AddTuneCommand(CLI::App& app);
Runner AddHardwareCommand(CLI::App& app);
Runner AddInspectCommand(CLI::App& app);
Runner AddModelsCommand(CLI::App& app);
Runner AddRemoveCommand(CLI::App& app);
Runner AddFp16Command(CLI::App& app);
// Builds with libcurl only.
Runner AddPullCommand(CLI::App& app);
// These build with the HTTP server only.
Runner AddServeCommand(CLI::App& app);
Runner AddStartCommand(CLI::App& app);
Runner AddConnectCommand(CLI::App& app);

// Rejects NaN and infinities (which CLI11's Range lets through): put it on every floating-point
// flag, before its range check.
const CLI::Validator& FiniteNumber();

// Counts that must be at least 1 / must not be negative, said in words (CLI11's PositiveNumber
// prints its range as 0 to 1.8e308).
const CLI::Validator& AtLeastOne();
const CLI::Validator& NotNegative();
// --threads: 0 (one per core) to kMaxThreads; a slip of the finger must not start 100,000 threads.
inline constexpr int kMaxThreads = 1024;
const CLI::Validator& ThreadCount();

// Prints "[mtplx] error: ..." to stderr and returns the exit code for failures.
int ReportError(const std::string& message);

}  // namespace mtplx::cli
