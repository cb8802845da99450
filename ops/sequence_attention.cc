// Bidirectional attention within one sequence (see ops/sequence_attention.h), compiled for every
// Highway target and dispatched at run time.
//
// Per query head, the queries are taken in chunks of up to min(kStateFloats / head_dim,
// kMaxChunkQueries) rows, whose running state (output o, max m, sum l) lives on the stack. The
// keys are walked in blocks of bk keys; each block is transposed once per chunk into a tile
// K^T [head_dim][bk], pre-multiplied by scale, and serves every query of the chunk: a query's bk
// scores are head_dim broadcast-FMAs over bk / lanes vectors, with no reduction across lanes.
// Then, per block and query, the streaming softmax of ops/attention-inl.h:
//   m' = max(m, max_j s_j);  c = exp(m - m');  w_j = exp(s_j - m') = 2^((s_j - m') log2 e)
//   l = c * l + sum_j w_j;  o = c * o + sum_j w_j * v_j;  m = m'
// and finally out = o / l. Every exponent is <= 0, so nothing overflows whatever the scores'
// magnitude; m starts at -inf, which makes the first block's c exactly 0.
//
// Queries go through a block in groups of up to kGroupQueries, whose accumulators stay in
// registers: each loaded key (or value) vector serves every query of the group, and each
// broadcast query element (or weight) serves up to 4 vectors.
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

#include "ops/exp2-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kestrel::ops {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Floats of running outputs per chunk (32 KiB): 256 queries of head_dim 32, 8 of head_dim 1024.
inline constexpr size_t kStateFloats = 8192;
// Queries per chunk, at most (their running max and sum).
inline constexpr size_t kMaxChunkQueries = 256;
// Floats of the transposed key tile (64 KiB): blocks of 64 keys up to head_dim 256, at least 16
// keys at head_dim 1024.
inline constexpr size_t kTileFloats = 16384;
// Keys per block, at most: enough to amortize a block's max, correction exp and rescale of o,
// small enough that the tile and the block's value rows stay in L1.
inline constexpr size_t kMaxBlockKeys = 64;
// Lanes of a key vector, at most. bk is a multiple of the key vector's lanes; capping them at 16
// (SVE reaches 64) keeps a block of one vector of keys within kTileFloats at head_dim 1024.
inline constexpr size_t kMaxKeyLanes = 16;
// Queries per group: 4 where the target has 32 vector registers (4 x 4 accumulators fit), 3 on
// x86 before AVX-512, which has 16 (measured at MiniLM's shape on Zen 4 with AVX2: 3 queries
// 60 GFLOP/s, 2 queries 46, 4 queries 42 as the accumulators spill).
#if HWY_ARCH_X86 && HWY_TARGET != HWY_AVX3 && HWY_TARGET != HWY_AVX3_DL && HWY_TARGET != HWY_SCALAR
inline constexpr size_t kGroupQueries = 3;
#else
inline constexpr size_t kGroupQueries = 4;
#endif

using KeyTag = hn::CappedTag<float, kMaxKeyLanes>;
using ScoreRows = float (*HWY_RESTRICT)[kMaxBlockKeys];

// Vectors are sizeless on SVE and cannot live in arrays or structs, so a group's accumulators are
// named variables: up to 4 vectors per query (a0..a3) and 4 queries (a, b, c, e). `if constexpr`
// drops the unused ones.

// acc_i += s * x_i for i < kVecs: one broadcast serves kVecs FMAs.
template <size_t kVecs, class D, class V>
HWY_INLINE void MulAddBroadcast(D d, float s, V x0, V x1, V x2, V x3, V& a0, V& a1, V& a2, V& a3) {
  const V sv = hn::Set(d, s);
  a0 = hn::MulAdd(sv, x0, a0);
  if constexpr (kVecs > 1) a1 = hn::MulAdd(sv, x1, a1);
  if constexpr (kVecs > 2) a2 = hn::MulAdd(sv, x2, a2);
  if constexpr (kVecs > 3) a3 = hn::MulAdd(sv, x3, a3);
}

