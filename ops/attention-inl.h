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
// magnitude; m starts at -inf, which makes the first block's c exactly 0.
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
using AttentionOutputs = float (*HWY_RESTRICT)[kAttentionMaxHeadDim];

// Where the current block's keys and values live, shared by the queries of one pass.
struct AttentionKvView {
  const float* HWY_RESTRICT k;  // key of the block's first position; key j at k + j * stride
  const float* HWY_RESTRICT v;  // same layout
  size_t stride;                // n_kv_heads * head_dim
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
  const float* HWY_RESTRICT k2 = k + kv.stride;  // read only when kKeys == 2
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
      AttentionPrefetchRow(kv.v + j * kv.stride, kv.head_dim);
      AttentionPrefetchRow(kv.v + (j + 1) * kv.stride, kv.head_dim);
    }
    AttentionKeyScores<kQueries, 2>(q, kv.k + j * kv.stride, kv, scale, j, weights);
  }
  if (j < n) {
    if (kv.prefetch_values) AttentionPrefetchRow(kv.v + j * kv.stride, kv.head_dim);
    AttentionKeyScores<kQueries, 1>(q, kv.k + j * kv.stride, kv, scale, j, weights);
  }
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
HWY_INLINE void AttentionMulAddSlices(D d, float weight, V value_a, V value_c, V& a, V& c) {
  const V w = hn::Set(d, weight);
  a = hn::MulAdd(w, value_a, a);
  if constexpr (kSlices > 1) c = hn::MulAdd(w, value_c, c);
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
  for (size_t j = 0; j < n; ++j, v += kv.stride) {
    const auto value_a = hn::LoadU(d, v);
    auto value_c = value_a;
    if constexpr (kSlices > 1) value_c = hn::LoadU(d, v + N);
    AttentionMulAddSlices<kSlices>(d, weights[0][j], value_a, value_c, a0, c0);
    if constexpr (kQueries > 1)
      AttentionMulAddSlices<kSlices>(d, weights[1][j], value_a, value_c, a1, c1);
    if constexpr (kQueries > 2)
      AttentionMulAddSlices<kSlices>(d, weights[2][j], value_a, value_c, a2, c2);
    if constexpr (kQueries > 3)
      AttentionMulAddSlices<kSlices>(d, weights[3][j], value_a, value_c, a3, c3);
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
      for (size_t j = 0; j < n; ++j) acc += weights[i][j] * kv.v[j * kv.stride + x];
      o[i][x] = acc;
    }
  }
}

