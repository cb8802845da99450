// The f32 panel matmul (ops/matmul_f32_panels.h) written with xsimd 8.1 (Debian bookworm's
// libxsimd-dev) instead of Highway, for bench/xsimd_bench.cc only: the runtime never calls it.
// It exists to measure the two SIMD layers on one hot kernel (docs/simd-layer.md).
//
// xsimd compiles an architecture only in a translation unit built with that architecture's
// compiler flags, so matmul_f32_panels_xsimd.cc is compiled once per architecture below
// (bench/CMakeLists.txt gives each its flags) and explicitly instantiates the operator for it;
// the extern declarations keep every other translation unit from instantiating it with its own
// (baseline SSE2) flags. xsimd::dispatch<XsimdPanelArchs> then picks the best one this CPU has.
#pragma once

#include <cstddef>

#include <xsimd/xsimd.hpp>

namespace kestrel::bench {

// Same contract and the same bits as MatMulF32Panels(w, x, y, n_tokens, k, n_out, 0, n_out):
// y[t, r] = w[r, :] . x[t, :] for every row, w packed by ops' PackF32Panels, each output one
// FMA chain over i = 0..k-1 in order.
struct MatMulF32PanelsXsimd {
  template <class Arch>
  void operator()(Arch, const float* w, const float* x, float* y, size_t n_tokens, size_t k,
                  size_t n_out) const;
};

// Best first, as xsimd::dispatch walks them.
using XsimdPanelArchs = xsimd::arch_list<xsimd::avx512bw, xsimd::fma3<xsimd::avx2>>;

extern template void MatMulF32PanelsXsimd::operator()<xsimd::avx512bw>(xsimd::avx512bw,
                                                                       const float*, const float*,
                                                                       float*, size_t, size_t,
                                                                       size_t) const;
extern template void MatMulF32PanelsXsimd::operator()<xsimd::fma3<xsimd::avx2>>(
    xsimd::fma3<xsimd::avx2>, const float*, const float*, float*, size_t, size_t, size_t) const;

}  // namespace kestrel::bench
