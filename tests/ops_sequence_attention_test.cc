// Tests of ops/sequence_attention on every compiled Highway target this CPU supports, against a
// double-precision reference that materializes each head's [len, len] score matrix and applies a
// plain max-subtracted softmax (causal: over keys 0..t for query t).
//
// Tolerance: each output is a convex combination of value rows, so an error of relative size e in
// the softmax weights moves it by at most e * max|v|. The kernel's float rounding (dot products
// over head_dim <= 1024 terms, a 1-ULP exp, running sums over <= 300 keys) keeps e near 1e-6 for
// the O(1) scores used here, so |out - reference| <= 1e-5 * max|v| has margin; the tests print the
// largest error they saw.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "ops/sequence_attention.h"
#include "tests/ops_test_util.h"

namespace kestrel::ops {
namespace {

constexpr double kTolerance = 1e-5;  // times max|v|; see the top of the file
constexpr float kUntouched = 1234.5f;

struct Shape {
  size_t n_heads, n_kv_heads, head_dim;
};

struct Problem {
  Shape shape;
  size_t len;
  float scale;
  std::vector<float> q;  // [len, n_heads * head_dim]
  std::vector<float> k;  // [len, n_kv_heads * head_dim]
  std::vector<float> v;  // [len, n_kv_heads * head_dim]
  bool causal = false;

  size_t RowWidth() const { return shape.n_heads * shape.head_dim; }
  size_t KvWidth() const { return shape.n_kv_heads * shape.head_dim; }

