/* Kestrel's C API: load a .kes model and generate text, embed texts or transcribe speech with
 * it, from C99 or any language that calls C.
 *
 * Conventions, the same for every call:
 *  - Every call that can fail returns a kes_status; KES_OK is 0. Nothing is thrown across this
 *    API and nothing is printed: what failed is in a message, readable per handle
 *    (kes_model_last_error, kes_session_last_error) and, for every call including the
 *    constructors that leave no handle, through kes_last_error() on the calling thread.
 *  - Objects are opaque handles made by *_open / *_create and freed by *_close / *_destroy
 *    (which accept NULL).
 *  - Parameter structs start with `size_t struct_size`, set by the *_default_params() call that
 *    fills them. Fields are only ever appended, so a program built against an older kestrel.h
 *    keeps working: the library takes the fields its struct_size covers and defaults for the
 *    rest. A struct larger than the library knows (a newer header) is refused. A NULL pointer
 *    means every default. Fields named reserved* must be 0 (later versions give them a
 *    meaning where 0 keeps today's behaviour).
 *  - Sizes that a buffer must hold are reported when it is too short: the call returns
 *    KES_BUFFER_TOO_SMALL, changes nothing else, and stores the size needed.
 *  - Text is UTF-8 with explicit lengths and is never NUL-terminated by the library.
 *
 * Later versions add new calls and new handles beside these, leaving the ones below as they
 * are. */
#ifndef KESTREL_KESTREL_H_
#define KESTREL_KESTREL_H_

#include <stddef.h>
#include <stdint.h>

/* Raised whenever a struct layout, a call's signature or a meaning changes incompatibly;
 * appending a field or adding a call does not raise it. kes_abi_version() gives the library's,
 * so a program can check the one it loaded against the header it was built with. */
#define KES_ABI_VERSION 1

/* Everything the library exports, and nothing else (it is built with hidden visibility). */
#if defined(_WIN32)
#define KES_API
#else
#define KES_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Status ------------------------------------------------------------------------------- */

/* Values are fixed; new codes are appended. */
typedef enum kes_status {
  KES_OK = 0,
  KES_INVALID_ARGUMENT = 1, /* a NULL handle, an out-of-range value, a call in the wrong order */
  KES_IO_ERROR = 2,         /* a file that cannot be opened or read */
  KES_BAD_MODEL = 3,        /* a file or buffer that is not a valid .kes model */
  KES_UNSUPPORTED = 4,      /* a valid model of the wrong kind (an encoder given to a session) */
  KES_BUFFER_TOO_SMALL = 5, /* a caller buffer is short; the size needed was stored */
  KES_CONTEXT_FULL = 6,     /* a prompt longer than the session's context */
  KES_OUT_OF_MEMORY = 7,
  KES_ABORTED = 8,   /* kes_session_abort (kes_encoder_abort, kes_transcriber_abort) stopped
                        the call */
  KES_INTERNAL = 9,  /* a bug: please report the message */
  KES_BAD_STATE = 10 /* a saved session state that is damaged, cut short, of another format
                        version, or saved by another model or a session of other parameters */
} kes_status;

/* "KES_OK", "KES_IO_ERROR", ...; "KES_UNKNOWN" for a value this library does not know. */
KES_API const char* kes_status_name(kes_status status);

/* The message of the last call that failed on the calling thread ("" if none did): the way to
 * learn why kes_model_open or kes_session_create failed. Valid until the thread's next call. */
KES_API const char* kes_last_error(void);

/* The library's version ("0.1.0") and its KES_ABI_VERSION. */
KES_API const char* kes_version(void);
KES_API int kes_abi_version(void);

/* ---- Model -------------------------------------------------------------------------------- */

/* A loaded, verified .kes model. Immutable once open: any number of sessions on any threads may
 * share one at once, and every call taking a `const kes_model*` may run on several threads
 * together. It must outlive every session made from it. */
typedef struct kes_model kes_model;

typedef struct kes_model_params {
  size_t struct_size;
  /* Hash every weight against the checksum kestrel-convert recorded, so a damaged file fails to
   * open (one pass over the weights): 1 yes, 0 no, -1 (default) as the environment variable
   * KESTREL_VERIFY_WEIGHTS says, like the kestrel programs. */
  int32_t verify_weights;
  int32_t reserved0;
} kes_model_params;

KES_API kes_model_params kes_model_default_params(void);

/* Maps and verifies the file at `path`: KES_IO_ERROR when it cannot be opened or read (the
 * message names the path), KES_BAD_MODEL when it is not a valid .kes file. */
