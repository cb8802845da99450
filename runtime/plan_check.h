// Checks one plan of a verified FlatBuffer against the model: buffer ranges in the arena, the
// named inputs and outputs by role, and every op (operand counts and ids here, then the op kind's
// own check of dtypes, shapes and parameters), so the executor can run it without checks.
#pragma once

#include "kestrel_generated.h"
#include "runtime/status.h"

namespace kestrel {

Status CheckPlan(const fb::Model& model, const fb::Plan& plan);

// The buffer id of the plan's input or output with this role, or -1 when it has none.
int64_t FindPlanIo(const fb::Plan& plan, fb::IoRole role);

}  // namespace kestrel
