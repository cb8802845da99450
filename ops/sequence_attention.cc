// Bidirectional attention within one sequence (see ops/sequence_attention.h), compiled for every
// Highway target and dispatched at run time.
//
// Queries in lanes. Per query head, the queries are taken in chunks of qc = kQueryVecs * NQ (NQ
// lanes of a query vector, at most 16), and the chunk's queries and scores are held transposed,
// so that a vector holds one value for each of its queries:
//   Q^T [head_dim][qc]  the chunk's queries times scale, packed once per chunk;
//   S^T [keys][qc]      one block's scores, then its softmax weights.
// Both products are one broadcast-FMA loop (ops/broadcast_fma-inl.h), keys and values read where
// they lie, each loaded vector serving up to kBroadcastFmaMaxItems broadcasts:
//   scores   S^T[j] = sum_x K[j][x] Q^T[x]: a row of Q^T serves that many keys;
//   outputs  O[i] = c_i O[i] + sum_j W^T[j][i] V[j]: a value row serves that many queries,
// O being the chunk's rows of `out` until the end. The streaming softmax of ops/attention-inl.h
// runs per lane, with no reduction across lanes:
//   m' = max(m, max_j s_j);  c = exp(m - m');  w_j = exp(s_j - m') = 2^((s_j - m') log2 e)
//   l = c * l + sum_j w_j;  O = c * O + sum_j w_j v_j;  m = m'
// and finally out = O / l. Every exponent is <= 0, so nothing overflows whatever the scores'
// magnitude. The kernel before this one held queries in rows and keys in lanes: each block's max,
// sum and correction were reductions across lanes plus a scalar exp per query, which cost about
// as much as the FMAs at MiniLM's head_dim 32; with queries in the lanes the FMA loops run near
// the core's peak (figures: docs/kernels.md).
#include "ops/sequence_attention.h"
#include "ops/targets.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <type_traits>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/sequence_attention.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <hwy/highway.h>

#include "ops/broadcast_fma-inl.h"
#include "ops/exp2-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kestrel::ops {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using QueryTag = BroadcastFmaTag;
// Floats of Q^T (64 KiB): two query vectors up to head_dim 512, one at 1024.
inline constexpr size_t kPackFloats = 16384;
static_assert(kPackFloats >= kAttentionMaxHeadDim * kBroadcastFmaMaxLanes);
// Keys per block: enough to amortize a block's correction of O, few enough that S^T (16 KiB)
// and the block's keys and values stay in L1.
inline constexpr size_t kBlockKeys = 128;

// The softmax state of a chunk's queries, one value per lane: [qc] arrays.
struct ChunkState {
  float* HWY_RESTRICT m;           // running max
  float* HWY_RESTRICT l;           // running sum of weights
  float* HWY_RESTRICT correction;  // exp(m - m') of the last block
};

// Turns one block's scores S^T [n][qc] into weights exp(s - m') in place and moves the state on
// (m' = the new max, l = c * l + sum of the weights). The difference is taken before the
// multiplication by log2(e) (for the cheaper Exp2NonPositive of ops/exp2-inl.h), so the
// product's rounding error scales with |s - m'|, not with the scores: near the max, where the
// weights matter, it is tiny even for scores in the thousands. Exp2NonPositive clamps at 2^-125,
// so the first block's correction exp(-inf) is tiny, not 0: it only multiplies l = 0 (O is
// not read on the first block).
template <size_t kQueryVecs>
HWY_INLINE void BlockSoftmax(float* HWY_RESTRICT scores, size_t n, const ChunkState& s) {
  const QueryTag d;
  const size_t NQ = hn::Lanes(d), qc = kQueryVecs * NQ;
  const auto log2e = hn::Set(d, 1.4426950408889634f);
  for (size_t v = 0; v < kQueryVecs; ++v) {
    float* HWY_RESTRICT column = scores + v * NQ;
    auto block_max = hn::Load(d, column);
    for (size_t j = 1; j < n; ++j) block_max = hn::Max(block_max, hn::Load(d, column + j * qc));
    const auto m = hn::Load(d, s.m + v * NQ);
    const auto new_max = hn::Max(m, block_max);
    // exp(x - m') of a vector of scores or of the old max.
    const auto exp_below_max = [&](auto x) {
      return Exp2NonPositive(d, hn::Mul(hn::Sub(x, new_max), log2e));
    };
    const auto correction = exp_below_max(m);
    auto sum0 = hn::Zero(d), sum1 = sum0;  // two chains: the adds' latency
    size_t j = 0;
    for (; j + 2 <= n; j += 2) {
      float* HWY_RESTRICT row = column + j * qc;
      const auto w0 = exp_below_max(hn::Load(d, row));
      const auto w1 = exp_below_max(hn::Load(d, row + qc));
      hn::Store(w0, d, row);
      hn::Store(w1, d, row + qc);
      sum0 = hn::Add(sum0, w0);
      sum1 = hn::Add(sum1, w1);
    }
    if (j < n) {
      float* HWY_RESTRICT row = column + j * qc;
      const auto w = exp_below_max(hn::Load(d, row));
      hn::Store(w, d, row);
      sum0 = hn::Add(sum0, w);
    }
    const auto l = hn::Load(d, s.l + v * NQ);
    hn::Store(hn::MulAdd(l, correction, hn::Add(sum0, sum1)), d, s.l + v * NQ);
    hn::Store(new_max, d, s.m + v * NQ);
    hn::Store(correction, d, s.correction + v * NQ);
  }
}

