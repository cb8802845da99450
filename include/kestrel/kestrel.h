/* Kestrel's C API: load a .kes model and generate text with it, from C99 or any language that
 * calls C.
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
 * Later versions add, beside these: chat turns with the model's template, saving and loading a
 * session's state, embeddings (encoder models) and transcription (Whisper); each as new calls
 * and new handles, leaving the ones below as they are. */
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
  KES_ABORTED = 8,  /* kes_session_abort stopped the call */
  KES_INTERNAL = 9  /* a bug: please report the message */
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

#define KES_TOKENIZE_ADD_SPECIAL 1u   /* BOS (and EOS) where the vocabulary asks for them */
#define KES_TOKENIZE_PARSE_SPECIAL 2u /* control tokens typed in the text ("<start_of_turn>")
                                         become their ids; without it they are plain text */

/* The ids of `text` (len bytes) into tokens[capacity]; *n_tokens gets their count, or the
 * capacity needed with KES_BUFFER_TOO_SMALL. With both flags, the ids `kestrel run` gives a
 * text generator for the prompt `text`. */
KES_API kes_status kes_tokenize(const kes_model* model, const char* text, size_t len,
                                uint32_t flags, int32_t* tokens, size_t capacity,
                                size_t* n_tokens);
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
KES_API kes_status kes_session_arena_size(const kes_model* model,
                                          const kes_session_params* params, size_t* bytes);

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
KES_API kes_status kes_session_logits(kes_session* session, const float** logits,
                                      size_t* n_vocab);

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
KES_API kes_status kes_session_next_token(kes_session* session,
                                          const kes_sampler_params* sampler, int32_t* token,
                                          char* piece_buf, size_t piece_capacity,
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

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KESTREL_KESTREL_H_ */
