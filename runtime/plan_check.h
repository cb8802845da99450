// Checks one plan of a verified FlatBuffer against the model: buffer ranges in the arena, op
// codes, operand counts, ids, dtypes and shapes, so the executor can run it without checks.
#pragma once

#include "kestrel_generated.h"
#include "runtime/status.h"

namespace kestrel {

Status CheckPlan(const fb::Model& model, const fb::Plan& plan);

// Rows a buffer holds when a step processes `n_tokens` tokens.
inline uint64_t BufferRows(const fb::Buffer& b, uint64_t n_tokens) {
  return b.per_token() ? n_tokens : b.fixed_rows();
}

}  // namespace kestrel
