// Included last by a source file whose float arithmetic must be bit-exact with ggml's scalar C
// (the ggml block dequantizers and the converter's quantizers): every product and sum is then
// rounded to f32 on its own, as ggml's C on x86-64 does (built for the baseline ISA: no FMA).
//
// We build with CMAKE_CXX_EXTENSIONS OFF, i.e. -std=c++17, for which GCC's default is
// -ffp-contract=off (it is -std=gnu++17 that defaults to fast and fuses a * b + c across
// statements); but clang contracts within an expression by default, aarch64 always has FMA, and
// KESTREL_CPU_FLAGS may add -mfma, so contraction is turned off here whatever the flags. (ggml
// is compiled as gnu11: on aarch64 llama.cpp's own quantizers may fuse and round differently
// from its x86 builds; these files give the x86 results everywhere.)
// No include guard on purpose: a pragma, nothing to define twice.
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif
