// Highway body of the fused attention op (see ops/attention.h for the contract).
//
// Per pass, up to kAttentionMaxQueriesPerPass query heads of one row that share a kv head are
// processed together, so every key and value row is read once for all of them (GQA/MQA decode is
// bound by reading the KV cache). A pass walks the visible positions [lo, p] in blocks of at most
// block_keys keys; a block never straddles the ring's wrap, so its keys are one contiguous run of
// slots. Per block and query, the streaming softmax does:
//   s_j = scale * q.k_j;  m' = max(m, max_j s_j);  c = exp(m - m');  w_j = exp(s_j - m')
//   l = c * l + sum_j w_j;  o = c * o + sum_j w_j * v_j;  m = m'
// and finally out = o / l. Every exponent is <= 0, so nothing overflows whatever the scores'
// magnitude; m starts at -inf, which makes the first block's c exactly 0. The walk restarts that
// state at each partition (ops/attention.h) and folds the partitions' states in order
// (AttentionFold), which is what lets a decode step split one query's keys across threads.
//
// The exps of the scores use hwy/contrib/math Exp (1 ULP, vectorized): for small head_dim they
// are a sizable share of the work. The one correction factor per block and query uses std::exp.
// When the visible KV cache is too large to stay in the last-level cache, a block's value rows are
// prefetched while its scores are computed: the accumulation reads them in vector-wide slices
// across rows, which the hardware prefetchers follow poorly from DRAM. On cached data the
// prefetches cost more than they save. Measured on Zen (32 MiB L3), decode at Gemma 3's shape:
// prefetching takes 15-35% less time at 16-64 MiB of KV and 25-40% more at 1-8 MiB.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "ops/attention.h"
#include "ops/kv_layout.h"
#include "ops/rope.h"

// Toggle include guard: foreach_target re-includes this file once per target.
#if defined(KESTREL_OPS_ATTENTION_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KESTREL_OPS_ATTENTION_INL_H_
#undef KESTREL_OPS_ATTENTION_INL_H_
#else
#define KESTREL_OPS_ATTENTION_INL_H_
#endif

#include <hwy/cache_control.h>
#include <hwy/contrib/math/math-inl.h>
#include <hwy/highway.h>

#include "ops/broadcast_fma-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kestrel::ops::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Query heads sharing a kv head that one pass processes together (Gemma 3: 4 heads per kv head).
inline constexpr size_t kAttentionMaxQueriesPerPass = 4;
// Upper bound of block_keys, which sizes the stack arrays of block weights.
inline constexpr size_t kAttentionMaxBlockKeys = 256;
// Visible K+V bytes (all kv heads) above which value rows are prefetched; see the top comment.
inline constexpr size_t kAttentionPrefetchMinBytes = size_t{12} << 20;
// Exp runs on whole vectors; the block weights have room for one vector past the last key.
inline constexpr size_t kAttentionBlockPadding = HWY_MAX_BYTES / sizeof(float);

// Per-query rows of block weights (scores, then their exps) and of running outputs.
using AttentionWeights = float (*HWY_RESTRICT)[kAttentionMaxBlockKeys + kAttentionBlockPadding];
using AttentionOutputs = float* const*;

// Where the current block's keys and values live, shared by the queries of one pass.
struct AttentionKvView {
  const float* HWY_RESTRICT k;  // key of the block's first position; key j at k + j * head_dim
  const float* HWY_RESTRICT v;  // same layout
  size_t head_dim;
  bool prefetch_values;  // whether the values come from DRAM and are worth prefetching
};

// Vectors are sizeless on SVE and cannot live in arrays, so the up-to-4 queries of a pass get
// named accumulators; `if constexpr` drops the unused ones.

// acc_a += q * key_a and, for two keys, acc_b += q * key_b: one load of q serves both keys.
template <size_t kKeys, class D, class V>
HWY_INLINE void AttentionDotStep(D d, const float* HWY_RESTRICT q, V key_a, V key_b, V& acc_a,
                                 V& acc_b) {
  const V qv = hn::LoadU(d, q);
  acc_a = hn::MulAdd(qv, key_a, acc_a);
  if constexpr (kKeys > 1) acc_b = hn::MulAdd(qv, key_b, acc_b);
}

// Sum of the lanes plus the scalar tail q[x, head_dim) . k[x, head_dim), times scale. The tail is
// scalar because Highway 1.0.3 has no LoadN and a full load would read past the ring's last row.
template <class D, class V>
HWY_INLINE float AttentionFinishDot(D d, V acc, const float* HWY_RESTRICT q,
                                    const float* HWY_RESTRICT k, size_t x, size_t head_dim,
                                    float scale) {
  float dot = hn::GetLane(hn::SumOfLanes(d, acc));
  for (; x < head_dim; ++x) dot += q[x] * k[x];
  return dot * scale;
}

