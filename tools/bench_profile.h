// kestrel bench --profile: where the time of a prefill or a decode step goes, per op kind and
// weight type, and the weight bytes per second each matmul type streams (decode reads every
// weight once per token, so that figure against the machine's read bandwidth is how close a
// kernel is to its limit).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/model.h"
#include "runtime/session.h"

namespace kestrel::cli {

class StepProfile {
 public:
  // Labels every op of every plan of the model up front, so that observing a step allocates
  // nothing.
  explicit StepProfile(const Model& model);

  // Times every step of the session's plans from now on (Detach: no more).
  void Attach(Session& session);
  static void Detach(Session& session);
  // The timed call (a prefill or a decode step) returned: its last step ends now.
  void EndCall();
  // Forgets the times so far (after a warm-up).
  void Clear();
  // One markdown table: per label, the time per call (calls: the prefills or decode steps
  // timed), its share and the weight bytes per second.
  std::string Table(const std::string& test, size_t calls) const;

 private:
  static void Observe(void* context, const BoundPlan& plan, const fb::Op& op, size_t n_tokens);

  struct Label {
    std::string name;  // "MatMul q4_k", "RmsNorm", ...
    double seconds = 0;
    uint64_t steps = 0;
    uint64_t weight_bytes = 0;     // of every step counted, for the bytes-per-second column
    bool streams_weights = false;  // a matmul: every weight byte read each step
  };
  std::vector<Label> labels_;
  std::unordered_map<const fb::Op*, std::pair<size_t, uint64_t>> op_label_;  // label, bytes
  const fb::Op* running_ = nullptr;
  std::chrono::steady_clock::time_point since_;
};

}  // namespace kestrel::cli
