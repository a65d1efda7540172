#include <memory>

#include "cli/commands.h"
#include "synth/synth.h"
#include "synth/widen.h"

namespace mtplx::cli {

Runner AddSynthCommand(CLI::App& app) {
  auto options = std::make_shared<synth::SynthOptions>();
  auto widen = std::make_shared<synth::WidenOptions>();
  CLI::App* cmd = app.add_subcommand(
      "synth", "Write a synthetic checkpoint in the exact real format, or widen a trained one");
  cmd->add_option("--preset", options->preset, "dense-tiny | moe-tiny | next-tiny | qwen35-9b")
      ->check(CLI::IsMember({"dense-tiny", "moe-tiny", "next-tiny", "qwen35-9b"}));
  cmd->add_option("--out", options->out_dir, "Output folder")->required();
  cmd->add_option("--format", options->format, "hf | mlx")->check(CLI::IsMember({"hf", "mlx"}));
  cmd->add_option("--bits", options->bits, "MLX affine bits (2,3,4,5,6,8); 0 = bf16");
  cmd->add_option("--group-size", options->group_size, "MLX group size (32, 64, 128)");
  cmd->add_option("--seed", options->seed, "Seed of every weight value");
  cmd->add_option("--threads", options->threads, "Worker threads (0 = all cores)")
      ->check(ThreadCount());
  cmd->add_flag("--fused-mtp-experts", options->fused_mtp_experts,
                "MoE: store MTP experts fused like the trunk (Qwen3.6 layout)");
  cmd->add_flag("!--no-progress", options->progress, "Hide the progress bar");
  auto* from = cmd->add_option("--from", widen->from_dir,
                               "Widen this trained checkpoint instead (with --widen): --format hf "
                               "writes a bf16 Hugging Face checkpoint, --format mlx keeps the "
                               "source's layout, quantized with --bits");
  cmd->add_option("--mtp-bits", widen->mtp_bits,
                  "With --from: bits of the MTP head's matrices (default: --bits)")
      ->needs(from);
  cmd->add_option("--widen", widen->factor,
                  "Replicate every unit K times, computing the same function (K: 2, 4, 8, ...)")
      ->needs(from);
  return [options, widen] {
    if (!widen->from_dir.empty()) {
      widen->out_dir = options->out_dir;
      widen->bits = options->bits;
      widen->group_size = options->group_size;
      widen->threads = options->threads;
      widen->progress = options->progress;
      widen->hf_layout = options->format == "hf" && options->bits == 0;
      const Status status = synth::WriteWidenedCheckpoint(*widen);
      if (!status.ok()) return ReportError(status.message());
      std::fprintf(
          stderr, "[mtplx] wrote %s widened x%d (%s) to %s\n", widen->from_dir.c_str(),
          widen->factor,
          widen->bits ? ("affine " + std::to_string(widen->bits) + "-bit").c_str() : "bf16",
          widen->out_dir.c_str());
      return 0;
    }
    const Status status = synth::WriteSyntheticCheckpoint(*options);
    if (!status.ok()) return ReportError(status.message());
    std::fprintf(stderr, "[mtplx] wrote %s (%s, %s%s) to %s\n", options->preset.c_str(),
                 options->format.c_str(),
                 options->bits ? std::to_string(options->bits).c_str() : "bf16",
                 options->bits ? (" bit g" + std::to_string(options->group_size)).c_str() : "",
                 options->out_dir.c_str());
    return 0;
  };
}

}  // namespace mtplx::cli
