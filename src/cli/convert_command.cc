// `mtplx convert SRC_DIR OUT_DIR`: a Hugging Face checkpoint folder becomes an mtplx model pack
// (pack/convert.h). Before the pack is moved into place it is loaded with model::Model and run on
// a few tokens (trunk and MTP head), so a pack that reaches OUT_DIR is known to load.
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/strings.h"
#include "cli/commands.h"
#include "cli/default_model.h"
#include "io/generation_config.h"
#include "model/model.h"
#include "pack/convert.h"

namespace mtplx::cli {
namespace {

struct ConvertFlags {
  pack::ConvertOptions options;
  std::string preset;
  // The options a preset sets, to tell which the user gave explicitly (those win).
  CLI::Option *bits = nullptr, *group_size = nullptr, *mtp_bits = nullptr,
              *mtp_group_size = nullptr, *mtp_depth = nullptr, *sampler_flag = nullptr;
  std::string sampler;
  bool json = false;
  bool verify = true;
};

Status CheckFinite(const std::vector<float>& values, const char* what) {
  for (float v : values)
    if (!std::isfinite(v)) return DataLoss(StrCat("self-check: the ", what, " are not finite"));
  return Status::Ok();
}

// Loads the staged pack and runs four tokens through the trunk and the MTP head.
Result<std::string> SelfCheck(const std::string& dir, int threads) {
  model::LoadOptions load;
  load.threads = threads;
  load.show_progress = false;
  load.lock_memory = false;
  auto loaded = model::Model::Load(dir, load);
  if (!loaded.ok()) return loaded.status().WithContext("self-check: the pack does not load");
  const model::Model& m = **loaded;
  MTPLX_ASSIGN_OR_RETURN(io::GenerationDefaults defaults, io::LoadGenerationDefaults(dir));
  const int32_t vocab = static_cast<int32_t>(m.config().vocab_size);
  const std::vector<int32_t> tokens = {1 % vocab, 17 % vocab, 256 % vocab, 42 % vocab};
  auto state = m.NewState();
  model::ForwardOutput out;
  MTPLX_RETURN_IF_ERROR(m.Forward(*state, tokens, {}, &out));
  MTPLX_RETURN_IF_ERROR(CheckFinite(out.logits, "trunk logits"));
  std::string report =
      StrCat("mtplx ", pack::MtplxVersion(), " self-check: loaded ", m.config().num_layers,
             " layers, ", tokens.size(), " tokens give finite logits");
  if (m.has_mtp()) {
    auto mtp_state = m.NewMtpState();
    model::ForwardOutput mtp_out;
    MTPLX_RETURN_IF_ERROR(
        m.ForwardMtp(*mtp_state, std::span(tokens).subspan(1), out.hidden.data(), {}, &mtp_out));
    MTPLX_RETURN_IF_ERROR(CheckFinite(mtp_out.logits, "MTP head logits"));
    report += StrCat("; MTP head finite; default depth ", defaults.mtp_depth);
  }
  return report;
}

nlohmann::json SummaryJson(const pack::ConvertSummary& s, const pack::ConvertOptions& o) {
  const int mtp_bits = o.mtp_bits == -1 ? o.bits : o.mtp_bits;
  const int mtp_group_size = o.mtp_group_size == -1 ? o.group_size : o.mtp_group_size;
  return {{"ok", true},
          {"out_dir", s.out_dir},
          {"arch_id", s.arch_id},
          {"bits", o.bits},
          {"group_size", o.group_size},
          {"mtp_bits", s.mtp_tensors ? mtp_bits : 0},
          {"mtp_group_size", mtp_group_size},
          {"tensors_in", s.tensors_in},
          {"tensors_out", s.tensors_out},
          {"quantized", s.quantized},
          {"mtp_tensors", s.mtp_tensors},
          {"dropped", s.dropped},
          {"bytes_in", s.bytes_in},
          {"bytes_out", s.bytes_out},
          {"pack_bytes", s.pack_bytes},
          {"files", s.files},
          {"verified_on", s.verified_on}};
}

// A preset's settings, under those the user gave explicitly.
Status ApplyPreset(ConvertFlags& f) {
  if (f.preset.empty()) return Status::Ok();
  MTPLX_ASSIGN_OR_RETURN(const pack::ConvertPreset p, pack::FindConvertPreset(f.preset));
  pack::ConvertOptions& o = f.options;
  if (f.bits->count() == 0) o.bits = p.bits;
  if (f.group_size->count() == 0) o.group_size = p.group_size;
  if (f.mtp_bits->count() == 0) o.mtp_bits = p.mtp_bits;
  if (f.mtp_group_size->count() == 0) o.mtp_group_size = p.mtp_group_size;
  if (f.mtp_depth->count() == 0) o.mtp_depth = p.mtp_depth;
  if (f.sampler_flag->count() == 0) o.sampler = p.sampler;
  return Status::Ok();
}

int RunConvert(ConvertFlags f) {
  if (Status s = ApplyPreset(f); !s.ok()) return ReportError(s.message());
  auto source = FindModelDir(f.options.src_dir);
  if (!source.ok()) return ReportError(source.status().message());
  f.options.src_dir = *source;
  if (!f.sampler.empty()) {
    auto sampler = pack::ParseSampler(f.sampler);
    if (!sampler.ok()) return ReportError(sampler.status().message());
    f.options.sampler = *sampler;
  }
  if (f.verify) {
    const int threads = f.options.threads;
    f.options.verify = [threads](const std::string& dir) { return SelfCheck(dir, threads); };
  }
  auto summary = pack::ConvertCheckpoint(f.options);
  if (!summary.ok()) return ReportError(summary.status().message());
  if (f.json) {
    std::printf("%s\n", SummaryJson(*summary, f.options).dump().c_str());
    return 0;
  }
  std::fprintf(stderr,
               "[mtplx] wrote %s pack to %s: %lld tensors (%lld quantized, %lld in the MTP "
               "sidecar), %s of weights from %s\n[mtplx] %s\n",
               summary->arch_id.c_str(), summary->out_dir.c_str(),
               static_cast<long long>(summary->tensors_out),
               static_cast<long long>(summary->quantized),
               static_cast<long long>(summary->mtp_tensors), HumanBytes(summary->bytes_out).c_str(),
               HumanBytes(summary->bytes_in).c_str(), summary->verified_on.c_str());
  return 0;
}

}  // namespace

Runner AddConvertCommand(CLI::App& app) {
  auto f = std::make_shared<ConvertFlags>();
  pack::ConvertOptions& o = f->options;
  CLI::App* cmd = app.add_subcommand(
      "convert", "Turn a Hugging Face Qwen 3.5 checkpoint folder into an mtplx model pack");
  cmd->add_option("src_dir", o.src_dir, "Hugging Face checkpoint folder (or a cached ORG/NAME)")
      ->required();
  cmd->add_option("out_dir", o.out_dir, "Pack folder to write")->required();
  cmd->add_option("--preset", f->preset,
                  "Settings of a reference pack: optimized-speed (6-bit g64 trunk, bf16 MTP, "
                  "depth 2, sampler 0.6,0.95,20) or moe-a3b (4-bit trunk, 8-bit routers and "
                  "gates, 4-bit g32 MTP); flags given explicitly win")
      ->check(CLI::IsMember({"optimized-speed", "moe-a3b"}));
  f->bits = cmd->add_option("--bits", o.bits,
                            "MLX affine bits for the trunk (2,3,4,5,6,8); 0 = keep bf16")
                ->check(CLI::IsMember({0, 2, 3, 4, 5, 6, 8}));
  f->group_size =
      cmd->add_option("--group-size", o.group_size, "Quantization group size (32, 64, 128)")
          ->check(CLI::IsMember({32, 64, 128}));
  f->mtp_bits = cmd->add_option("--mtp-bits", o.mtp_bits, "Bits for the MTP head (default: --bits)")
                    ->check(CLI::IsMember({0, 2, 3, 4, 5, 6, 8}));
  f->mtp_group_size = cmd->add_option("--mtp-group-size", o.mtp_group_size,
                                      "Group size for the MTP head (default: --group-size)")
                          ->check(CLI::IsMember({32, 64, 128}));
  f->mtp_depth = cmd->add_option("--mtp-depth", o.mtp_depth,
                                 StrCat("Default MTP draft depth (1-", pack::kMaxMtpDepth, ")"))
                     ->check(CLI::Range(1, pack::kMaxMtpDepth));
  f->sampler_flag = cmd->add_option(
      "--sampler", f->sampler,
      "Default sampler T,P,K[,PRESENCE[,FREQUENCY]] (default: generation_config.json, else "
      "0.6,0.95,20; penalties 0)");
  cmd->add_option("--threads", o.threads, "Worker threads (0 = all cores)")->check(ThreadCount());
  cmd->add_flag("--force", o.force, "Replace a non-empty OUT_DIR");
  cmd->add_flag("--json", f->json, "Print a JSON summary on stdout");
  cmd->add_flag("!--no-verify", f->verify, "Skip loading the pack as a self-check");
  cmd->add_flag("!--no-progress", o.show_progress, "Hide the progress bars");
  return [f] { return RunConvert(*f); };
}

}  // namespace mtplx::cli
