// A Hugging Face checkpoint folder's tensors: either one `model.safetensors`, or the shards that
// `model.safetensors.index.json` lists ({"metadata": {...}, "weight_map": {"tensor": "shard
// file name", ...}}), checked against each other and looked up by name as one set.
//
// Like the files themselves, the index is untrusted: shard names must be plain file names inside
// the folder (no '/', not '.' or '..', no NUL), every tensor of the weight map must be in the
// shard it names, no tensor may be in two shards, and every tensor of a shard must be in the
// weight map. (Symbolic links inside the folder are followed: the folder is the user's choice.)
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "converters/safetensors/safetensors_file.h"
#include "runtime/status.h"

namespace kestrel::safetensors {

inline constexpr const char* kSingleFileName = "model.safetensors";
inline constexpr const char* kIndexFileName = "model.safetensors.index.json";

class Checkpoint {
 public:
  struct Tensor {
    const File* file;  // the shard holding it
    const TensorInfo* info;
  };

  // Opens `folder`: model.safetensors when present (as transformers prefers it), else the index
  // and every shard it names. The Checkpoint owns the mapped files.
  static Status Open(const std::string& folder, std::unique_ptr<Checkpoint>* out);

  const Tensor* Find(std::string_view name) const;  // nullptr if absent
  const std::map<std::string, Tensor, std::less<>>& tensors() const { return tensors_; }
  const std::vector<std::unique_ptr<File>>& files() const { return files_; }  // one unless sharded
  bool sharded() const { return sharded_; }
  // ReadF32 of the tensor's file; an error names a missing tensor too.
  Status ReadF32(std::string_view name, std::vector<float>* out) const;

 private:
  Checkpoint() = default;
  Status OpenSharded(const std::string& folder, const std::string& index_path);
  Status AddFile(std::unique_ptr<File> file);

  bool sharded_ = false;
  std::vector<std::unique_ptr<File>> files_;
  std::map<std::string, Tensor, std::less<>> tensors_;
};

// Why a shard name of an index is not a plain file name inside its folder, or "" when it is.
std::string CheckShardName(const std::string& name);

}  // namespace kestrel::safetensors
