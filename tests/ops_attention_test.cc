// Tests of ops/attention on every compiled Highway target this CPU supports, against a naive
// double-precision reference that materializes the masked score matrix and applies a plain
// softmax.
//
// Tolerance: each output is a convex combination of value rows, so an error of relative size e in
// the softmax weights moves it by at most e * max|v|. The kernel's float rounding (dot products
// over head_dim <= 1024 terms, a 1-ULP exp, running sums over <= 9001 keys) keeps e near 1e-6 for
// the O(1) scores used here, so |out - reference| <= 1e-5 * max|v| has margin; the tests print the
// largest error they saw.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "ops/attention.h"
#include "tests/ops_test_util.h"

// This file is compiled once per Highway target: the op's body with an explicit block size is
// exported from here so the tests can vary how many blocks a walk takes.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "tests/ops_attention_test.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "ops/attention-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kestrel::ops::HWY_NAMESPACE {

void AttentionWithBlockKeys(const AttentionArgs& args, size_t task_begin, size_t task_end,
                            size_t block_keys) {
  AttentionTasks(args, task_begin, task_end, block_keys);
}

size_t AttentionMaxBlockKeys() { return kAttentionMaxBlockKeys; }

// Lets the tests check that dispatch really runs the target they selected.
int64_t CompiledTarget() { return HWY_TARGET; }

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace kestrel::ops::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kestrel::ops {

HWY_EXPORT(AttentionWithBlockKeys);
HWY_EXPORT(AttentionMaxBlockKeys);
HWY_EXPORT(CompiledTarget);

namespace {

constexpr double kTolerance = 1e-5;  // times max|v|; see the top of the file
constexpr float kUntouched = 1234.5f;

// What a test ran and the largest error it saw, printed at its end.
struct RunLog {
  std::string targets;     // names of the targets that ran, in order of first run
  double max_error = 0.0;  // relative to max|v|
  size_t checked = 0;
  void Print() const {
    std::printf("[ targets  ] %s\n", targets.c_str());
    std::printf(
        "[ accuracy ] %zu outputs, max |out - reference| / max|v| = %.3g (tolerance %.0e)\n",
        checked, max_error, kTolerance);
  }
};

// Runs fn once per compiled target this CPU supports, with dispatch forced to that target.
void ForEachTarget(RunLog& log, const std::function<void()>& fn) {
  size_t ran = 0;
  for (int64_t target : ops::test::TargetsToTest()) {
    hwy::SetSupportedTargetsForTest(target);
    SCOPED_TRACE(hwy::TargetName(target));
    ASSERT_EQ(HWY_DYNAMIC_DISPATCH(CompiledTarget)(), target)
        << "dispatch did not pick " << hwy::TargetName(target);
    fn();
    const std::string name = hwy::TargetName(target);
    if ((" " + log.targets + " ").find(" " + name + " ") == std::string::npos) {
      log.targets += (log.targets.empty() ? "" : " ") + name;
    }
    ++ran;
  }
  hwy::SetSupportedTargetsForTest(0);
  ASSERT_GT(ran, 0u);
}

struct Shape {
  size_t n_heads;
  size_t n_kv_heads;
  size_t head_dim;
};

struct Step {
  size_t n_tokens;
  int64_t pos0;
  int64_t window;
  size_t capacity;
};

// (position, kv head, element) -> value; (row, head, element) -> query.
using KvFn = std::function<float(int64_t, size_t, size_t)>;
using QueryFn = std::function<float(size_t, size_t, size_t)>;

struct Problem {
  Shape shape;
  Step step;
  float scale;
  KvFn key;
  KvFn value;
  std::vector<float> q;       // [n_tokens, n_heads * head_dim]
  std::vector<float> k_ring;  // [n_kv_heads, capacity, head_dim] (ops/kv_layout.h)
  std::vector<float> v_ring;  // [n_kv_heads, capacity, head_dim]
  float softcap;              // AttentionArgs::logit_softcap

  size_t RowWidth() const { return shape.n_heads * shape.head_dim; }
  size_t KvWidth() const { return shape.n_kv_heads * shape.head_dim; }
  size_t Tasks() const { return step.n_tokens * shape.n_heads; }
  int64_t FirstVisible(int64_t p) const {
    return step.window > 0 ? std::max<int64_t>(0, p - step.window + 1) : 0;
  }

  AttentionArgs Args(float* out) const {
    AttentionArgs a;
    a.q = q.data();
    a.out = out;
    a.k_cache = k_ring.data();
    a.v_cache = v_ring.data();
    a.n_tokens = step.n_tokens;
    a.n_heads = shape.n_heads;
    a.n_kv_heads = shape.n_kv_heads;
    a.head_dim = shape.head_dim;
    a.capacity = step.capacity;
    a.pos0 = step.pos0;
    a.window = step.window;
    a.scale = scale;
    a.logit_softcap = softcap;
    return a;
  }
};

// Hashed noise, so the reference reads keys and values by position without going through the ring.
float DefaultKey(int64_t pos, size_t kv_head, size_t x) {
  return test::HashNoise(1, static_cast<uint64_t>(pos), kv_head * 4096 + x);
}
float DefaultValue(int64_t pos, size_t kv_head, size_t x) {
  return test::HashNoise(2, static_cast<uint64_t>(pos), kv_head * 4096 + x);
}

// Queries in [-3, 3] with scale 1/sqrt(head_dim) give scores of standard deviation about 1.
Problem MakeProblem(const Shape& shape, const Step& step, KvFn key = DefaultKey,
                    KvFn value = DefaultValue, QueryFn query = nullptr, float scale = 0.0f) {
  Problem pr{shape, step, scale, std::move(key), std::move(value), {}, {}, {}, 0.0f};
  if (pr.scale == 0.0f) pr.scale = 1.0f / std::sqrt(static_cast<float>(shape.head_dim));
  if (!query) {
    query = [](size_t t, size_t h, size_t x) { return 3.0f * test::HashNoise(3, t, h * 4096 + x); };
  }
  pr.q.resize(step.n_tokens * pr.RowWidth());
  for (size_t t = 0; t < step.n_tokens; ++t) {
    for (size_t h = 0; h < shape.n_heads; ++h) {
      for (size_t x = 0; x < shape.head_dim; ++x) {
        pr.q[t * pr.RowWidth() + h * shape.head_dim + x] = query(t, h, x);
      }
    }
  }
  // Fill the ring the way the runtime does: position p writes slot p % capacity, older positions
  // get overwritten. Slots never written keep NaN, which poisons any output that reads them.
  // Positions more than two laps back are overwritten anyway and are skipped to keep it cheap.
  const size_t ring_floats = step.capacity * pr.KvWidth();
  pr.k_ring.assign(ring_floats, std::numeric_limits<float>::quiet_NaN());
  pr.v_ring.assign(ring_floats, std::numeric_limits<float>::quiet_NaN());
  const int64_t end = step.pos0 + static_cast<int64_t>(step.n_tokens);
  const int64_t cap = static_cast<int64_t>(step.capacity);
  for (int64_t p = std::max<int64_t>(0, end - 2 * cap); p < end; ++p) {
    const size_t slot = static_cast<size_t>(p % cap);
    for (size_t kvh = 0; kvh < shape.n_kv_heads; ++kvh) {
      for (size_t x = 0; x < shape.head_dim; ++x) {
        const size_t at = (kvh * step.capacity + slot) * shape.head_dim + x;
        pr.k_ring[at] = pr.key(p, kvh, x);
        pr.v_ring[at] = pr.value(p, kvh, x);
      }
    }
  }
  return pr;
}

// The naive reference: for each head, the [n_tokens, n_keys] score matrix over every position the
// step can see, an explicit mask, a plain max-subtracted softmax, all in double. Keys and values
// come from the generators, not from the ring. Returns [n_tokens, n_heads * head_dim].
std::vector<double> Reference(const Problem& pr) {
  const Shape& s = pr.shape;
  const int64_t first = pr.FirstVisible(pr.step.pos0);
  const int64_t last = pr.step.pos0 + static_cast<int64_t>(pr.step.n_tokens) - 1;
  const size_t n_keys = static_cast<size_t>(last - first + 1);
  const size_t n_tokens = pr.step.n_tokens;
  std::vector<double> out(n_tokens * pr.RowWidth(), 0.0);
  std::vector<double> scores(n_tokens * n_keys);
  std::vector<char> visible(n_tokens * n_keys);
  for (size_t t = 0; t < n_tokens; ++t) {
    const int64_t p = pr.step.pos0 + static_cast<int64_t>(t);
    for (size_t j = 0; j < n_keys; ++j) {
      const int64_t key_pos = first + static_cast<int64_t>(j);
      visible[t * n_keys + j] =
          key_pos <= p && (pr.step.window == 0 || key_pos > p - pr.step.window);
    }
  }
  // Each kv head's keys and values are read once for its group of query heads, and the masked
  // keys (weight 0) are skipped: under qemu, double arithmetic is software, and this reference
  // is most of the ops tests' time there.
  std::vector<double> keys(n_keys * s.head_dim), values(n_keys * s.head_dim);
  for (size_t h = 0; h < s.n_heads; ++h) {
    const size_t group = s.n_heads / s.n_kv_heads, kvh = h / group;
    if (h % group == 0) {
      for (size_t j = 0; j < n_keys; ++j) {
        for (size_t x = 0; x < s.head_dim; ++x) {
          keys[j * s.head_dim + x] = pr.key(first + static_cast<int64_t>(j), kvh, x);
          values[j * s.head_dim + x] = pr.value(first + static_cast<int64_t>(j), kvh, x);
        }
      }
    }
    for (size_t t = 0; t < n_tokens; ++t) {
      const float* q = pr.q.data() + t * pr.RowWidth() + h * s.head_dim;
      for (size_t j = 0; j < n_keys; ++j) {
        scores[t * n_keys + j] = -std::numeric_limits<double>::infinity();
        if (!visible[t * n_keys + j]) continue;
        double dot = 0.0;
        for (size_t x = 0; x < s.head_dim; ++x) dot += double{q[x]} * keys[j * s.head_dim + x];
        scores[t * n_keys + j] = double{pr.scale} * dot;
        if (pr.softcap > 0.0f) {
          const double cap = pr.softcap;
          scores[t * n_keys + j] = cap * std::tanh(scores[t * n_keys + j] / cap);
        }
      }
    }
    for (size_t t = 0; t < n_tokens; ++t) {
      const double* row = scores.data() + t * n_keys;
      const double max = *std::max_element(row, row + n_keys);
      double sum = 0.0;
      std::vector<double> weights(n_keys, 0.0);
      for (size_t j = 0; j < n_keys; ++j) {
        if (visible[t * n_keys + j]) sum += weights[j] = std::exp(row[j] - max);
      }
      double* o = out.data() + t * pr.RowWidth() + h * s.head_dim;
      for (size_t j = 0; j < n_keys; ++j) {
        if (!visible[t * n_keys + j]) continue;
        const double w = weights[j] / sum;
        for (size_t x = 0; x < s.head_dim; ++x) o[x] += w * values[j * s.head_dim + x];
      }
    }
  }
  return out;
}

double MaxAbsValue(const Problem& pr) {
  double m = 0.0;
  for (float v : pr.v_ring) {
    if (!std::isnan(v)) m = std::max(m, std::fabs(double{v}));
  }
  return m;
}

// Expects the rows of tasks [task_begin, task_end) to match the reference and every other output
// to still hold kUntouched.
void ExpectMatches(const Problem& pr, const std::vector<double>& ref, const std::vector<float>& out,
                   size_t task_begin, size_t task_end, RunLog& log, const char* what) {
  const size_t hd = pr.shape.head_dim;
  const double scale = std::max(MaxAbsValue(pr), 1e-30);
  size_t reported = 0;
  for (size_t task = 0; task < pr.Tasks(); ++task) {
    const size_t offset = task * hd;  // task t * n_heads + h starts at (t * n_heads + h) * hd
    const bool inside = task >= task_begin && task < task_end;
    for (size_t x = 0; x < hd; ++x) {
      const float got = out[offset + x];
      if (!inside) {
        if (std::memcmp(&got, &kUntouched, sizeof(float)) != 0 && reported++ < 5) {
          ADD_FAILURE() << what << ": task " << task << " outside [" << task_begin << ", "
                        << task_end << ") was written";
        }
        continue;
      }
      const double error = std::fabs(double{got} - ref[offset + x]) / scale;
      if (!(error <= kTolerance) && reported++ < 5) {  // also catches NaN
        ADD_FAILURE() << what << ": task " << task << " (row " << task / pr.shape.n_heads
                      << ", head " << task % pr.shape.n_heads << ") element " << x << ": got "
                      << got << ", reference " << ref[offset + x];
      }
      if (!std::isnan(error)) log.max_error = std::max(log.max_error, error);
      ++log.checked;
    }
  }
}

std::vector<float> RunAttention(const Problem& pr, size_t task_begin, size_t task_end) {
  std::vector<float> out(pr.step.n_tokens * pr.RowWidth(), kUntouched);
  Attention(pr.Args(out.data()), task_begin, task_end);
  return out;
}

std::vector<float> RunWithBlockKeys(const Problem& pr, size_t block_keys) {
  std::vector<float> out(pr.step.n_tokens * pr.RowWidth(), kUntouched);
  HWY_DYNAMIC_DISPATCH(AttentionWithBlockKeys)(pr.Args(out.data()), 0, pr.Tasks(), block_keys);
  return out;
}

// `pr`, all its tasks in one call, on every target against the float64 reference.
void ExpectAllTasksMatch(const Problem& pr, RunLog& log, const char* what) {
  const std::vector<double> ref = Reference(pr);
  ForEachTarget(log, [&] {
    ExpectMatches(pr, ref, RunAttention(pr, 0, pr.Tasks()), 0, pr.Tasks(), log, what);
  });
}

// Whether some query's visible range crosses the ring's slot 0 (not at its start).
bool SomeRangeWraps(const Step& step) {
  const int64_t cap = static_cast<int64_t>(step.capacity);
  for (size_t t = 0; t < step.n_tokens; ++t) {
    const int64_t p = step.pos0 + static_cast<int64_t>(t);
    const int64_t lo = step.window > 0 ? std::max<int64_t>(0, p - step.window + 1) : 0;
    if (lo / cap != p / cap) return true;
  }
  return false;
}

std::string Describe(const Shape& s, const Step& st) {
  char buf[200];
  std::snprintf(buf, sizeof(buf),
                "heads %zu/%zu head_dim %zu | n_tokens %zu pos0 %lld window %lld capacity %zu",
                s.n_heads, s.n_kv_heads, s.head_dim, st.n_tokens, static_cast<long long>(st.pos0),
                static_cast<long long>(st.window), st.capacity);
  return buf;
}

struct StepCase {
  Step step;
  bool wraps;  // the test's intent, checked so the ring cases keep covering the wrap
};

// Decode and prefill chunks, causal and sliding window; capacities that are exact (the minimum the
// precondition allows) make the visible ranges wrap around slot 0.
// The heaviest step: 33 tokens over a window of 512.
constexpr Step kWindow512Chunk = {33, 1000003, 512, 544};

const StepCase kSteps[] = {
    {{1, 0, 0, 1}, false},          // first token: one key
    {{1, 1000, 0, 1001}, false},    // long causal history, exact capacity
    {{1, 1000, 0, 1500}, false},    // spare slots never written (NaN)
    {{5, 0, 0, 5}, false},          // first prefill chunk
    {{33, 40, 0, 80}, false},       // chunk after history
    {{70, 0, 0, 70}, false},        // several blocks per row
    {{1, 1000003, 7, 7}, true},     // window decode, capacity == window
    {{5, 3, 7, 11}, false},         // window longer than the early rows' history
    {{33, 1000003, 16, 48}, true},  // window 16, exact capacity
    {kWindow512Chunk, true},        // window 512, exact capacity, many blocks
    {{9, 2000, 512, 600}, true},    // window 512 with spare slots
    {{33, 0, 512, 544}, false},     // window longer than the history: causal
    {{1, 511, 512, 512}, false},    // window exactly the whole history
};

const Shape kHeadShapes[] = {{4, 4, 0}, {8, 2, 0}, {4, 1, 0}};  // MHA, GQA, MQA
const size_t kHeadDims[] = {1, 3, 16, 17, 64, 100, 256};

TEST(AttentionTest, StepCasesWrapAsIntended) {
  for (const StepCase& c : kSteps) {
    EXPECT_EQ(SomeRangeWraps(c.step), c.wraps) << Describe({1, 1, 1}, c.step);
  }
}

TEST(AttentionTest, MatchesReferenceOnEveryShape) {
  RunLog log;
  size_t cases = 0;
  for (Shape shape : kHeadShapes) {
    for (size_t head_dim : kHeadDims) {
      shape.head_dim = head_dim;
      for (const StepCase& c : kSteps) {
        // kWindow512Chunk at head_dim 100 and 256 would be nearly half of this test's work
        // (minutes under CI's emulated SVE); head_dim's loops are the same at every step, and
        // the window's blocks and wrap the same at every head_dim (at 100 and 256, 9 tokens
        // run over the same window, with spare slots).
        const bool window512_chunk = c.step.n_tokens == kWindow512Chunk.n_tokens &&
                                     c.step.pos0 == kWindow512Chunk.pos0 &&
                                     c.step.window == kWindow512Chunk.window;
        if (head_dim > 64 && window512_chunk) continue;
        ExpectAllTasksMatch(MakeProblem(shape, c.step), log, Describe(shape, c.step).c_str());
        ++cases;
      }
    }
  }
  std::printf("[ cases    ] %zu shape x step cases\n", cases);
  log.Print();
}

TEST(AttentionTest, LargestHeadDim) {
  RunLog log;
  ExpectAllTasksMatch(MakeProblem({4, 1, kAttentionMaxHeadDim}, {3, 1000003, 40, 42}), log,
                      "head_dim 1024");
  log.Print();
}

// A global layer's decode over a KV cache too large for the last-level cache (18 MiB visible here),
// the path that prefetches value rows.
TEST(AttentionTest, LongContextDecode) {
  RunLog log;
  ExpectAllTasksMatch(MakeProblem({4, 1, 256}, {1, 9000, 0, 9001}), log, "context 9001");
  log.Print();
}

// Threads get arbitrary task ranges: ranges that start or end inside a kv head's group of query
// heads, single tasks, and a split into chunks that together cover everything.
TEST(AttentionTest, PartialTaskRangesWriteOnlyTheirRows) {
  RunLog log;
  // 12/2: groups of 6 query heads, processed as passes of up to 4.
  for (const Shape shape : {Shape{8, 2, 17}, Shape{12, 2, 64}, Shape{4, 4, 16}}) {
    const Problem pr = MakeProblem(shape, {7, 1000003, 16, 22});
    const std::vector<double> ref = Reference(pr);
    const size_t tasks = pr.Tasks();
    const std::pair<size_t, size_t> ranges[] = {
        {0, 1}, {1, 6}, {3, 17}, {5, 7}, {tasks - 1, tasks}, {tasks / 2, tasks}, {2, 2}};
    ForEachTarget(log, [&] {
      for (const auto& [begin, end] : ranges) {
        ExpectMatches(pr, ref, RunAttention(pr, begin, end), begin, end, log,
                      (Describe(shape, pr.step) + " range").c_str());
      }
      // Three "threads" on one output buffer.
      std::vector<float> out(pr.step.n_tokens * pr.RowWidth(), kUntouched);
      const size_t cut1 = tasks / 3 + 1, cut2 = 2 * tasks / 3 + 1;
      Attention(pr.Args(out.data()), cut1, cut2);
      Attention(pr.Args(out.data()), 0, cut1);
      Attention(pr.Args(out.data()), cut2, tasks);
      ExpectMatches(pr, ref, out, 0, tasks, log, (Describe(shape, pr.step) + " split").c_str());
    });
  }
  log.Print();
}

// Scores around +-1e3 (exp overflows float beyond 88): integer queries and keys with scale 0.5
// make every score exact in float, so any error comes from the softmax itself. The second layout
// makes the maximum jump by hundreds between blocks, so the running state is rescaled by factors
// that underflow to 0.
TEST(AttentionTest, ExtremeScoresAreStable) {
  RunLog log;
  const size_t hd = 16;
  // Heads of odd index see the keys negated: all scores about -1e3 (a naive softmax gives 0/0).
  const QueryFn query = [](size_t t, size_t h, size_t x) {
    const float q = static_cast<float>(1 + (x + t) % 2);
    return h % 2 ? -q : q;
  };
  const KvFn flat_keys = [](int64_t pos, size_t kvh, size_t x) {
    return 84.0f + std::round(2.0f * test::HashNoise(4, static_cast<uint64_t>(pos), kvh * 64 + x));
  };
  const KvFn jumping_keys = [](int64_t pos, size_t kvh, size_t x) {
    return 40.0f + static_cast<float>((pos * 7) % 23) * 4.0f +
           std::round(2.0f * test::HashNoise(5, static_cast<uint64_t>(pos), kvh * 64 + x));
  };
  const Step steps[] = {{1, 300, 0, 301}, {9, 1000003, 200, 208}, {20, 10, 0, 30}};
  for (const KvFn& keys : {flat_keys, jumping_keys}) {
    for (const Step& step : steps) {
      const Problem pr = MakeProblem({4, 2, hd}, step, keys, DefaultValue, query, 0.5f);
      const std::vector<double> ref = Reference(pr);
      double max_score = 0.0;  // row 0, head 0
      for (int64_t pos = pr.FirstVisible(step.pos0); pos <= step.pos0; ++pos) {
        double score = 0.0;
        for (size_t x = 0; x < hd; ++x) score += 0.5 * double{pr.q[x]} * keys(pos, 0, x);
        max_score = std::max(max_score, score);
      }
      ASSERT_GT(max_score, 700.0) << "the test must reach scores where exp overflows";
      ForEachTarget(log, [&] {
        for (size_t block_keys : {size_t{1}, size_t{7}, size_t{64}}) {
          ExpectMatches(
              pr, ref, RunWithBlockKeys(pr, block_keys), 0, pr.Tasks(), log,
              (Describe(pr.shape, step) + " blocks of " + std::to_string(block_keys)).c_str());
        }
      });
    }
  }
  log.Print();
}

// The streaming softmax must give the plain softmax's answer however the walk is cut: one block
// holding every key (no rescaling at all) against walks of many blocks.
TEST(AttentionTest, MultiBlockWalkMatchesSingleBlock) {
  RunLog log;
  double max_block_difference = 0.0;
  ForEachTarget(log, [&] {
    const size_t max_block = HWY_DYNAMIC_DISPATCH(AttentionMaxBlockKeys)();
    // Causal rows see 251..253 keys: a single block of max_block (>= 253) keys, no wrap.
    const Problem pr = MakeProblem({8, 2, 64}, {3, 250, 0, 253});
    ASSERT_GE(max_block, 253u);
    const std::vector<double> ref = Reference(pr);
    const std::vector<float> single = RunWithBlockKeys(pr, max_block);
    ExpectMatches(pr, ref, single, 0, pr.Tasks(), log, "single block");
    for (size_t block_keys :
         {size_t{1}, size_t{2}, size_t{5}, size_t{31}, size_t{64}, size_t{100}}) {
      const std::vector<float> multi = RunWithBlockKeys(pr, block_keys);
      const std::string what = "blocks of " + std::to_string(block_keys);
      ExpectMatches(pr, ref, multi, 0, pr.Tasks(), log, what.c_str());
      for (size_t i = 0; i < multi.size(); ++i) {
        const double diff = std::fabs(double{multi[i]} - double{single[i]});
        max_block_difference = std::max(max_block_difference, diff);
        ASSERT_LE(diff, kTolerance) << what << " vs one block, element " << i;
      }
    }
    // The public entry point (default block size) agrees as well.
    ExpectMatches(pr, ref, RunAttention(pr, 0, pr.Tasks()), 0, pr.Tasks(), log, "default blocks");
  });
  std::printf("[ blocks   ] max |multi-block - single-block| = %.3g\n", max_block_difference);
  log.Print();
}

// Gemma 2's attention logit soft-capping: scores of up to about +-30 (queries scaled up) squashed
// by a cap of 5, so most of them sit on the tanh's flat part, through decode, prefill, sliding
// windows and walks of several block sizes. The uncapped softmax would give other outputs: the
// test checks that it does, so that a kernel ignoring the cap cannot pass.
TEST(AttentionTest, LogitSoftCapMatchesReference) {
  RunLog log;
  const QueryFn loud = [](size_t t, size_t h, size_t x) {
    return 24.0f * test::HashNoise(3, t, h * 4096 + x);
  };
  const Step steps[] = {{1, 300, 0, 301}, {9, 1000003, 200, 208}, {37, 0, 0, 37}, {1, 70, 16, 16}};
  for (const Shape shape : {Shape{8, 2, 64}, Shape{4, 4, 17}}) {
    for (const Step& step : steps) {
      Problem pr = MakeProblem(shape, step, DefaultKey, DefaultValue, loud);
      const std::vector<double> uncapped = Reference(pr);
      pr.softcap = 5.0f;
      const std::vector<double> ref = Reference(pr);
      double cap_effect = 0.0;
      for (size_t i = 0; i < ref.size(); ++i) {
        cap_effect = std::max(cap_effect, std::fabs(ref[i] - uncapped[i]));
      }
      const std::string what = Describe(shape, step) + " cap 5";
      ASSERT_GT(cap_effect / MaxAbsValue(pr), 100 * kTolerance) << what << ": the cap must matter";
      ForEachTarget(log, [&] {
        for (size_t block_keys : {size_t{1}, size_t{7}, size_t{64}}) {
          ExpectMatches(pr, ref, RunWithBlockKeys(pr, block_keys), 0, pr.Tasks(), log,
                        (what + " blocks of " + std::to_string(block_keys)).c_str());
        }
        ExpectMatches(pr, ref, RunAttention(pr, 0, pr.Tasks()), 0, pr.Tasks(), log, what.c_str());
      });
    }
  }
  log.Print();
}

}  // namespace
}  // namespace kestrel::ops
#endif  // HWY_ONCE
