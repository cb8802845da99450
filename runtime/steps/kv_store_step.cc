// KvStore: the step's keys and values into their layer's ring, position p at slot p % capacity.
#include <cstring>

#include "runtime/steps/steps.h"

namespace kestrel {
namespace {

struct KvStoreArgs {
  const float* k;  // [tokens, row]
  const float* v;  // [tokens, row]
  float* k_ring;   // [capacity, row]
  float* v_ring;   // [capacity, row]
  size_t row, capacity;
};

void Run(const void* args, size_t n, int64_t pos0, size_t, size_t) {
  const auto& a = *static_cast<const KvStoreArgs*>(args);
  for (size_t t = 0; t < n; ++t) {
    const size_t slot = static_cast<size_t>(pos0 + static_cast<int64_t>(t)) % a.capacity;
    std::memcpy(a.k_ring + slot * a.row, a.k + t * a.row, a.row * sizeof(float));
    std::memcpy(a.v_ring + slot * a.row, a.v + t * a.row, a.row * sizeof(float));
  }
}

Status Check(const OpCheck& c) {
  const fb::KvLayer* kv = nullptr;
  KES_RETURN_IF_ERROR(c.KvLayer(c.op().params_as_KvStore()->layer(), &kv));
  const uint64_t row = uint64_t{kv->n_kv_heads()} * kv->head_dim();
  KES_RETURN_IF_ERROR(c.Activation(c.In(0), row, "keys"));
  return c.Activation(c.In(1), row, "values");
}

void Bind(const BindContext& b, Step* step) {
  const KvRingPlan& ring = b.memory().kv[b.op().params_as_KvStore()->layer()];
  KvStoreArgs a{};
  a.k = reinterpret_cast<const float*>(b.In(0));
  a.v = reinterpret_cast<const float*>(b.In(1));
  a.k_ring = reinterpret_cast<float*>(b.arena() + ring.k_offset);
  a.v_ring = reinterpret_cast<float*>(b.arena() + ring.v_offset);
  a.row = ring.row_elems;
  a.capacity = ring.capacity;
  step->Set(Run, Parallelism::kSerial, a);
}

}  // namespace

const OpKind kKvStoreOp = {fb::OpParams::KvStore, 2, 0, 0, 0, Check, Bind};

}  // namespace kestrel
