// Compiles the attention op for every Highway target and dispatches to the best one at run time.
#include "ops/attention.h"
#include "ops/targets.h"

#include <cstddef>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/attention.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "ops/attention-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kestrel::ops::HWY_NAMESPACE {

// Keys per block: large enough to amortize the per-block max, exp and rescale, small enough that
// a block's scores and the output slices stay in L1 (measured in bench/attention_bench.cc).
inline constexpr size_t kAttentionBlockKeys = 64;

void AttentionWithDefaultBlocks(const AttentionArgs& args, size_t task_begin, size_t task_end) {
  AttentionTasks(args, task_begin, task_end, kAttentionBlockKeys);
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace kestrel::ops::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kestrel::ops {

HWY_EXPORT(AttentionWithDefaultBlocks);

void Attention(const AttentionArgs& args, size_t task_begin, size_t task_end) {
  HWY_DYNAMIC_DISPATCH(AttentionWithDefaultBlocks)(args, task_begin, task_end);
}

decltype(&Attention) ResolveAttention() {
  ChooseTarget();
  return &HWY_DYNAMIC_DISPATCH(AttentionWithDefaultBlocks);
}

}  // namespace kestrel::ops
#endif  // HWY_ONCE
