// A checkpoint folder: one or more safetensors files (single file, shards listed by
// model.safetensors.index.json, and MTP sidecars), read into resident memory, with one name
// space over all of them.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "io/safetensors.h"

namespace mtplx::io {

struct CheckpointOptions {
  bool show_progress = true;
  bool lock_memory = true;  // mlock the weights when permitted
};

class Checkpoint {
 public:
  static Result<std::unique_ptr<Checkpoint>> Open(const std::string& dir,
                                                  const CheckpointOptions& options);

  const std::string& dir() const { return dir_; }
  bool Has(const std::string& name) const { return index_.count(name) > 0; }
  Result<TensorView> Get(const std::string& name) const;
  uint8_t* MutableData(const std::string& name);
  // Which file holds a tensor (for error messages).
  std::string FileOf(const std::string& name) const;
  std::vector<std::string> Names() const;
  const std::vector<std::unique_ptr<SafetensorsFile>>& files() const { return files_; }
  uint64_t resident_bytes() const;
  bool all_locked() const;
  // The "format" metadata of the first file ("mlx", "pt", or "").
  std::string format_metadata() const;

 private:
  std::string dir_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, size_t> index_;  // tensor name -> file
};

// Checks that `dir` looks like a model folder before anything in it is read, so that a wrong
// --model gets a message a newcomer can act on: the folder does not exist, is a file, or lacks
// config.json / tokenizer.json / weights (the message says what a model folder holds).
// `need_tokenizer`: the command also reads tokenizer.json.
Status CheckModelFolder(const std::string& dir, bool need_tokenizer);

// The safetensors files a checkpoint folder consists of, in load order.
Result<std::vector<std::string>> ListCheckpointFiles(const std::string& dir);

}  // namespace mtplx::io
