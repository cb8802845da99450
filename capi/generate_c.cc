// The C API's generation calls: prefill, logits, pull-style next_token and kes_generate with a
// token callback, all stoppable by kes_session_abort. kes_generate drives the runtime's loop
// (runtime/generate.h), the one `kestrel run` drives, with the same prefill chunks, so that its
// tokens are the CLI's.
#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>

#include "capi/c_call.h"
#include "capi/c_handles.h"
#include "kestrel/kestrel.h"
#include "runtime/generate.h"

using namespace kestrel::capi;  // NOLINT: the C API's call helpers (c_call.h)

static_assert(offsetof(kes_sampler_params, seed) + sizeof(uint64_t) == sizeof(kes_sampler_params),
              "kes_sampler_params must not end in padding (c_call.h ReadParams)");

namespace {

// The runtime's options for a caller's sampler params, checked (a Sampler accepts them) before
// anything changes the session.
CallStatus ResolveSampler(const kes_session* s, const kes_sampler_params* in,
                          kestrel::SamplerOptions* out) {
  kes_sampler_params p;
  KES_C_RETURN_IF_ERROR(
      kestrel::capi::ReadParams(in, kes_sampler_default_params(), "kes_sampler_params", &p));
  out->temperature = p.temperature;
  out->top_k = p.top_k;
  out->top_p = p.top_p;
  out->seed = p.seed;
  kestrel::Sampler probe;
  return FromStatus(KES_INVALID_ARGUMENT,
                    probe.Init(*out, s->session->vocab_size(), s->session->sampler_scratch(),
                               s->session->memory().sampler_bytes));
}

bool SameSampler(const kestrel::SamplerOptions& a, const kestrel::SamplerOptions& b) {
  return a.temperature == b.temperature && a.top_k == b.top_k && a.top_p == b.top_p &&
         a.seed == b.seed;
}

// Checked before anything runs, so that a bad id leaves the sequence as it was (the runtime
// checks each chunk only as it comes).
CallStatus CheckTokens(const kes_session* s, const int32_t* tokens, size_t n, const char* name) {
  if (tokens == nullptr && n > 0) return NullArgument(name);
  const size_t vocab = s->session->vocab_size();
  for (size_t i = 0; i < n; ++i) {
    if (tokens[i] < 0 || static_cast<size_t>(tokens[i]) >= vocab) {
      return Error(KES_INVALID_ARGUMENT, std::string(name) + "[" + std::to_string(i) +
                                             "]: expected a token id below the " +
                                             std::to_string(vocab) + " of the vocabulary, found " +
                                             std::to_string(tokens[i]));
    }
  }
  return Ok();
}

// KES_ABORTED when kes_session_abort asked, which the answer clears.
CallStatus TakeAbort(kes_session* s) {
  if (!s->abort.exchange(false)) return Ok();
  s->stop.store(false);
  return Error(KES_ABORTED, "aborted by kes_session_abort");
}

// Runs the last generated token through the model, when it has not been yet.
CallStatus RunPending(kes_session* s) {
  if (s->pending < 0) return Ok();
  const int32_t token = s->pending;
  s->pending = -1;
  return FromStatus(KES_INTERNAL, s->session->Decode(token));
}

// Prefills in the prefill plan's chunks, as one Session::Prefill call would cut them, checking
// for an abort before each.
CallStatus PrefillChunks(kes_session* s, const int32_t* tokens, size_t n) {
  for (size_t done = 0; done < n;) {
    KES_C_RETURN_IF_ERROR(TakeAbort(s));
    const size_t count = std::min(s->prefill_chunk, n - done);
    KES_C_RETURN_IF_ERROR(FromStatus(KES_INTERNAL, s->session->Prefill(tokens + done, count)));
    done += count;
  }
  return Ok();
}

CallStatus NeedTokens(const kes_session* s) {
  if (s->session->position() > 0) return Ok();
  return Error(KES_INVALID_ARGUMENT, "the session holds no tokens yet: prefill a prompt first");
}

// What kes_generate's callback needs, and what it saw.
struct SinkContext {
  kes_session* session;
  kes_token_callback callback;
  void* user_data;
  size_t emitted = 0;
  int32_t last = -1;
};

void Sink(void* context, int32_t token, std::string_view text) {
  auto& c = *static_cast<SinkContext*>(context);
  ++c.emitted;
  c.last = token;
  if (c.callback != nullptr && c.callback(c.user_data, token, text.data(), text.size()) != 0) {
    c.session->stop.store(true);
  }
}

CallStatus Generate(kes_session* s, const int32_t* prompt, size_t n_prompt,
                    const kes_sampler_params* sampler, size_t max_tokens,
                    kes_token_callback callback, void* user_data) {
  KES_C_RETURN_IF_ERROR(CheckTokens(s, prompt, n_prompt, "prompt"));
  kestrel::GenerateOptions options;
  KES_C_RETURN_IF_ERROR(ResolveSampler(s, sampler, &options.sampler));
  options.max_new_tokens = max_tokens;
  options.stop = &s->stop;
  const size_t context = s->session->context_length();
  if (n_prompt > context) {
    return Error(KES_CONTEXT_FULL, "the prompt is " + std::to_string(n_prompt) +
                                       " tokens, more than the context of " +
                                       std::to_string(context) +
                                       " tokens (kes_session_params.context_length)");
  }
  if (n_prompt == 0 && s->pending < 0) KES_C_RETURN_IF_ERROR(NeedTokens(s));
  // A stop asked by the last call's callback is forgotten; an abort asked since is not (it set
  // `abort` before `stop`, so TakeAbort after this store sees it, or the loop sees `stop`).
  s->stop.store(false);
  KES_C_RETURN_IF_ERROR(TakeAbort(s));
  KES_C_RETURN_IF_ERROR(RunPending(s));
  s->sampler_ready = false;

  SinkContext sink{s, callback, user_data};
  kestrel::GenerateStats stats;
  if (n_prompt > 0) {
    // Whole chunks here, abortable; the runtime's Generate prefills the rest, so the chunks are
    // those of `kestrel run` (tools/cli_util.cc PrefillWithProgress).
    const size_t ahead = (n_prompt - 1) / s->prefill_chunk * s->prefill_chunk;
    KES_C_RETURN_IF_ERROR(PrefillChunks(s, prompt, ahead));
    KES_C_RETURN_IF_ERROR(
        FromStatus(KES_INTERNAL, kestrel::Generate(*s->session, prompt + ahead, n_prompt - ahead,
                                                   options, Sink, &sink, &stats)));
  } else {
    KES_C_RETURN_IF_ERROR(FromStatus(
        KES_INTERNAL, kestrel::GenerateFromLogits(*s->session, options, Sink, &sink, &stats)));
  }
  // The loop leaves the last token it gave out undecoded; it is still part of the sequence.
  if (sink.emitted > stats.decode_steps) s->pending = sink.last;
  if (stats.stopped) KES_C_RETURN_IF_ERROR(TakeAbort(s));
  return Ok();
}

CallStatus NextToken(kes_session* s, const kes_sampler_params* sampler, int32_t* token,
                     char* piece_buf, size_t piece_capacity, size_t* piece_len) {
  if (token == nullptr) return NullArgument("token");
  if (piece_buf == nullptr && piece_capacity > 0) return NullArgument("piece_buf");
  kestrel::SamplerOptions options;
  KES_C_RETURN_IF_ERROR(ResolveSampler(s, sampler, &options));
  if (s->pending < 0) KES_C_RETURN_IF_ERROR(NeedTokens(s));
  KES_C_RETURN_IF_ERROR(TakeAbort(s));
  if (!s->sampler_ready || !SameSampler(options, s->sampler_options)) {
    KES_C_RETURN_IF_ERROR(
        FromStatus(KES_INVALID_ARGUMENT,
                   s->sampler.Init(options, s->session->vocab_size(), s->session->sampler_scratch(),
                                   s->session->memory().sampler_bytes)));
    s->sampler_options = options;
    s->sampler_ready = true;
  }
  KES_C_RETURN_IF_ERROR(RunPending(s));
  // A copy, so that a piece too long for the buffer leaves the random sequence where it was.
  const kestrel::Sampler before = s->sampler;
  const int32_t sampled = s->sampler.Sample(s->session->logits());
  const std::string_view piece = s->session->model().tokenizer().TokenText(sampled);
  if (piece_len != nullptr) *piece_len = piece.size();
  if (piece_buf != nullptr && piece.size() > piece_capacity) {
    s->sampler = before;
    return kestrel::capi::BufferTooSmall("piece_buf", piece.size(), piece_capacity, "bytes");
  }
  if (piece_buf != nullptr && !piece.empty()) std::memcpy(piece_buf, piece.data(), piece.size());
  s->pending = sampled;
  *token = sampled;
  return Ok();
}

}  // namespace

