// `mtplx serve`: the OpenAI- and Anthropic-compatible HTTP server on one loaded model.
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include "base/file.h"
#include "base/process_stats.h"
#include "base/strings.h"
#include "cli/commands.h"
#include "cli/default_model.h"
#include "cli/interrupt.h"
#include "cli/session.h"
#include "cli/tuning.h"
#include "io/runtime_contract.h"
#include "pack/runtime_manifest.h"
#include "server/server.h"

namespace mtplx::cli {
namespace {

struct ServeFlags {
  std::string model_dir;
  std::string host = "127.0.0.1";
  int port = 8000;
  std::string model_id;
  std::string api_key, api_key_file;
  int64_t context_window = 0;
  int depth = 0;
  bool no_mtp = false;
  double temperature = -1, top_p = -1;
  int top_k = -1;
  int64_t max_tokens = 0;
  int64_t seed = -1;  // -1: a fresh random seed for each request that sets none
  int threads = 0;
  int max_queue = 16;
  int parallel = 4;
  double drain_seconds = 30;
  int max_step_rows = 16;
  std::string kv_cache = GenerationFlags().kv_cache;
  std::string cache_dir;
  std::string cache_dir_size = "8G";
  std::string memory_budget;  // "" : automatic
  double cache_mib = -1;      // -1: automatic
  double max_body_mib = 32;
  int read_timeout = 30;
  std::vector<std::string> cors_origins;
  bool quiet = false;
};

// A quarter of the memory available now, at most 2 GiB: room for many agent conversations
// without crowding out the weights or the system.
uint64_t AutomaticCacheBytes() {
  const uint64_t available = AvailableMemoryBytes();
  const uint64_t cap = uint64_t{2} << 30;
  return available == 0 ? cap / 4 : std::min(cap, available / 4);
}

Result<std::string> ReadApiKey(const ServeFlags& f) {
  if (f.api_key_file.empty()) return f.api_key;
  MTPLX_ASSIGN_OR_RETURN(std::string key, ReadTextFile(f.api_key_file));
  while (!key.empty() && (key.back() == '\n' || key.back() == '\r' || key.back() == ' '))
    key.pop_back();
  if (key.empty()) return InvalidArgument(f.api_key_file + ": the API key file is empty");
  return key;
}

std::string FolderName(const std::string& dir) {
  std::string name = dir;
  while (name.size() > 1 && name.back() == '/') name.pop_back();
  const size_t slash = name.rfind('/');
  return slash == std::string::npos ? name : name.substr(slash + 1);
}

void PrintBanner(const engine::Engine& engine, const server::ServerOptions& o, int port) {
  const std::string base = StrFormat("http://%s:%d", o.host.c_str(), port);
  const engine::MemoryPlan plan = engine.memory_plan();
  std::printf("mtplx is ready.\n");
  std::printf("  OpenAI API base URL:    %s/v1\n", base.c_str());
  std::printf("  Anthropic API base URL: %s\n", base.c_str());
  std::printf("  Model: %s (%s)\n", o.defaults.model_id.c_str(), engine.model().dir().c_str());
  const int parallel = engine.options().parallel;
  const uint64_t committed = plan.base_bytes + parallel * plan.request_bytes;
  std::printf(
      "  Memory: budget %s; model %s loaded; each request ~%s (short prompt, %lld new tokens; "
      "%s a token of context); %d at once %s; prefix cache up to %s; context window %lld\n",
      HumanBytes(plan.budget_bytes).c_str(), HumanBytes(plan.base_bytes).c_str(),
      HumanBytes(plan.request_bytes).c_str(), static_cast<long long>(engine::kDecodeReserveTokens),
      HumanBytes(plan.kv_bytes_per_token).c_str(), parallel,
      committed <= plan.budget_bytes
          ? ("leave " + HumanBytes(plan.budget_bytes - committed) + " headroom").c_str()
          : "do not all fit: longer requests get HTTP 507",
      HumanBytes(plan.cache_budget_bytes).c_str(), static_cast<long long>(plan.context_window));
  if (engine.depth() > 0)
    std::printf("  MTP: on, depth %d%s\n", engine.depth(),
                engine.notice().empty() ? "" : (" (" + engine.notice() + ")").c_str());
  else
    std::printf("  MTP: off%s%s\n", engine.notice().empty() ? "" : " (",
                engine.notice().empty() ? "" : (engine.notice() + ")").c_str());
  std::printf("  Concurrency: %d requests batched, %d more may wait\n", engine.options().parallel,
              engine.options().max_queue);
  std::printf("  API key: %s\n", o.api_keys.empty() ? "not required (loopback only)"
                                                    : "required (Bearer or x-api-key)");
  std::printf("  Health: %s/health\n", base.c_str());
  std::printf("Press Ctrl-C to stop.\n");
  std::fflush(stdout);
}

// Stops taking new generation requests and waits, up to `seconds`, for the running and queued
// ones to finish; a second signal ends the wait (what is left is cancelled as the engine closes).
void Drain(server::Server& server, const engine::Engine& engine, double seconds) {
  server.BeginDrain();
  engine::EngineStatus s = engine.status();
  if (s.running == 0 && s.queued == 0) return;
  std::fprintf(stderr,
               "[mtplx] draining: %d running, %lld waiting; finishing them (up to %.0f s; Ctrl-C "
               "again stops now)\n",
               s.running, static_cast<long long>(s.queued), seconds);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (InterruptCount() < 2 && std::chrono::steady_clock::now() < deadline) {
    s = engine.status();
    if (s.running == 0 && s.queued == 0) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  s = engine.status();
  if (s.running > 0 || s.queued > 0)
    std::fprintf(stderr, "[mtplx] drain ended: cancelling %d running, %lld waiting\n", s.running,
                 static_cast<long long>(s.queued));
}

int RunServe(const ServeFlags& f) {
  engine::EngineOptions options;
  auto model = ResolveModelDir(f.model_dir);
  if (!model.ok()) return ReportError(model.status().message());
  options.model_dir = *model;
  auto key = ReadApiKey(f);
  if (!key.ok()) return ReportError(key.status().message());
  server::ServerOptions s;
  s.host = f.host;
  s.port = f.port;
  if (!key->empty()) s.api_keys.push_back(*key);
  s.cors_origins = f.cors_origins;
  s.max_body_bytes = static_cast<size_t>(f.max_body_mib * 1024 * 1024);
  s.read_timeout_seconds = f.read_timeout;
  if (!server::IsLoopbackHost(s.host) && s.api_keys.empty())
    return ReportError("refusing to listen on " + s.host +
                       " without an API key; pass --api-key or --api-key-file, or bind "
                       "127.0.0.1");
  options.load.threads = f.threads;
  options.load.show_progress = !f.quiet;
  options.no_mtp = f.no_mtp;
  options.depth = f.depth;
  options.adaptive_depth = f.depth == 0;  // --depth pins it
  options.context_window = f.context_window;
  options.max_queue = f.max_queue;
  options.parallel = f.parallel;
  options.max_step_rows = f.max_step_rows;
  options.load.kv_type = KvTypeFromFlag(f.kv_cache);
  options.cache_dir = f.cache_dir;
  options.engine_version = pack::MtplxVersion();
  if (!ParseByteSize(f.cache_dir_size, &options.cache_dir_bytes))
    return ReportError("--cache-dir-size: '" + f.cache_dir_size + "' is not a size (e.g. 8G)");
  if (!f.memory_budget.empty() && !ParseByteSize(f.memory_budget, &options.memory_budget))
    return ReportError("--memory-budget: '" + f.memory_budget +
                       "' is not a size (examples: 8G, 1536M, 0.5GiB)");
  options.cache_bytes =
      f.cache_mib < 0 ? AutomaticCacheBytes() : static_cast<uint64_t>(f.cache_mib * 1024 * 1024);
  const std::string tuned = ApplyTunedDepth(options, /*apply_threads=*/false);
  if (!tuned.empty() && !f.quiet) std::fprintf(stderr, "[mtplx] %s\n", tuned.c_str());
  ApplyKnownMtpCheck(options);
  auto engine = engine::Engine::Open(options);
  if (!engine.ok()) return ReportError(engine.status().message());
  RememberMtpCheck(**engine);
  // The id clients see: --model-id, else the pack's served_model_id, else its folder's name.
  const auto& contract = (*engine)->model().contract();
  s.defaults.model_id = !f.model_id.empty()                     ? f.model_id
                        : contract && contract->served_model_id ? *contract->served_model_id
                                                                : FolderName(options.model_dir);
  if (f.temperature >= 0) s.defaults.temperature = f.temperature;
  if (f.top_p >= 0) s.defaults.top_p = f.top_p;
  if (f.top_k >= 0) s.defaults.top_k = f.top_k;
  s.defaults.max_tokens_cap = f.max_tokens;
  if (f.seed >= 0) s.defaults.seed = f.seed;
  api::DetectTemplateTraits(**engine, s.defaults);

  server::Server server(**engine, s);
  if (Status bound = server.Bind(); !bound.ok()) return ReportError(bound.message());
  PrintBanner(**engine, s, server.port());
  // Ctrl-C / SIGTERM raise a flag; a watcher thread drains and stops the server (not
  // signal-safe itself).
  InstallInterruptHandlers();
  const engine::Engine& e = **engine;
  std::thread watcher([&server, &e, &f] {
    while (!Interrupted()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (!server.draining()) Drain(server, e, f.drain_seconds);
    server.Stop();
  });
  const Status ran = server.Run();
  if (!Interrupted()) InterruptFlag()->store(true);  // stopped on its own: release the watcher
  watcher.join();
  std::fprintf(stderr, "[mtplx] server stopped\n");
  if (!ran.ok()) return ReportError(ran.message());
  return 0;
}

}  // namespace

Runner AddServeCommand(CLI::App& app) {
  auto f = std::make_shared<ServeFlags>();
  CLI::App* cmd =
      app.add_subcommand("serve", "Serve the OpenAI and Anthropic APIs for coding agents");
  cmd->add_option("--model", f->model_dir, "Model folder (default: the bundled model)");
  cmd->add_option("--host", f->host, "Address to listen on (default 127.0.0.1)");
  cmd->add_option("--port", f->port, "Port (default 8000; 0 = any free port)")
      ->check(CLI::Range(0, 65535));
  cmd->add_option("--model-id", f->model_id,
                  "Model id /v1/models lists (default: the model folder's name); any name a "
                  "client sends is served by this model");
  auto* key = cmd->add_option("--api-key", f->api_key, "Key clients must send");
  cmd->add_option("--api-key-file", f->api_key_file, "Read the key from this file")->excludes(key);
  cmd->add_option("--context-window", f->context_window,
                  "Longest prompt + reply served (default: the model's)")
      ->check(CLI::Range(int64_t{2}, int64_t{1} << 24));
  auto* depth =
      cmd->add_option("--depth", f->depth,
                      StrCat("MTP draft depth (1-", io::kMaxMtpDepth,
                             ", capped at the pack's mtp_depth_max; default: the pack's)"))
          ->check(CLI::Range(1, io::kMaxMtpDepth));
  cmd->add_flag("--no-mtp", f->no_mtp, "Plain decoding")->excludes(depth);
  cmd->add_option("--default-temperature", f->temperature,
                  "Temperature when a request sets none (default: the pack's)")
      ->check(FiniteNumber())
      ->check(CLI::Range(0.0, 2.0));
  cmd->add_option("--default-top-p", f->top_p, "Top-p when a request sets none")
      ->check(FiniteNumber())
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--default-top-k", f->top_k, "Top-k when a request sets none")
      ->check(NotNegative());
  cmd->add_option("--max-tokens", f->max_tokens, "Most tokens any reply may have (0: no cap)")
      ->check(NotNegative());
  cmd->add_option("--seed", f->seed,
                  "Sampling seed of requests that set none (default: a fresh random one each)")
      ->check(NotNegative());
  cmd->add_option("--threads", f->threads, "Worker threads (0 = all cores)")->check(ThreadCount());
  AddKvCacheFlag(cmd, f->kv_cache);
  cmd->add_option("--parallel", f->parallel,
                  "Requests decoded at once, batched into every forward (default 4)")
      ->check(CLI::Range(1, 256));
  cmd->add_option("--memory-budget", f->memory_budget,
                  "Memory the server may use, e.g. 8G (default: what is free at start, within "
                  "the cgroup limit); requests that cannot fit get HTTP 507");
  cmd->add_option("--max-step-rows", f->max_step_rows,
                  "Verify rows per step before greedy (and unseeded) requests stop drafting "
                  "(default 16; 0 = no limit)")
      ->check(CLI::Range(0, 4096));
  cmd->add_option("--drain-seconds", f->drain_seconds,
                  "On SIGTERM or Ctrl-C, how long running requests may take to finish while new "
                  "ones get 503 (default 30; a second signal stops at once)")
      ->check(FiniteNumber())
      ->check(CLI::Range(0.0, 86400.0));
  cmd->add_option("--max-queue", f->max_queue,
                  "Requests that may wait while --parallel run; more get HTTP 503 (default 16)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--cache-mib", f->cache_mib,
                  "Prefix cache budget in MiB (default: a quarter of free memory, at most 2 "
                  "GiB; 0 = off)")
      ->check(FiniteNumber())
      ->check(CLI::Range(0.0, 1e9));
  cmd->add_option("--cache-dir", f->cache_dir,
                  "Also keep the prefix cache in this directory: conversations survive a restart "
                  "(default: memory only)");
  cmd->add_option("--cache-dir-size", f->cache_dir_size,
                  "Most the cache directory may hold (default 8G; least recently used go first)");
  cmd->add_option("--max-body-mib", f->max_body_mib, "Largest request body in MiB (default 32)")
      ->check(FiniteNumber())
      ->check(CLI::Range(0.01, 4096.0));
  cmd->add_option("--read-timeout", f->read_timeout,
                  "Seconds a client may stay silent while sending a request (default 30)")
      ->check(CLI::Range(1, 3600));
  cmd->add_option("--cors-origin", f->cors_origins,
                  "Allow browsers from this origin (repeatable; * = any); default: none");
  cmd->add_flag("--quiet", f->quiet, "No progress bar");
  return [f] { return RunServe(*f); };
}

}  // namespace mtplx::cli