// x_i = factor * p[i * N, (i + 1) * N) for i < kVecs.
template <size_t kVecs, class D, class V>
HWY_INLINE void LoadVecs(D d, const float* HWY_RESTRICT p, V factor, V& x0, V& x1, V& x2, V& x3) {
  const size_t N = hn::Lanes(d);
  x0 = hn::Mul(hn::LoadU(d, p), factor);
  if constexpr (kVecs > 1) x1 = hn::Mul(hn::LoadU(d, p + N), factor);
  if constexpr (kVecs > 2) x2 = hn::Mul(hn::LoadU(d, p + 2 * N), factor);
  if constexpr (kVecs > 3) x3 = hn::Mul(hn::LoadU(d, p + 3 * N), factor);
}

template <size_t kVecs, class D, class V>
HWY_INLINE void StoreVecs(D d, V x0, V x1, V x2, V x3, float* HWY_RESTRICT p) {
  const size_t N = hn::Lanes(d);
  hn::StoreU(x0, d, p);
  if constexpr (kVecs > 1) hn::StoreU(x1, d, p + N);
  if constexpr (kVecs > 2) hn::StoreU(x2, d, p + 2 * N);
  if constexpr (kVecs > 3) hn::StoreU(x3, d, p + 3 * N);
}

// scores[i][j, j + kVecs * NK) = q_i . (tile columns j...) for the group's kQ queries: per
// element x of head_dim, kVecs loads of the tile row x and kQ broadcasts of q_i[x].
template <size_t kQ, size_t kVecs>
HWY_INLINE void ScoreVectors(const float* const* HWY_RESTRICT q, const float* HWY_RESTRICT tile,
                             size_t bk, size_t head_dim, size_t j, ScoreRows scores) {
  const KeyTag dk;
  const size_t NK = hn::Lanes(dk);
  auto a0 = hn::Zero(dk), a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0, b3 = a0;
  auto c0 = a0, c1 = a0, c2 = a0, c3 = a0, e0 = a0, e1 = a0, e2 = a0, e3 = a0;
  for (size_t x = 0; x < head_dim; ++x) {
    const float* HWY_RESTRICT t = tile + x * bk + j;
    const auto k0 = hn::Load(dk, t);
    auto k1 = k0, k2 = k0, k3 = k0;
    if constexpr (kVecs > 1) k1 = hn::Load(dk, t + NK);
    if constexpr (kVecs > 2) k2 = hn::Load(dk, t + 2 * NK);
    if constexpr (kVecs > 3) k3 = hn::Load(dk, t + 3 * NK);
    MulAddBroadcast<kVecs>(dk, q[0][x], k0, k1, k2, k3, a0, a1, a2, a3);
    if constexpr (kQ > 1) MulAddBroadcast<kVecs>(dk, q[1][x], k0, k1, k2, k3, b0, b1, b2, b3);
    if constexpr (kQ > 2) MulAddBroadcast<kVecs>(dk, q[2][x], k0, k1, k2, k3, c0, c1, c2, c3);
    if constexpr (kQ > 3) MulAddBroadcast<kVecs>(dk, q[3][x], k0, k1, k2, k3, e0, e1, e2, e3);
  }
  StoreVecs<kVecs>(dk, a0, a1, a2, a3, scores[0] + j);
  if constexpr (kQ > 1) StoreVecs<kVecs>(dk, b0, b1, b2, b3, scores[1] + j);
  if constexpr (kQ > 2) StoreVecs<kVecs>(dk, c0, c1, c2, c3, scores[2] + j);
  if constexpr (kQ > 3) StoreVecs<kVecs>(dk, e0, e1, e2, e3, scores[3] + j);
}

