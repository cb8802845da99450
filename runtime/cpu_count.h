// How many CPUs this process may run on, for thread-count defaults and checks.
#pragma once

#include <cstddef>

namespace kestrel {

// CPUs in the process's affinity mask (sched_getaffinity; taskset, cgroup cpusets), at least 1.
size_t AvailableCpus();

// Physical cores among those CPUs: distinct (package, core) pairs from
// /sys/devices/system/cpu/cpuN/topology, so SMT siblings count once; AvailableCpus() where the
// topology cannot be read. The default thread count: a second thread on a core's SMT sibling
// mostly competes for the same SIMD units.
size_t PhysicalCores();

}  // namespace kestrel
