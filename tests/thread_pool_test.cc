#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "runtime/thread_pool.h"

namespace kestrel {
namespace {

struct Work {
  std::vector<std::atomic<int>>* hits;
  std::atomic<int> calls{0};
};

void MarkRange(void* ctx, size_t thread, size_t n_threads) {
  auto* w = static_cast<Work*>(ctx);
  size_t b, e;
  SplitRange(w->hits->size(), thread, n_threads, &b, &e);
  for (size_t i = b; i < e; ++i) (*w->hits)[i].fetch_add(1);
  w->calls.fetch_add(1);
}

TEST(ThreadPool, EveryThreadRunsOnceAndRangesCoverEverything) {
  for (size_t threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.size(), threads);
    for (int round = 0; round < 200; ++round) {
      std::vector<std::atomic<int>> hits(1000 + round);
      Work w{&hits};
      pool.Run(MarkRange, &w);
      EXPECT_EQ(w.calls.load(), static_cast<int>(threads));
      for (auto& h : hits) ASSERT_EQ(h.load(), 1);
    }
  }
}

TEST(SplitRange, PartsAreContiguousAndBalanced) {
  for (size_t n : {0, 1, 7, 64, 1000}) {
    for (size_t parts : {1, 2, 3, 8}) {
      size_t expected_begin = 0;
      for (size_t p = 0; p < parts; ++p) {
        size_t b, e;
        SplitRange(n, p, parts, &b, &e);
        EXPECT_EQ(b, expected_begin);
        EXPECT_LE(e - b, n / parts + 1);
        expected_begin = e;
      }
      EXPECT_EQ(expected_begin, n);
    }
  }
}

}  // namespace
}  // namespace kestrel