// o_i[x, x + kVecs * N) = correction_i * o_i[...] + sum_j weights[i][j] * v_j[...]: per key, kVecs
// loads of its value row and kQ broadcast weights. o rows are o_stride apart.
template <size_t kQ, size_t kVecs>
HWY_INLINE void AccumulateVectors(const float* HWY_RESTRICT v, size_t v_stride, size_t n,
                                  ScoreRows weights, const float* HWY_RESTRICT correction,
                                  float* HWY_RESTRICT o, size_t o_stride) {
  const hn::ScalableTag<float> d;
  auto a0 = hn::Zero(d), a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0, b3 = a0;
  auto c0 = a0, c1 = a0, c2 = a0, c3 = a0, e0 = a0, e1 = a0, e2 = a0, e3 = a0;
  LoadVecs<kVecs>(d, o, hn::Set(d, correction[0]), a0, a1, a2, a3);
  if constexpr (kQ > 1) LoadVecs<kVecs>(d, o + o_stride, hn::Set(d, correction[1]), b0, b1, b2, b3);
  if constexpr (kQ > 2)
    LoadVecs<kVecs>(d, o + 2 * o_stride, hn::Set(d, correction[2]), c0, c1, c2, c3);
  if constexpr (kQ > 3)
    LoadVecs<kVecs>(d, o + 3 * o_stride, hn::Set(d, correction[3]), e0, e1, e2, e3);
  const auto one = hn::Set(d, 1.0f);
  for (size_t j = 0; j < n; ++j, v += v_stride) {
    auto x0 = one, x1 = one, x2 = one, x3 = one;
    LoadVecs<kVecs>(d, v, one, x0, x1, x2, x3);  // the product with 1 folds away
    MulAddBroadcast<kVecs>(d, weights[0][j], x0, x1, x2, x3, a0, a1, a2, a3);
    if constexpr (kQ > 1) MulAddBroadcast<kVecs>(d, weights[1][j], x0, x1, x2, x3, b0, b1, b2, b3);
    if constexpr (kQ > 2) MulAddBroadcast<kVecs>(d, weights[2][j], x0, x1, x2, x3, c0, c1, c2, c3);
    if constexpr (kQ > 3) MulAddBroadcast<kVecs>(d, weights[3][j], x0, x1, x2, x3, e0, e1, e2, e3);
  }
  StoreVecs<kVecs>(d, a0, a1, a2, a3, o);
  if constexpr (kQ > 1) StoreVecs<kVecs>(d, b0, b1, b2, b3, o + o_stride);
  if constexpr (kQ > 2) StoreVecs<kVecs>(d, c0, c1, c2, c3, o + 2 * o_stride);
  if constexpr (kQ > 3) StoreVecs<kVecs>(d, e0, e1, e2, e3, o + 3 * o_stride);
}

// Calls fn(integral_constant<count>) for count in 1..4, e.g. the remainder of a loop over
// groups of 4 vectors, so that the callee's accumulators are named at compile time.
template <class Fn>
HWY_INLINE void WithCount(size_t count, Fn fn) {
  switch (count) {
    case 4:
      return fn(std::integral_constant<size_t, 4>());
    case 3:
      return fn(std::integral_constant<size_t, 3>());
    case 2:
      return fn(std::integral_constant<size_t, 2>());
    default:
      return fn(std::integral_constant<size_t, 1>());
  }
}

// Where one block of a chunk stands: the tile of its keys and its value rows.
struct Block {
  const float* HWY_RESTRICT tile;  // [head_dim][bk]: scale * key j, element x at x * bk + j
  const float* HWY_RESTRICT v;     // value of the block's first key; key j's at v + j * v_stride
  size_t v_stride;                 // n_kv_heads * head_dim
  size_t bk;                       // tile columns, a multiple of the key vector's lanes
  size_t n;                        // keys in this block, <= bk
  size_t head_dim;
};

// The running softmax state of a chunk's queries.
struct ChunkState {
  float* HWY_RESTRICT o;  // [queries][head_dim]
  float* HWY_RESTRICT m;  // [queries] running max
  float* HWY_RESTRICT l;  // [queries] running sum of weights
};

