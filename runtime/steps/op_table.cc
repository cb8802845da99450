#include "runtime/steps/steps.h"

namespace kestrel {

const OpKind* FindOpKind(fb::OpParams params) {
#define KESTREL_OP_KIND_ENTRY(name) &k##name##Op,
  static const OpKind* const kKinds[] = {KESTREL_OP_KINDS(KESTREL_OP_KIND_ENTRY)};
#undef KESTREL_OP_KIND_ENTRY
  for (const OpKind* kind : kKinds) {
    if (kind->params == params) return kind;
  }
  return nullptr;
}

}  // namespace kestrel
