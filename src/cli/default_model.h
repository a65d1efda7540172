// Where the bundled default model lives.
#pragma once

#include <string>

#include "base/status.h"

namespace mtplx::cli {

// $MTPLX_MODEL, else the model the build prepared, else models/default next to the executable's
// repository.
Result<std::string> DefaultModelDir();

}  // namespace mtplx::cli