  SequenceAttentionArgs Args(float* out) const {
    return {q.data(),      k.data(),         v.data(),       out,   len,
            shape.n_heads, shape.n_kv_heads, shape.head_dim, scale, causal};
  }
};

// Queries in [-3, 3], keys and values in [-1, 1], scale 1/sqrt(head_dim): scores of standard
// deviation about 1.
Problem MakeProblem(const Shape& shape, size_t len, uint32_t seed) {
  std::mt19937 rng(seed);
  Problem pr{shape, len, 1.0f / std::sqrt(static_cast<float>(shape.head_dim)), {}, {}, {}};
  pr.q = test::RandomFloats(len * pr.RowWidth(), -3.0f, 3.0f, rng);
  pr.k = test::RandomFloats(len * pr.KvWidth(), -1.0f, 1.0f, rng);
  pr.v = test::RandomFloats(len * pr.KvWidth(), -1.0f, 1.0f, rng);
  return pr;
}

// The naive reference, in double: [len, n_heads * head_dim].
std::vector<double> Reference(const Problem& pr) {
  const Shape& s = pr.shape;
  std::vector<double> out(pr.len * pr.RowWidth(), 0.0);
  std::vector<double> scores(pr.len);
  for (size_t h = 0; h < s.n_heads; ++h) {
    const size_t kv = h / (s.n_heads / s.n_kv_heads) * s.head_dim;
    for (size_t t = 0; t < pr.len; ++t) {
      const float* q = pr.q.data() + t * pr.RowWidth() + h * s.head_dim;
      const size_t keys = pr.causal ? t + 1 : pr.len;
      for (size_t j = 0; j < keys; ++j) {
        const float* k = pr.k.data() + j * pr.KvWidth() + kv;
        double dot = 0.0;
        for (size_t x = 0; x < s.head_dim; ++x) dot += double{q[x]} * k[x];
        scores[j] = double{pr.scale} * dot;
      }
      const double max = *std::max_element(scores.begin(), scores.begin() + keys);
      double sum = 0.0;
      for (size_t j = 0; j < keys; ++j) sum += (scores[j] = std::exp(scores[j] - max));
      double* o = out.data() + t * pr.RowWidth() + h * s.head_dim;
      for (size_t j = 0; j < keys; ++j) {
        const float* v = pr.v.data() + j * pr.KvWidth() + kv;
        for (size_t x = 0; x < s.head_dim; ++x) o[x] += scores[j] / sum * v[x];
      }
    }
  }
  return out;
}

// The largest error seen, relative to max|v|, printed at a test's end.
struct Accuracy {
  double max_error = 0.0;
  size_t checked = 0;
  void Print() const {
    std::printf(
        "[ accuracy ] %zu outputs, max |out - reference| / max|v| = %.3g (tolerance %.0e)\n",
        checked, max_error, kTolerance);
  }
};

// Runs heads [head_begin, head_end) and expects their columns to match the reference and every
// other output to still hold kUntouched.
void RunAndCheck(const Problem& pr, const std::vector<double>& ref, size_t head_begin,
                 size_t head_end, Accuracy& acc, const std::string& what) {
  std::vector<float> out(pr.len * pr.RowWidth(), kUntouched);
  SequenceAttention(pr.Args(out.data()), head_begin, head_end);
  double max_v = 1e-30;
  for (float x : pr.v) max_v = std::max(max_v, std::fabs(double{x}));
  size_t reported = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    const size_t head = i % pr.RowWidth() / pr.shape.head_dim;
    if (head < head_begin || head >= head_end) {
      if (std::memcmp(&out[i], &kUntouched, sizeof(float)) != 0 && reported++ < 5) {
        ADD_FAILURE() << what << ": head " << head << " outside [" << head_begin << ", " << head_end
                      << ") was written at " << i;
      }
      continue;
    }
    const double error = std::fabs(double{out[i]} - ref[i]) / max_v;
    if (!(error <= kTolerance) && reported++ < 5) {  // also catches NaN
      ADD_FAILURE() << what << ": row " << i / pr.RowWidth() << " head " << head << " element "
                    << i % pr.shape.head_dim << ": got " << out[i] << ", reference " << ref[i];
    }
    if (!std::isnan(error)) acc.max_error = std::max(acc.max_error, error);
    ++acc.checked;
  }
}

std::string Describe(const Problem& pr) {
  return "heads " + std::to_string(pr.shape.n_heads) + "/" + std::to_string(pr.shape.n_kv_heads) +
         " head_dim " + std::to_string(pr.shape.head_dim) + " len " + std::to_string(pr.len);
}

// MiniLM's MHA, MQA with a head_dim that is no multiple of any vector, GQA, the largest head_dim.
const Shape kShapes[] = {{12, 12, 32}, {4, 1, 17}, {8, 2, 64}, {2, 2, 1024}};
// One key, partial blocks, several blocks with a partial last one (and, at 300, several query
// chunks at head_dim >= 32).
const size_t kLens[] = {1, 2, 7, 33, 300};

TEST(AttentionSequenceTest, MatchesReference) {
  Accuracy acc;
  for (const Shape& shape : kShapes) {
    for (size_t len : kLens) {
      // The largest head_dim up to 33 keys: at 300 it alone would be two thirds of this test's
      // work (minutes under CI's emulated SVE), and the query chunks 300 adds are the other
      // shapes' at 300.
      if (shape.head_dim == kAttentionMaxHeadDim && len > 33) continue;
      const Problem pr = MakeProblem(shape, len, static_cast<uint32_t>(len * 131 + shape.head_dim));
      const std::vector<double> ref = Reference(pr);
      test::ForEachTarget([&](const char* target) {
        RunAndCheck(pr, ref, 0, shape.n_heads, acc, Describe(pr) + " on " + target);
      });
    }
  }
  acc.Print();
}

// Causal (a decoder's layers as an embedding model's encoder): query t sees keys 0..t. Lengths
// past one block of keys (128) and past several query chunks, where a chunk's queries see
// different numbers of keys of the block that holds them; GQA, MQA with an odd head_dim, and
// Qwen3's head_dim of 128.
TEST(AttentionSequenceTest, CausalMatchesReference) {
  Accuracy acc;
  for (const Shape& shape : {Shape{4, 1, 17}, Shape{8, 2, 64}, Shape{2, 1, 128}}) {
    for (size_t len : {size_t{1}, size_t{2}, size_t{7}, size_t{33}, size_t{129}, size_t{300}}) {
      Problem pr = MakeProblem(shape, len, static_cast<uint32_t>(len * 7 + shape.head_dim));
      pr.causal = true;
      const std::vector<double> ref = Reference(pr);
      test::ForEachTarget([&](const char* target) {
        RunAndCheck(pr, ref, 0, shape.n_heads, acc, "causal " + Describe(pr) + " on " + target);
      });
    }
  }
  acc.Print();
}

// A thread's share of the heads writes only those heads' columns.
TEST(AttentionSequenceTest, PartialHeadRangesWriteOnlyTheirHeads) {
  Accuracy acc;
  for (const Shape& shape : {Shape{4, 1, 17}, Shape{8, 2, 64}, Shape{12, 12, 32}}) {
    const Problem pr = MakeProblem(shape, 33, 7);
    const std::vector<double> ref = Reference(pr);
    test::ForEachTarget([&](const char* target) {
      for (const auto& range :
           {std::make_pair(size_t{1}, size_t{3}), std::make_pair(size_t{0}, size_t{1}),
            std::make_pair(shape.n_heads - 1, shape.n_heads),
            std::make_pair(size_t{2}, size_t{2})}) {
        RunAndCheck(pr, ref, range.first, range.second, acc,
                    Describe(pr) + " heads [" + std::to_string(range.first) + ", " +
                        std::to_string(range.second) + ") on " + target);
      }
    });
  }
  acc.Print();
}

// Scores of magnitude about 1e3, where exp overflows (and a naive softmax gives inf/inf or 0/0):
// odd heads see their scores negated. The outputs stay finite and match the reference.
TEST(AttentionSequenceTest, ExtremeScoresStayFinite) {
  Accuracy acc;
  const size_t hd = 16;
  for (size_t len : {size_t{2}, size_t{65}, size_t{300}}) {
    Problem pr = MakeProblem({4, 2, hd}, len, 11);
    pr.scale = 0.5f;
    for (size_t t = 0; t < len; ++t) {
      for (size_t h = 0; h < 4; ++h) {
        for (size_t x = 0; x < hd; ++x) {
          const float q = static_cast<float>(1 + (x + t) % 2);
          pr.q[t * pr.RowWidth() + h * hd + x] = h % 2 ? -q : q;
        }
      }
      // Keys jump between 40 and 128 from row to row, so the running max changes often.
      for (size_t i = 0; i < pr.KvWidth(); ++i) {
        pr.k[t * pr.KvWidth() + i] = 40.0f + static_cast<float>((t * 7) % 23) * 4.0f +
                                     std::round(2.0f * pr.k[t * pr.KvWidth() + i]);
      }
    }
    double max_score = 0.0;  // row 0, head 0
    for (size_t j = 0; j < len; ++j) {
      double dot = 0.0;
      for (size_t x = 0; x < hd; ++x) dot += double{pr.q[x]} * pr.k[j * pr.KvWidth() + x];
      max_score = std::max(max_score, pr.scale * dot);
    }
    ASSERT_GT(max_score, 700.0) << "the test must reach scores where exp overflows";
    const std::vector<double> ref = Reference(pr);
    test::ForEachTarget([&](const char* target) {
      RunAndCheck(pr, ref, 0, 4, acc, Describe(pr) + " extreme scores on " + target);
    });
  }
  acc.Print();
}

}  // namespace
}  // namespace kestrel::ops