KES_API kes_status kes_model_open(const char* path, const kes_model_params* params,
                                  kes_model** model);
/* A model in the caller's memory (flash on a board, a file the program read itself): `data`
 * must be 64-byte aligned (KES_ALIGNMENT) and stay valid and unchanged until kes_model_close;
 * nothing is copied. */
KES_API kes_status kes_model_open_memory(const void* data, size_t size,
                                         const kes_model_params* params, kes_model** model);
KES_API void kes_model_close(kes_model* model);

/* See kes_last_error; the message of the last failed call on `model` made by the calling
 * thread (per thread, since threads share a model), "" when that was another handle's. */
KES_API const char* kes_model_last_error(const kes_model* model);

/* What a program needs to know to drive a model. */
typedef struct kes_model_info {
  size_t struct_size;
  size_t n_vocab;
  size_t context_length; /* the context it was trained for */
  int32_t bos_id;        /* -1: none */
  int32_t eos_id;        /* -1: none */
  int32_t eot_id;        /* end of turn; -1: none */
  int32_t can_generate;  /* 1 for a text decoder: sessions can be made from it */
  uint64_t weights_bytes;
} kes_model_info;

/* Fills the fields of *info that info->struct_size covers (set it first). */
KES_API kes_status kes_model_get_info(const kes_model* model, kes_model_info* info);

/* *is_end = 1 when `token` ends generation (EOS or end of turn), else 0. */
KES_API kes_status kes_token_is_end(const kes_model* model, int32_t token, int* is_end);

/* ---- Tokens ------------------------------------------------------------------------------- */

/* BOS (and EOS) where the vocabulary asks for them. */
#define KES_TOKENIZE_ADD_SPECIAL 1u
/* Control tokens typed in the text ("<start_of_turn>") become their ids; without it they are
 * plain text. */
#define KES_TOKENIZE_PARSE_SPECIAL 2u

/* The ids of `text` (len bytes) into tokens[capacity]; *n_tokens gets their count, or the
 * capacity needed with KES_BUFFER_TOO_SMALL. With both flags, the ids `kestrel run` gives a
 * text generator for the prompt `text`. */
KES_API kes_status kes_tokenize(const kes_model* model, const char* text, size_t len,
                                uint32_t flags, int32_t* tokens, size_t capacity, size_t* n_tokens);
/* The text of tokens[n] into buf[capacity] (not NUL-terminated); *n_bytes gets its length, or
 * the capacity needed with KES_BUFFER_TOO_SMALL. Tokenizing and detokenizing give the text
 * back. */
KES_API kes_status kes_detokenize(const kes_model* model, const int32_t* tokens, size_t n,
                                  char* buf, size_t capacity, size_t* n_bytes);

/* ---- Session ------------------------------------------------------------------------------ */

/* One sequence run through a model: its KV cache, activations and sampler scratch live in one
 * arena, sized before anything runs; after kes_session_create nothing it does allocates. Used
 * by one thread at a time (any thread, one after another), except kes_session_abort, which any
 * thread may call at any time. Sessions of one model are independent of each other. */
typedef struct kes_session kes_session;

/* The KV cache's element type. */
typedef enum kes_kv_type { KES_KV_F16 = 0, KES_KV_F32 = 1, KES_KV_INT8 = 2 } kes_kv_type;

typedef struct kes_session_params {
  size_t struct_size;
  size_t context_length; /* tokens; default 4096, capped at the model's; 0: the model's */
  size_t n_threads;      /* default 0: one per physical core available */
  /* Positions kept for good once generation passes the context (attention sinks; default 4,
   * fewer than the context). */
  size_t kv_sinks;
  int32_t kv_type; /* a kes_kv_type; default KES_KV_F16 */
  int32_t reserved0;
} kes_session_params;

KES_API kes_session_params kes_session_default_params(void);

/* Every arena is aligned to this many bytes. */
#define KES_ALIGNMENT 64

/* The bytes of arena a session with `params` needs (KV cache, activations, sampler scratch). */
KES_API kes_status kes_session_arena_size(const kes_model* model, const kes_session_params* params,
                                          size_t* bytes);

/* arena NULL: the session allocates its arena once, here. Otherwise the caller's, KES_ALIGNMENT
 * aligned and at least kes_session_arena_size bytes (else KES_INVALID_ARGUMENT), which must stay
 * valid until kes_session_destroy; the session zeroes it. `model` must outlive the session.
 * KES_UNSUPPORTED for a model that does not generate text. On failure no session is made and
 * the message is kes_last_error() (and kes_model_last_error(model), on this thread). */
