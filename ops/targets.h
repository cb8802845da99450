// Which Highway target the dispatched kernels run on, for logs, `kestrel bench` and tests.
#pragma once

#include <optional>
#include <string>

namespace kestrel::ops {

// Name of the best target that is both compiled in and supported by this CPU (e.g. "AVX3").
std::string ChosenTargetName();
// Names of every compiled target this CPU supports, best first, separated by spaces.
std::string SupportedTargetNames();
// Names of every target compiled into this binary, best first, separated by spaces.
std::string CompiledTargetNames();

// Keeps dispatch off the named targets (names as printed above, separated by spaces or commas),
// e.g. to measure AVX3 against AVX3_DL in one run. Kernels resolved earlier keep their target.
// Returns an empty string, or an error naming the unknown target and the compiled ones.
std::string DisableTargets(const std::string& names);

// True where the CPU runs each 512-bit operation as two 256-bit halves (AMD Zen 4): there some
// AVX3_DL kernels take 256-bit tiles (ops/matmul_blocks_super_avx2-inl.h says which and why).
// Read on every call, so OverrideCpuSplits512BitOps takes effect at once.
bool CpuSplits512BitOps();
// Makes CpuSplits512BitOps return `splits` (true, false) instead of what the CPU says, or what
// the CPU says again (std::nullopt): for tests of both kernels on one machine, and benchmarks.
void OverrideCpuSplits512BitOps(std::optional<bool> splits);

// Makes Highway choose this CPU's target now (a kernel resolved before that would be Highway's
// choose-then-call trampoline, correct but dispatching on every call).
void ChooseTarget();

// Makes Highway choose this CPU's target now, as ChooseTarget, and keeps every other thread's
// choosing out until it goes out of scope: a kernel resolved in its scope is read from the final
// choice. Needed because sessions may be created on several threads at once, and choosing is
// not one step: hwy::SupportedTargets() (Highway 1.0.3) first stores a choice made without
// SVE_256 and SVE2_128 and only its caller can store the final one (see targets.cc), so a
// session created while another thread was in between would bind the generic SVE or SVE2
// kernels on a 256-bit SVE or 128-bit SVE2 core, for good: not the kernels a session created
// alone gets there. (Kernels called through Highway's per-call dispatch rather than resolved,
// such as the bias Add of a MatMul step, may still see the interim choice; they are exact on
// every target.)
class ChosenTargetLock {
 public:
  ChosenTargetLock();
  ~ChosenTargetLock();
  ChosenTargetLock(const ChosenTargetLock&) = delete;
  ChosenTargetLock& operator=(const ChosenTargetLock&) = delete;
};

}  // namespace kestrel::ops

// Defines ResolveName(): the per-target function Name dispatches to on this CPU, resolved once,
// for callers that bind kernels ahead of time (runtime/steps) and then call them directly,
// skipping Highway's per-call dispatch. Use in a file's HWY_ONCE section after
// HWY_EXPORT(NamePerTarget); declare it beside Name as `decltype(&Name) ResolveName();`.
#define KESTREL_DEFINE_RESOLVE(Name)               \
  decltype(&Name) Resolve##Name() {                \
    const ChosenTargetLock chosen;                 \
    return &HWY_DYNAMIC_DISPATCH(Name##PerTarget); \
  }
