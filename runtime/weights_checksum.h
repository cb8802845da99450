// The checksum of a .kes file's weight blob: XXH3-64 (xxHash, Debian libxxhash-dev) of the bytes
// [weights_offset, weights_offset + weights_size), padding included. kestrel-convert stores it in
// the FlatBuffer (Model.weights_xxh3); `kestrel inspect --verify` and Model::Open with
// verify_weights recompute it. XXH3 hashes at memory speed (tens of GB/s), so checking costs
// little more than reading the weights once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace kestrel {

uint64_t WeightsChecksum(const uint8_t* data, size_t size);

// The same hash over bytes given piece by piece (the converter hashes tensors and padding
// without assembling the blob).
class WeightsHasher {
 public:
  WeightsHasher();
  ~WeightsHasher();
  WeightsHasher(const WeightsHasher&) = delete;
  WeightsHasher& operator=(const WeightsHasher&) = delete;

  void Update(const void* data, size_t size);
  void UpdateZeros(uint64_t count);
  uint64_t Digest() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace kestrel
