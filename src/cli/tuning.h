// Applying `mtplx tune`'s stored result: run, chat, serve and start use the tuned draft depth
// for this model, CPU and thread count unless --depth or --no-mtp says otherwise.
#pragma once

#include <string>

#include "base/status.h"
#include "engine/engine.h"
#include "io/tuning_store.h"

namespace mtplx::cli {

// Worker threads as the engine resolves them (0: one per core).
int ResolvedThreads(int threads);

Result<io::TuningKey> TuningKeyFor(const std::string& model_dir, int threads);

// When options pin no depth and speculation is on: the tuned depth (0: plain decoding) put into
// `options`, and a line saying so; "" when nothing is stored for this machine. With
// apply_threads, a run that leaves the thread count to the machine also gets tune's count (one
// stream; a server batching many keeps every core: its rows are arithmetic more cores speed up).
std::string ApplyTunedDepth(engine::EngineOptions& options, bool apply_threads);

// The MTP load check measured once per model, draft-head setup and engine version: puts a stored
// acceptance into `options` (the engine then skips the probe run) ...
void ApplyKnownMtpCheck(engine::EngineOptions& options);
// ... and stores the one an engine measured while opening.
void RememberMtpCheck(const engine::Engine& engine);

}  // namespace mtplx::cli
