// `mtplx fp16 SRC OUT`: an FP16 sibling of a pack (pack/fp16.h), with a progress bar and a
// summary; `--json` prints the summary for scripts.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "base/strings.h"
#include "cli/commands.h"
#include "cli/default_model.h"
#include "pack/fp16.h"

namespace mtplx::cli {

Runner AddFp16Command(CLI::App& app) {
  auto* cmd = app.add_subcommand("fp16", "Write an FP16 sibling of a pack (for CPUs without bf16)");
  auto o = std::make_shared<pack::Fp16Options>();
  auto json = std::make_shared<bool>(false);
  cmd->add_option("source", o->source_dir, "The pack to convert (a folder or a cached ORG/NAME)")
      ->required();
  cmd->add_option("output", o->output_dir, "Where the FP16 pack goes")->required();
  cmd->add_flag("--force", o->replace, "Replace OUT if it exists");
  cmd->add_flag("--json", *json, "Print the summary as JSON");
  return [o, json] {
    o->progress = !*json;
    auto source = FindModelDir(o->source_dir);
    if (!source.ok()) return ReportError(source.status().message());
    o->source_dir = *source;
    auto summary = pack::MakeFp16Sibling(*o);
    if (!summary.ok()) return ReportError(summary.status().message());
    if (*json) {
      nlohmann::json j = {{"output", o->output_dir},
                          {"shards", summary->shards},
                          {"tensors_total", summary->tensors_total},
                          {"converted_bf16_to_fp16", summary->converted},
                          {"preserved", summary->preserved},
                          {"flushed_to_zero_values", summary->flushed_to_zero},
                          {"files_copied", summary->files_copied}};
      std::printf("%s\n", j.dump(2).c_str());
    } else {
      std::printf(
          "Wrote %s: %lld tensors in %d file(s), %lld bf16 -> fp16, %lld copied byte for "
          "byte, %zu other files copied%s; manifest MTPLX_FP16_CONVERSION_MANIFEST.json\n",
          o->output_dir.c_str(), static_cast<long long>(summary->tensors_total), summary->shards,
          static_cast<long long>(summary->converted), static_cast<long long>(summary->preserved),
          summary->files_copied.size(),
          summary->flushed_to_zero
              ? StrCat(", ", summary->flushed_to_zero, " tiny values became 0").c_str()
              : "");
    }
    return 0;
  };
}

}  // namespace mtplx::cli