// weights[i][j + key] = scale * q_i . k_{j + key} for kKeys (1 or 2) keys starting at `k`. Two
// keys at a time give each loaded query vector two FMAs and 2 * kQueries independent chains.
template <size_t kQueries, size_t kKeys>
HWY_INLINE void AttentionKeyScores(const float* const* HWY_RESTRICT q, const float* HWY_RESTRICT k,
                                   const AttentionKvView& kv, float scale, size_t j,
                                   AttentionWeights weights) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  const size_t head_dim = kv.head_dim;
  const size_t vec_end = head_dim / N * N;
  const float* HWY_RESTRICT k2 = k + kv.head_dim;  // read only when kKeys == 2
  auto a0 = hn::Zero(d), a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0, b3 = a0;
  for (size_t x = 0; x < vec_end; x += N) {
    const auto key_a = hn::LoadU(d, k + x);
    auto key_b = key_a;
    if constexpr (kKeys > 1) key_b = hn::LoadU(d, k2 + x);
    AttentionDotStep<kKeys>(d, q[0] + x, key_a, key_b, a0, b0);
    if constexpr (kQueries > 1) AttentionDotStep<kKeys>(d, q[1] + x, key_a, key_b, a1, b1);
    if constexpr (kQueries > 2) AttentionDotStep<kKeys>(d, q[2] + x, key_a, key_b, a2, b2);
    if constexpr (kQueries > 3) AttentionDotStep<kKeys>(d, q[3] + x, key_a, key_b, a3, b3);
  }
  weights[0][j] = AttentionFinishDot(d, a0, q[0], k, vec_end, head_dim, scale);
  if constexpr (kQueries > 1)
    weights[1][j] = AttentionFinishDot(d, a1, q[1], k, vec_end, head_dim, scale);
  if constexpr (kQueries > 2)
    weights[2][j] = AttentionFinishDot(d, a2, q[2], k, vec_end, head_dim, scale);
  if constexpr (kQueries > 3)
    weights[3][j] = AttentionFinishDot(d, a3, q[3], k, vec_end, head_dim, scale);
  if constexpr (kKeys > 1) {
    weights[0][j + 1] = AttentionFinishDot(d, b0, q[0], k2, vec_end, head_dim, scale);
    if constexpr (kQueries > 1)
      weights[1][j + 1] = AttentionFinishDot(d, b1, q[1], k2, vec_end, head_dim, scale);
    if constexpr (kQueries > 2)
      weights[2][j + 1] = AttentionFinishDot(d, b2, q[2], k2, vec_end, head_dim, scale);
    if constexpr (kQueries > 3)
      weights[3][j + 1] = AttentionFinishDot(d, b3, q[3], k2, vec_end, head_dim, scale);
  }
}

// Requests the value row at v into the caches, so the accumulation that follows the scores finds
// the block's values there instead of missing on each of its strided slices.
HWY_INLINE void AttentionPrefetchRow(const float* HWY_RESTRICT v, size_t head_dim) {
  constexpr size_t kLineFloats = 64 / sizeof(float);
  for (size_t x = 0; x < head_dim; x += kLineFloats) hwy::Prefetch(v + x);
}

// weights[i][j] = scale * q_i . k_j for the block's n keys.
template <size_t kQueries>
HWY_INLINE void AttentionBlockScores(const float* const* HWY_RESTRICT q, const AttentionKvView& kv,
                                     size_t n, float scale, AttentionWeights weights) {
  size_t j = 0;
  for (; j + 2 <= n; j += 2) {
    if (kv.prefetch_values) {
      AttentionPrefetchRow(kv.v + j * kv.head_dim, kv.head_dim);
      AttentionPrefetchRow(kv.v + (j + 1) * kv.head_dim, kv.head_dim);
    }
    AttentionKeyScores<kQueries, 2>(q, kv.k + j * kv.head_dim, kv, scale, j, weights);
  }
  if (j < n) {
    if (kv.prefetch_values) AttentionPrefetchRow(kv.v + j * kv.head_dim, kv.head_dim);
    AttentionKeyScores<kQueries, 1>(q, kv.k + j * kv.head_dim, kv, scale, j, weights);
  }
}

// row[j] = cap * tanh(row[j] / cap) for j < n. A scalar tail rather than whole vectors: the lanes
// past n are not written yet.
HWY_INLINE void AttentionSoftCap(float* HWY_RESTRICT row, size_t n, float cap) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  const auto vcap = hn::Set(d, cap), inv_cap = hn::Set(d, 1.0f / cap);
  size_t j = 0;
  for (; j + N <= n; j += N) {
    hn::Store(hn::Mul(hn::Tanh(d, hn::Mul(hn::Load(d, row + j), inv_cap)), vcap), d, row + j);
  }
  for (; j < n; ++j) row[j] = cap * std::tanh(row[j] * (1.0f / cap));
}