extern "C" {

kes_sampler_params kes_sampler_default_params(void) {
  kes_sampler_params p = kestrel::capi::ZeroedStruct<kes_sampler_params>();
  // `kestrel run`'s defaults (its --temp; the runtime's SamplerOptions default to greedy).
  const kestrel::SamplerOptions runtime_defaults;
  p.temperature = 0.8f;
  p.top_k = runtime_defaults.top_k;
  p.top_p = runtime_defaults.top_p;
  p.seed = runtime_defaults.seed;
  return p;
}

kes_status kes_session_prefill(kes_session* session, const int32_t* tokens, size_t n) {
  return kestrel::capi::OnHandle(session, "session", [&]() -> CallStatus {
    KES_C_RETURN_IF_ERROR(CheckTokens(session, tokens, n, "tokens"));
    KES_C_RETURN_IF_ERROR(TakeAbort(session));
    KES_C_RETURN_IF_ERROR(RunPending(session));
    session->sampler_ready = false;
    return PrefillChunks(session, tokens, n);
  });
}

kes_status kes_session_logits(kes_session* session, const float** logits, size_t* n_vocab) {
  return kestrel::capi::OnHandle(session, "session", [&]() -> CallStatus {
    if (logits == nullptr) return NullArgument("logits");
    if (n_vocab == nullptr) return NullArgument("n_vocab");
    if (session->pending < 0) KES_C_RETURN_IF_ERROR(NeedTokens(session));
    KES_C_RETURN_IF_ERROR(RunPending(session));
    *logits = session->session->logits();
    *n_vocab = session->session->vocab_size();
    return Ok();
  });
}

kes_status kes_session_next_token(kes_session* session, const kes_sampler_params* sampler,
                                  int32_t* token, char* piece_buf, size_t piece_capacity,
                                  size_t* piece_len) {
  return kestrel::capi::OnHandle(session, "session", [&] {
    return NextToken(session, sampler, token, piece_buf, piece_capacity, piece_len);
  });
}

kes_status kes_generate(kes_session* session, const int32_t* prompt, size_t n_prompt,
                        const kes_sampler_params* sampler, size_t max_tokens,
                        kes_token_callback callback, void* user_data) {
  return kestrel::capi::OnHandle(session, "session", [&] {
    return Generate(session, prompt, n_prompt, sampler, max_tokens, callback, user_data);
  });
}

}  // extern "C"
