// `mtplx pull ORG/NAME`: downloads a model into the Hugging Face hub cache (hub/pull.h), with a
// progress bar and a summary that says whether the model can speculate.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "base/strings.h"
#include "cli/commands.h"
#include "hub/pull.h"

namespace mtplx::cli {

Runner AddPullCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("pull", "Download a model from the Hugging Face hub");
  auto o = std::make_shared<hub::PullOptions>();
  auto json = std::make_shared<bool>(false);
  cmd->add_option("repo", o->repo, "ORG/NAME")->required();
  cmd->add_option("--revision", o->revision, "Branch, tag or commit (default main)");
  cmd->add_option("--cache-dir", o->cache_dir,
                  "Hub cache folder (default $HF_HUB_CACHE, $HF_HOME/hub or "
                  "~/.cache/huggingface/hub)");
  cmd->add_option("--parallel", o->parallel, "Files downloaded at once")->check(CLI::Range(1, 16));
  cmd->add_flag("--json", *json, "Print the summary as JSON");
  return [o, json] {
    o->progress = !*json;
    auto r = hub::Pull(*o);
    if (!r.ok()) return ReportError(r.status().message());
    if (*json) {
      const nlohmann::json j = {{"repo", o->repo},
                                {"commit", r->commit},
                                {"path", r->snapshot_dir},
                                {"files", r->files},
                                {"bytes_total", r->bytes_total},
                                {"bytes_downloaded", r->bytes_downloaded},
                                {"reused_files", r->reused},
                                {"refetched_files", r->refetched},
                                {"mtp_tensors", r->mtp_tensors}};
      std::printf("%s\n", j.dump(2).c_str());
      return 0;
    }
    std::printf(
        "Pulled %s at %s: %d files, %s (%s downloaded now, %d already here%s)\n", o->repo.c_str(),
        r->commit.substr(0, 12).c_str(), r->files, HumanBytes(r->bytes_total).c_str(),
        HumanBytes(r->bytes_downloaded).c_str(), r->reused,
        r->refetched ? StrCat(", ", r->refetched, " fetched again after a failed check").c_str()
                     : "");
    std::printf("  %s\n", r->snapshot_dir.c_str());
    if (r->mtp_tensors > 0)
      std::printf(
          "  MTP head: %lld tensors, so it speculates. Run it: mtplx run \"hi\" --model %s\n",
          static_cast<long long>(r->mtp_tensors), o->repo.c_str());
    else
      std::printf("  No MTP tensors: this model runs without speculation (plain decoding).\n");
    return 0;
  };
}

}  // namespace mtplx::cli