// Replaces row[0, n) (scores) by exp(row[j] - max) and returns their sum.
HWY_INLINE float AttentionExpShifted(float* HWY_RESTRICT row, size_t n, float max) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  // Lanes past n get -inf, whose clamped exp is 0, so they add nothing to the sum.
  for (size_t j = n; j < hwy::RoundUpTo(n, N); ++j)
    row[j] = -std::numeric_limits<float>::infinity();
  // exp underflows to 0 below -104; the clamp keeps the integer conversion inside Exp in range
  // for any score difference, infinite ones included.
  const auto lowest = hn::Set(d, -120.0f);
  const auto vmax = hn::Set(d, max);
  auto sum = hn::Zero(d);
  for (size_t j = 0; j < n; j += N) {
    const auto w = hn::Exp(d, hn::Max(hn::Sub(hn::Load(d, row + j), vmax), lowest));
    hn::Store(w, d, row + j);
    sum = hn::Add(sum, w);
  }
  return hn::GetLane(hn::SumOfLanes(d, sum));
}

// a = correction * o[x, x + N) and, for two slices, c = correction * o[x + N, x + 2N).
template <size_t kSlices, class D, class V>
HWY_INLINE void AttentionLoadSlices(D d, const float* HWY_RESTRICT o, float correction, V& a,
                                    V& c) {
  const V factor = hn::Set(d, correction);
  a = hn::Mul(hn::Load(d, o), factor);
  if constexpr (kSlices > 1) c = hn::Mul(hn::Load(d, o + hn::Lanes(d)), factor);
}

template <size_t kSlices, class D, class V>
HWY_INLINE void AttentionStoreSlices(D d, V a, V c, float* HWY_RESTRICT o) {
  hn::Store(a, d, o);
  if constexpr (kSlices > 1) hn::Store(c, d, o + hn::Lanes(d));
}

// o_i[x, x + kSlices * N) = correction_i * o_i[...] + sum_j weights[i][j] * v_j[...]. The slices
// of the outputs stay in registers while the block's values stream past them; each value vector
// is loaded once for all queries and each broadcast weight serves kSlices FMAs.
template <size_t kQueries, size_t kSlices>
HWY_INLINE void AttentionAccumulateSlices(const AttentionKvView& kv, size_t n,
                                          AttentionWeights weights,
                                          const float* HWY_RESTRICT correction, AttentionOutputs o,
                                          size_t x) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  auto a0 = hn::Zero(d), a1 = a0, a2 = a0, a3 = a0, c0 = a0, c1 = a0, c2 = a0, c3 = a0;
  AttentionLoadSlices<kSlices>(d, o[0] + x, correction[0], a0, c0);
  if constexpr (kQueries > 1) AttentionLoadSlices<kSlices>(d, o[1] + x, correction[1], a1, c1);
  if constexpr (kQueries > 2) AttentionLoadSlices<kSlices>(d, o[2] + x, correction[2], a2, c2);
  if constexpr (kQueries > 3) AttentionLoadSlices<kSlices>(d, o[3] + x, correction[3], a3, c3);
  const float* HWY_RESTRICT v = kv.v + x;
  for (size_t j = 0; j < n; ++j, v += kv.head_dim) {
    const auto value_a = hn::LoadU(d, v);
    auto value_c = value_a;
    if constexpr (kSlices > 1) value_c = hn::LoadU(d, v + N);
    BroadcastFmaStep<kSlices>(d, weights[0][j], value_a, value_c, a0, c0);
    if constexpr (kQueries > 1)
      BroadcastFmaStep<kSlices>(d, weights[1][j], value_a, value_c, a1, c1);
    if constexpr (kQueries > 2)
      BroadcastFmaStep<kSlices>(d, weights[2][j], value_a, value_c, a2, c2);
    if constexpr (kQueries > 3)
      BroadcastFmaStep<kSlices>(d, weights[3][j], value_a, value_c, a3, c3);
  }
  AttentionStoreSlices<kSlices>(d, a0, c0, o[0] + x);
  if constexpr (kQueries > 1) AttentionStoreSlices<kSlices>(d, a1, c1, o[1] + x);
  if constexpr (kQueries > 2) AttentionStoreSlices<kSlices>(d, a2, c2, o[2] + x);
  if constexpr (kQueries > 3) AttentionStoreSlices<kSlices>(d, a3, c3, o[3] + x);
}

