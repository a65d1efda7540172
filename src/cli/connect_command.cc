// `mtplx connect TARGET`: the exact configuration a client needs for the running server (Claude
// Code, OpenCode, Open WebUI, aider); for OpenCode it can write it into the config file, keeping
// everything else there.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "base/file.h"
#include "base/strings.h"
#include "cli/commands.h"
#include "server/client.h"

namespace mtplx::cli {
namespace {

using Json = nlohmann::json;
namespace fs = std::filesystem;

struct ConnectFlags {
  std::string target;
  server::Endpoint endpoint;
  std::string api_key_env = "MTPLX_API_KEY";
  bool write = false;
  bool json = false;
};

// What the server says it serves; defaults (with a warning) when nothing answers.
struct Served {
  std::string model_id = "default";
  int64_t context = 32768;
  bool key_required = false;
  std::string warning;
};

Served Query(const server::Endpoint& endpoint) {
  Served s;
  auto health = server::GetJson(endpoint, "/health");
  if (!health.ok()) {
    s.warning = health.status().message() + "; start one with `mtplx serve` or `mtplx start`";
    return s;
  }
  // Another program may answer on the port: read only what has the expected types.
  const Json& h = *health;
  if (h.is_object()) {
    if (h.contains("model") && h["model"].is_string()) s.model_id = h["model"];
    if (h.contains("context_window") && h["context_window"].is_number_integer())
      s.context = h["context_window"];
    if (h.contains("api_key_required") && h["api_key_required"].is_boolean())
      s.key_required = h["api_key_required"];
  }
  return s;
}

std::string OpenCodeConfigPath() {
  const char* xdg = std::getenv("XDG_CONFIG_HOME");
  const char* home = std::getenv("HOME");
  const std::string base = xdg && *xdg ? xdg : JoinPath(home ? home : ".", ".config");
  return JoinPath(JoinPath(base, "opencode"), "opencode.json");
}

Json OpenCodeProvider(const ConnectFlags& f, const Served& s) {
  Json options = {{"baseURL", f.endpoint.BaseUrl() + "/v1"}};
  if (s.key_required) options["apiKey"] = "{env:" + f.api_key_env + "}";
  return {{"npm", "@ai-sdk/openai-compatible"},
          {"name", "mtplx (local)"},
          {"options", options},
          {"models",
           {{s.model_id,
             {{"name", s.model_id + " (mtplx)"},
              {"limit", {{"context", s.context}, {"output", std::min<int64_t>(s.context, 32768)}}},
              {"tool_call", true}}}}}};
}

// Merges the mtplx provider into the OpenCode config, keeping every other key; the previous file
// is kept as opencode.json.bak and the new one is written atomically.
Status WriteOpenCodeConfig(const std::string& path, const Json& provider,
                           const std::string& model) {
  Json config = Json::object();
  if (FileExists(path)) {
    MTPLX_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path));
    config = Json::parse(text, nullptr, false, /*ignore_comments=*/true);
    if (!config.is_object())
      return InvalidArgument(path + " is not a JSON object; fix it or move it away first");
    std::error_code ec;
    fs::copy_file(path, path + ".bak", fs::copy_options::overwrite_existing, ec);
    if (ec) return Internal("cannot back up " + path + ": " + ec.message());
  }
  if (!config.contains("$schema")) config["$schema"] = "https://opencode.ai/config.json";
  if (!config.contains("provider") || !config["provider"].is_object())
    config["provider"] = Json::object();
  config["provider"]["mtplx"] = provider;
  if (!config.contains("model")) config["model"] = model;
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  const std::string staged = path + ".mtplx-tmp";
  MTPLX_RETURN_IF_ERROR(WriteTextFile(staged, config.dump(2) + "\n"));
  fs::rename(staged, path, ec);
  if (ec) return Internal("cannot replace " + path + ": " + ec.message());
  return Status::Ok();
}

