#include "ops/targets.h"

#include <cstddef>
#include <limits>
#include <mutex>

#include <hwy/targets.h>

namespace kestrel::ops {
namespace {

// Held while Highway's choice is being made and read (ChosenTargetLock in targets.h).
std::mutex& ChoiceMutex() {
  static std::mutex mutex;
  return mutex;
}

// Dispatch index of the choice SupportedTargetsKeepingDispatch stored last (none yet: max).
// Callers hold ChoiceMutex().
size_t& LastChoice() {
  static size_t index = std::numeric_limits<size_t>::max();
  return index;
}

// hwy::SupportedTargets() (Highway 1.0.3) chooses the dispatch target from the CPU's targets
// *before* it adds SVE_256/SVE2_128 for the detected vector length, so after calling it the
// kernels would run the generic SVE code on a 256-bit or 128-bit SVE core. Choose again from
// the final set. Callers hold ChoiceMutex().
int64_t SupportedTargetsKeepingDispatch() {
  const int64_t targets = hwy::SupportedTargets();
  hwy::GetChosenTarget().Update(targets);
  LastChoice() = hwy::GetChosenTarget().GetIndex();
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

ChosenTargetLock::ChosenTargetLock() {
  ChoiceMutex().lock();
  // Detecting the targets runs CPUID several times (each a trap to the hypervisor in a VM), and
  // a session resolves dozens of kernels: choose again only when Highway dropped the choice
  // (hwy::DisableTargets and SetSupportedTargetsForTest de-initialize it) or its per-call
  // dispatch stored its interim one over ours.
  const hwy::ChosenTarget& chosen = hwy::GetChosenTarget();
  if (!chosen.IsInitialized() || chosen.GetIndex() != LastChoice()) {
    SupportedTargetsKeepingDispatch();
  }
}

ChosenTargetLock::~ChosenTargetLock() { ChoiceMutex().unlock(); }

std::string ChosenTargetName() {
  const std::lock_guard<std::mutex> lock(ChoiceMutex());
  const int64_t targets = SupportedTargetsKeepingDispatch() & HWY_TARGETS;
  // Targets are bits with better targets at lower positions; the lowest set bit is the best.
  const int64_t best = targets & -targets;
  return best ? hwy::TargetName(best) : "none";
}

std::string SupportedTargetNames() {
  const std::lock_guard<std::mutex> lock(ChoiceMutex());
  return TargetNames(SupportedTargetsKeepingDispatch() & HWY_TARGETS);
}

std::string CompiledTargetNames() { return TargetNames(HWY_TARGETS); }

void ChooseTarget() { const ChosenTargetLock chosen; }

std::string DisableTargets(const std::string& names) {
  int64_t disabled = 0;
  size_t begin = 0;
  while (begin < names.size()) {
    size_t end = names.find_first_of(" ,", begin);
    if (end == std::string::npos) end = names.size();
    const std::string name = names.substr(begin, end - begin);
    begin = end + 1;
    if (name.empty()) continue;
    int64_t target = 0;
    for (int bit = 0; bit < 63 && target == 0; ++bit) {
      const int64_t candidate = int64_t{1} << bit;
      if ((HWY_TARGETS & candidate) != 0 && name == hwy::TargetName(candidate)) target = candidate;
    }
    if (target == 0) {
      return "unknown SIMD target '" + name + "' (compiled: " + CompiledTargetNames() + ")";
    }
    disabled |= target;
  }
  const std::lock_guard<std::mutex> lock(ChoiceMutex());
  hwy::DisableTargets(disabled);
  SupportedTargetsKeepingDispatch();
  return "";
}

}  // namespace kestrel::ops
