// Im2Col: gathers each output frame's kernel window of input frames into one row, so that a
// MatMul computes a 1-D convolution (Whisper's stem). Threads split output frames.
#include <algorithm>
#include <cstring>
#include <string>

#include "runtime/steps/steps.h"

namespace kestrel {
namespace {

struct Im2ColArgs {
  const float* in;  // frames of `channels` values, f_in per token
  float* out;       // rows of kernel * channels values, f_out per token
  size_t kernel, stride, padding, channels, f_in, f_out;
};

void Run(const void* args, size_t n, int64_t, size_t thread, size_t n_threads) {
  const auto& a = *static_cast<const Im2ColArgs*>(args);
  const size_t in_frames = n * a.f_in;
  const size_t frame_bytes = a.channels * sizeof(float);
  size_t b, e;
  SplitRange(n * a.f_out, thread, n_threads, &b, &e);
  for (size_t o = b; o < e; ++o) {
    float* row = a.out + o * a.kernel * a.channels;
    for (size_t j = 0; j < a.kernel; ++j) {
      // Input frame o * stride + j - padding, or zeros where that lies outside the step.
      const size_t shifted = o * a.stride + j;
      float* dst = row + j * a.channels;
      if (shifted < a.padding || shifted - a.padding >= in_frames) {
        std::fill(dst, dst + a.channels, 0.0f);
      } else {
        std::memcpy(dst, a.in + (shifted - a.padding) * a.channels, frame_bytes);
      }
    }
  }
}

Status Check(const OpCheck& c) {
  const fb::Im2Col& p = *c.op().params_as_Im2Col();
  KES_RETURN_IF_ERROR(
      c.Expect(p.kernel() >= 1 && p.kernel() <= 64 && p.stride() >= 1 && p.stride() <= 64 &&
                   p.padding() < p.kernel() && p.channels() >= 1 && p.channels() <= (1u << 20),
               [&] {
                 return "expected kernel 1-64, stride 1-64, padding below the kernel "
                        "and 1 to 2^20 channels, found kernel " +
                        std::to_string(p.kernel()) + ", stride " + std::to_string(p.stride()) +
                        ", padding " + std::to_string(p.padding()) + ", channels " +
                        std::to_string(p.channels());
               }));
  const fb::Buffer& in = c.In(0);
  const fb::Buffer& out = c.Out(0);
  const uint64_t window = static_cast<uint64_t>(p.kernel()) * p.channels();
  KES_RETURN_IF_ERROR(
      c.Expect(in.row_elems() % p.channels() == 0 && out.row_elems() % window == 0 &&
                   in.row_elems() / p.channels() == p.stride() * (out.row_elems() / window) &&
                   out.row_elems() > 0,
               [&] {
                 return "expected input rows of stride x output frames x channels (" +
                        std::to_string(p.stride()) + " x f x " + std::to_string(p.channels()) +
                        ") and output rows of f x " + std::to_string(window) + ", found " +
                        std::to_string(in.row_elems()) + " and " + std::to_string(out.row_elems());
               }));
  KES_RETURN_IF_ERROR(c.Activation(in, in.row_elems(), "input"));
  return c.Activation(out, out.row_elems(), "output");
}

void Bind(const BindContext& b, Step* step) {
  const fb::Im2Col& p = *b.op().params_as_Im2Col();
  Im2ColArgs a{};
  a.in = reinterpret_cast<const float*>(b.In(0));
  a.out = reinterpret_cast<float*>(b.Out(0));
  a.kernel = p.kernel();
  a.stride = p.stride();
  a.padding = p.padding();
  a.channels = p.channels();
  a.f_in = b.InBuffer(0).row_elems() / a.channels;
  a.f_out = a.f_in / a.stride;
  step->Set(Run, Parallelism::kMultiToken, a);
}

}  // namespace

const OpKind kIm2ColOp = OpKind(fb::OpParams::Im2Col, Check, Bind).Operands(1, 1);

}  // namespace kestrel