KES_API kes_status kes_session_create(const kes_model* model, const kes_session_params* params,
                                      void* arena, size_t arena_bytes, kes_session** session);
KES_API void kes_session_destroy(kes_session* session);

/* The message of the last call on `session` that failed ("" if none did). */
KES_API const char* kes_session_last_error(const kes_session* session);

/* Tokens in the session's sequence: prefilled, and generated (the last one generated counts,
 * though it is only run through the model when more is asked of the session). */
KES_API kes_status kes_session_position(const kes_session* session, size_t* position);
/* Forgets the sequence (position 0) and clears an abort request. */
KES_API kes_status kes_session_reset(kes_session* session);

/* Cuts the sequence back to its first `position` tokens (position 0: as kes_session_reset, but
 * keeping an abort request), so that a prompt sharing only a beginning with what the session
 * holds prefills just the rest: a server slot's next request, an edited last turn. Logits are
 * then those of the next prefill. KES_INVALID_ARGUMENT, changing nothing, past the sequence's
 * length, or when the session has gone past its context (or a sliding window's span) since
 * `position`, so that its KV cache no longer holds what that position sees: reset and prefill
 * again then. Ends a kes_session_chat conversation. */
KES_API kes_status kes_session_rewind(kes_session* session, size_t position);

/* Asks the call running in `session` (or, if none is, the next one to run) to stop after the
 * step under way: kes_session_prefill, kes_session_next_token and kes_generate then return
 * KES_ABORTED, which clears the request. The sequence keeps what was done before the stop. Any
 * thread may call it at any time; it only sets a flag. */
KES_API kes_status kes_session_abort(kes_session* session);

/* Appends tokens[n] to the sequence; afterwards the logits are those after the last one. Past
 * the context the session keeps its attention sinks and the most recent tokens. */
KES_API kes_status kes_session_prefill(kes_session* session, const int32_t* tokens, size_t n);

/* The logits for the next token: *logits points to n_vocab floats inside the session, valid
 * until the session's next call. KES_INVALID_ARGUMENT while the sequence is empty. */
KES_API kes_status kes_session_logits(kes_session* session, const float** logits, size_t* n_vocab);

/* Sampling: greedy at temperature 0 (the lowest id among equal logits), otherwise temperature,
 * top-k and top-p with a generator seeded by `seed`. */
typedef struct kes_sampler_params {
  size_t struct_size;
  float temperature; /* default 0.8, as `kestrel run`; 0: greedy */
  int32_t top_k;     /* default 40; 0: no cut */
  float top_p;       /* default 0.95; 1: no cut; in (0, 1] */
  uint64_t seed;     /* default 0 */
} kes_sampler_params;

KES_API kes_sampler_params kes_sampler_default_params(void);

/* Pull-style generation, one token per call: samples `*token` from the current logits, appends
 * it to the sequence and gives its text piece in piece_buf[piece_capacity] (*piece_len bytes;
 * piece_buf may be NULL with piece_capacity 0 to skip it). An end token (kes_token_is_end) is
 * returned like any other: stop there, or go on past it. The sampler is seeded on the first call
 * after a prefill, a reset, a kes_generate or a change of `sampler`, and otherwise continues its
 * sequence, so a prefill followed by next_token calls gives what kes_generate gives for the same
 * prompt. A piece longer than piece_capacity: KES_BUFFER_TOO_SMALL, *piece_len the size
 * needed, and no token is taken (the random sequence too stays where it was). */
KES_API kes_status kes_session_next_token(kes_session* session, const kes_sampler_params* sampler,
                                          int32_t* token, char* piece_buf, size_t piece_capacity,
                                          size_t* piece_len);

/* Receives each generated token and its text piece (piece_len bytes, not NUL-terminated, valid
 * during the call); returning nonzero stops generation after this token. */
typedef int (*kes_token_callback)(void* user_data, int32_t token, const char* piece,
                                  size_t piece_len);

/* Appends prompt[n_prompt] and generates up to max_tokens tokens, calling `callback` (may be
 * NULL) with each, until an end token (not passed on and not appended), max_tokens or a nonzero
 * return. n_prompt may be 0 to go on from what the sequence holds. Each call seeds its sampler
 * afresh. The same tokens as
 * `kestrel run --temp 0` for the same prompt at temperature 0, with the same threads and KV
 * type. KES_CONTEXT_FULL when the prompt is longer than the context. */
