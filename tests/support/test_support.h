// Helpers shared by the test suites: locating source/test data and temporary folders.
#pragma once

#include <string>

namespace mtplx::testing {

// The repository root (MTPLX_SOURCE_DIR set by CTest, else the compile-time path).
std::string SourceDir();
// The build directory (MTPLX_BINARY_DIR), where generated checkpoints are cached.
std::string BinaryDir();
// tests/data/<relative>.
std::string TestDataPath(const std::string& relative);
// The bundled trained model pack (models/default in the source tree).
std::string TrainedModelDir();
// A fresh empty directory under the system temp dir, removed at process exit.
std::string MakeTempDir(const std::string& prefix);
// A copy of the bundled pack in a fresh temp dir (MakeTempDir) with the top-level keys of
// `runtime_keys`, a JSON object's text, set in its mtplx_runtime.json; "" on failure.
std::string TrainedModelCopy(const std::string& prefix, const std::string& runtime_keys = "{}");

// The result of running the built `mtplx` binary.
struct CommandOutcome {
  int exit_code = -1;
  std::string output;  // stdout, and stderr too when merged
};

// Runs `<build>/bin/mtplx ARGS` through the shell (ARGS is shell-quoted by the caller).
CommandOutcome RunMtplx(const std::string& args, bool merge_stderr = true);
// The same with environment assignments first ("MTPLX_HOME=/tmp/x").
CommandOutcome RunMtplxWithEnv(const std::string& env, const std::string& args,
                               bool merge_stderr = true);

}  // namespace mtplx::testing