// o_i = correction_i * o_i + sum_j weights[i][j] * v_j over the whole head_dim: pairs of vector
// slices, at most one single slice, then a scalar tail.
template <size_t kQueries>
HWY_INLINE void AttentionBlockAccumulate(const AttentionKvView& kv, size_t n,
                                         AttentionWeights weights,
                                         const float* HWY_RESTRICT correction, AttentionOutputs o) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  const size_t head_dim = kv.head_dim;
  size_t x = 0;
  for (; x + 2 * N <= head_dim; x += 2 * N) {
    AttentionAccumulateSlices<kQueries, 2>(kv, n, weights, correction, o, x);
  }
  if (x + N <= head_dim) {
    AttentionAccumulateSlices<kQueries, 1>(kv, n, weights, correction, o, x);
    x += N;
  }
  for (; x < head_dim; ++x) {
    for (size_t i = 0; i < kQueries; ++i) {
      float acc = o[i][x] * correction[i];
      for (size_t j = 0; j < n; ++j) acc += weights[i][j] * kv.v[j * kv.head_dim + x];
      o[i][x] = acc;
    }
  }
}

// (token, head) queries of one kv head that walk the keys together, so each key and value block
// is read (and, for f16 and int8, converted) once per query block rather than once per query.
inline constexpr size_t kAttentionMaxBlockQueries = 16;
// Running outputs of a query block, on the stack: kAttentionMaxBlockQueries rows up to
// head_dim 512, fewer beyond.
inline constexpr size_t kAttentionOutputFloats = 8192;
// f16 and int8 key and value blocks are converted to f32 in stack tiles of this many floats.
inline constexpr size_t kAttentionTileFloats = 8192;

// The queries of a block: the softmax state of the partition being walked (o, m, l) and the
// state folded from the partitions before it (merged_m, merged_l, with the output in out).
struct AttentionQueryBlock {
  size_t n = 0;
  const float* q[kAttentionMaxBlockQueries];
  float* out[kAttentionMaxBlockQueries];
  int64_t pos[kAttentionMaxBlockQueries];
  float* o[kAttentionMaxBlockQueries];
  float m[kAttentionMaxBlockQueries];
  float l[kAttentionMaxBlockQueries];
  float merged_m[kAttentionMaxBlockQueries];
  float merged_l[kAttentionMaxBlockQueries];
};

// Queries [first, first + kQueries) of the block over n keys at positions key_pos.. (kv): scores,
// the mask, the streaming-softmax update and the weighted values.
template <size_t kQueries>
HWY_INLINE void AttentionPassBlock(const AttentionArgs& a, const AttentionVisibility& mask,
                                   AttentionQueryBlock& qb, size_t first, const AttentionKvView& kv,
                                   int64_t key_pos, size_t n) {
  alignas(HWY_MAX_BYTES) float weights[kQueries][kAttentionMaxBlockKeys + kAttentionBlockPadding];
  float correction[kQueries];
  AttentionBlockScores<kQueries>(qb.q + first, kv, n, a.scale, weights);
  if (a.logit_softcap > 0.0f) {
    for (size_t i = 0; i < kQueries; ++i) AttentionSoftCap(weights[i], n, a.logit_softcap);
  }
  const int64_t last_key = key_pos + static_cast<int64_t>(n) - 1;
  for (size_t i = 0; i < kQueries; ++i) {
    const int64_t p = qb.pos[first + i];
    const bool all_seen = last_key <= p && (last_key < mask.sinks || key_pos >= mask.Oldest(p));
    float block_max = -std::numeric_limits<float>::infinity();
    for (size_t j = 0; j < n; ++j) {
      if (!all_seen && !mask.Sees(p, key_pos + static_cast<int64_t>(j))) {
        weights[i][j] = -std::numeric_limits<float>::infinity();
      }
      block_max = std::max(block_max, weights[i][j]);
    }
    float& m = qb.m[first + i];
    if (block_max == -std::numeric_limits<float>::infinity()) {  // sees none of these keys
      correction[i] = 1.0f;
      for (size_t j = 0; j < n; ++j) weights[i][j] = 0.0f;
      continue;
    }
    const float new_max = std::max(m, block_max);
    correction[i] = std::exp(m - new_max);  // exp(-inf) = 0 on the first block
    qb.l[first + i] = qb.l[first + i] * correction[i] + AttentionExpShifted(weights[i], n, new_max);
    m = new_max;
    // Masked scores came out of the clamped exp as ~1e-52, not 0: make them exactly 0.
    if (!all_seen) {
      for (size_t j = 0; j < n; ++j) {
        if (!mask.Sees(p, key_pos + static_cast<int64_t>(j))) weights[i][j] = 0.0f;
      }
    }
  }
  AttentionBlockAccumulate<kQueries>(kv, n, weights, correction, qb.o + first);
}

