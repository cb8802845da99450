// This machine's limits, measured by the benchmarks themselves so that kernel figures can be
// quoted as a fraction of them (the machines are shared: a figure from a spec sheet or another
// run would not describe the run at hand).
#pragma once

#include <vector>

namespace kestrel::bench {

// Single-thread f32 FMA throughput in FLOP/s (2 per lane per FMA) on the Highway target
// dispatch picks, from independent multiply-add chains that keep every FMA port busy. Measured
// once (best of several short runs) and cached.
double FmaPeakFlops();

// Read bandwidth in bytes/s of `threads` threads together: a vectorized sum over a buffer far
// larger than the last-level cache, each thread summing its own slice. Measured once per thread
// count (best of several passes) and cached. Bandwidth does not grow in proportion to threads,
// so each count is measured, never scaled from one thread.
double ReadBandwidth(int threads = 1);

// int8 multiply-add throughput in OP/s (2 per multiply-add, as FLOPs count) of `threads` threads
// together, with the instructions the quantized matmuls (ops/matmul_quant.cc,
// ops/matmul_blocks.cc) are built on where this CPU runs them: vpdpbusd on 512-bit vectors
// (AVX-512 VNNI), vpmaddubsw pairs widened by vpmaddwd (AVX2), sdot (aarch64 with dotprod);
// elsewhere Highway's int16 ReorderWidenMulAccumulate. One operand is loaded from L1 each
// time, as a matmul streams its weights; the peak of prefill, whose tiles reuse every loaded
// weight across tokens. Measured once per thread count (best of several runs) and cached.
double Int8PeakOps(int threads = 1);

// The thread counts BM_MachinePeak reports beyond 1: powers of two below the core count, and the
// core count itself (2 on a 2-core machine; 2, 4, 8, 16 on 16 cores).
std::vector<int> PeakThreadCounts();

}  // namespace kestrel::bench