// Causal attention in a block of keys that reaches past the chunk's first query: the scores of
// keys after a lane's query (key0 + j > t0 + i) become -inf before the softmax, so that its max
// comes from the keys the query sees, and their weights 0 after it (Exp2NonPositive gives
// 2^-125 for -inf, not 0). Lanes past the chunk's queries keep their scores: they are never
// stored. Every lane sees key 0 in the first block, so no lane's max is -inf.
inline constexpr float kMaskedScore = -std::numeric_limits<float>::infinity();
HWY_INLINE void MaskFutureKeys(float* HWY_RESTRICT st, size_t qc, size_t n, size_t key0, size_t t0,
                               size_t queries, float value) {
  for (size_t j = 0; j < n; ++j) {
    for (size_t i = 0; i < queries; ++i) {
      if (key0 + j > t0 + i) st[j * qc + i] = value;
    }
  }
}

// Attends query rows [t0, t0 + queries) (queries <= kQueryVecs * NQ) of query head `head` over
// the whole sequence (causal: over keys up to each row's own).
template <size_t kQueryVecs>
HWY_NOINLINE void Chunk(const SequenceAttentionArgs& a, size_t head, size_t t0, size_t queries) {
  const size_t head_dim = a.head_dim;
  const size_t q_stride = a.n_heads * head_dim, kv_stride = a.n_kv_heads * head_dim;
  const size_t kv_offset = head / (a.n_heads / a.n_kv_heads) * head_dim;
  const size_t NQ = hn::Lanes(QueryTag()), qc = kQueryVecs * NQ;

  alignas(HWY_MAX_BYTES) float qt[kPackFloats];
  alignas(HWY_MAX_BYTES) float st[kBlockKeys * 2 * kBroadcastFmaMaxLanes];
  alignas(HWY_MAX_BYTES) float m[2 * kBroadcastFmaMaxLanes];
  alignas(HWY_MAX_BYTES) float l[2 * kBroadcastFmaMaxLanes];
  alignas(HWY_MAX_BYTES) float correction[2 * kBroadcastFmaMaxLanes] = {};  // set per block
  const ChunkState s{m, l, correction};
  std::fill(m, m + qc, -std::numeric_limits<float>::infinity());
  std::fill(l, l + qc, 0.0f);

  for (size_t i = 0; i < queries; ++i) {
    const float* HWY_RESTRICT q = a.q + (t0 + i) * q_stride + head * head_dim;
    for (size_t x = 0; x < head_dim; ++x) qt[x * qc + i] = a.scale * q[x];
  }
  // Lanes past the chunk's queries hold zero queries: finite scores, outputs never stored.
  for (size_t x = 0; x < head_dim; ++x) std::fill(qt + x * qc + queries, qt + (x + 1) * qc, 0.0f);

  // The chunk's output rows hold its running outputs O until they are divided by l at the end.
  float* HWY_RESTRICT o = a.out + t0 * q_stride + head * head_dim;

  // Causal: no query of the chunk sees a key past its last query.
  const size_t keys = a.causal ? t0 + queries : a.len;
  for (size_t key0 = 0; key0 < keys; key0 += kBlockKeys) {
    const size_t n = std::min(kBlockKeys, keys - key0);
    const float* HWY_RESTRICT k = a.k + key0 * kv_stride + kv_offset;
    const float* HWY_RESTRICT v = a.v + key0 * kv_stride + kv_offset;
    // S^T[j] = sum_x K[j][x] Q^T[x]: the items are the block's keys, the steps x.
    BroadcastFmaAll<kQueryVecs>({qt, qc, NQ, head_dim, k, 1, kv_stride, false, nullptr, st, qc, n});
    const bool masked = a.causal && key0 + n - 1 > t0;
    if (masked) MaskFutureKeys(st, qc, n, key0, t0, queries, kMaskedScore);
    BlockSoftmax<kQueryVecs>(st, n, s);
    if (masked) MaskFutureKeys(st, qc, n, key0, t0, queries, 0.0f);
    // O[i] = c_i O[i] + sum_j W^T[j][i] V[j]: the items are the chunk's queries, the steps the
    // block's keys, over slices of head_dim of two vectors, then one, then single elements.
    const bool later = key0 > 0;
    size_t x = 0;
    for (; x + 2 * NQ <= head_dim; x += 2 * NQ) {
      BroadcastFmaAll<2>(
          {v + x, kv_stride, NQ, n, st, qc, 1, later, correction, o + x, q_stride, queries});
    }
    if (x + NQ <= head_dim) {
      BroadcastFmaAll<1>(
          {v + x, kv_stride, NQ, n, st, qc, 1, later, correction, o + x, q_stride, queries});
      x += NQ;
    }
    for (; x < head_dim; ++x) {
      for (size_t i = 0; i < queries; ++i) {
        float acc = later ? o[i * q_stride + x] * correction[i] : 0.0f;
        for (size_t j = 0; j < n; ++j) acc += st[j * qc + i] * v[j * kv_stride + x];
        o[i * q_stride + x] = acc;
      }
    }
  }

  const QueryTag d;
  for (size_t i = 0; i < queries; ++i) {
    float* HWY_RESTRICT row = o + i * q_stride;
    const float inv_l = 1.0f / l[i];  // l >= 1: the maximal score contributes exp(0)
    size_t x = 0;
    for (; x + NQ <= head_dim; x += NQ) {
      hn::StoreU(hn::Mul(hn::LoadU(d, row + x), hn::Set(d, inv_l)), d, row + x);
    }
    for (; x < head_dim; ++x) row[x] *= inv_l;
  }
}