// Queries [begin, end) of the block over one key block, up to four at a time. Not inlined: it is
// called once per key block (64 keys), and inlining its four pass widths at each of the
// AttendPartitions call sites made this file take minutes to compile per SIMD target.
static HWY_NOINLINE void AttentionKeyBlock(const AttentionArgs& a, const AttentionVisibility& mask,
                                           AttentionQueryBlock& qb, size_t begin, size_t end,
                                           const AttentionKvView& kv, int64_t key_pos, size_t n) {
  for (size_t i = begin; i < end;) {
    const size_t count = std::min(kAttentionMaxQueriesPerPass, end - i);
    switch (count) {
      case 4: AttentionPassBlock<4>(a, mask, qb, i, kv, key_pos, n); break;
      case 3: AttentionPassBlock<3>(a, mask, qb, i, kv, key_pos, n); break;
      case 2: AttentionPassBlock<2>(a, mask, qb, i, kv, key_pos, n); break;
      default: AttentionPassBlock<1>(a, mask, qb, i, kv, key_pos, n); break;
    }
    i += count;
  }
}

// tile [n, head_dim] = the f32 values of kv head `kv_head` in ring slots [slot, slot + n).
static HWY_NOINLINE void AttentionStageRows(const AttentionArgs& a, const void* ring,
                                            const float* scales, size_t slot, size_t n,
                                            size_t kv_head, float* HWY_RESTRICT tile) {
  const size_t head_dim = a.head_dim;
  const size_t first = KvHeadSlot(kv_head, slot, a.capacity, head_dim);
  if (a.kv_type == KvType::kF16) {
    const hn::ScalableTag<float> df;
    const hn::Rebind<hwy::float16_t, decltype(df)> dh;
    const hn::CappedTag<float, 1> d1;
    const hn::Rebind<hwy::float16_t, decltype(d1)> dh1;
    const size_t N = hn::Lanes(df);
    for (size_t j = 0; j < n; ++j) {
      const hwy::float16_t* HWY_RESTRICT src =
          static_cast<const hwy::float16_t*>(ring) + first + j * head_dim;
      float* HWY_RESTRICT dst = tile + j * head_dim;
      size_t x = 0;
      for (; x + N <= head_dim; x += N)
        hn::StoreU(hn::PromoteTo(df, hn::LoadU(dh, src + x)), df, dst + x);
      for (; x < head_dim; ++x) hn::StoreU(hn::PromoteTo(d1, hn::LoadU(dh1, src + x)), d1, dst + x);
    }
    return;
  }
  if (a.kv_type == KvType::kInt8) {
    // One scale per 32 values and at most 32 lanes: a vector never straddles two scales.
    const hn::CappedTag<float, kKvInt8Block> df;
    const hn::RebindToSigned<decltype(df)> di;
    const hn::Rebind<int8_t, decltype(df)> d8;
    const size_t N = hn::Lanes(df);
    for (size_t j = 0; j < n; ++j) {
      const size_t row_first = first + j * head_dim;
      const int8_t* HWY_RESTRICT src = static_cast<const int8_t*>(ring) + row_first;
      const float* HWY_RESTRICT scale = scales + row_first / kKvInt8Block;
      float* HWY_RESTRICT dst = tile + j * head_dim;
      for (size_t x = 0; x < head_dim; x += N) {
        const auto values = hn::ConvertTo(df, hn::PromoteTo(di, hn::LoadU(d8, src + x)));
        hn::StoreU(hn::Mul(values, hn::Set(df, scale[x / kKvInt8Block])), df, dst + x);
      }
    }
    return;
  }
  const float* src = static_cast<const float*>(ring) + first;
  std::copy(src, src + n * head_dim, tile);
}

// Folds a partition's softmax state (pm, pl, po) into a running one (m, l, o). One thread walking
// every partition and threads that split them fold through this one function in the same order,
// so both give the same bits.
HWY_INLINE void AttentionFold(float& m, float& l, float* HWY_RESTRICT o, float pm, float pl,
                              const float* HWY_RESTRICT po, size_t head_dim) {
  if (pl == 0.0f) return;  // the query saw none of the partition's keys (else l >= 1)
  if (l == 0.0f) {         // the first partition it saw
    m = pm;
    l = pl;
    std::copy(po, po + head_dim, o);
    return;
  }
  const float new_max = std::max(m, pm);
  const float c = std::exp(m - new_max), pc = std::exp(pm - new_max);
  // Explicit fmas, here and in the tail below, in the vector body's form: left to the compiler,
  // contraction may fuse either product, differently in each inlined copy (GCC 12 with
  // -mtune=cortex-a76 did), and a decode step split across threads would no longer round as the
  // unsplit one does.
  l = std::fma(pl, pc, l * c);
  m = new_max;
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  const auto vc = hn::Set(d, c), vpc = hn::Set(d, pc);
  size_t x = 0;
  for (; x + N <= head_dim; x += N) {
    hn::StoreU(hn::MulAdd(hn::LoadU(d, po + x), vpc, hn::Mul(hn::LoadU(d, o + x), vc)), d, o + x);
  }
  for (; x < head_dim; ++x) o[x] = std::fma(po[x], pc, o[x] * c);
}

