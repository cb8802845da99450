#include "ops/targets.h"

#include <hwy/targets.h>

namespace kestrel::ops {

std::string ChosenTargetName() {
  const int64_t targets = hwy::SupportedTargets() & HWY_TARGETS;
  // Targets are bits with better targets at lower positions; the lowest set bit is the best.
  const int64_t best = targets & -targets;
  return best ? hwy::TargetName(best) : "none";
}

std::string SupportedTargetNames() {
  std::string names;
  for (int64_t t : hwy::SupportedAndGeneratedTargets()) {
    if (!names.empty()) names += ' ';
    names += hwy::TargetName(t);
  }
  return names;
}

}  // namespace kestrel::ops
