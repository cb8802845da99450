// Embedding lookup from f32 weights in panels of 16 rows: the tied token table of a model whose
// output projection runs on ops/matmul_f32_panels.h. A row's values lie 16 floats apart, so no
// vector load applies; one row of a few hundred values per token is far too little work to be
// worth a per-target gather.
#include "ops/embed.h"
#include "ops/matmul_f32_panels.h"

namespace kestrel::ops {

void EmbedF32Panels(const float* panels, size_t vocab, size_t dim, const int32_t* tokens,
                    size_t n_tokens, float scale, float* out) {
  (void)vocab;  // the layout depends on the rows' panel, not on how many panels there are
  for (size_t t = 0; t < n_tokens; ++t) {
    const size_t row = static_cast<size_t>(tokens[t]);
    const float* values = panels + F32PanelRowOffset(dim, row);
    float* dst = out + t * dim;
    for (size_t i = 0; i < dim; ++i) dst[i] = values[i * kF32PanelRows] * scale;
  }
}

}  // namespace kestrel::ops