// out = o / l.
HWY_INLINE void AttentionWriteOutput(const float* HWY_RESTRICT o, float l, float* out,
                                     size_t head_dim) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  const float inv_l = 1.0f / l;  // l >= 1: the maximal score contributes exp(0)
  size_t x = 0;
  for (; x + N <= head_dim; x += N)
    hn::StoreU(hn::Mul(hn::LoadU(d, o + x), hn::Set(d, inv_l)), d, out + x);
  for (; x < head_dim; ++x) out[x] = o[x] * inv_l;
}

// Walks partitions [part_begin, part_end) of `parts` (fold order) for the queries of qb (one kv
// head, positions ascending): before each partition their partition states are reset, and after
// it done(i) takes them.
template <class Done>
HWY_INLINE void AttendPartitions(const AttentionArgs& a, const AttentionVisibility& mask,
                                 AttentionQueryBlock& qb, size_t kv_head, size_t block_keys,
                                 const AttentionPartitionRange& parts, size_t part_begin,
                                 size_t part_end, const Done& done) {
  const size_t head_dim = a.head_dim;
  const size_t capacity = a.capacity;
  const size_t sinks = static_cast<size_t>(mask.sinks);
  // Without partitions every recent key is in partition 1 (a bound that no position reaches and
  // whose sums with positions cannot overflow).
  const int64_t part_keys =
      a.partition_keys > 0 ? static_cast<int64_t>(a.partition_keys) : int64_t{1} << 62;
  const int64_t first_pos = qb.pos[0], last_pos = qb.pos[qb.n - 1];
  // f32 keys are read in place when one pass takes all the queries (decode); otherwise each key
  // block goes to L1-resident tiles once and every pass reads it from there (f32 from the ring
  // would come from L2 once per pass: half the speed at 4096 positions, bench/attention_bench).
  const bool direct = a.kv_type == KvType::kF32 && qb.n <= kAttentionMaxQueriesPerPass;
  // Key blocks have one size and start at fixed positions (each partition's start plus multiples
  // of the size) whatever the query block, so a query's sums run in the same order however the
  // queries are grouped: results do not depend on the thread count or the chunking. Keys a query
  // does not see add exact zeros.
  block_keys = std::min(block_keys, kAttentionTileFloats / head_dim);
  alignas(HWY_MAX_BYTES) float k_tile[kAttentionTileFloats];
  alignas(HWY_MAX_BYTES) float v_tile[kAttentionTileFloats];

  AttentionKvView kv;
  kv.head_dim = head_dim;
  const int64_t oldest = mask.Oldest(first_pos);
  const size_t visible_bytes =
      static_cast<size_t>(last_pos - oldest + 1) * a.n_kv_heads * head_dim * 2 * sizeof(float);
  kv.prefetch_values = direct && visible_bytes > kAttentionPrefetchMinBytes;
  // Points kv at n keys from `slot`: the ring itself for f32, else converted tiles.
  const auto view = [&](size_t slot, size_t n) {
    if (direct) {
      const size_t first = KvHeadSlot(kv_head, slot, capacity, head_dim);
      kv.k = static_cast<const float*>(a.k_cache) + first;
      kv.v = static_cast<const float*>(a.v_cache) + first;
    } else {
      AttentionStageRows(a, a.k_cache, a.k_scales, slot, n, kv_head, k_tile);
      AttentionStageRows(a, a.v_cache, a.v_scales, slot, n, kv_head, v_tile);
      kv.k = k_tile;
      kv.v = v_tile;
    }
  };
  const int64_t recent_begin = sinks > 0 ? std::max<int64_t>(oldest, mask.sinks) : oldest;

  for (size_t part_index = part_begin; part_index < part_end; ++part_index) {
    for (size_t i = 0; i < qb.n; ++i) {
      qb.m[i] = -std::numeric_limits<float>::infinity();
      qb.l[i] = 0.0f;
      std::fill(qb.o[i], qb.o[i] + head_dim, 0.0f);
    }
    const int64_t part = parts.Get(part_index);
    if (part == 0) {
      // The sinks, only as far as positions are stored: a masked key adds 0 * value, which an
      // unwritten slot could make NaN.
      const size_t stored_sinks = std::min(sinks, static_cast<size_t>(last_pos) + 1);
      for (size_t s = 0; s < stored_sinks;) {
        const size_t n = std::min(stored_sinks - s, block_keys);
        if (a.sink_rope == nullptr) {
          view(s, n);
          AttentionKeyBlock(a, mask, qb, 0, qb.n, kv, static_cast<int64_t>(s), n);
        } else {
          // Per query position, its sinks move up to just before its oldest recent key: rotate a
          // copy of their keys further by the distance moved.
          AttentionStageRows(a, a.v_cache, a.v_scales, s, n, kv_head, v_tile);
          AttentionKvView sink_kv;
          sink_kv.k = k_tile;
          sink_kv.v = v_tile;
          sink_kv.head_dim = head_dim;
          sink_kv.prefetch_values = false;
          for (size_t i = 0; i < qb.n;) {
            size_t e = i + 1;
            while (e < qb.n && qb.pos[e] == qb.pos[i]) ++e;
            AttentionStageRows(a, a.k_cache, a.k_scales, s, n, kv_head, k_tile);
            const int64_t p = qb.pos[i];
            if (p >= mask.reach)
              Rope(k_tile, 1, n, head_dim, mask.Oldest(p) - mask.sinks, *a.sink_rope);
            AttentionKeyBlock(a, mask, qb, i, e, sink_kv, static_cast<int64_t>(s), n);
            i = e;
          }
        }
        s += n;
      }
    } else {
      const int64_t part_start = mask.sinks + (part - 1) * part_keys;
      const int64_t hi = std::min(last_pos, part_start + part_keys - 1);
      for (int64_t begin = std::max(recent_begin, part_start); begin <= hi;) {
        const size_t slot = KvSlot(begin, capacity, sinks);
        const size_t to_boundary =
            block_keys - static_cast<size_t>(begin - part_start) % block_keys;
        const size_t n =
            std::min({to_boundary, static_cast<size_t>(hi - begin) + 1, capacity - slot});
        view(slot, n);
        AttentionKeyBlock(a, mask, qb, 0, qb.n, kv, begin, n);
        begin += static_cast<int64_t>(n);
      }
    }
    done(part_index);
  }
}