int Report(const ConnectFlags& f, const Served& s, Json out, const std::string& text) {
  if (!s.warning.empty()) out["warning"] = s.warning;
  if (f.json) {
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  if (!s.warning.empty()) std::fprintf(stderr, "[mtplx] warning: %s\n", s.warning.c_str());
  std::printf("%s", text.c_str());
  return 0;
}

std::string KeyValue(const ConnectFlags& f, const Served& s) {
  return s.key_required ? "$" + f.api_key_env : "local";
}

int ClaudeCode(const ConnectFlags& f, const Served& s) {
  const Json env = {{"ANTHROPIC_BASE_URL", f.endpoint.BaseUrl()},
                    {"ANTHROPIC_API_KEY", KeyValue(f, s)},
                    {"ANTHROPIC_MODEL", s.model_id},
                    {"ANTHROPIC_SMALL_FAST_MODEL", s.model_id},
                    {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"}};
  std::string text = "# Claude Code on mtplx: paste into your shell, then run `claude`\n";
  for (const auto& [key, value] : env.items())
    text += "export " + key + "=\"" + value.get<std::string>() + "\"\n";
  text += "claude --model " + s.model_id + "\n";
  return Report(
      f, s, {{"target", "claude-code"}, {"env", env}, {"command", "claude --model " + s.model_id}},
      text);
}

int OpenCode(const ConnectFlags& f, const Served& s) {
  const Json provider = OpenCodeProvider(f, s);
  const std::string path = OpenCodeConfigPath(), model = "mtplx/" + s.model_id;
  Json out = {{"target", "opencode"},
              {"config_path", path},
              {"config", {{"provider", {{"mtplx", provider}}}, {"model", model}}}};
  std::string text;
  if (f.write) {
    if (Status written = WriteOpenCodeConfig(path, provider, model); !written.ok())
      return ReportError(written.message());
    out["written"] = true;
    text = "Wrote the mtplx provider into " + path +
           " (other settings kept; the previous file is opencode.json.bak).\nRun `opencode` and "
           "pick " +
           model + ".\n";
  } else {
    text = "# OpenCode: merge this into " + path + " (or rerun with --write)\n" +
           out["config"].dump(2) + "\n";
  }
  return Report(f, s, out, text);
}

int OpenWebUi(const ConnectFlags& f, const Served& s) {
  std::string docker_base = f.endpoint.BaseUrl();
  const std::string host = f.endpoint.host;
  if (host == "127.0.0.1" || host == "localhost")
    docker_base = StrFormat("http://host.docker.internal:%d", f.endpoint.port);
  const Json env = {{"OPENAI_API_BASE_URL", docker_base + "/v1"},
                    {"OPENAI_API_KEY", KeyValue(f, s)}};
  const std::string command =
      "docker run -d -p 3000:8080 --add-host=host.docker.internal:host-gateway -e "
      "OPENAI_API_BASE_URL=" +
      docker_base + "/v1 -e OPENAI_API_KEY=" + KeyValue(f, s) +
      " -v open-webui:/app/backend/data --name open-webui ghcr.io/open-webui/open-webui:main";
  std::string text =
      "# Open WebUI in Docker (the server must listen where the container can reach "
      "it: a loopback server needs --host 0.0.0.0 and an API key)\n" +
      command + "\n# Then open http://localhost:3000 and choose " + s.model_id + ".\n";
  return Report(f, s, {{"target", "openwebui"}, {"env", env}, {"command", command}}, text);
}

int Aider(const ConnectFlags& f, const Served& s) {
  const std::string command = "aider --model openai/" + s.model_id + " --openai-api-base " +
                              f.endpoint.BaseUrl() + "/v1 --openai-api-key " + KeyValue(f, s);
  const Json env = {{"OPENAI_API_BASE", f.endpoint.BaseUrl() + "/v1"},
                    {"OPENAI_API_KEY", KeyValue(f, s)}};
  return Report(f, s, {{"target", "aider"}, {"env", env}, {"command", command}},
                "# aider on mtplx\n" + command + "\n");
}

int RunConnect(const ConnectFlags& f) {
  if (f.target.empty()) {
    std::printf(
        "Connect a client to mtplx (start the server first: mtplx serve, or mtplx start):\n"
        "  mtplx connect claude-code   Claude Code (Anthropic API)\n"
        "  mtplx connect opencode      OpenCode (--write merges it into its config)\n"
        "  mtplx connect openwebui     Open WebUI in Docker\n"
        "  mtplx connect aider         aider (OpenAI API)\n");
    return 0;
  }
  if (f.write && f.target != "opencode")
    return ReportError(
        "--write is for opencode only; the other clients take environment "
        "variables or flags");
  const Served served = Query(f.endpoint);
  if (f.target == "claude-code") return ClaudeCode(f, served);
  if (f.target == "opencode") return OpenCode(f, served);
  if (f.target == "openwebui") return OpenWebUi(f, served);
  return Aider(f, served);
}

}  // namespace

Runner AddConnectCommand(CLI::App& app) {
  auto f = std::make_shared<ConnectFlags>();
  CLI::App* cmd = app.add_subcommand("connect", "Print (or write) a client's configuration");
  cmd->add_option("target", f->target, "claude-code | opencode | openwebui | aider")
      ->check(CLI::IsMember({"claude-code", "opencode", "openwebui", "aider"}));
  cmd->add_option("--host", f->endpoint.host, "The server's address (default 127.0.0.1)");
  cmd->add_option("--port", f->endpoint.port, "The server's port (default 8000)")
      ->check(CLI::Range(1, 65535));
  cmd->add_option("--api-key-env", f->api_key_env,
                  "Environment variable that holds the key, when the server needs one (default "
                  "MTPLX_API_KEY)");
  cmd->add_flag("--write", f->write, "opencode: write the provider into its config file");
  cmd->add_flag("--json", f->json, "One JSON object");
  return [f] {
    if (const char* key = std::getenv(f->api_key_env.c_str())) f->endpoint.api_key = key;
    return RunConnect(*f);
  };
}

}  // namespace mtplx::cli