KES_API kes_status kes_generate(kes_session* session, const int32_t* prompt, size_t n_prompt,
                                const kes_sampler_params* sampler, size_t max_tokens,
                                kes_token_callback callback, void* user_data);

/* ---- Conversion --------------------------------------------------------------------------- */

/* Called after each tensor is converted: `done` so far of `total` (0 while not yet known). */
typedef void (*kes_convert_progress)(void* user_data, size_t done, size_t total);

/* What `kestrel-convert` takes as options. */
typedef struct kes_convert_params {
  size_t struct_size;
  /* The weights' type, as kestrel-convert --weights: "keep", "f32", "f16", "bf16", "q8", "q4",
   * "q4_k_m", "q4_k", "q5_k" or "q6_k" (the K-quant ones for GGUF input). NULL (default): keep
   * for a quantized GGUF file or a checkpoint folder, f32 for any other GGUF file. */
  const char* weights;
  /* Encoders with q8 or q4: a file of calibration texts (one per line), "none" for no
   * smoothing, or NULL (default) for the converter's own texts. */
  const char* calibration;
  uint32_t prefill_tokens; /* tokens per prefill step; default 512, 1 to 4096 */
  uint32_t score_tokens;   /* tokens per step of the all-logits plan; default 8, 1 to 4096 */
  uint32_t max_seq_length; /* encoders; 0 (default): the checkpoint's; at most 65536 */
  uint32_t max_batch;      /* encoders: texts per step; default 32, 1 to 65536 */
  uint32_t step_tokens;    /* encoders: tokens per step; default 512, 1 to 65536 */
  uint32_t reserved0;
  kes_convert_progress progress; /* NULL (default): none; called on the converting thread */
  void* progress_user_data;
} kes_convert_params;

KES_API kes_convert_params kes_convert_default_params(void);

/* Converts `src` (a GGUF file, a Hugging Face checkpoint folder or a CTranslate2 Whisper folder)
 * to the .kes file `dst`, exactly as `kestrel-convert src dst` does (the same bytes), printing
 * nothing. `dst` is written under a temporary name beside it and replaces any file there only
 * once complete and verified: on failure it is left as it was and nothing half-written remains.
 * KES_INVALID_ARGUMENT for a bad option or a `dst` that is `src` (or inside it), KES_IO_ERROR
 * for an input that cannot be read or an output that cannot be written, KES_BAD_MODEL for an
 * input that is not a model, KES_UNSUPPORTED for an architecture it does not know. Any thread
 * may call it; conversions to different outputs may run at once. */
KES_API kes_status kes_convert(const char* src, const char* dst, const kes_convert_params* params);

/* ---- Embeddings --------------------------------------------------------------------------- */

/* Embeds texts with an encoder model (BERT sentence encoders such as all-MiniLM-L6-v2): the
 * vectors `kestrel embed` prints, bit for bit, pooled and (when the checkpoint's pipeline ends
 * in a Normalize module, as all-MiniLM-L6-v2's does) L2-normalized as the converter recorded.
 * Its activations live in one arena, sized before anything runs. Used by one thread at a time
 * (any thread, one after another), except kes_encoder_abort, which any thread may call at any
 * time; encoders of one model are independent of each other, so threads embed at once with an
 * encoder each. */
typedef struct kes_encoder kes_encoder;

typedef struct kes_encoder_params {
  size_t struct_size;
  size_t n_threads; /* default 0: one per physical core available, as `kestrel embed` */
} kes_encoder_params;

KES_API kes_encoder_params kes_encoder_default_params(void);

/* The bytes of arena an encoder of `model` needs (one step of the converter's batch size). */
KES_API kes_status kes_encoder_arena_size(const kes_model* model, const kes_encoder_params* params,
                                          size_t* bytes);

/* As kes_session_create: arena NULL, allocated once here; otherwise the caller's, KES_ALIGNMENT
 * aligned, at least kes_encoder_arena_size bytes and valid until kes_encoder_destroy. `model`
 * must outlive the encoder. KES_UNSUPPORTED for a model that is not an encoder (a text decoder
 * or a speech model), saying what to use instead. */
KES_API kes_status kes_encoder_create(const kes_model* model, const kes_encoder_params* params,
                                      void* arena, size_t arena_bytes, kes_encoder** encoder);
KES_API void kes_encoder_destroy(kes_encoder* encoder);

