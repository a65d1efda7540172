// `mtplx models`: the models on this machine (the Hugging Face hub cache and mtplx's packs) with
// size, quantization, MTP head and tuned depth; `mtplx remove NAME`: deletes one, confined to
// those caches, after a confirmation (or --yes).
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "base/strings.h"
#include "cli/commands.h"
#include "cli/tuning.h"
#include "io/checkpoint.h"
#include "io/model_cache.h"
#include "io/model_config.h"
#include "io/safetensors.h"
#include "io/tuning_store.h"

namespace mtplx::cli {
namespace {

using Json = nlohmann::json;

// What `models` shows of one model (from its config and headers; nothing is loaded).
Json Describe(const io::LocalModel& m) {
  Json j = {{"name", m.name}, {"source", m.source}, {"path", m.path}, {"bytes", m.bytes}};
  auto config = io::LoadModelConfig(m.path);
  j["quantization"] = !config.ok()            ? "?"
                      : config->quant.present ? StrCat(config->quant.global.bits, "-bit g",
                                                       config->quant.global.group_size)
                                              : std::string("bf16/f32");
  int64_t mtp = 0;
  if (auto files = io::ListCheckpointFiles(m.path); files.ok()) {
    for (const std::string& file : *files) {
      uint64_t offset = 0, size = 0;
      auto header = io::SafetensorsFile::ReadHeader(file, &offset, &size);
      if (!header.ok()) continue;
      for (const auto& [name, entry] : header->tensors)
        if (name.rfind("mtp.", 0) == 0 || name.find(".mtp.") != std::string::npos) ++mtp;
    }
  }
  j["mtp"] = mtp > 0;
  j["tuned_depth"] = nullptr;
  if (auto key = TuningKeyFor(m.path, 0); key.ok())
    if (auto record = io::LoadTuning(io::TuningStorePath(), *key))
      j["tuned_depth"] = record->best_depth;
  return j;
}

int ListModels(bool json) {
  Json all = Json::array();
  for (const io::LocalModel& m : io::ListLocalModels()) all.push_back(Describe(m));
  if (json) {
    std::printf("%s\n", all.dump(2).c_str());
    return 0;
  }
  if (all.empty()) {
    std::printf(
        "No models in %s or %s (mtplx pull ORG/NAME downloads one; models/default is "
        "bundled).\n",
        io::HubCacheDir().c_str(), io::PackCacheDir().c_str());
    return 0;
  }
  std::printf("%-44s %-6s %10s %-12s %-4s %s\n", "NAME", "WHERE", "SIZE", "WEIGHTS", "MTP",
              "TUNED");
  for (const Json& m : all) {
    const std::string tuned =
        m["tuned_depth"].is_null()
            ? "-"
            : (m["tuned_depth"].get<int>() == 0 ? std::string("plain")
                                                : StrCat("depth ", m["tuned_depth"].get<int>()));
    std::printf("%-44s %-6s %10s %-12s %-4s %s\n", m["name"].get<std::string>().c_str(),
                m["source"].get<std::string>().c_str(),
                HumanBytes(m["bytes"].get<uint64_t>()).c_str(),
                m["quantization"].get<std::string>().c_str(), m["mtp"].get<bool>() ? "yes" : "no",
                tuned.c_str());
  }
  return 0;
}

int Remove(const std::string& name, bool yes) {
  auto model = io::FindLocalModel(name);
  if (!model.ok()) return ReportError(model.status().message());
  if (!yes) {
    if (!isatty(STDIN_FILENO))
      return ReportError(
          StrCat("removing ", model->entry, " needs --yes (not asked: no terminal)"));
    std::printf("Remove %s (%s) at %s? [y/N] ", model->name.c_str(),
                HumanBytes(model->bytes).c_str(), model->entry.c_str());
    std::fflush(stdout);
    std::string answer;
    std::getline(std::cin, answer);
    if (answer != "y" && answer != "Y" && answer != "yes") {
      std::printf("Kept.\n");
      return 1;
    }
  }
  if (Status s = io::RemoveLocalModel(*model); !s.ok()) return ReportError(s.message());
  std::printf("Removed %s (%s freed).\n", model->name.c_str(), HumanBytes(model->bytes).c_str());
  return 0;
}

}  // namespace

Runner AddModelsCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("models", "The models on this machine (hub cache and packs)");
  auto json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "Print them as JSON");
  return [json] { return ListModels(*json); };
}

Runner AddRemoveCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("remove", "Delete a cached model (hub cache or packs only)");
  auto name = std::make_shared<std::string>();
  auto yes = std::make_shared<bool>(false);
  cmd->add_option("name", *name, "ORG/NAME as `mtplx models` lists it")->required();
  cmd->add_flag("--yes,-y", *yes, "Do not ask for confirmation");
  return [name, yes] { return Remove(*name, *yes); };
}

}  // namespace mtplx::cli
