// ops/attention over f16 and int8 rings, and past the context (sinks, rings that wrapped many
// times, sinks moved by RoPE), on every compiled Highway target this CPU supports.
//
// The reference is independent of the kernel's walk: for each query it lists the visible
// positions from the definition in ops/attention.h, reads keys and values by position from the
// values the ring holds (decoded from f16/int8 by the encoders' own rounding rules, so the test
// checks the kernel's reading, not the storage's precision), and takes a plain double softmax.
// Rotated sinks are rotated in double from the raw key. Tolerance as in ops_attention_test.cc:
// 1e-5 of max|v| (2e-5 where keys are rotated in float by the kernel).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <vector>

#include "ops/attention.h"
#include "ops/kv_encode.h"
#include "ops/kv_layout.h"
#include "ops/rope.h"
#include "tests/ops_test_util.h"

namespace kestrel::ops {
namespace {

struct Case {
  size_t n_heads, n_kv_heads, head_dim;
  size_t n_tokens;
  int64_t pos0;
  int64_t window;   // 0: causal
  int64_t context;  // 0: unlimited
  size_t sinks;
  bool rotate;  // keys rotated by RoPE (theta 10000, NEOX) and sinks moved past the context
};

constexpr double kRopeTheta = 10000.0;

// (a, b) pairs of the NEOX layout rotated by pos, in double.
std::vector<double> Rotate(const std::vector<double>& x, double pos) {
  const size_t half = x.size() / 2;
  std::vector<double> y(x.size());
  for (size_t i = 0; i < half; ++i) {
    const double angle = pos * std::pow(kRopeTheta, -2.0 * static_cast<double>(i) / x.size());
    y[i] = x[i] * std::cos(angle) - x[i + half] * std::sin(angle);
    y[i + half] = x[i] * std::sin(angle) + x[i + half] * std::cos(angle);
  }
  return y;
}

// A ring as ops/kv_layout.h lays it out: kv head h's values for `slot` start at value
// (h * capacity + slot) * head_dim, int8 scales likewise per 32 values.
struct Ring {
  KvType type = KvType::kF32;
  size_t n_kv_heads = 0, head_dim = 0, capacity = 0;
  std::vector<uint8_t> data;
  std::vector<float> scales;
  std::vector<std::vector<float>> decoded;  // by slot: the f32 values the ring holds

  size_t First(size_t slot, size_t h) const { return (h * capacity + slot) * head_dim; }

  void Store(size_t slot, const std::vector<float>& values) {
    for (size_t h = 0; h < n_kv_heads; ++h) {
      const float* in = values.data() + h * head_dim;
      uint8_t* out = data.data() + KvRowBytes(type, First(slot, h));
      if (type == KvType::kF16) {
        KvEncodeF16(in, head_dim, reinterpret_cast<hwy::float16_t*>(out));
      } else if (type == KvType::kInt8) {
        KvEncodeInt8(in, head_dim, reinterpret_cast<int8_t*>(out),
                     scales.data() + First(slot, h) / kKvInt8Block);
      } else {
        std::memcpy(out, in, head_dim * sizeof(float));
      }
    }
    decoded[slot] = Decode(slot);
  }