/* The message of the last call on `encoder` that failed ("" if none did). */
KES_API const char* kes_encoder_last_error(const kes_encoder* encoder);

typedef struct kes_encoder_info {
  size_t struct_size;
  size_t embedding_dim; /* floats per embedding: the `dim` of kes_embed */
  size_t max_tokens;    /* tokens per text, special ones included; longer texts are cut */
  size_t max_batch;     /* texts per step of the encoder (a call with more takes more steps) */
  size_t is_reranker;   /* 1: a cross-encoder, which scores pairs with kes_rerank; 0: embeds */
} kes_encoder_info;

/* Fills the fields of *info that info->struct_size covers (set it first). */
KES_API kes_status kes_encoder_get_info(const kes_encoder* encoder, kes_encoder_info* info);

/* Embeds texts[n] (texts[i] is lengths[i] bytes of UTF-8) into out[n * dim], row i for text i;
 * dim must be kes_encoder_info.embedding_dim. Each text is tokenized as `kestrel embed` does it
 * (the checkpoint's pipeline: its special tokens around it, cut to max_tokens), which
 * allocates; the encoder itself does not. On failure the rows of out are unspecified. */
KES_API kes_status kes_embed(kes_encoder* encoder, const char* const* texts, const size_t* lengths,
                             size_t n, float* out, size_t dim);

/* The ids kes_embed embeds for `text` (len bytes) into ids[capacity]; *n_ids gets their count,
 * or the capacity needed with KES_BUFFER_TOO_SMALL (at most max_tokens). */
KES_API kes_status kes_encoder_tokenize(const kes_encoder* encoder, const char* text, size_t len,
                                        int32_t* ids, size_t capacity, size_t* n_ids);

/* Embeds n token sequences (ids[i] is lengths[i] ids, special tokens included, 1 to max_tokens
 * of them; as `kestrel embed --ids`) into out[n * dim]. Allocates nothing: with the ids of
 * kes_encoder_tokenize it gives what kes_embed gives, for a program that tokenizes ahead of a
 * loop that must not allocate. Every id is checked before anything runs. */
KES_API kes_status kes_embed_tokens(kes_encoder* encoder, const int32_t* const* ids,
                                    const size_t* lengths, size_t n, float* out, size_t dim);

/* Scores docs[n] (docs[i] is lengths[i] bytes of UTF-8) against `query` (query_len bytes) with a
 * reranker (a cross-encoder: kes_encoder_info.is_reranker; bge-reranker, ms-marco cross-encoders):
 * logits[i] is the model's relevance logit of the pair (query, docs[i]), the "logits" of
 * `kestrel rerank --json`, bit for bit (its score is their sigmoid). Each pair is joined and cut
 * as `kestrel rerank` does it (the model's pair template; the longer side cut first to
 * max_tokens), which allocates. KES_UNSUPPORTED on an encoder that embeds. */
KES_API kes_status kes_rerank(kes_encoder* encoder, const char* query, size_t query_len,
                              const char* const* docs, const size_t* lengths, size_t n,
                              float* logits);

/* Asks the kes_embed or kes_embed_tokens running in `encoder` (or, if none is, the next one to
 * run) to stop before its next step of the encoder (kes_encoder_info.max_batch texts at most):
 * it then returns KES_ABORTED, which clears the request, and the rows of out are unspecified.
 * Any thread may call it at any time; it only sets a flag. */
KES_API kes_status kes_encoder_abort(kes_encoder* encoder);

/* ---- Transcription ------------------------------------------------------------------------ */

/* Speech to text with a Whisper model, decoded as `kestrel transcribe` decodes it (faster-
 * whisper's greedy decoding: beam size 1, temperature 0), with the same text and times. Creating
 * one allocates everything (the audio encoder's and the decoder's arenas, the spectrogram of
 * recordings up to max_audio_seconds); transcribing 16 kHz samples then allocates nothing. Used
 * by one thread at a time (any thread, one after another), except kes_transcriber_abort, which
 * any thread may call at any time; transcribers of one model are independent of each other. */
typedef struct kes_transcriber kes_transcriber;

typedef struct kes_transcriber_params {
  size_t struct_size;
  size_t n_threads; /* default 0: one per physical core available, as `kestrel transcribe` */
  /* Recordings up to this long transcribe without allocating (the spectrogram is sized for
   * them here); a longer one grows it once. Default 30 (one window of Whisper's). */
  size_t max_audio_seconds;
} kes_transcriber_params;

