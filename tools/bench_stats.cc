#include "tools/bench_stats.h"

#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "ops/targets.h"
#include "runtime/format.h"
#include "tools/cli.h"

namespace kestrel::cli {

double Seconds(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

Summary Summarize(std::vector<double> values) {
  Summary s;
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  s.median = n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
  s.min = values.front();
  s.max = values.back();
  double mean = 0;
  for (double v : values) mean += v / n;
  for (double v : values) s.stddev += (v - mean) * (v - mean) / n;
  s.stddev = std::sqrt(s.stddev);
  return s;
}

double Percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const size_t rank = static_cast<size_t>(std::ceil(q * sorted.size()));
  return sorted[std::min(sorted.size() - 1, rank == 0 ? 0 : rank - 1)];
}

// The dtype holding most of the weight bytes: what the table calls the model's format.
// The weights' dtype, or for a model of several (a kept Q4_K_M file) each with its share of
// the bytes, largest first: "Q8_0 72% Q5_0 15% ...". f32 norms do not count when the matrices
// are of another type.
std::string WeightFormat(const Model& model) {
  std::vector<std::pair<fb::DType, uint64_t>> bytes;
  uint64_t total = 0;
  for (const fb::Tensor* t : *model.meta().tensors()) {
    // Panels are f32 weights in another order: the same format to whoever reads the figures.
    const fb::DType dtype = t->dtype() == fb::DType::F32_PANELS ? fb::DType::F32 : t->dtype();
    auto it =
        std::find_if(bytes.begin(), bytes.end(), [&](const auto& e) { return e.first == dtype; });
    if (it == bytes.end()) it = bytes.insert(bytes.end(), {dtype, 0});
    it->second += t->size();
    total += t->size();
  }
  if (bytes.size() > 1) {
    const auto f32 = std::find_if(bytes.begin(), bytes.end(),
                                  [](const auto& e) { return e.first == fb::DType::F32; });
    if (f32 != bytes.end()) total -= f32->second, bytes.erase(f32);
  }
  if (bytes.empty()) return "?";
  if (bytes.size() == 1) return DTypeName(bytes[0].first);
  std::sort(bytes.begin(), bytes.end(),
            [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string format;
  for (const auto& [dtype, n] : bytes) {
    if (!format.empty()) format += ' ';
    format += std::string(DTypeName(dtype)) + ' ' +
              std::to_string(static_cast<int>(std::lround(100.0 * n / total))) + '%';
  }
  return format;
}

Status ParseCountList(const std::string& flag, const std::string& text, int64_t min, int64_t max,
                      std::vector<size_t>* out) {
  out->clear();
  size_t begin = 0;
  while (begin <= text.size()) {
    size_t end = text.find(',', begin);
    if (end == std::string::npos) end = text.size();
    int64_t v = 0;
    KES_RETURN_IF_ERROR(ParseInt(flag, text.substr(begin, end - begin), min, max, &v));
    out->push_back(static_cast<size_t>(v));
    begin = end + 1;
  }
  return OkStatus();
}

std::string JsonSummary(const Summary& s) {
  char text[200];
  std::snprintf(text, sizeof(text),
                "{\"median\": %.4f, \"min\": %.4f, \"max\": %.4f, \"stddev\": %.4f}", s.median,
                s.min, s.max, s.stddev);
  return text;
}

namespace {

uint64_t PeakResidentBytes() {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<uint64_t>(usage.ru_maxrss) * 1024;  // Linux: KiB
}

}  // namespace

std::string EncoderBenchJsonFields(const Model& model, size_t arena_bytes, size_t repetitions) {
  char text[1024];
  std::snprintf(text, sizeof(text),
                "  \"model\": \"%s\",\n  \"weights\": \"%s\",\n  \"cpu\": \"%s\",\n"
                "  \"target\": \"%s\",\n  \"weight_bytes\": %llu,\n  \"arena_bytes\": %zu,\n"
                "  \"peak_rss_bytes\": %llu,\n  \"repetitions\": %zu,\n",
                JsonEscape(model.meta().architecture()->str()).c_str(), WeightFormat(model).c_str(),
                JsonEscape(CpuName()).c_str(), ops::ChosenTargetName().c_str(),
                static_cast<unsigned long long>(model.weights_bytes()), arena_bytes,
                static_cast<unsigned long long>(PeakResidentBytes()), repetitions);
  return text;
}

void PrintEncoderBenchHeader(const char* kind, const std::string& model_path, const Model& model,
                             size_t arena_bytes) {
  std::printf("model: %s %s (%s), weights %s, %s; arena %s\n", model.meta().architecture()->c_str(),
              kind, model_path.c_str(), WeightFormat(model).c_str(),
              FormatBytes(model.weights_bytes()).c_str(), FormatBytes(arena_bytes).c_str());
  std::printf("cpu: %s; SIMD target %s; peak resident memory %s\n", CpuName().c_str(),
              ops::ChosenTargetName().c_str(), FormatBytes(PeakResidentBytes()).c_str());
}

}  // namespace kestrel::cli