  // The stored values back in f32, element by element (no SIMD: the reference's own reading).
  std::vector<float> Decode(size_t slot) const {
    std::vector<float> v(n_kv_heads * head_dim);
    for (size_t h = 0; h < n_kv_heads; ++h) {
      const size_t first = First(slot, h);
      const uint8_t* in = data.data() + KvRowBytes(type, first);
      for (size_t i = 0; i < head_dim; ++i) {
        float& out = v[h * head_dim + i];
        if (type == KvType::kF16) {
          uint16_t bits;
          std::memcpy(&bits, in + 2 * i, 2);
          out = test::F32FromF16Bits(bits);
        } else if (type == KvType::kInt8) {
          out = static_cast<float>(static_cast<int8_t>(in[i])) * scales[(first + i) / kKvInt8Block];
        } else {
          std::memcpy(&out, in + 4 * i, 4);
        }
      }
    }
    return v;
  }
};

// Runs one case on the current target and returns max |out - reference| / max|v|. With
// partitions, a decode step (one token) is also split across 2, 3 and one "thread" per item
// (AttentionPartials in any order, then AttentionMergePartials), which must give the bits of the
// unsplit op.
double RunCase(const Case& c, KvType type, size_t partition_keys = 0) {
  const size_t row = c.n_kv_heads * c.head_dim;
  const size_t q_row = c.n_heads * c.head_dim;
  const int64_t end = c.pos0 + static_cast<int64_t>(c.n_tokens);
  const int64_t reach_window = c.window > 0 ? c.window : std::numeric_limits<int64_t>::max();
  const int64_t reach = c.context > 0 ? std::min(reach_window, c.context) : reach_window;
  // The ring as the runtime sizes it: what the queries see plus one step.
  const size_t capacity = static_cast<size_t>(
      std::min<int64_t>(end, reach == std::numeric_limits<int64_t>::max() ? end : reach) +
      static_cast<int64_t>(c.n_tokens));
  Ring k, v;
  for (Ring* r : {&k, &v}) {
    r->type = type;
    r->n_kv_heads = c.n_kv_heads;
    r->head_dim = c.head_dim;
    r->capacity = capacity;
    r->data.assign(capacity * KvRowBytes(type, row), 0);
    r->scales.assign(capacity * row / kKvInt8Block + 1, 0.0f);
    r->decoded.assign(capacity, {});
  }
  // raw[p] keys before rotation; positions written in order, so later ones overwrite.
  const auto raw_key = [&](int64_t p, size_t kvh) {
    std::vector<double> x(c.head_dim);
    for (size_t i = 0; i < c.head_dim; ++i) x[i] = test::HashNoise(1, p, kvh * 4096 + i);
    return x;
  };
  for (int64_t p = 0; p < end; ++p) {
    std::vector<float> key(row), value(row);
    for (size_t kvh = 0; kvh < c.n_kv_heads; ++kvh) {
      std::vector<double> x = raw_key(p, kvh);
      if (c.rotate) x = Rotate(x, static_cast<double>(p));
      for (size_t i = 0; i < c.head_dim; ++i) {
        key[kvh * c.head_dim + i] = static_cast<float>(x[i]);
        value[kvh * c.head_dim + i] = test::HashNoise(2, p, kvh * 4096 + i);
      }
    }
    const size_t slot = KvSlot(p, capacity, c.window > 0 ? 0 : c.sinks);
    k.Store(slot, key);
    v.Store(slot, value);
  }
  std::vector<float> q(c.n_tokens * q_row);
  for (size_t i = 0; i < q.size(); ++i) q[i] = 3.0f * test::HashNoise(3, i, 0);
  std::vector<float> out(q.size(), 1234.5f);

  RopeFrequencies rope{RopeLayout::kNeox, static_cast<float>(kRopeTheta), 1.0f, nullptr};
  AttentionArgs a;
  a.q = q.data();
  a.out = out.data();
  a.kv_type = type;
  a.k_cache = k.data.data();
  a.v_cache = v.data.data();
  a.k_scales = k.scales.data();
  a.v_scales = v.scales.data();
  a.n_tokens = c.n_tokens;
  a.n_heads = c.n_heads;
  a.n_kv_heads = c.n_kv_heads;
  a.head_dim = c.head_dim;
  a.capacity = capacity;
  a.pos0 = c.pos0;
  a.window = c.window;
  a.context = c.context;
  a.sinks = c.window > 0 ? 0 : c.sinks;
  a.sink_rope = c.rotate ? &rope : nullptr;
  a.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  a.partition_keys = partition_keys;
  // Two thread shares, split mid-token, as the runtime may.
  const size_t tasks = c.n_tokens * c.n_heads, mid = tasks / 2 + 1;
  Attention(a, 0, std::min(mid, tasks));
  if (mid < tasks) Attention(a, mid, tasks);
  if (partition_keys > 0 && c.n_tokens == 1) {
    const size_t parts = PartitionsSeen(a, c.pos0, c.pos0).count();
    const size_t items = c.n_kv_heads * parts;
    for (size_t threads : {size_t{2}, size_t{3}, items}) {
      std::vector<float> partials(
          items / c.n_kv_heads * c.n_heads * AttentionPartialFloats(c.head_dim),
          std::numeric_limits<float>::quiet_NaN());
      std::vector<float> split(q.size(), 1234.5f);
      AttentionArgs sa = a;
      sa.out = split.data();
      for (size_t t = threads; t-- > 0;) {  // the last share first: order must not matter
        const size_t b = items * t / threads, e = items * (t + 1) / threads;
        if (b < e) AttentionPartials(sa, b, e, partials.data());
      }
      AttentionMergePartials(sa, partials.data());
      EXPECT_EQ(0, std::memcmp(split.data(), out.data(), out.size() * sizeof(float)))
          << parts << " partitions split over " << threads << " threads";
    }
  }

  const int64_t sinks = c.window > 0 ? 0 : static_cast<int64_t>(c.sinks);
  double worst = 0.0;
  for (size_t t = 0; t < c.n_tokens; ++t) {
    const int64_t p = c.pos0 + static_cast<int64_t>(t);
    std::vector<int64_t> seen;  // visible positions, from the definition
    if (p < reach) {
      for (int64_t j = 0; j <= p; ++j) seen.push_back(j);
    } else {
      for (int64_t j = 0; j < sinks; ++j) seen.push_back(j);
      for (int64_t j = p - (reach - sinks) + 1; j <= p; ++j) seen.push_back(j);
    }
    for (size_t h = 0; h < c.n_heads; ++h) {
      const size_t kvh = h / (c.n_heads / c.n_kv_heads);
      const float* qh = q.data() + t * q_row + h * c.head_dim;
      std::vector<double> scores;
      for (int64_t j : seen) {
        const size_t slot = KvSlot(j, capacity, static_cast<size_t>(sinks));
        std::vector<double> key(c.head_dim);
        for (size_t i = 0; i < c.head_dim; ++i) key[i] = k.decoded[slot][kvh * c.head_dim + i];
        if (c.rotate && j < sinks && p >= reach) {
          // The stored sink moved to sit just before the oldest recent key.
          key = Rotate(key, static_cast<double>(p - (reach - sinks) + 1 - sinks));
        }
        double dot = 0.0;
        for (size_t i = 0; i < c.head_dim; ++i) dot += double{qh[i]} * key[i];
        scores.push_back(dot * a.scale);
      }
      const double top = *std::max_element(scores.begin(), scores.end());
      double sum = 0.0;
      for (double& s : scores) sum += (s = std::exp(s - top));
      // Each key's weight and slot once, not per element (under qemu, double arithmetic is
      // software, and this reference is most of the test's time there).
      std::vector<size_t> slots(seen.size());
      for (size_t n = 0; n < seen.size(); ++n) {
        scores[n] /= sum;
        slots[n] = KvSlot(seen[n], capacity, static_cast<size_t>(sinks));
      }
      for (size_t i = 0; i < c.head_dim; ++i) {
        double expected = 0.0;
        for (size_t n = 0; n < seen.size(); ++n) {
          expected += scores[n] * v.decoded[slots[n]][kvh * c.head_dim + i];
        }
        worst = std::max(worst, std::fabs(out[t * q_row + h * c.head_dim + i] - expected));
      }
    }
  }
  return worst;  // values are in [-1, 1]
}

const Case kCases[] = {
    // heads, kv, dim, tokens, pos0, window, context, sinks, rotate
    {4, 1, 256, 1, 300, 0, 0, 0, false},    // decode, Gemma 3's global shape
    {4, 1, 256, 37, 10, 0, 0, 0, false},    // prefill, query blocks of 4 tokens x 4 heads
    {9, 3, 64, 70, 5, 0, 0, 0, false},      // SmolLM2's shape: 3 heads per kv head
    {2, 2, 32, 20, 40, 16, 0, 0, false},    // sliding window
    {4, 1, 64, 1, 500, 0, 64, 4, false},    // decode far past a context of 64, ring wrapped
    {4, 1, 64, 40, 40, 0, 64, 4, false},    // a step that crosses the context
    {4, 1, 64, 64, 300, 0, 64, 4, false},   // a whole past-context step
    {4, 1, 64, 30, 300, 0, 64, 0, false},   // no sinks: the most recent tokens only
    {2, 2, 32, 20, 200, 48, 32, 0, false},  // a window wider than the context
    {4, 1, 64, 1, 500, 0, 64, 4, true},     // sinks moved by RoPE, decode
    {9, 3, 64, 45, 200, 0, 96, 5, true},    // and prefill, several tokens per block
};

TEST(AttentionKvTest, EveryKvTypeMatchesTheReferenceInAndPastTheContext) {
  double worst = 0.0;
  test::ForEachTarget([&](const char*) {
    for (KvType type : {KvType::kF32, KvType::kF16, KvType::kInt8}) {
      for (const Case& c : kCases) {
        SCOPED_TRACE(std::string(KvTypeName(type)) + " heads " + std::to_string(c.n_heads) + "/" +
                     std::to_string(c.n_kv_heads) + " dim " + std::to_string(c.head_dim) +
                     " tokens " + std::to_string(c.n_tokens) + " at " + std::to_string(c.pos0) +
                     " window " + std::to_string(c.window) + " context " +
                     std::to_string(c.context) + " sinks " + std::to_string(c.sinks) +
                     (c.rotate ? " rotated" : ""));
        const double error = RunCase(c, type);
        EXPECT_LE(error, c.rotate ? 2e-5 : 1e-5);
        worst = std::max(worst, error);
      }
    }
  });
  std::printf("[ accuracy ] max |out - reference| = %.3g\n", worst);
}

// Keys in partitions (each with its own softmax state, folded in order) still give the plain
// softmax, and a decode step split across threads by partition gives the bits of one thread.
TEST(AttentionKvTest, PartitionsMatchTheReferenceAndSplitAcrossThreadsExactly) {
  const Case cases[] = {
      // heads, kv, dim, tokens, pos0, window, context, sinks, rotate
      {4, 1, 256, 1, 300, 0, 0, 0, false},   // decode, Gemma 3's global shape
      {9, 3, 64, 1, 1000, 0, 0, 0, false},   // SmolLM2's shape
      {9, 3, 64, 70, 5, 0, 0, 0, false},     // prefill across partitions
      {2, 2, 32, 1, 40, 16, 0, 0, false},    // sliding window
      {4, 1, 64, 1, 500, 0, 200, 4, false},  // decode past the context, ring wrapped
      {4, 1, 64, 1, 130, 0, 200, 4, true},   // sinks inside the context, rotation unused
      {4, 1, 64, 1, 500, 0, 200, 4, true},   // sinks moved by RoPE
      {9, 3, 64, 45, 200, 0, 96, 5, true},   // prefill past the context
      {40, 2, 16, 1, 333, 0, 0, 3, false},   // 20 queries per kv head: two query blocks
  };
  double worst = 0.0;
  test::ForEachTarget([&](const char*) {
    for (KvType type : {KvType::kF32, KvType::kF16, KvType::kInt8}) {
      for (const Case& c : cases) {
        if (type == KvType::kInt8 && c.head_dim % kKvInt8Block != 0) continue;
        for (size_t keys : {size_t{7}, size_t{64}, size_t{100}}) {
          SCOPED_TRACE(std::string(KvTypeName(type)) + " heads " + std::to_string(c.n_heads) + "/" +
                       std::to_string(c.n_kv_heads) + " tokens " + std::to_string(c.n_tokens) +
                       " at " + std::to_string(c.pos0) + " partitions of " + std::to_string(keys));
          const double error = RunCase(c, type, keys);
          EXPECT_LE(error, c.rotate ? 2e-5 : 1e-5);
          worst = std::max(worst, error);
        }
      }
    }
  });
  std::printf("[ accuracy ] max |out - reference| = %.3g\n", worst);
}

// The encoders round as documented: f16 to nearest, int8 per 32 values with absmax / 127.
TEST(AttentionKvTest, EncodersRoundAsDocumented) {
  test::ForEachTarget([&](const char*) {
    std::vector<float> x(96);
    for (size_t i = 0; i < x.size(); ++i) x[i] = 5.0f * test::HashNoise(7, i, 0);
    x[40] = 0.0f;
    std::fill(x.begin() + 64, x.end(), 0.0f);  // an all-zero block
    std::vector<int8_t> q(x.size());
    std::vector<float> scales(3);
    KvEncodeInt8(x.data(), x.size(), q.data(), scales.data());
    for (size_t b = 0; b < 3; ++b) {
      float absmax = 0.0f;
      for (size_t i = 0; i < 32; ++i) absmax = std::max(absmax, std::fabs(x[b * 32 + i]));
      EXPECT_EQ(scales[b], absmax / 127.0f);
      for (size_t i = 0; i < 32; ++i) {
        const float expected = b == 2 ? 0.0f : std::nearbyint(x[b * 32 + i] / scales[b]);
        EXPECT_NEAR(q[b * 32 + i], expected, 1.0f) << i;  // x * (1/scale) may round the other way
        EXPECT_LE(std::fabs(q[b * 32 + i] * scales[b] - x[b * 32 + i]), scales[b] * 0.5001f);
      }
    }
    std::vector<hwy::float16_t> h(37);  // a tail past whole vectors
    std::vector<float> y(h.size());
    for (size_t i = 0; i < y.size(); ++i) y[i] = 1000.0f * test::HashNoise(8, i, 0);
    KvEncodeF16(y.data(), y.size(), h.data());
    for (size_t i = 0; i < y.size(); ++i) {
      uint16_t bits;
      std::memcpy(&bits, &h[i], 2);
      EXPECT_EQ(bits, test::F16BitsFromF32(y[i])) << i;
    }
  });
}

}  // namespace
}  // namespace kestrel::ops
