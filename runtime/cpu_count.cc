#include "runtime/cpu_count.h"

#include <sched.h>

#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <utility>

namespace kestrel {
namespace {

// The affinity mask; false where the system gives none.
bool AffinityMask(cpu_set_t* set) {
  CPU_ZERO(set);
  return sched_getaffinity(0, sizeof(*set), set) == 0;
}

bool ReadNumber(const std::string& path, long* out) {
  std::ifstream in(path);
  return static_cast<bool>(in >> *out);
}

}  // namespace

size_t AvailableCpus() {
  cpu_set_t set;
  if (AffinityMask(&set)) {
    const int count = CPU_COUNT(&set);
    if (count > 0) return static_cast<size_t>(count);
  }
  const unsigned hardware = std::thread::hardware_concurrency();
  return hardware > 0 ? hardware : 1;
}

size_t PhysicalCores() {
  cpu_set_t set;
  if (!AffinityMask(&set)) return AvailableCpus();
  std::set<std::pair<long, long>> cores;  // (physical package, core)
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &set)) continue;
    const std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
    long package = 0, core = 0;
    if (!ReadNumber(dir + "physical_package_id", &package) || !ReadNumber(dir + "core_id", &core)) {
      return AvailableCpus();
    }
    cores.insert({package, core});
  }
  return cores.empty() ? AvailableCpus() : cores.size();
}

}  // namespace kestrel