void SequenceAttentionPerTarget(const SequenceAttentionArgs& a, size_t head_begin,
                                size_t head_end) {
  HWY_DASSERT(a.head_dim >= 1 && a.head_dim <= kAttentionMaxHeadDim);
  HWY_DASSERT(a.n_kv_heads >= 1 && a.n_heads % a.n_kv_heads == 0);
  HWY_DASSERT(head_end <= a.n_heads);
  const size_t NQ = hn::Lanes(QueryTag());
  // Two query vectors per chunk halve the loads per FMA; one where head_dim leaves no room, or
  // where the sequence fills no more than one.
  const bool two = a.len > NQ && a.head_dim * 2 * NQ <= kPackFloats;
  const size_t chunk = two ? 2 * NQ : NQ;
  for (size_t head = head_begin; head < head_end; ++head) {
    for (size_t t0 = 0; t0 < a.len; t0 += chunk) {
      const size_t queries = std::min(chunk, a.len - t0);
      if (two) {
        Chunk<2>(a, head, t0, queries);
      } else {
        Chunk<1>(a, head, t0, queries);
      }
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace kestrel::ops
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kestrel::ops {

HWY_EXPORT(SequenceAttentionPerTarget);

void SequenceAttention(const SequenceAttentionArgs& a, size_t head_begin, size_t head_end) {
  HWY_DYNAMIC_DISPATCH(SequenceAttentionPerTarget)(a, head_begin, head_end);
}

KESTREL_DEFINE_RESOLVE(SequenceAttention)

}  // namespace kestrel::ops
#endif  // HWY_ONCE
