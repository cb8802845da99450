#include "runtime/model.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "ops/matmul_f32_panels.h"
#include "runtime/format.h"
#include "runtime/model_tokenizer.h"
#include "runtime/plan_check.h"
#include "runtime/weights_checksum.h"

namespace kestrel {
namespace {

std::string Num(uint64_t v) { return std::to_string(v); }

Status CheckTensor(const fb::Tensor* t, uint32_t id, uint64_t blob_size) {
  // Built only for an error: checking a good file allocates nothing per tensor.
  const auto where = [&] {
    return "tensor " + Num(id) + (t->name() ? " '" + t->name()->str() + "'" : std::string());
  };
  KES_CHECK_OR_RETURN(t->name() != nullptr && t->name()->size() > 0, where() + ": has no name");
  const fb::DType dtype = t->dtype();
  KES_CHECK_OR_RETURN(IsWeightDType(dtype),
                      where() + ": expected dtype " + DTypeNames(IsWeightDType, " or ") +
                          ", found code " + Num(static_cast<uint64_t>(dtype)));
  const bool quantized = IsBlockQuantized(dtype);
  const bool panels = dtype == fb::DType::F32_PANELS;
  KES_CHECK_OR_RETURN(
      t->shape() != nullptr && t->shape()->size() >= 1 && t->shape()->size() <= 4,
      where() + ": expected 1 to 4 dimensions, found " + Num(t->shape() ? t->shape()->size() : 0));
  // The verifier aligns a vector's length field to 4 bytes only: a crafted file can put the
  // 8-byte dimensions at an address Get() would load misaligned.
  KES_CHECK_OR_RETURN(reinterpret_cast<uintptr_t>(t->shape()->data()) % alignof(uint64_t) == 0,
                      where() + ": its shape vector is not 8-byte aligned (corrupt metadata)");
  KES_CHECK_OR_RETURN(!(quantized || panels) || t->shape()->size() == 2,
                      where() + ": expected a matrix for dtype " + DTypeName(dtype) + ", found " +
                          Num(t->shape()->size()) + " dimensions");
  // Bytes of one innermost row; every dimension is checked so the product cannot overflow.
  const uint64_t row_elems = t->shape()->Get(t->shape()->size() - 1);
  KES_CHECK_OR_RETURN(row_elems > 0 && row_elems <= (uint64_t{1} << 40),
                      where() + ": dimension " + Num(row_elems) + " is zero or too large");
  const uint64_t row_bytes = RowBytes(dtype, row_elems);
  KES_CHECK_OR_RETURN(row_bytes != 0, where() + ": rows of " + Num(row_elems) +
                                          " elements are not whole " + Num(BlockElems(dtype)) +
                                          "-element blocks of " + DTypeName(dtype));
  uint64_t bytes = row_bytes;
  for (uint32_t i = 0; i + 1 < t->shape()->size(); ++i) {
    uint64_t dim = t->shape()->Get(i);
    // Panels store whole panels of rows, the last one zero-padded.
    if (panels && dim <= (uint64_t{1} << 40)) dim = AlignUp(dim, ops::kF32PanelRows);
    KES_CHECK_OR_RETURN(dim > 0 && bytes <= std::numeric_limits<uint64_t>::max() / dim,
                        where() + ": dimension " + Num(dim) + " is zero or overflows");
    bytes *= dim;
  }
  KES_CHECK_OR_RETURN(t->size() == bytes, where() + ": expected " + Num(bytes) +
                                              " bytes for its shape and " + DTypeName(dtype) +
                                              ", found size " + Num(t->size()));
  KES_CHECK_OR_RETURN(t->offset() % kKesAlignment == 0,
                      where() + ": offset " + Num(t->offset()) + " is not 64-byte aligned");
  KES_CHECK_OR_RETURN(t->offset() <= blob_size && t->size() <= blob_size - t->offset(),
                      where() + ": bytes [" + Num(t->offset()) + ", " +
                          Num(t->offset() + t->size()) + ") lie outside the weight blob of " +
                          Num(blob_size) + " bytes");
  return OkStatus();
}

// The preamble: "KESTREL\0", then a format version this runtime reads. `size` may be a prefix
// of the file (CheckFileStart) or all of it (Verify).
Status CheckPreamble(const uint8_t* data, size_t size, uint64_t file_size) {
  KES_CHECK_OR_RETURN(size >= kKesPreambleBytes, "not a .kes file: expected at least " +
                                                     Num(kKesPreambleBytes) + " bytes, found " +
                                                     Num(file_size));
  KES_CHECK_OR_RETURN(std::memcmp(data, kKesMagic, sizeof(kKesMagic)) == 0,
                      "not a .kes file: wrong magic (expected \"KESTREL\")");
  uint32_t version = 0;
  std::memcpy(&version, data + 8, 4);
  KES_CHECK_OR_RETURN(version >= kKesFormatVersion || version == 0,
                      "this .kes file has format version " + Num(version) +
                          ", from an older Kestrel; this runtime reads version " +
                          Num(kKesFormatVersion) +
                          ": convert the model again with this version's kestrel-convert");
  KES_CHECK_OR_RETURN(version == kKesFormatVersion,
                      "unsupported .kes format version: expected " + Num(kKesFormatVersion) +
                          ", found " + Num(version) + " (a newer Kestrel wrote it)");
  return OkStatus();
}

// Reads the first bytes before the file is mapped: mapping reads the whole file (MAP_POPULATE,
// seconds for a large one), which a GGUF given by mistake should not cost. Errors opening or
// reading are left to MappedFile::Open, whose messages say what the file is.
Status CheckFileStart(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return OkStatus();
  if (S_ISDIR(st.st_mode)) {
    struct stat inner;
    const bool checkpoint = ::stat((path + "/config.json").c_str(), &inner) == 0 ||
                            ::stat((path + "/model.bin").c_str(), &inner) == 0;
    KES_CHECK_OR_RETURN(!checkpoint, "'" + path +
                                         "' is a checkpoint folder, not a .kes file; "
                                         "convert it first: kestrel-convert " +
                                         path + " OUT.kes");
    return OkStatus();
  }
  if (!S_ISREG(st.st_mode)) return OkStatus();
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return OkStatus();
  uint8_t head[kKesPreambleBytes];
  size_t n = 0;
  while (n < sizeof(head)) {
    const ssize_t k = ::read(fd, head + n, sizeof(head) - n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    n += static_cast<size_t>(k);
  }
  ::close(fd);
  KES_CHECK_OR_RETURN(n < 4 || std::memcmp(head, "GGUF", 4) != 0,
                      "'" + path +
                          "' is a GGUF file, not a .kes file; convert it first: "
                          "kestrel-convert " +
                          path + " OUT.kes");
  return CheckPreamble(head, n, static_cast<uint64_t>(st.st_size)).WithContext(path);
}

std::string Hex(uint64_t v) {
  char text[19];
  std::snprintf(text, sizeof(text), "0x%016llx", static_cast<unsigned long long>(v));
  return text;
}

}  // namespace

Status Model::Open(const std::string& path, const ModelOpenOptions& options,
                   std::unique_ptr<Model>* out) {
  KES_RETURN_IF_ERROR(CheckFileStart(path));
  std::unique_ptr<MappedFile> mapping;
  KES_RETURN_IF_ERROR(MappedFile::Open(path, &mapping));
  std::unique_ptr<Model> model(new Model());
  model->data_ = mapping->data();
  model->size_ = mapping->size();
  model->mapping_ = std::move(mapping);
  KES_RETURN_IF_ERROR(model->Verify().WithContext(path));
  if (options.verify_weights) KES_RETURN_IF_ERROR(model->VerifyWeights().WithContext(path));
  *out = std::move(model);
  return OkStatus();
}

Status Model::Open(const std::string& path, std::unique_ptr<Model>* out) {
  ModelOpenOptions options;
  const char* verify = std::getenv("KESTREL_VERIFY_WEIGHTS");
  options.verify_weights = verify != nullptr && *verify != '\0' && std::strcmp(verify, "0") != 0;
  return Open(path, options, out);
}

Status Model::VerifyWeights() const {
  const uint64_t bytes = meta_->weights_size();
  KES_CHECK_OR_RETURN(has_weights_checksum(),
                      "the file has no weights checksum (it was converted before kestrel-convert "
                      "recorded one), so its weights cannot be verified: convert the model again "
                      "to add one");
  const uint64_t recorded = *meta_->weights_xxh3();
  const uint64_t found = WeightsChecksum(weights_, bytes);
  KES_CHECK_OR_RETURN(found == recorded,
                      "weights checksum mismatch: the file records XXH3 " + Hex(recorded) +
                          " but its " + Num(bytes) + " bytes of weights hash to " + Hex(found) +
                          ": the file is damaged; copy or convert the model again");
  return OkStatus();
}

Status Model::FromMemory(const uint8_t* data, size_t size, std::unique_ptr<Model>* out) {
  KES_CHECK_OR_RETURN(data != nullptr || size == 0, "model buffer is null");
  KES_CHECK_OR_RETURN(reinterpret_cast<uintptr_t>(data) % kKesAlignment == 0,
                      "model buffer must be 64-byte aligned so weights are aligned");
  std::unique_ptr<Model> model(new Model());
  model->data_ = data;
  model->size_ = size;
  KES_RETURN_IF_ERROR(model->Verify().WithContext("model buffer"));
  *out = std::move(model);
  return OkStatus();
}

Model::~Model() = default;

Status Model::Verify() {
  KES_RETURN_IF_ERROR(CheckPreamble(data_, size_, size_));
  uint32_t fb_size = 0;
  std::memcpy(&fb_size, data_ + 12, 4);
  KES_CHECK_OR_RETURN(fb_size <= size_ - kKesPreambleBytes,
                      "truncated file: header says " + Num(fb_size) +
                          " bytes of metadata but only " + Num(size_ - kKesPreambleBytes) +
                          " follow");
  const uint8_t* fb_data = data_ + kKesPreambleBytes;
  // FlatBuffers reads scalars in place; the preamble keeps the buffer 8-byte aligned.
  flatbuffers::Verifier verifier(fb_data, fb_size, /*max_depth=*/64, /*max_tables=*/10000000);
  KES_CHECK_OR_RETURN(fb::VerifyModelBuffer(verifier),
                      "corrupt metadata: the FlatBuffer failed verification");
  meta_ = fb::GetModel(fb_data);
  KES_CHECK_OR_RETURN(meta_->format_version() == kKesFormatVersion,
                      "metadata format version " + Num(meta_->format_version()) +
                          " does not match the preamble's " + Num(kKesFormatVersion));

  // Weight blob.
  const uint64_t woff = meta_->weights_offset(), wsize = meta_->weights_size();
  KES_CHECK_OR_RETURN(woff % kKesAlignment == 0,
                      "weights offset " + Num(woff) + " is not 64-byte aligned");
  KES_CHECK_OR_RETURN(woff >= kKesPreambleBytes + fb_size,
                      "weights offset " + Num(woff) + " overlaps the metadata");
  KES_CHECK_OR_RETURN(woff <= size_ && wsize <= size_ - woff,
                      "truncated file: weights need bytes [" + Num(woff) + ", " +
                          Num(woff + wsize) + ") but the file has " + Num(size_));
  weights_ = data_ + woff;

  const auto* hp = meta_->hparams();
  KES_CHECK_OR_RETURN(hp != nullptr, "model has no hyper-parameters");
  KES_CHECK_OR_RETURN(meta_->architecture() != nullptr, "model has no architecture name");
  const auto* tensors = meta_->tensors();
  KES_CHECK_OR_RETURN(tensors != nullptr && tensors->size() > 0, "model has no tensors");
  for (uint32_t i = 0; i < tensors->size(); ++i) {
    KES_RETURN_IF_ERROR(CheckTensor(tensors->Get(i), i, wsize));
  }
  vocab_size_ = hp->vocab_size();
  KES_CHECK_OR_RETURN(vocab_size_ > 0, "hyper-parameters: vocab_size is 0");
  KES_RETURN_IF_ERROR(InitTokenizer(meta_->tokenizer(), vocab_size_, &tokenizer_));

  const auto* kv = meta_->kv();
  // An encoder's layout has no layers (FlatBuffers then stores no vector at all).
  KES_CHECK_OR_RETURN(kv != nullptr, "model has no KV-cache layout");
  KES_CHECK_OR_RETURN(kv->dtype() == fb::DType::F32,
                      std::string("KV cache: expected dtype f32, found ") + DTypeName(kv->dtype()));
  const uint32_t n_kv_layers = kv->layers() ? kv->layers()->size() : 0;
  for (uint32_t l = 0; l < n_kv_layers; ++l) {
    const auto* layer = kv->layers()->Get(l);
    KES_CHECK_OR_RETURN(layer->n_kv_heads() > 0 && layer->head_dim() > 0 &&
                            layer->head_dim() <= 1024 && layer->n_kv_heads() <= 4096,
                        "KV layer " + Num(l) + ": expected 1..4096 heads of dim 1..1024, found " +
                            Num(layer->n_kv_heads()) + " x " + Num(layer->head_dim()));
    KES_CHECK_OR_RETURN(
        layer->cross_length() <= 65536 && (layer->cross_length() == 0 || layer->window() == 0),
        "KV layer " + Num(l) +
            ": a cross-attention layer holds 1..65536 "
            "positions and has no window, found cross_length " +
            Num(layer->cross_length()) + ", window " + Num(layer->window()));
  }

  KES_CHECK_OR_RETURN(meta_->plans() != nullptr, "model has no plans");
  is_encoder_ = FindPlan("encode") != nullptr;
  has_audio_encoder_ = FindPlan("encode_audio") != nullptr;
  has_decoder_ = FindPlan("decode") != nullptr;
  KES_CHECK_OR_RETURN(!(is_encoder_ && has_audio_encoder_),
                      "model has both an 'encode' and an 'encode_audio' plan");
  if (is_encoder_) {
    KES_CHECK_OR_RETURN(FindPlan("prefill") == nullptr && !has_decoder_ && n_kv_layers == 0,
                        "model has an 'encode' plan and also decoder plans or a KV cache (text "
                        "encoder-decoders are not supported)");
  } else if (has_audio_encoder_ && !has_decoder_) {
    KES_CHECK_OR_RETURN(FindPlan("prefill") == nullptr && n_kv_layers == 0,
                        "model has an 'encode_audio' plan and a 'prefill' plan or a KV cache but "
                        "no 'decode' plan");
  } else {
    KES_CHECK_OR_RETURN(kv->layers() != nullptr, "model has no KV-cache layers");
    for (const char* required : {"prefill", "decode"}) {
      KES_CHECK_OR_RETURN(FindPlan(required) != nullptr,
                          std::string("model has no '") + required + "' plan (nor 'encode')");
    }
  }
  // The arena's other parts are added after the activations: a damaged size near 2^64 would wrap
  // the sum around to a small arena (found by fuzzing). No model needs a terabyte of activations.
  KES_CHECK_OR_RETURN(meta_->activation_bytes() <= (uint64_t{1} << 40),
                      "activation_bytes is " + std::to_string(meta_->activation_bytes()) +
                          ", expected at most 2^40 (the file is damaged)");
  for (uint32_t p = 0; p < meta_->plans()->size(); ++p) {
    const fb::Plan* plan = meta_->plans()->Get(p);
    KES_RETURN_IF_ERROR(CheckPlan(*meta_, *plan));
    if (plan->max_tokens() > max_step_tokens_) max_step_tokens_ = plan->max_tokens();
  }
  return OkStatus();
}

const fb::Plan* Model::FindPlan(std::string_view name) const {
  for (const fb::Plan* plan : *meta_->plans()) {
    if (plan->name() != nullptr && plan->name()->string_view() == name) return plan;
  }
  return nullptr;
}

const uint8_t* Model::TensorData(uint32_t tensor_id) const {
  return weights_ + meta_->tensors()->Get(tensor_id)->offset();
}

uint64_t Model::parameter_count() const {
  uint64_t total = 0;
  for (const fb::Tensor* t : *meta_->tensors()) {
    uint64_t elements = 1;
    for (uint64_t dim : *t->shape()) elements *= dim;
    total += elements;
  }
  return total;
}

}  // namespace kestrel