KES_API kes_transcriber_params kes_transcriber_default_params(void);

/* `model` must outlive the transcriber. KES_UNSUPPORTED for a model that is not a speech model
 * with a decoder (Whisper). */
KES_API kes_status kes_transcriber_create(const kes_model* model,
                                          const kes_transcriber_params* params,
                                          kes_transcriber** transcriber);
KES_API void kes_transcriber_destroy(kes_transcriber* transcriber);

/* The message of the last call on `transcriber` that failed ("" if none did). */
KES_API const char* kes_transcriber_last_error(const kes_transcriber* transcriber);

typedef enum kes_task { KES_TASK_TRANSCRIBE = 0, KES_TASK_TRANSLATE = 1 } kes_task;

/* The options of one transcription, as `kestrel transcribe` takes them. */
typedef struct kes_transcribe_params {
  size_t struct_size;
  /* The spoken language's code ("en", "de", ...; --language). NULL or "" (default): detected
   * from the first 30 seconds; English-only models take only NULL, "" or "en". */
  const char* language;
  int32_t task;          /* a kes_task (--task); default KES_TASK_TRANSCRIBE */
  int32_t timestamps;    /* 1: segments cut at Whisper's timestamps (--timestamps); default 0 */
  int32_t previous_text; /* 1: the text so far as the prompt of each next window
                            (--previous-text); default 0 */
  int32_t reserved0;
} kes_transcribe_params;

KES_API kes_transcribe_params kes_transcribe_default_params(void);

/* One piece of the transcript. The library sets struct_size to its own size: fields past the
 * ones a program's header knows are newer, and the program reads only those it knows. */
typedef struct kes_segment {
  size_t struct_size;
  double start, end; /* seconds from the start of the recording */
  const char* text;  /* text_len bytes of UTF-8, not NUL-terminated: `kestrel transcribe`'s */
  size_t text_len;
  const int32_t* tokens; /* its text tokens, and timestamps when they are on */
  size_t n_tokens;
} kes_segment;

/* Receives each segment, in order; what it points to is valid during the call only. */
typedef void (*kes_segment_callback)(void* user_data, const kes_segment* segment);

/* Transcribes samples[n], mono PCM in [-1, 1] at sample_rate Hz, calling `callback` (may be
 * NULL) with each segment. Other rates than 16000 are resampled first, which allocates. A
 * language that the model does not know, or any option the model cannot take (translating with
 * an English-only model): KES_INVALID_ARGUMENT, and nothing runs. */
KES_API kes_status kes_transcribe_pcm(kes_transcriber* transcriber, const float* samples, size_t n,
                                      uint32_t sample_rate, const kes_transcribe_params* params,
                                      kes_segment_callback callback, void* user_data);

/* The same for the WAV file at `wav_path` (integer PCM or float, any rate, its channels
 * averaged, as `kestrel transcribe` reads it; reading it allocates): KES_IO_ERROR when it cannot
 * be read, KES_INVALID_ARGUMENT when it is not such a WAV file. */
KES_API kes_status kes_transcribe_file(kes_transcriber* transcriber, const char* wav_path,
                                       const kes_transcribe_params* params,
                                       kes_segment_callback callback, void* user_data);

/* Asks the kes_transcribe_pcm or kes_transcribe_file running in `transcriber` (or, if none is,
 * the next one to run) to stop before its next window of Whisper's (30 seconds of the
 * recording at most): it then returns KES_ABORTED, which clears the request, after the
 * segments of the windows before. Any thread may call it at any time, the segment callback
 * too; it only sets a flag. */
KES_API kes_status kes_transcriber_abort(kes_transcriber* transcriber);

/* The language code of the last transcription ("en": given, detected, or the English-only
 * model's), *len bytes at *code, inside the model (valid while it is open); "" before any. */
KES_API kes_status kes_transcriber_language(const kes_transcriber* transcriber, const char** code,
                                            size_t* len);

/* ---- Chat --------------------------------------------------------------------------------- */

/* One message of a conversation. Its layout is fixed (it is an array element, not a params
 * struct): a change would raise KES_ABI_VERSION. */
typedef struct kes_chat_message {
  const char* role;    /* "system", "user" or "assistant", NUL-terminated */
  const char* content; /* UTF-8, content_len bytes */
  size_t content_len;
} kes_chat_message;