// Attends kQueries consecutive query heads [head, head + kQueries) of row t, which share a kv
// head, over all their visible positions.
template <size_t kQueries>
HWY_NOINLINE void AttentionPass(const AttentionArgs& a, size_t t, size_t head, size_t block_keys) {
  static_assert(kQueries >= 1 && kQueries <= kAttentionMaxQueriesPerPass, "pass size");
  const size_t head_dim = a.head_dim;
  const size_t row_width = a.n_heads * head_dim;
  const size_t kv_head = head / (a.n_heads / a.n_kv_heads);
  const int64_t p = a.pos0 + static_cast<int64_t>(t);
  const int64_t lo = a.window > 0 ? std::max<int64_t>(0, p - a.window + 1) : 0;
  const size_t capacity = a.capacity;

  const float* q[kQueries];
  for (size_t i = 0; i < kQueries; ++i) q[i] = a.q + t * row_width + (head + i) * head_dim;

  // Running state: O(block + head_dim) floats per query, all on the stack.
  alignas(HWY_MAX_BYTES) float weights[kQueries][kAttentionMaxBlockKeys + kAttentionBlockPadding];
  alignas(HWY_MAX_BYTES) float o[kQueries][kAttentionMaxHeadDim];
  float m[kQueries], l[kQueries], correction[kQueries];
  for (size_t i = 0; i < kQueries; ++i) {
    m[i] = -std::numeric_limits<float>::infinity();
    l[i] = 0.0f;
    for (size_t x = 0; x < head_dim; ++x) o[i][x] = 0.0f;
  }

  AttentionKvView kv;
  kv.stride = a.n_kv_heads * head_dim;
  kv.head_dim = head_dim;
  const size_t visible_bytes = static_cast<size_t>(p - lo + 1) * kv.stride * 2 * sizeof(float);
  kv.prefetch_values = visible_bytes > kAttentionPrefetchMinBytes;
  for (int64_t begin = lo; begin <= p;) {
    const size_t slot = static_cast<size_t>(begin) % capacity;
    const size_t n = std::min({block_keys, static_cast<size_t>(p - begin) + 1, capacity - slot});
    kv.k = a.k_cache + slot * kv.stride + kv_head * head_dim;
    kv.v = a.v_cache + slot * kv.stride + kv_head * head_dim;

    AttentionBlockScores<kQueries>(q, kv, n, a.scale, weights);
    for (size_t i = 0; i < kQueries; ++i) {
      float block_max = weights[i][0];
      for (size_t j = 1; j < n; ++j) block_max = std::max(block_max, weights[i][j]);
      const float new_max = std::max(m[i], block_max);
      correction[i] = std::exp(m[i] - new_max);  // exp(-inf) = 0 on the first block
      l[i] = l[i] * correction[i] + AttentionExpShifted(weights[i], n, new_max);
      m[i] = new_max;
    }
    AttentionBlockAccumulate<kQueries>(kv, n, weights, correction, o);
    begin += static_cast<int64_t>(n);
  }

  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  for (size_t i = 0; i < kQueries; ++i) {
    float* HWY_RESTRICT out = a.out + t * row_width + (head + i) * head_dim;
    const float inv_l = 1.0f / l[i];  // l >= 1: the maximal score contributes exp(0)
    size_t x = 0;
    for (; x + N <= head_dim; x += N) {
      hn::StoreU(hn::Mul(hn::Load(d, o[i] + x), hn::Set(d, inv_l)), d, out + x);
    }
    for (; x < head_dim; ++x) out[x] = o[i][x] * inv_l;
  }
}

// The op with an explicit block size (1..kAttentionMaxBlockKeys); tests vary it to compare
// multi-block walks with single-block ones.
static HWY_NOINLINE HWY_MAYBE_UNUSED void AttentionTasks(const AttentionArgs& a, size_t task_begin,
                                                         size_t task_end, size_t block_keys) {
  HWY_DASSERT(a.head_dim >= 1 && a.head_dim <= kAttentionMaxHeadDim);
  HWY_DASSERT(a.n_kv_heads >= 1 && a.n_heads % a.n_kv_heads == 0);
  HWY_DASSERT(block_keys >= 1 && block_keys <= kAttentionMaxBlockKeys);
  HWY_DASSERT(task_end <= a.n_tokens * a.n_heads);
  HWY_DASSERT(a.pos0 >= 0 && a.window >= 0);
  HWY_DASSERT(a.capacity >= (a.window > 0 ? static_cast<size_t>(a.window) + a.n_tokens - 1
                                          : static_cast<size_t>(a.pos0) + a.n_tokens));
  const size_t group = a.n_heads / a.n_kv_heads;
  for (size_t task = task_begin; task < task_end;) {
    const size_t t = task / a.n_heads;
    const size_t head = task % a.n_heads;
    // Heads up to the end of this kv head's group, within the task range.
    const size_t group_end = (head / group + 1) * group;
    const size_t queries =
        std::min({kAttentionMaxQueriesPerPass, group_end - head, task_end - task});
    switch (queries) {
      case 4:
        AttentionPass<4>(a, t, head, block_keys);
        break;
      case 3:
        AttentionPass<3>(a, t, head, block_keys);
        break;
      case 2:
        AttentionPass<2>(a, t, head, block_keys);
        break;
      default:
        AttentionPass<1>(a, t, head, block_keys);
        break;
    }
    task += queries;
  }
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace kestrel::ops::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // KESTREL_OPS_ATTENTION_INL_H_ toggle
