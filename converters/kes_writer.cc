// WriteKes: lays out the weight blob and writes the .kes file atomically (runtime/output_file.h).
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include "converters/kes_model.h"
#include "runtime/format.h"
#include "runtime/weights_checksum.h"
#include "runtime/output_file.h"

namespace kestrel {
namespace {

// Lays out the weight blob (tensor offsets, weights_size, weights_offset), then hands the file's
// bytes in order to `write`, which returns false on failure.
Status EmitKes(KesModel* model, const std::function<bool(const void*, size_t)>& write) {
  fb::ModelT& meta = model->meta;
  KES_RETURN_IF_ERROR(model->MapTensors());
  uint64_t blob = 0;
  for (size_t i = 0; i < meta.tensors.size(); ++i) {
    meta.tensors[i]->offset = blob;
    meta.tensors[i]->size = model->Tensor(i).size;
    blob = AlignUp(blob + model->Tensor(i).size, kKesAlignment);
  }
  meta.weights_size = blob;
  meta.format_version = kKesFormatVersion;
  // The checksum is stored in the metadata written before the weights, so it is computed from
  // the layout: exactly the blob's bytes, tensors and zero padding, in the order written below.
  WeightsHasher hasher;
  uint64_t hashed = 0;
  for (size_t i = 0; i < meta.tensors.size(); ++i) {
    hasher.UpdateZeros(meta.tensors[i]->offset - hashed);
    hasher.Update(model->Tensor(i).data, model->Tensor(i).size);
    hashed = meta.tensors[i]->offset + model->Tensor(i).size;
  }
  hasher.UpdateZeros(blob - hashed);
  meta.weights_xxh3 = hasher.Digest();

  // weights_offset is stored inside the FlatBuffer it comes after, so pack until the two agree.
  // The size depends on the value only through its presence (0 is the default, which FlatBuffers
  // leaves out), so the second or third packing settles.
  flatbuffers::FlatBufferBuilder builder(1 << 20);
  uint64_t fb_size = 0;
  meta.weights_offset = 0;
  for (int packing = 0;; ++packing) {
    builder.Clear();
    builder.Finish(fb::Model::Pack(builder, &meta), fb::ModelIdentifier());
    fb_size = builder.GetSize();
    KES_CHECK_OR_RETURN(fb_size < (uint64_t{1} << 31), "metadata exceeds 2 GiB");
    const uint64_t offset = AlignUp(kKesPreambleBytes + fb_size, kKesAlignment);
    if (offset == meta.weights_offset) break;
    KES_CHECK_OR_RETURN(packing < 4, "metadata size does not settle between packings");
    meta.weights_offset = offset;
  }

  static const uint8_t zeros[kKesAlignment] = {};
  const auto write_zeros = [&](uint64_t n) {
    while (n > 0) {
      const size_t k = n < sizeof(zeros) ? n : sizeof(zeros);
      if (!write(zeros, k)) return false;
      n -= k;
    }
    return true;
  };
  uint8_t preamble[kKesPreambleBytes];
  std::memcpy(preamble, kKesMagic, 8);
  const uint32_t version = kKesFormatVersion, size32 = static_cast<uint32_t>(fb_size);
  std::memcpy(preamble + 8, &version, 4);
  std::memcpy(preamble + 12, &size32, 4);
  bool ok = write(preamble, sizeof(preamble)) && write(builder.GetBufferPointer(), fb_size) &&
            write_zeros(meta.weights_offset - kKesPreambleBytes - fb_size);
  uint64_t written = 0;
  for (size_t i = 0; ok && i < meta.tensors.size(); ++i) {
    const TensorBytesView tensor = model->Tensor(i);
    ok = write_zeros(meta.tensors[i]->offset - written) &&
         (tensor.size == 0 || write(tensor.data, tensor.size));
    written = meta.tensors[i]->offset + tensor.size;
  }
  ok = ok && write_zeros(blob - written);
  return ok ? OkStatus() : Status::Error("write failed");
}

}  // namespace

Status WriteKes(KesModel* model, AtomicOutput* out) {
  Status write_error;
  const Status s = EmitKes(model, [&](const void* data, size_t n) {
    write_error = out->Write(data, n);
    return write_error.ok();
  });
  // A failed write says why (a full disk); other errors (a bad model) are reported as they are.
  KES_RETURN_IF_ERROR(write_error);
  KES_RETURN_IF_ERROR(s);
  return out->Finish();
}

Status WriteKes(KesModel* model, const std::string& path) {
  std::unique_ptr<AtomicOutput> out;
  KES_RETURN_IF_ERROR(AtomicOutput::Create(path, &out));
  KES_RETURN_IF_ERROR(WriteKes(model, out.get()));
  return out->Commit();
}

Status KesBytes(KesModel* model, std::vector<uint8_t>* out) {
  std::vector<uint8_t> bytes;
  KES_RETURN_IF_ERROR(EmitKes(model, [&](const void* data, size_t n) {
    const uint8_t* p = static_cast<const uint8_t*>(data);
    bytes.insert(bytes.end(), p, p + n);
    return true;
  }));
  *out = std::move(bytes);
  return OkStatus();
}

}  // namespace kestrel
