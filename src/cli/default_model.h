// Where the bundled default model lives.
#pragma once

#include <string>

#include "base/status.h"

namespace mtplx::cli {

// $MTPLX_MODEL, else the pack committed in the repository's models/default, else the synthetic
// model the build prepared, else models/default next to the executable's folder.
Result<std::string> DefaultModelDir();

}  // namespace mtplx::cli
