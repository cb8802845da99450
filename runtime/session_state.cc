#include "runtime/session_state.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>

#include "ops/kv_layout.h"
#include "runtime/session.h"
#include "runtime/weights_checksum.h"

namespace kestrel {
namespace {

constexpr size_t kChecksummedFrom = offsetof(StateHeader, total_bytes);

std::string Hex(uint64_t v) {
  char text[24];
  std::snprintf(text, sizeof(text), "0x%016" PRIx64, v);
  return text;
}

// The bytes one ring holds for the positions in use.
size_t RingStateBytes(const KvRingPlan& ring, ops::KvType type, size_t position) {
  const size_t used = std::min(position, ring.capacity);
  return 2 * used *
         (ops::KvRowBytes(type, ring.row_elems) + ops::KvRowScaleBytes(type, ring.row_elems));
}

size_t PayloadBytes(const MemoryPlan& memory, size_t position, size_t vocab) {
  size_t bytes = 0;
  for (const KvRingPlan& ring : memory.kv) {
    if (!ring.cross) bytes += RingStateBytes(ring, memory.kv_options.type, position);
  }
  return bytes + vocab * sizeof(float);
}

uint32_t SelfLayers(const MemoryPlan& memory) {
  uint32_t n = 0;
  for (const KvRingPlan& ring : memory.kv) n += ring.cross ? 0 : 1;
  return n;
}

// Copies one ring's slots in use between the arena and the state, in the format's order: the
// keys slot by slot (each slot's kv heads in order), the values, then int8's key and value
// scales likewise. The arena holds each kv head's slots together (ops/kv_layout.h); the state
// keeps the slot-major order it has always had.
template <typename Copy>
void ForEachRingBlock(const KvRingPlan& ring, ops::KvType type, size_t position, Copy copy) {
  const size_t used = std::min(position, ring.capacity);
  const size_t n_kv_heads = ring.row_elems / ring.head_dim;
  // bytes_of: values' or scales' bytes for a count of values (KvRowBytes, KvRowScaleBytes).
  const auto copy_slots = [&](size_t offset, size_t (*bytes_of)(ops::KvType, size_t)) {
    for (size_t slot = 0; slot < used; ++slot) {
      for (size_t h = 0; h < n_kv_heads; ++h) {
        const size_t first = ops::KvHeadSlot(h, slot, ring.capacity, ring.head_dim);
        copy(offset + bytes_of(type, first), bytes_of(type, ring.head_dim));
      }
    }
  };
  copy_slots(ring.k_offset, ops::KvRowBytes);
  copy_slots(ring.v_offset, ops::KvRowBytes);
  if (type == ops::KvType::kInt8) {
    copy_slots(ring.k_scale_offset, ops::KvRowScaleBytes);
    copy_slots(ring.v_scale_offset, ops::KvRowScaleBytes);
  }
}

std::string Errno(const std::string& what, int error) { return what + ": " + std::strerror(error); }

}  // namespace

uint64_t ModelIdentity(const Model& model) {
  if (model.has_weights_checksum()) return *model.meta().weights_xxh3();
  const fb::HyperParams& hp = model.hparams();
  const uint64_t shape[] = {model.file_bytes(), model.weights_bytes(), model.vocab_size(),
                            hp.n_layers(),      hp.d_model(),          hp.context_length()};
  return WeightsChecksum(reinterpret_cast<const uint8_t*>(shape), sizeof(shape));
}

size_t Session::StateBytes(int32_t pending) const {
  const size_t vocab = pending < 0 && position_ > 0 ? vocab_size() : 0;
  return sizeof(StateHeader) + PayloadBytes(memory_, position_, vocab);
}

Status Session::SaveState(const SequenceExtras& extras, uint8_t* out, size_t capacity,
                          size_t* size) const {
  const int32_t pending = extras.pending;
  KES_CHECK_OR_RETURN(!has_cross_,
                      "the state of an encoder-decoder session (its "
                      "cross-attention keys) cannot be saved");
  KES_CHECK_OR_RETURN(pending >= -1 && (pending < 0 || static_cast<size_t>(pending) < vocab_size()),
                      "pending token: expected -1 or an id below " + std::to_string(vocab_size()) +
                          ", found " + std::to_string(pending));
  const size_t total = StateBytes(pending);
  *size = total;
  KES_CHECK_OR_RETURN(out != nullptr && capacity >= total,
                      "the state is " + std::to_string(total) + " bytes, the buffer holds " +
                          std::to_string(out == nullptr ? 0 : capacity));
  StateHeader h;
  std::memset(&h, 0, sizeof(h));
  std::memcpy(h.magic, kStateMagic, sizeof(h.magic));
  h.format_version = kStateFormatVersion;
  h.header_bytes = sizeof(StateHeader);
  h.total_bytes = total;
  h.model_id = ModelIdentity(model_);
  h.context_length = memory_.context_length;
  h.sinks = memory_.kv_options.sinks;
  h.position = position_;
  h.vocab = pending < 0 && position_ > 0 ? vocab_size() : 0;
  h.kv_type = static_cast<uint32_t>(memory_.kv_options.type);
  h.n_layers = SelfLayers(memory_);
  h.pending = pending;
  h.byte_order = kStateByteOrder;
  h.sampler_ready = extras.sampler_ready ? 1 : 0;
  h.temperature = extras.sampler.temperature;
  h.top_k = extras.sampler.top_k;
  h.top_p = extras.sampler.top_p;
  h.seed = extras.sampler.seed;
  h.sampler_random = extras.sampler_random;
  size_t at = sizeof(StateHeader);
  const uint8_t* arena = arena_.data();
  for (const KvRingPlan& ring : memory_.kv) {
    if (ring.cross) continue;
    ForEachRingBlock(ring, memory_.kv_options.type, position_, [&](size_t offset, size_t n) {
      if (n > 0) std::memcpy(out + at, arena + offset, n);
      at += n;
    });
  }
  if (h.vocab > 0) {
    KES_CHECK_OR_RETURN(logits_ != nullptr, "the session has no logits to save");
    std::memcpy(out + at, logits_, h.vocab * sizeof(float));
    at += h.vocab * sizeof(float);
  }
  std::memcpy(out, &h, sizeof(h));
  h.checksum = WeightsChecksum(out + kChecksummedFrom, total - kChecksummedFrom);
  std::memcpy(out, &h, sizeof(h));
  return OkStatus();
}

Status Session::LoadState(const uint8_t* data, size_t size, SequenceExtras* extras) {
  KES_CHECK_OR_RETURN(!has_cross_, "the state of an encoder-decoder session cannot be loaded");
  KES_CHECK_OR_RETURN(data != nullptr, "the state is NULL");
  KES_CHECK_OR_RETURN(size >= sizeof(StateHeader),
                      "the state is cut short: " + std::to_string(size) + " bytes, less than its " +
                          std::to_string(sizeof(StateHeader)) + "-byte header");
  StateHeader h;
  std::memcpy(&h, data, sizeof(h));
  KES_CHECK_OR_RETURN(std::memcmp(h.magic, kStateMagic, sizeof(h.magic)) == 0,
                      "not a Kestrel session state (expected it to start with 'KESSTATE')");
  KES_CHECK_OR_RETURN(h.byte_order == kStateByteOrder,
                      "the state was saved on a machine of the other byte order");
  KES_CHECK_OR_RETURN(h.format_version == kStateFormatVersion,
                      "the state is of format version " + std::to_string(h.format_version) +
                          ", this library reads version " + std::to_string(kStateFormatVersion));
  KES_CHECK_OR_RETURN(h.header_bytes == sizeof(StateHeader),
                      "the state header is " + std::to_string(h.header_bytes) +
                          " bytes, expected " + std::to_string(sizeof(StateHeader)));
  KES_CHECK_OR_RETURN(size >= h.total_bytes, "the state is cut short: expected " +
                                                 std::to_string(h.total_bytes) + " bytes, found " +
                                                 std::to_string(size));
  KES_CHECK_OR_RETURN(size == h.total_bytes, "expected a state of " +
                                                 std::to_string(h.total_bytes) + " bytes, found " +
                                                 std::to_string(size) + " (bytes after its end)");
  const uint64_t checksum = WeightsChecksum(data + kChecksummedFrom, size - kChecksummedFrom);
  KES_CHECK_OR_RETURN(checksum == h.checksum, "the state is damaged: its checksum is " +
                                                  Hex(checksum) + ", expected " + Hex(h.checksum));
  const uint64_t model_id = ModelIdentity(model_);
  KES_CHECK_OR_RETURN(h.model_id == model_id, "the state was saved from another model (weights " +
                                                  Hex(h.model_id) + "; this session's model is " +
                                                  Hex(model_id) + ")");
  KES_CHECK_OR_RETURN(h.context_length == memory_.context_length,
                      "the state was saved by a session with a context of " +
                          std::to_string(h.context_length) + " tokens; this session's is " +
                          std::to_string(memory_.context_length) + " (make it with the same)");
  const auto kv_type = static_cast<uint32_t>(memory_.kv_options.type);
  KES_CHECK_OR_RETURN(
      h.kv_type == kv_type,
      std::string("the state was saved by a session with a ") +
          (h.kv_type <= 2 ? ops::KvTypeName(static_cast<ops::KvType>(h.kv_type)) : "unknown") +
          " KV cache; this session's is " + ops::KvTypeName(memory_.kv_options.type) +
          " (make it with the same)");
  KES_CHECK_OR_RETURN(h.sinks == memory_.kv_options.sinks,
                      "the state was saved by a session with " + std::to_string(h.sinks) +
                          " attention sinks; this session has " +
                          std::to_string(memory_.kv_options.sinks) + " (make it with the same)");
  KES_CHECK_OR_RETURN(h.n_layers == SelfLayers(memory_),
                      "the state holds " + std::to_string(h.n_layers) + " layers, the model " +
                          std::to_string(SelfLayers(memory_)));
  KES_CHECK_OR_RETURN(
      h.pending >= -1 && (h.pending < 0 || static_cast<uint64_t>(h.pending) < vocab_size()),
      "the state's pending token " + std::to_string(h.pending) + " is not an id of the vocabulary");
  KES_CHECK_OR_RETURN(
      h.sampler_ready <= 1,
      "the state's sampler flag is " + std::to_string(h.sampler_ready) + ", expected 0 or 1");
  if (h.sampler_ready == 1) {
    Sampler probe;  // the options a sampler accepts, so the caller's Init after this succeeds
    const Status sampler = probe.Init(SamplerOptions{h.temperature, h.top_k, h.top_p, h.seed},
                                      vocab_size(), sampler_scratch(), memory_.sampler_bytes);
    KES_CHECK_OR_RETURN(sampler.ok(), "the state's sampler: " + sampler.message());
  }
  const uint64_t vocab = h.pending < 0 && h.position > 0 ? vocab_size() : 0;
  KES_CHECK_OR_RETURN(h.vocab == vocab, "the state's logits are " + std::to_string(h.vocab) +
                                            " floats, expected " + std::to_string(vocab));
  // A wrapped position is checked through the sizes: every ring's use is min(position, capacity).
  const size_t position = h.position > (uint64_t{1} << 48) ? 0 : static_cast<size_t>(h.position);
  KES_CHECK_OR_RETURN(h.position == position &&
                          sizeof(StateHeader) + PayloadBytes(memory_, position, vocab) == size,
                      "the state's position " + std::to_string(h.position) +
                          " does not match its size of " + std::to_string(size) + " bytes");

  size_t at = sizeof(StateHeader);
  uint8_t* arena = arena_.data();
  for (const KvRingPlan& ring : memory_.kv) {
    if (ring.cross) continue;
    ForEachRingBlock(ring, memory_.kv_options.type, position, [&](size_t offset, size_t n) {
      if (n > 0) std::memcpy(arena + offset, data + at, n);
      at += n;
    });
  }
  // The decode plan's logits row is scratch until its next run: the restored logits wait there.
  auto* logits = reinterpret_cast<float*>(decode_.Io(fb::IoRole::Logits));
  if (vocab > 0) std::memcpy(logits, data + at, vocab * sizeof(float));
  logits_ = logits;
  position_ = position;
  ++sequence_version_;
  extras->pending = h.pending;
  extras->sampler_ready = h.sampler_ready != 0;
  extras->sampler = SamplerOptions{h.temperature, h.top_k, h.top_p, h.seed};
  extras->sampler_random = h.sampler_random;
  return OkStatus();
}

Status WriteFileAtomically(const std::string& path, const uint8_t* data, size_t size) {
  const size_t slash = path.rfind('/');
  const std::string folder = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  KES_CHECK_OR_RETURN(!base.empty(), "'" + path + "' names a folder, expected a file");
  std::string temp = (slash == std::string::npos ? "" : folder) + "." + base + ".XXXXXX";
  const int fd = ::mkstemp(&temp[0]);
  if (fd < 0)
    return Status::Error(Errno("cannot create a file in the folder of '" + path + "'", errno));
  size_t done = 0;
  int error = 0;
  while (done < size && error == 0) {
    const ssize_t n = ::write(fd, data + done, size - done);
    if (n < 0 && errno != EINTR) error = errno;
    if (n > 0) done += static_cast<size_t>(n);
  }
  if (error == 0 && ::fsync(fd) != 0) error = errno;
  if (::close(fd) != 0 && error == 0) error = errno;
  if (error == 0 && ::rename(temp.c_str(), path.c_str()) != 0) error = errno;
  if (error != 0) {
    ::unlink(temp.c_str());
    return Status::Error(Errno("cannot write '" + path + "'", error));
  }
  // The rename itself survives a power cut once the folder is synced.
  const int dir = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
  return OkStatus();
}

Status ReadWholeFile(const std::string& path, std::vector<uint8_t>* out) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return Status::Error(Errno("cannot open '" + path + "'", errno));
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::Error("'" + path + "' is not a regular file");
  }
  out->resize(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < out->size()) {
    const ssize_t n = ::read(fd, out->data() + done, out->size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = n < 0 ? errno : 0;
      ::close(fd);
      return Status::Error(error != 0 ? Errno("cannot read '" + path + "'", error)
                                      : "'" + path + "' changed size while being read");
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  return OkStatus();
}

}  // namespace kestrel