// Attends the queries of qb (one kv head, positions ascending) over every key one of them sees,
// folding the partitions as it goes, and writes their output rows.
static HWY_NOINLINE void AttendQueryBlock(const AttentionArgs& a, const AttentionVisibility& mask,
                                          AttentionQueryBlock& qb, size_t kv_head,
                                          size_t block_keys) {
  const size_t head_dim = a.head_dim;
  for (size_t i = 0; i < qb.n; ++i) {
    qb.merged_m[i] = -std::numeric_limits<float>::infinity();
    qb.merged_l[i] = 0.0f;
  }
  const AttentionPartitionRange parts = PartitionsSeen(a, qb.pos[0], qb.pos[qb.n - 1]);
  // The merged output builds up in the output rows themselves.
  AttendPartitions(a, mask, qb, kv_head, block_keys, parts, 0, parts.count(), [&](size_t) {
    for (size_t i = 0; i < qb.n; ++i) {
      AttentionFold(qb.merged_m[i], qb.merged_l[i], qb.out[i], qb.m[i], qb.l[i], qb.o[i], head_dim);
    }
  });
  for (size_t i = 0; i < qb.n; ++i)
    AttentionWriteOutput(qb.out[i], qb.merged_l[i], qb.out[i], head_dim);
}

// Running outputs of up to kAttentionMaxBlockQueries queries in outputs[kAttentionOutputFloats]:
// how many fit, and the distance between two.
HWY_INLINE size_t AttentionOutputStride(size_t head_dim) {
  return hwy::RoundUpTo(head_dim, HWY_MAX_BYTES / sizeof(float));
}
HWY_INLINE size_t AttentionMaxQueries(size_t head_dim) {
  return std::min(kAttentionMaxBlockQueries,
                  std::max<size_t>(1, kAttentionOutputFloats / AttentionOutputStride(head_dim)));
}

