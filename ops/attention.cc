// Compiles the attention op for every Highway target and dispatches to the best one at run time.
#include "ops/attention.h"
#include "ops/targets.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>

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

void AttentionPartialsWithDefaultBlocks(const AttentionArgs& args, size_t item_begin,
                                        size_t item_end, float* partials) {
  AttentionPartialItems(args, item_begin, item_end, partials, kAttentionBlockKeys);
}

void AttentionMergePartialsHere(const AttentionArgs& args, const float* partials) {
  AttentionMergeStates(args, partials);
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace kestrel::ops::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kestrel::ops {

HWY_EXPORT(AttentionWithDefaultBlocks);
HWY_EXPORT(AttentionPartialsWithDefaultBlocks);
HWY_EXPORT(AttentionMergePartialsHere);

AttentionVisibility VisibilityOf(const AttentionArgs& args) {
  AttentionVisibility v;
  v.reach = std::numeric_limits<int64_t>::max();
  if (args.window > 0) v.reach = args.window;
  if (args.context > 0) v.reach = std::min(v.reach, args.context);
  v.sinks = args.window > 0 ? 0 : static_cast<int64_t>(args.sinks);
  return v;
}

AttentionPartitionRange PartitionsSeen(const AttentionArgs& args, int64_t first_pos,
                                       int64_t last_pos) {
  const AttentionVisibility v = VisibilityOf(args);
  AttentionPartitionRange r;
  r.sinks = v.sinks > 0;
  const int64_t oldest = v.Oldest(first_pos);
  const int64_t begin = r.sinks ? std::max(oldest, v.sinks) : oldest;
  if (begin <= last_pos) {
    if (args.partition_keys == 0) {
      r.first_recent = r.last_recent = 1;
    } else {
      const auto keys = static_cast<int64_t>(args.partition_keys);
      r.first_recent = 1 + (begin - v.sinks) / keys;
      r.last_recent = 1 + (last_pos - v.sinks) / keys;
    }
  }
  return r;
}

void Attention(const AttentionArgs& args, size_t task_begin, size_t task_end) {
  HWY_DYNAMIC_DISPATCH(AttentionWithDefaultBlocks)(args, task_begin, task_end);
}

decltype(&Attention) ResolveAttention() {
  const ChosenTargetLock chosen;
  return &HWY_DYNAMIC_DISPATCH(AttentionWithDefaultBlocks);
}

void AttentionPartials(const AttentionArgs& args, size_t item_begin, size_t item_end,
                       float* partials) {
  HWY_DYNAMIC_DISPATCH(AttentionPartialsWithDefaultBlocks)(args, item_begin, item_end, partials);
}

void AttentionMergePartials(const AttentionArgs& args, const float* partials) {
  HWY_DYNAMIC_DISPATCH(AttentionMergePartialsHere)(args, partials);
}

decltype(&AttentionPartials) ResolveAttentionPartials() {
  const ChosenTargetLock chosen;
  return &HWY_DYNAMIC_DISPATCH(AttentionPartialsWithDefaultBlocks);
}

decltype(&AttentionMergePartials) ResolveAttentionMergePartials() {
  const ChosenTargetLock chosen;
  return &HWY_DYNAMIC_DISPATCH(AttentionMergePartialsHere);
}

}  // namespace kestrel::ops
#endif  // HWY_ONCE