/* Writes `messages` as the model's chat template does, into buf[capacity] (not NUL-terminated):
 * *n_bytes gets the text's length, or the capacity needed with KES_BUFFER_TOO_SMALL.
 * add_generation_prompt 1: the text ends with the assistant's turn opened, ready to generate.
 * `format` NULL: the model's own Jinja template (as `kestrel chat` and llama.cpp's --jinja
 * render it), or, where it does not parse or refuses a first turn (with the messages' system
 * prompt), the built-in format its turn markers name (a model without a template needs a
 * `format`: KES_INVALID_ARGUMENT otherwise). "gemma", "chatml" or "llama3": that built-in
 * format (as `kestrel chat --template`), which writes a system message first, then user and
 * assistant turns in turn, and ends with a user turn and the assistant's opened, or with an
 * assistant message left open. Tokenize the text with KES_TOKENIZE_PARSE_SPECIAL (its markup
 * is control tokens), and without KES_TOKENIZE_ADD_SPECIAL where the template writes the BOS
 * itself.
 * KES_INVALID_ARGUMENT when the template refuses the messages (its message says why).
 * Renderings allocate. Thread-safe on a shared model. */
KES_API kes_status kes_chat_apply_template(const kes_model* model, const char* format,
                                           const kes_chat_message* messages, size_t n_messages,
                                           int add_generation_prompt, char* buf, size_t capacity,
                                           size_t* n_bytes);

/* The ids of `messages` as kes_chat_apply_template writes them, tokenized as kes_session_chat
 * and `kestrel chat` tokenize a conversation: the template's markup with its control tokens,
 * the messages' own text literally (a "<|im_end|>" typed in a message stays text, so a user
 * cannot end a turn or open another role), and the BOS first where the vocabulary wants one and
 * the template did not write it. tokens[capacity]; *n_tokens gets their count, or the capacity
 * needed with KES_BUFFER_TOO_SMALL. What a server prefills for a request's conversation.
 * Thread-safe on a shared model. */
KES_API kes_status kes_chat_tokenize(const kes_model* model, const char* format,
                                     const kes_chat_message* messages, size_t n_messages,
                                     int add_generation_prompt, int32_t* tokens, size_t capacity,
                                     size_t* n_tokens);

/* The enable_thinking variable of a thinking model's template (Qwen3's, SmolLM3's): left
 * undefined (the template's default, thinking on in both), or set. KES_THINKING_OFF asks for a
 * reply without a reasoning block (`kestrel chat --no-think`); templates that do not read the
 * variable, and the built-in formats, write the same text with any of the three. */
typedef enum kes_thinking {
  KES_THINKING_DEFAULT = 0,
  KES_THINKING_OFF = 1,
  KES_THINKING_ON = 2
} kes_thinking;

typedef struct kes_chat_params {
  size_t struct_size;
  /* The system prompt, system_len bytes; NULL (default): none, and the template's own default
   * system prompt where it has one (SmolLM2's). */
  const char* system;
  size_t system_len;
  /* NULL (default): the model's template; "gemma", "chatml", "llama3": a built-in format (see
   * kes_chat_apply_template). NUL-terminated; copied by kes_session_chat_start. */
  const char* format;
  int32_t thinking; /* a kes_thinking; default KES_THINKING_DEFAULT */
  int32_t reserved0;
} kes_chat_params;

KES_API kes_chat_params kes_chat_default_params(void);

/* kes_chat_tokenize with the format and thinking of `params` (NULL: the defaults; its system
 * prompt is not used: the messages carry theirs): what a server tokenizes for a request that
 * sets the template's enable_thinking. Thread-safe on a shared model. */
KES_API kes_status kes_chat_tokenize_params(const kes_model* model, const kes_chat_params* params,
                                            const kes_chat_message* messages, size_t n_messages,
                                            int add_generation_prompt, int32_t* tokens,
                                            size_t capacity, size_t* n_tokens);

/* Starts a conversation in `session`, after what its sequence holds (kes_session_reset first
 * for a fresh one), written as `params` says; a conversation already under way is dropped
 * (what it put in the sequence stays). KES_INVALID_ARGUMENT for an unknown format, or a model
 * whose template does not parse and names no built-in format. */
KES_API kes_status kes_session_chat_start(kes_session* session, const kes_chat_params* params);

