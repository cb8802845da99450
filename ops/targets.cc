#include "ops/targets.h"

#include <hwy/targets.h>

namespace kestrel::ops {
namespace {

// hwy::SupportedTargets() (Highway 1.0.3) chooses the dispatch target from the CPU's targets
// *before* it adds SVE_256/SVE2_128 for the detected vector length, so after calling it the
// kernels would run the generic SVE code on a 256-bit or 128-bit SVE core. Choose again from
// the final set.
int64_t SupportedTargetsKeepingDispatch() {
  const int64_t targets = hwy::SupportedTargets();
  hwy::GetChosenTarget().Update(targets);
  return targets;
}

// Names of the targets in a bit set, best (lowest bit) first.
std::string TargetNames(int64_t targets) {
  std::string names;
  for (int bit = 0; bit < 63; ++bit) {
    const int64_t target = targets & (int64_t{1} << bit);
    if (target == 0) continue;
    if (!names.empty()) names += ' ';
    names += hwy::TargetName(target);
  }
  return names;
}

}  // namespace

std::string ChosenTargetName() {
  const int64_t targets = SupportedTargetsKeepingDispatch() & HWY_TARGETS;
  // Targets are bits with better targets at lower positions; the lowest set bit is the best.
  const int64_t best = targets & -targets;
  return best ? hwy::TargetName(best) : "none";
}

std::string SupportedTargetNames() {
  return TargetNames(SupportedTargetsKeepingDispatch() & HWY_TARGETS);
}

std::string CompiledTargetNames() { return TargetNames(HWY_TARGETS); }

void ChooseTarget() { SupportedTargetsKeepingDispatch(); }

}  // namespace kestrel::ops
