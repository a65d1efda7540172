// Where the bundled default model lives.
#pragma once

#include <string>

#include "base/status.h"

namespace mtplx::cli {

// $MTPLX_MODEL, else the pack committed in the repository's models/default, else the synthetic
// model the build prepared, else models/default next to the executable's folder.
Result<std::string> DefaultModelDir();

// The folder a `--model` value names (a routed choice is said on stderr):
// - empty: the bundled default model;
// - an existing folder: that folder, always (an explicit folder is never rerouted);
// - ORG/NAME: the model of that name in the caches (`mtplx models`); a name that is not there is
//   an error that suggests `mtplx pull`;
// - anything else is returned as given (loading it names what is missing).
// A model chosen by name (or the default) is rerouted to its FP16 sibling (NAME-FP16 in the
// caches, DIR-fp16 beside a folder; as `mtplx fp16` writes them) when this CPU has no fast bf16
// and the sibling exists (MTPLX_KERNELS=avx2 makes this machine stand for such a CPU).
Result<std::string> ResolveModelDir(const std::string& value);
// A folder as given, or ORG/NAME of a cached model, never rerouted (for commands that read a
// model as their source: convert, fp16).
Result<std::string> FindModelDir(const std::string& value);

}  // namespace mtplx::cli
