#include "tools/bench_profile.h"

#include <algorithm>
#include <cstdio>

#include "runtime/format.h"

namespace kestrel::cli {

StepProfile::StepProfile(const Model& model) {
  const fb::Model& meta = model.meta();
  std::unordered_map<std::string, size_t> label_of;
  for (const fb::Plan* plan : *meta.plans()) {
    for (const fb::Op* op : *plan->ops()) {
      std::string name = fb::EnumNameOpParams(op->params_type());
      uint64_t bytes = 0;
      if (op->weights() != nullptr && op->weights()->size() > 0) {
        const fb::Tensor* first = meta.tensors()->Get(op->weights()->Get(0));
        name += std::string(" ") + DTypeName(first->dtype());
        // A matmul's shape too: the same type runs at different speeds per shape.
        if (op->params_type() == fb::OpParams::MatMul && first->shape()->size() == 2) {
          name += " " + std::to_string(first->shape()->Get(0)) + "x" +
                  std::to_string(first->shape()->Get(1));
        }
        for (uint32_t id : *op->weights()) bytes += meta.tensors()->Get(id)->size();
      }
      auto [it, added] = label_of.emplace(name, labels_.size());
      if (added) {
        labels_.push_back({name});
        labels_.back().streams_weights = op->params_type() == fb::OpParams::MatMul;
      }
      op_label_[op] = {it->second, bytes};
    }
  }
}

void StepProfile::Attach(Session& session) { session.SetStepObserver(&StepProfile::Observe, this); }

void StepProfile::Detach(Session& session) { session.SetStepObserver(nullptr, nullptr); }

void StepProfile::Observe(void* context, const BoundPlan&, const fb::Op& op, size_t) {
  auto& self = *static_cast<StepProfile*>(context);
  self.EndCall();
  self.running_ = &op;
}

void StepProfile::EndCall() {
  const auto now = std::chrono::steady_clock::now();
  if (running_ != nullptr) {
    const auto found = op_label_.find(running_);
    if (found != op_label_.end()) {
      Label& label = labels_[found->second.first];
      label.seconds += std::chrono::duration<double>(now - since_).count();
      label.steps += 1;
      label.weight_bytes += found->second.second;
    }
  }
  running_ = nullptr;
  since_ = now;
}

void StepProfile::Clear() {
  for (Label& label : labels_) label.seconds = 0, label.steps = 0, label.weight_bytes = 0;
  running_ = nullptr;
}

// printf into a std::string.
template <typename... Args>
void Append(std::string* out, const char* format, Args... args) {
  char line[256];
  std::snprintf(line, sizeof(line), format, args...);
  *out += line;
}

std::string StepProfile::Table(const std::string& test, size_t calls) const {
  std::vector<const Label*> order;
  double total = 0;
  for (const Label& label : labels_) {
    if (label.steps == 0) continue;
    order.push_back(&label);
    total += label.seconds;
  }
  std::sort(order.begin(), order.end(),
            [](const Label* a, const Label* b) { return a->seconds > b->seconds; });
  const double per_call = calls == 0 ? 0 : 1.0 / static_cast<double>(calls);
  std::string out;
  Append(&out, "\n%s: time per %s by op (matmuls: weight bytes read per second)\n\n", test.c_str(),
         test.rfind("tg", 0) == 0 ? "token" : "prompt");
  out += "| op                         | steps | ms per call | share | weights GB/s |\n";
  out += "|:---------------------------|------:|------------:|------:|-------------:|\n";
  for (const Label* label : order) {
    // Left empty where the clock was too coarse to time the op at all (0 s): no rate to give.
    char rate[32] = "";
    if (label->streams_weights && label->seconds > 0) {
      // Three significant digits, not a fixed one decimal: a tiny model's matmuls on a slow or
      // busy machine read well under 0.05 GB/s, which "%.1f" printed as a rate of 0.0.
      const double gb_per_s = static_cast<double>(label->weight_bytes) / label->seconds / 1e9;
      std::snprintf(rate, sizeof(rate), gb_per_s >= 100 ? "%.0f" : "%#.3g", gb_per_s);
    }
    Append(&out, "| %-26s | %5.0f | %11.3f | %4.1f%% | %12s |\n", label->name.c_str(),
           static_cast<double>(label->steps) * per_call, label->seconds * per_call * 1e3,
           total > 0 ? 100 * label->seconds / total : 0.0, rate);
  }
  Append(&out, "| total                      |       | %11.3f |       |              |\n",
         total * per_call * 1e3);
  return out;
}

}  // namespace kestrel::cli
