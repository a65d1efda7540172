// `mtplx pull ORG/NAME`: a model from the Hugging Face hub (or any server speaking its API:
// HF_ENDPOINT) into the hub cache layout that other tools share:
//   CACHE/models--ORG--NAME/blobs/<sha256 or git blob id>
//                          /snapshots/<commit>/<file> -> ../../blobs/<id>
//                          /refs/<revision>            (the commit)
// Files download in parallel over HTTPS (libcurl), each into blobs/<id>.incomplete first, so an
// interrupted pull resumes where it stopped (HTTP Range); sizes are checked, and sha256 where
// the hub gives one (LFS files): a corrupted file is fetched again. HF_TOKEN (or the token file
// huggingface-cli writes) is sent when set; a 401 says a token is needed, a 404 that the model
// or revision does not exist. Only what mtplx reads is fetched (safetensors, JSON, templates,
// tokenizer and text files). A model without MTP tensors is pulled and reported: it runs
// without speculation.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace mtplx::hub {

struct PullOptions {
  std::string repo;  // ORG/NAME
  std::string revision = "main";
  std::string cache_dir;  // empty: io::HubCacheDir()
  std::string endpoint;   // empty: $HF_ENDPOINT, else https://huggingface.co
  std::string token;      // empty: $HF_TOKEN, else $HF_HOME/token or ~/.cache/huggingface/token
  int parallel = 4;
  bool progress = true;
};

struct PullResult {
  std::string snapshot_dir;
  std::string commit;
  int files = 0;
  uint64_t bytes_total = 0;
  uint64_t bytes_downloaded = 0;  // this run (reused and resumed bytes not counted)
  int reused = 0;                 // files already in the cache
  int refetched = 0;              // files fetched again after a failed check
  int64_t mtp_tensors = 0;
};

Result<PullResult> Pull(const PullOptions& options);

// Whether a repository file is one mtplx reads.
bool WantedFile(const std::string& name);

}  // namespace mtplx::hub
