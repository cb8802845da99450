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
