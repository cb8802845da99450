// What QuantizeRows shares with the steps a QuantizeRows is fused into (layer_norm_step.cc).
#pragma once

#include <cstdint>

#include "kestrel_generated.h"
#include "ops/quantize_rows.h"
#include "runtime/status.h"

namespace kestrel {

// scale_block is 32, or 256 on rows of a multiple of 256 without channel factors.
Status CheckQuantizeScaleBlock(const fb::QuantizeRows& params, uint64_t row_elems,
                               bool has_factors);

// The quantizer of a QuantizeRows without channel factors: a scale per 32 or per 256.
decltype(&ops::QuantizeRowsQ8) ResolveQuantizeRows(const fb::QuantizeRows& params);

}  // namespace kestrel
