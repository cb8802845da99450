// Checks one plan of a verified FlatBuffer against the model: buffer ranges in the arena, the
// named inputs and outputs by role, and every op (operand counts and ids here, then the op kind's
// own check of dtypes, shapes and parameters), so the executor can run it without checks.
#pragma once

#include "kestrel_generated.h"
#include "runtime/status.h"

namespace kestrel {

Status CheckPlan(const fb::Model& model, const fb::Plan& plan);

// Rows a buffer holds when a step processes `n_tokens` tokens.
inline uint64_t BufferRows(const fb::Buffer& b, uint64_t n_tokens) {
  return b.per_token() ? n_tokens : b.fixed_rows();
}

// The buffer id of the plan's input or output with this role, or -1 when it has none.
int64_t FindPlanIo(const fb::Plan& plan, fb::IoRole role);

}  // namespace kestrel
