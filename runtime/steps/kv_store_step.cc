// KvStore: the step's keys and values into their layer's rings, in the session's KV type
// (ops/kv_layout.h), position p at slot ops::KvSlot(p, capacity, sinks).
#include <cstring>

#include "ops/kv_encode.h"
#include "ops/kv_layout.h"
#include "runtime/steps/steps.h"

namespace kestrel {
namespace {

struct KvStoreArgs {
  const float* k;   // [tokens, n_kv_heads * head_dim]
  const float* v;   // [tokens, n_kv_heads * head_dim]
  uint8_t* k_ring;  // [n_kv_heads, capacity, head_dim] of type
  uint8_t* v_ring;
  float* k_scales;  // int8: [n_kv_heads, capacity, head_dim / 32]
  float* v_scales;
  ops::KvType type;
  decltype(&ops::KvEncodeF16) encode_f16;
  decltype(&ops::KvEncodeInt8) encode_int8;
  size_t n_kv_heads, head_dim, capacity, sinks;
};

// One token's row of n_kv_heads * head_dim values into `slot`: each head to its own run of slots.
void StoreRow(const KvStoreArgs& a, const float* in, uint8_t* ring, float* scales, size_t slot) {
  for (size_t h = 0; h < a.n_kv_heads; ++h) {
    const size_t first = ops::KvHeadSlot(h, slot, a.capacity, a.head_dim);
    const float* head = in + h * a.head_dim;
    uint8_t* out = ring + ops::KvRowBytes(a.type, first);
    switch (a.type) {
      case ops::KvType::kF16:
        a.encode_f16(head, a.head_dim, reinterpret_cast<hwy::float16_t*>(out));
        break;
      case ops::KvType::kInt8:
        a.encode_int8(head, a.head_dim, reinterpret_cast<int8_t*>(out),
                      scales + first / ops::kKvInt8Block);
        break;
      default: std::memcpy(out, head, a.head_dim * sizeof(float));
    }
  }
}

void Run(const void* args, size_t n, int64_t pos0, size_t, size_t) {
  const auto& a = *static_cast<const KvStoreArgs*>(args);
  for (size_t t = 0; t < n; ++t) {
    const size_t slot = ops::KvSlot(pos0 + static_cast<int64_t>(t), a.capacity, a.sinks);
    StoreRow(a, a.k + t * a.n_kv_heads * a.head_dim, a.k_ring, a.k_scales, slot);
    StoreRow(a, a.v + t * a.n_kv_heads * a.head_dim, a.v_ring, a.v_scales, slot);
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
  a.k_ring = b.arena() + ring.k_offset;
  a.v_ring = b.arena() + ring.v_offset;
  a.type = b.memory().kv_options.type;
  a.encode_f16 = ops::ResolveKvEncodeF16();
  a.encode_int8 = ops::ResolveKvEncodeInt8();
  if (a.type == ops::KvType::kInt8) {
    a.k_scales = reinterpret_cast<float*>(b.arena() + ring.k_scale_offset);
    a.v_scales = reinterpret_cast<float*>(b.arena() + ring.v_scale_offset);
  }
  a.head_dim = ring.head_dim;
  a.n_kv_heads = ring.row_elems / ring.head_dim;
  a.capacity = ring.capacity;
  a.sinks = ring.sinks;
  step->Set(Run, Parallelism::kSerial, a);
}

}  // namespace

const OpKind kKvStoreOp = OpKind(fb::OpParams::KvStore, Check, Bind).Operands(2, 0).UsesKv();

}  // namespace kestrel