// Replaces row[0, nk) (scores; lanes from the block's n on hold -inf) by exp(row - max) and
// returns their sum. The difference is taken before the multiplication by log2(e) (for the
// cheaper Exp2NonPositive of ops/exp2-inl.h), so the product's rounding error scales with
// |row - max|, not with the scores: near the max, where the weights matter, it is tiny even for
// scores in the thousands. Exp2NonPositive clamps at 2^-125, infinite differences included.
HWY_INLINE float ExpShiftedSum(float* HWY_RESTRICT row, size_t nk, float max) {
  const KeyTag dk;
  const auto vmax = hn::Set(dk, max);
  const auto log2e = hn::Set(dk, 1.4426950408889634f);
  auto sum = hn::Zero(dk);
  for (size_t j = 0; j < nk; j += hn::Lanes(dk)) {
    const auto w = Exp2NonPositive(dk, hn::Mul(hn::Sub(hn::Load(dk, row + j), vmax), log2e));
    hn::Store(w, dk, row + j);
    sum = hn::Add(sum, w);
  }
  return hn::GetLane(hn::SumOfLanes(dk, sum));
}

// Moves kQ queries (rows [first, first + kQ) of the chunk) through one block of keys.
template <size_t kQ>
HWY_INLINE void GroupBlock(const Block& b, const float* const* HWY_RESTRICT q,
                           const ChunkState& s, size_t first) {
  const KeyTag dk;
  const size_t NK = hn::Lanes(dk);
  const size_t nk = hwy::RoundUpTo(b.n, NK);
  alignas(HWY_MAX_BYTES) float scores[kQ][kMaxBlockKeys];
  size_t j = 0;
  for (; j + 4 * NK <= nk; j += 4 * NK) ScoreVectors<kQ, 4>(q, b.tile, b.bk, b.head_dim, j, scores);
  if (j < nk) {
    WithCount((nk - j) / NK, [&](auto vecs) {
      ScoreVectors<kQ, decltype(vecs)::value>(q, b.tile, b.bk, b.head_dim, j, scores);
    });
  }

  float correction[kQ];
  for (size_t i = 0; i < kQ; ++i) {
    float* HWY_RESTRICT row = scores[i];
    for (size_t k = b.n; k < nk; ++k) row[k] = -std::numeric_limits<float>::infinity();
    auto vmax = hn::Load(dk, row);
    for (size_t k = NK; k < nk; k += NK) vmax = hn::Max(vmax, hn::Load(dk, row + k));
    float& m = s.m[first + i];
    const float new_max = std::max(m, hn::GetLane(hn::MaxOfLanes(dk, vmax)));
    correction[i] = std::exp(m - new_max);  // exp(-inf) = 0 on the first block
    float& l = s.l[first + i];
    l = l * correction[i] + ExpShiftedSum(row, nk, new_max);
    m = new_max;
  }

  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  float* HWY_RESTRICT o = s.o + first * b.head_dim;
  size_t x = 0;
  for (; x + 4 * N <= b.head_dim; x += 4 * N) {
    AccumulateVectors<kQ, 4>(b.v + x, b.v_stride, b.n, scores, correction, o + x, b.head_dim);
  }
  if (x + N <= b.head_dim) {
    WithCount((b.head_dim - x) / N, [&](auto vecs) {
      constexpr size_t kVecs = decltype(vecs)::value;
      AccumulateVectors<kQ, kVecs>(b.v + x, b.v_stride, b.n, scores, correction, o + x,
                                   b.head_dim);
    });
    x += (b.head_dim - x) / N * N;
  }
  for (; x < b.head_dim; ++x) {  // head_dim not a multiple of the vector
    for (size_t i = 0; i < kQ; ++i) {
      float acc = o[i * b.head_dim + x] * correction[i];
      for (size_t k = 0; k < b.n; ++k) acc += scores[i][k] * b.v[k * b.v_stride + x];
      o[i * b.head_dim + x] = acc;
    }
  }
}

