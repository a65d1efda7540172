// Where downloaded and converted models live on this machine, and what is there:
//   the Hugging Face hub cache ($HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub),
//     models--ORG--NAME/{blobs, refs/main, snapshots/REV}, shared with other tools;
//   mtplx's own packs ($MTPLX_HOME/models, else ~/.mtplx/models), one folder per model
//     (ORG--NAME for ORG/NAME).
// Removal is confined to these two folders: a name that resolves anywhere else is refused.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace mtplx::io {

std::string HubCacheDir();
std::string PackCacheDir();

struct LocalModel {
  std::string name;    // ORG/NAME (hub) or the folder's name with "--" as "/" (packs)
  std::string source;  // "hub" or "packs"
  std::string entry;   // what `remove` deletes: models--ORG--NAME, or the pack folder
  std::string path;    // the model folder (a hub snapshot: refs/main, else the newest)
  uint64_t bytes = 0;  // on disk (hub: its blobs)
};

// Every model folder in the two caches (folders without config.json are skipped).
std::vector<LocalModel> ListLocalModels();

// The cached model `name` (ORG/NAME, or a pack folder's name); NotFound lists what there is.
Result<LocalModel> FindLocalModel(const std::string& name);

// Deletes a cached model's entry, after checking that it lies inside its cache folder.
Status RemoveLocalModel(const LocalModel& model);

}  // namespace mtplx::io
