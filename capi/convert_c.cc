// The C API's conversion: kes_convert, kestrel-convert's work as a call. Both run
// converters/convert_file.h's ConvertFile, so that the two write the same bytes and refuse the
// same inputs with the same words; what the program prints (a progress line, the summary)
// becomes a callback here, and the codes say which kind of failure each step's is.
#include <cstring>
#include <string>

#include "capi/c_call.h"
#include "converters/convert_file.h"
#include "kestrel/kestrel.h"

using namespace kestrel::capi;  // NOLINT: the C API's call helpers (c_call.h)

static_assert(offsetof(kes_convert_params, progress_user_data) + sizeof(void*) ==
                  sizeof(kes_convert_params),
              "kes_convert_params must not end in padding");

namespace {

CallStatus CheckCount(const char* name, uint32_t value, uint32_t min, uint32_t max) {
  if (value >= min && value <= max) return Ok();
  return Error(KES_INVALID_ARGUMENT, std::string("kes_convert_params.") + name + ": expected " +
                                         std::to_string(min) + " to " + std::to_string(max) +
                                         ", found " + std::to_string(value));
}

// The choices kestrel-convert's flags would make; *read gets the caller's struct with defaults
// for the fields its struct_size leaves out.
CallStatus ReadChoices(const kes_convert_params* in, kestrel::ConvertChoices* c,
                       kes_convert_params* read) {
  kes_convert_params& p = *read;
  KES_C_RETURN_IF_ERROR(
      kestrel::capi::ReadParams(in, kes_convert_default_params(), "kes_convert_params", &p));
  if (p.reserved0 != 0) return Error(KES_INVALID_ARGUMENT, "kes_convert_params.reserved0 != 0");
  if (p.weights != nullptr && !kestrel::SetWeights(p.weights, c)) {
    return Error(KES_INVALID_ARGUMENT, std::string("kes_convert_params.weights: expected ") +
                                           kestrel::kWeightChoices + ", found '" + p.weights + "'");
  }
  KES_C_RETURN_IF_ERROR(CheckCount("prefill_tokens", p.prefill_tokens, 1, 4096));
  KES_C_RETURN_IF_ERROR(CheckCount("score_tokens", p.score_tokens, 1, 4096));
  KES_C_RETURN_IF_ERROR(CheckCount("max_seq_length", p.max_seq_length, 0, 65536));
  KES_C_RETURN_IF_ERROR(CheckCount("max_batch", p.max_batch, 1, 65536));
  KES_C_RETURN_IF_ERROR(CheckCount("step_tokens", p.step_tokens, 1, 65536));
  if (p.calibration != nullptr) {
    if (*p.calibration == '\0') {
      return Error(KES_INVALID_ARGUMENT,
                   "kes_convert_params.calibration: expected a file of "
                   "texts or none, found ''");
    }
    c->encoder.calibration = p.calibration;
  }
  c->convert.prefill_tokens = p.prefill_tokens;
  c->convert.score_tokens = p.score_tokens;
  c->encoder.max_seq_length = p.max_seq_length;
  c->convert.max_batch = p.max_batch;
  c->encoder.step_tokens = p.step_tokens;
  return Ok();
}

kes_status Code(kestrel::ConvertFailure failure) {
  using kestrel::ConvertFailure;
  switch (failure) {
    case ConvertFailure::kNone: return KES_OK;
    case ConvertFailure::kBadArgument: return KES_INVALID_ARGUMENT;
    case ConvertFailure::kIo: return KES_IO_ERROR;
    case ConvertFailure::kBadInput: return KES_BAD_MODEL;
    case ConvertFailure::kUnsupported: return KES_UNSUPPORTED;
    case ConvertFailure::kInternal: return KES_INTERNAL;
  }
  return KES_INTERNAL;
}

CallStatus Convert(const std::string& input, const std::string& output,
                   const kes_convert_params* params) {
  kestrel::ConvertChoices choices;
  kes_convert_params p;
  KES_C_RETURN_IF_ERROR(ReadChoices(params, &choices, &p));
  kestrel::ConvertHooks hooks;
  size_t total = 0;
  if (p.progress != nullptr) {
    hooks.on_total = [&](size_t n) { total = n; };
    hooks.on_tensor = [&](size_t done, uint64_t) { p.progress(p.progress_user_data, done, total); };
  }
  const kestrel::ConvertResult done =
      kestrel::ConvertFile(input, output, &choices, "weights", hooks);
  if (!done.ok()) return Error(Code(done.failure), done.message);
  return Ok();
}

}  // namespace

extern "C" {

kes_convert_params kes_convert_default_params(void) {
  kes_convert_params p = kestrel::capi::ZeroedStruct<kes_convert_params>();
  // As ConvertOptions and HfEncoderOptions default them.
  const kestrel::ConvertOptions convert;
  const kestrel::HfEncoderOptions encoder;
  p.prefill_tokens = convert.prefill_tokens;
  p.score_tokens = convert.score_tokens;
  p.max_seq_length = encoder.max_seq_length;
  p.max_batch = convert.max_batch;
  p.step_tokens = encoder.step_tokens;
  return p;
}

kes_status kes_convert(const char* src, const char* dst, const kes_convert_params* params) {
  return kestrel::capi::Guard(nullptr, nullptr, [&]() -> CallStatus {
    if (src == nullptr) return NullArgument("src");
    if (dst == nullptr) return NullArgument("dst");
    if (*src == '\0' || *dst == '\0') {
      return Error(KES_INVALID_ARGUMENT, "src and dst: expected paths, found an empty string");
    }
    return Convert(src, dst, params);
  });
}

}  // extern "C"