// tile[x * bk + j] = scale * key j's element x for the n keys at k (rows k_stride apart); the
// columns [n, RoundUpTo(n, lanes)) get 0, so their scores are finite until masked.
HWY_INLINE void TransposeKeys(const float* HWY_RESTRICT k, size_t k_stride, size_t n,
                              size_t head_dim, size_t bk, float scale, float* HWY_RESTRICT tile) {
  const size_t nk = hwy::RoundUpTo(n, hn::Lanes(KeyTag()));
  for (size_t j = 0; j < n; ++j) {
    const float* HWY_RESTRICT key = k + j * k_stride;
    for (size_t x = 0; x < head_dim; ++x) tile[x * bk + j] = scale * key[x];
  }
  for (size_t x = 0; x < head_dim; ++x) {
    for (size_t j = n; j < nk; ++j) tile[x * bk + j] = 0.0f;
  }
}

// Attends query rows [t0, t0 + queries) of query head `head` over the whole sequence.
HWY_NOINLINE void Chunk(const SequenceAttentionArgs& a, size_t head, size_t t0, size_t queries) {
  const size_t head_dim = a.head_dim;
  const size_t q_stride = a.n_heads * head_dim, kv_stride = a.n_kv_heads * head_dim;
  const size_t kv_offset = head / (a.n_heads / a.n_kv_heads) * head_dim;
  const size_t NK = hn::Lanes(KeyTag());
  const size_t bk = std::max(NK, std::min(kMaxBlockKeys, kTileFloats / head_dim) / NK * NK);

  alignas(HWY_MAX_BYTES) float tile[kTileFloats];
  alignas(HWY_MAX_BYTES) float o[kStateFloats];
  float m[kMaxChunkQueries], l[kMaxChunkQueries];
  const ChunkState s{o, m, l};
  std::fill(o, o + queries * head_dim, 0.0f);
  std::fill(m, m + queries, -std::numeric_limits<float>::infinity());
  std::fill(l, l + queries, 0.0f);

  for (size_t key0 = 0; key0 < a.len; key0 += bk) {
    const size_t n = std::min(bk, a.len - key0);
    TransposeKeys(a.k + key0 * kv_stride + kv_offset, kv_stride, n, head_dim, bk, a.scale, tile);
    const Block b{tile, a.v + key0 * kv_stride + kv_offset, kv_stride, bk, n, head_dim};
    const float* q[4];  // the group's first kGroupQueries rows; 4 is what WithCount may pass
    for (size_t i = 0; i < queries;) {
      const size_t group = std::min(kGroupQueries, queries - i);
      for (size_t g = 0; g < group; ++g) q[g] = a.q + (t0 + i + g) * q_stride + head * head_dim;
      WithCount(group, [&](auto queries_in_group) {
        GroupBlock<decltype(queries_in_group)::value>(b, q, s, i);
      });
      i += group;
    }
  }

  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  for (size_t i = 0; i < queries; ++i) {
    float* HWY_RESTRICT out = a.out + (t0 + i) * q_stride + head * head_dim;
    const float* HWY_RESTRICT row = o + i * head_dim;
    const float inv_l = 1.0f / l[i];  // l >= 1: the maximal score contributes exp(0)
    size_t x = 0;
    for (; x + N <= head_dim; x += N) {
      hn::StoreU(hn::Mul(hn::LoadU(d, row + x), hn::Set(d, inv_l)), d, out + x);
    }
    for (; x < head_dim; ++x) out[x] = row[x] * inv_l;
  }
}

void SequenceAttentionPerTarget(const SequenceAttentionArgs& a, size_t head_begin,
                                size_t head_end) {
  HWY_DASSERT(a.head_dim >= 1 && a.head_dim <= kAttentionMaxHeadDim);
  HWY_DASSERT(a.n_kv_heads >= 1 && a.n_heads % a.n_kv_heads == 0);
  HWY_DASSERT(head_end <= a.n_heads);
  const size_t chunk = std::min(kMaxChunkQueries, kStateFloats / a.head_dim);
  for (size_t head = head_begin; head < head_end; ++head) {
    for (size_t t0 = 0; t0 < a.len; t0 += chunk) Chunk(a, head, t0, std::min(chunk, a.len - t0));
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
