#include "support/synthetic_model.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <filesystem>

#include "base/strings.h"
#include "support/test_support.h"
#include "synth/synth.h"

namespace mtplx::testing {

std::string SyntheticModel(const std::string& preset, const std::string& format, int bits,
                           int group_size, unsigned long long seed) {
  const std::string root = BinaryDir() + "/test-models";
  std::filesystem::create_directories(root);
  const std::string name = StrFormat("%s-%s-b%d-g%d-s%llu-v%d", preset.c_str(), format.c_str(),
                                     bits, group_size, seed, synth::kOutputVersion);
  const std::string dir = root + "/" + name;
  // ctest runs test programs in parallel: serialise generation with a lock file.
  const int lock = open((dir + ".lock").c_str(), O_CREAT | O_RDWR, 0644);
  if (lock >= 0) flock(lock, LOCK_EX);
  if (!std::filesystem::exists(dir + "/.complete")) {
    synth::SynthOptions options;
    options.preset = preset;
    options.format = format;
    options.bits = bits;
    options.group_size = group_size;
    options.seed = seed;
    options.out_dir = dir;
    options.progress = false;
    options.threads = 1;
    const Status status = synth::WriteSyntheticCheckpoint(options);
    if (status.ok()) {
      std::FILE* f = std::fopen((dir + "/.complete").c_str(), "w");
      if (f) std::fclose(f);
    } else {
      std::fprintf(stderr, "synthetic model %s failed: %s\n", name.c_str(),
                   status.ToString().c_str());
    }
  }
  if (lock >= 0) {
    flock(lock, LOCK_UN);
    close(lock);
  }
  return dir;
}

}  // namespace mtplx::testing
