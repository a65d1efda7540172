// What the server exposes about itself: GET /metrics (Prometheus text format 0.0.4) and
// GET /v1/mtplx/stats (the same numbers as JSON, which the dashboard polls).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/engine.h"

namespace mtplx::server {

struct ServerCounters;

// Everything both views are built from, read at one moment.
struct MetricsSnapshot {
  engine::EngineMetrics engine;
  engine::EngineStatus status;
  engine::MemoryPlan plan;
  int parallel = 1;
  int depth = 0;  // the engine's MTP depth (0: plain decoding)
  int64_t http_requests = 0, client_errors = 0, server_errors = 0, disconnects = 0;
};

MetricsSnapshot TakeSnapshot(const engine::Engine& engine, const ServerCounters& counters);

std::string PrometheusText(const MetricsSnapshot& s);

nlohmann::json StatsJson(const MetricsSnapshot& s);

}  // namespace mtplx::server
