// This machine's limits, measured by the benchmarks themselves so that kernel figures can be
// quoted as a fraction of them (the machines are shared: a figure from a spec sheet or another
// run would not describe the run at hand).
#pragma once

namespace kestrel::bench {

// Single-thread f32 FMA throughput in FLOP/s (2 per lane per FMA) on the Highway target
// dispatch picks, from independent multiply-add chains that keep every FMA port busy. Measured
// once (best of several short runs) and cached.
double FmaPeakFlops();

// Single-thread read bandwidth in bytes/s: a vectorized sum over a buffer far larger than the
// last-level cache. Measured once (best of several passes) and cached.
double ReadBandwidth();

}  // namespace kestrel::bench
