#include "runtime/weights_checksum.h"

// Header-only: nothing to link, which keeps the cross and static builds simple.
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace kestrel {

struct WeightsHasher::State {
  XXH3_state_t xxh;
};

uint64_t WeightsChecksum(const uint8_t* data, size_t size) { return XXH3_64bits(data, size); }

WeightsHasher::WeightsHasher() : state_(new State) { XXH3_64bits_reset(&state_->xxh); }

WeightsHasher::~WeightsHasher() = default;

void WeightsHasher::Update(const void* data, size_t size) {
  if (size > 0) XXH3_64bits_update(&state_->xxh, data, size);
}

void WeightsHasher::UpdateZeros(uint64_t count) {
  static const uint8_t kZeros[4096] = {};
  while (count > 0) {
    const size_t n = count < sizeof(kZeros) ? static_cast<size_t>(count) : sizeof(kZeros);
    XXH3_64bits_update(&state_->xxh, kZeros, n);
    count -= n;
  }
}

uint64_t WeightsHasher::Digest() const { return XXH3_64bits_digest(&state_->xxh); }

}  // namespace kestrel
