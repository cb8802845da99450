#include "converters/safetensors/checkpoint.h"

#include <sys/stat.h>

#include "converters/message_format.h"
#include "converters/safetensors/json_reader.h"

namespace kestrel::safetensors {
namespace {

using nlohmann::json;

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

}  // namespace

std::string CheckShardName(const std::string& name) {
  if (name.empty()) return "expected a file name, found an empty string";
  if (name.find('\0') != std::string::npos) return "expected a file name, found a NUL character";
  if (name.find('/') != std::string::npos) {
    return "expected a plain file name inside the folder, found a path with '/'";
  }
  if (name == "." || name == "..") {
    return "expected a plain file name inside the folder, found " + Quoted(name);
  }
  return std::string();
}

Status Checkpoint::Open(const std::string& folder, std::unique_ptr<Checkpoint>* out) {
  std::unique_ptr<Checkpoint> checkpoint(new Checkpoint());
  const std::string single = folder + "/" + kSingleFileName;
  const std::string index = folder + "/" + kIndexFileName;
  if (Exists(single)) {
    std::unique_ptr<File> file;
    KES_RETURN_IF_ERROR(File::Open(single, &file));
    KES_RETURN_IF_ERROR(checkpoint->AddFile(std::move(file)));
  } else if (Exists(index)) {
    checkpoint->sharded_ = true;
    KES_RETURN_IF_ERROR(checkpoint->OpenSharded(folder, index));
  } else {
    return Status::Error(Quoted(folder) + ": expected a Hugging Face checkpoint with " +
                         kSingleFileName + " or " + kIndexFileName + ", found neither");
  }
  *out = std::move(checkpoint);
  return OkStatus();
}

Status Checkpoint::AddFile(std::unique_ptr<File> file) {
  for (const TensorInfo& t : file->tensors()) {
    const auto [it, inserted] = tensors_.emplace(t.name, Tensor{file.get(), &t});
    if (!inserted) {
      return Status::Error("tensor " + Quoted(t.name) + " is in two shards, " +
                           Quoted(it->second.file->path()) + " and " + Quoted(file->path()) +
                           ": expected each tensor in one");
    }
  }
  files_.push_back(std::move(file));
  return OkStatus();
}

Status Checkpoint::OpenSharded(const std::string& folder, const std::string& index_path) {
  json index;
  KES_RETURN_IF_ERROR(ReadJson(index_path, json::value_t::object, &index));
  const std::string where = Quoted(index_path);
  if (const auto it = index.find("metadata"); it != index.end() && !it->is_object()) {
    return Status::Error(where + ": expected 'metadata' to be an object, found " + JsonKind(*it));
  }
  const auto map = index.find("weight_map");
  if (map == index.end()) {
    return Status::Error(where +
                         ": missing 'weight_map' (expected an object of tensor name to "
                         "shard file name)");
  }
  if (!map->is_object()) {
    return Status::Error(where + ": expected 'weight_map' to be an object, found " +
                         JsonKind(*map));
  }
  // Each shard opened once, in the order of its name (the index repeats each shard per tensor).
  std::map<std::string, const File*> shards;
  for (const auto& [tensor, shard] : map->items()) {
    const std::string context = where + ": weight_map " + Quoted(tensor);
    if (!shard.is_string()) {
      return Status::Error(context + ": expected a shard file name, found " + JsonKind(shard));
    }
    const std::string& name = shard.get_ref<const std::string&>();
    if (const std::string why = CheckShardName(name); !why.empty()) {
      return Status::Error(context + ": shard " + Quoted(name) + ": " + why);
    }
    shards.emplace(name, nullptr);
  }
  for (auto& [name, file] : shards) {
    std::unique_ptr<File> shard;
    KES_RETURN_IF_ERROR(
        File::Open(folder + "/" + name, &shard).WithContext(where + ": shard " + Quoted(name)));
    file = shard.get();
    KES_RETURN_IF_ERROR(AddFile(std::move(shard)).WithContext(where));
  }
  for (const auto& [tensor, shard] : map->items()) {
    const File* expected = shards.at(shard.get_ref<const std::string&>());
    const auto it = tensors_.find(tensor);
    if (it == tensors_.end()) {
      return Status::Error(where + ": tensor " + Quoted(tensor) + ": expected in shard " +
                           Quoted(expected->path()) + " (weight_map), found in no shard");
    }
    if (it->second.file != expected) {
      return Status::Error(where + ": tensor " + Quoted(tensor) + ": expected in shard " +
                           Quoted(expected->path()) + " (weight_map), found in " +
                           Quoted(it->second.file->path()));
    }
  }
  for (const auto& [tensor, t] : tensors_) {
    if (map->find(tensor) == map->end()) {
      return Status::Error(where + ": tensor " + Quoted(tensor) + " of shard " +
                           Quoted(t.file->path()) + " is missing from weight_map");
    }
  }
  return OkStatus();
}

const Checkpoint::Tensor* Checkpoint::Find(std::string_view name) const {
  const auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

Status Checkpoint::ReadF32(std::string_view name, std::vector<float>* out) const {
  const Tensor* t = Find(name);
  if (t == nullptr) {
    return Status::Error("tensor " + Quoted(name) +
                         ": expected in the checkpoint, found in none "
                         "of its " +
                         std::to_string(files_.size()) + " file(s)");
  }
  return t->file->ReadF32(*t->info, out);
}

}  // namespace kestrel::safetensors
