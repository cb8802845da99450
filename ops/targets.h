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

}  // namespace kestrel::ops
