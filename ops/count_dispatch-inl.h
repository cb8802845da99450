// A count known only at run time (a tile's tokens, rows or row groups) as the compile-time
// constant the kernels take as a template argument, so that each count is its own
// instantiation with its loops unrolled and its accumulators in registers.
//
// For calls of tiles that stay out of line (HWY_NOINLINE, or too large for gcc to inline into
// the dispatch). Where the lambda would take in a large inlined kernel, as ops/attention-inl.h's
// passes and ops/matmul-inl.h's float tiles would, gcc left the lambda out of line (a call more
// per tile, and other inlining of the kernels); ops/matmul_blocks.cc's RowPortable (on aarch64)
// and ops/matmul_quant_i8mm.cc's pairs changed what gcc inlined around them. Those keep their
// switch.
//
// Include inside the namespace of the kernels that use it, where they are compiled for their
// target: a Highway file's HWY_NAMESPACE (once per target), or an ARM kernel file's namespace
// after its #pragma GCC target; compiled for the baseline, it could not have their lambdas
// inlined into it. The file needs <cstddef>, <type_traits> and <hwy/base.h> included before the
// namespace; the toggle guard lets each Highway target's pass include it once.

#if defined(KESTREL_OPS_COUNT_DISPATCH_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KESTREL_OPS_COUNT_DISPATCH_INL_H_
#undef KESTREL_OPS_COUNT_DISPATCH_INL_H_
#else
#define KESTREL_OPS_COUNT_DISPATCH_INL_H_
#endif

// f(std::integral_constant<size_t, N>()) with N = n for n = 1, 2 or 3 (capped at kMax, for a
// tile that stops short of 3) and N = kMax for any other n.
template <size_t kMax, class F>
HWY_INLINE void DispatchCount(size_t n, const F& f) {
  static_assert(kMax >= 1, "a tile takes at least one");
  switch (n) {
    case 1: return f(std::integral_constant<size_t, 1>());
    case 2: return f(std::integral_constant<size_t, HWY_MIN(2, kMax)>());
    case 3: return f(std::integral_constant<size_t, HWY_MIN(3, kMax)>());
    default: return f(std::integral_constant<size_t, kMax>());
  }
}

#endif  // KESTREL_OPS_COUNT_DISPATCH_INL_H_
