// Which Highway target the dispatched kernels run on, for logs, `kestrel bench` and tests.
#pragma once

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

// Makes Highway choose this CPU's target now (a kernel resolved before that would be Highway's
// choose-then-call trampoline, correct but dispatching on every call).
void ChooseTarget();

}  // namespace kestrel::ops

// Defines ResolveName(): the per-target function Name dispatches to on this CPU, resolved once,
// for callers that bind kernels ahead of time (runtime/steps) and then call them directly,
// skipping Highway's per-call dispatch. Use in a file's HWY_ONCE section after
// HWY_EXPORT(NamePerTarget); declare it beside Name as `decltype(&Name) ResolveName();`.
#define KESTREL_DEFINE_RESOLVE(Name)            \
  decltype(&Name) Resolve##Name() {             \
    ChooseTarget();                             \
    return &HWY_DYNAMIC_DISPATCH(Name##PerTarget); \
  }

namespace kestrel::ops {

}  // namespace kestrel::ops