// The op with an explicit block size (1..kAttentionMaxBlockKeys); tests vary it to compare
// multi-block walks with single-block ones.
static HWY_NOINLINE HWY_MAYBE_UNUSED void AttentionTasks(const AttentionArgs& a, size_t task_begin,
                                                         size_t task_end, size_t block_keys) {
  HWY_DASSERT(a.head_dim >= 1 && a.head_dim <= kAttentionMaxHeadDim);
  HWY_DASSERT(a.n_kv_heads >= 1 && a.n_heads % a.n_kv_heads == 0);
  HWY_DASSERT(block_keys >= 1 && block_keys <= kAttentionMaxBlockKeys);
  HWY_DASSERT(task_end <= a.n_tokens * a.n_heads);
  HWY_DASSERT(a.pos0 >= 0 && a.window >= 0 && a.context >= 0);
  if (task_begin >= task_end) return;
  const size_t head_dim = a.head_dim;
  const size_t row_width = a.n_heads * head_dim;
  const size_t group = a.n_heads / a.n_kv_heads;
  const AttentionVisibility mask = VisibilityOf(a);

  alignas(HWY_MAX_BYTES) float outputs[kAttentionOutputFloats];
  const size_t o_stride = AttentionOutputStride(head_dim);
  const size_t max_queries = AttentionMaxQueries(head_dim);
  const size_t t_first = task_begin / a.n_heads, t_last = (task_end - 1) / a.n_heads;
  AttentionQueryBlock qb;
  for (size_t kv_head = 0; kv_head < a.n_kv_heads; ++kv_head) {
    for (size_t h0 = kv_head * group; h0 < (kv_head + 1) * group; h0 += max_queries) {
      const size_t h1 = std::min((kv_head + 1) * group, h0 + max_queries);
      const size_t tokens_per_block = std::max<size_t>(1, max_queries / (h1 - h0));
      for (size_t t0 = t_first; t0 <= t_last; t0 += tokens_per_block) {
        qb.n = 0;
        for (size_t t = t0; t <= std::min(t_last, t0 + tokens_per_block - 1); ++t) {
          for (size_t h = h0; h < h1; ++h) {
            const size_t task = t * a.n_heads + h;
            if (task < task_begin || task >= task_end) continue;
            const size_t i = qb.n++;
            qb.q[i] = a.q + t * row_width + h * head_dim;
            qb.out[i] = a.out + t * row_width + h * head_dim;
            qb.pos[i] = a.pos0 + static_cast<int64_t>(t);
            qb.o[i] = outputs + i * o_stride;
          }
        }
        if (qb.n > 0) AttendQueryBlock(a, mask, qb, kv_head, block_keys);
      }
    }
  }
}

// Items [item_begin, item_end) of a decode step's (kv head, partition) pairs (ops/attention.h):
// the partition states of every query head, written to partials.
static HWY_NOINLINE HWY_MAYBE_UNUSED void AttentionPartialItems(const AttentionArgs& a,
                                                                size_t item_begin, size_t item_end,
                                                                float* partials,
                                                                size_t block_keys) {
  HWY_DASSERT(a.n_tokens == 1);
  const AttentionPartitionRange parts = PartitionsSeen(a, a.pos0, a.pos0);
  const size_t n_parts = parts.count();
  HWY_DASSERT(item_end <= a.n_kv_heads * n_parts);
  const size_t head_dim = a.head_dim;
  const size_t group = a.n_heads / a.n_kv_heads;
  const size_t state_floats = AttentionPartialFloats(head_dim);
  const AttentionVisibility mask = VisibilityOf(a);
  alignas(HWY_MAX_BYTES) float outputs[kAttentionOutputFloats];
  const size_t max_queries = AttentionMaxQueries(head_dim);
  AttentionQueryBlock qb;
  for (size_t item = item_begin; item < item_end;) {
    const size_t kv_head = item / n_parts;
    const size_t first = item % n_parts;
    const size_t last = std::min(n_parts, first + (item_end - item));
    for (size_t h0 = kv_head * group; h0 < (kv_head + 1) * group; h0 += max_queries) {
      qb.n = std::min((kv_head + 1) * group, h0 + max_queries) - h0;
      for (size_t i = 0; i < qb.n; ++i) {
        qb.q[i] = a.q + (h0 + i) * head_dim;
        qb.out[i] = nullptr;  // the merge writes the output
        qb.pos[i] = a.pos0;
        qb.o[i] = outputs + i * AttentionOutputStride(head_dim);
      }
      AttendPartitions(a, mask, qb, kv_head, block_keys, parts, first, last, [&](size_t part) {
        for (size_t i = 0; i < qb.n; ++i) {
          float* state = partials + (part * a.n_heads + h0 + i) * state_floats;
          std::copy(qb.o[i], qb.o[i] + head_dim, state);
          state[head_dim] = qb.m[i];
          state[head_dim + 1] = qb.l[i];
        }
      });
    }
    item += last - first;
  }
}

static HWY_NOINLINE HWY_MAYBE_UNUSED void AttentionMergeStates(const AttentionArgs& a,
                                                               const float* partials) {
  const size_t n_parts = PartitionsSeen(a, a.pos0, a.pos0).count();
  const size_t head_dim = a.head_dim;
  const size_t state_floats = AttentionPartialFloats(head_dim);
  for (size_t h = 0; h < a.n_heads; ++h) {
    float* out = a.out + h * head_dim;
    float m = -std::numeric_limits<float>::infinity(), l = 0.0f;
    for (size_t part = 0; part < n_parts; ++part) {
      const float* state = partials + (part * a.n_heads + h) * state_floats;
      AttentionFold(m, l, out, state[head_dim], state[head_dim + 1], state, head_dim);
    }
    AttentionWriteOutput(out, l, out, head_dim);
  }
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace kestrel::ops::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // KESTREL_OPS_ATTENTION_INL_H_ toggle