/* One turn, as `kestrel chat` takes it (the same replies for the same turns at temperature 0,
 * with the same threads and KV type): the conversation is written out again with `user`
 * (user_len bytes) added, and only the text after what the sequence already holds is
 * prefilled (when the template writes earlier turns differently once a later one follows, the
 * session first goes back to where the texts part); then the assistant's reply is generated
 * as kes_generate does, calling `callback` (may be NULL) with each token until an end token,
 * max_tokens or a nonzero return. The reply stays in the conversation for the next turn; its
 * last token, which generation leaves unrun, and an end token are written by the next turn's
 * text. Without kes_session_chat_start first, a conversation with the default kes_chat_params
 * starts. Other calls that change the sequence (prefill, kes_generate, next_token, reset,
 * load_state) end the conversation: the next turn starts a new one, with the last parameters,
 * after what the sequence then holds. KES_CONTEXT_FULL when the turn's new text is longer than
 * the context (nothing of it is kept); KES_INVALID_ARGUMENT when the template refuses it;
 * KES_ABORTED (kes_session_abort) keeps what was generated before the stop. A turn allocates
 * (the template's text and the reply's tokens). */
KES_API kes_status kes_session_chat(kes_session* session, const char* user, size_t user_len,
                                    const kes_sampler_params* sampler, size_t max_tokens,
                                    kes_token_callback callback, void* user_data);

/* ---- Session state ------------------------------------------------------------------------ */

/* A session's sequence saved as bytes and restored, into the same session or another one of
 * the same model with the same context_length, kv_type and kv_sinks: generation then goes on
 * with exactly the tokens it would have given without the stop (with the same n_threads, as
 * for every comparison of runs; another thread count loads too). A
 * state holds a versioned header (format, the model's identity: the weights checksum
 * kestrel-convert recorded, the context, KV type and sinks, the position), the KV cache of the
 * positions in use only (a prefilled system prompt's state is small, whatever the context),
 * the logits for the next token and the token kes_session_next_token or kes_generate gave last
 * when it has not been run yet, and kes_session_next_token's sampler (its params and its place
 * in its random sequence, so that next_token with the same params after a load samples on as
 * the saved run would have); a checksum over all of it. It does not hold the conversation of
 * kes_session_chat, which a load ends. A state is for machines of the same
 * byte order. Saving to and loading from a buffer allocate nothing; the *_file calls allocate
 * a buffer of the state's size. */

/* The bytes kes_session_save_state writes now (they grow with the position, up to the
 * context). */
KES_API kes_status kes_session_state_size(const kes_session* session, size_t* bytes);

/* Writes the state into buf[capacity] (any alignment); *size gets its length, or the capacity
 * needed with KES_BUFFER_TOO_SMALL. The session is unchanged. */
KES_API kes_status kes_session_save_state(kes_session* session, void* buf, size_t capacity,
                                          size_t* size);

/* Replaces the session's sequence with the state in buf[size]. KES_BAD_STATE, with a message
 * saying which, for a state that is cut short, damaged (checksum), of another format version,
 * or saved from another model or by a session of another context, KV type or sinks: the
 * session is then unchanged. Clears an abort request. */
KES_API kes_status kes_session_load_state(kes_session* session, const void* buf, size_t size);

/* The same with a file: saving writes a temporary file beside `path` and renames it over
 * `path` once complete and synced, so `path` is never left half-written (the file is readable
 * by its owner only: a state holds what was said). KES_IO_ERROR when it cannot be written or
 * read. */
KES_API kes_status kes_session_save_state_file(kes_session* session, const char* path);
KES_API kes_status kes_session_load_state_file(kes_session* session, const char* path);

/* ---- Memory ------------------------------------------------------------------------------- */

/* What a session with given params costs, before one is made: the figures `kestrel inspect`
 * prints (bytes). */
typedef struct kes_memory_info {
  size_t struct_size;
  size_t context_length;      /* the session's, as kes_session_params resolves it */
  uint64_t weights_bytes;     /* the model's weights: mapped, shared by every session */
  uint64_t activations_bytes; /* the planned activations */
  uint64_t kv_cache_bytes;    /* the KV cache at that context and KV type */
  uint64_t attention_bytes;   /* decode's attention partitions, split across threads */
  uint64_t sampler_bytes;     /* the sampler's scratch */
  uint64_t arena_bytes;       /* all of the above less the weights: kes_session_arena_size */
  uint64_t total_bytes;       /* weights + arena */
} kes_memory_info;

/* Fills the fields of *info that info->struct_size covers (set it first) for a session of
 * `model` with `params` (NULL: the defaults); the same errors as kes_session_arena_size. */
KES_API kes_status kes_session_memory(const kes_model* model, const kes_session_params* params,
                                      kes_memory_info* info);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KESTREL_KESTREL_H_ */
