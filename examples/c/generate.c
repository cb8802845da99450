/* generate MODEL.kes PROMPT [N]: greedy generation through Kestrel's C API, printed as it comes.
 *
 * A C99 program on include/kestrel/kestrel.h alone; the tests build it against the shared
 * libkestrel and check that it prints what `kestrel run MODEL -p PROMPT -n N --temp 0 -t 1`
 * prints (tests/c_api_test.cc). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kestrel/kestrel.h"

static int print_piece(void* user_data, int32_t token, const char* piece, size_t piece_len) {
  (void)user_data;
  (void)token;
  fwrite(piece, 1, piece_len, stdout);
  fflush(stdout);
  return 0; /* nonzero would stop generation here */
}

static int fail(const char* what, kes_status status, const char* message) {
  fprintf(stderr, "generate: %s: %s: %s\n", what, kes_status_name(status), message);
  return 1;
}

int main(int argc, char** argv) {
  kes_model* model = NULL;
  kes_session* session = NULL;
  kes_session_params session_params = kes_session_default_params();
  kes_sampler_params sampler = kes_sampler_default_params();
  int32_t* tokens = NULL;
  size_t n_tokens = 0;
  size_t max_tokens = 32;
  kes_status status;
  int rc = 1;

  if (argc < 3 || argc > 4) {
    fprintf(stderr, "usage: generate MODEL.kes PROMPT [N]\n");
    return 2;
  }
  if (argc == 4) max_tokens = (size_t)strtoul(argv[3], NULL, 10);

  status = kes_model_open(argv[1], NULL, &model);
  if (status != KES_OK) return fail("open", status, kes_last_error());

  /* Ask for the size first: the call reports it with KES_BUFFER_TOO_SMALL. */
  status = kes_tokenize(model, argv[2], strlen(argv[2]),
                        KES_TOKENIZE_ADD_SPECIAL | KES_TOKENIZE_PARSE_SPECIAL, NULL, 0, &n_tokens);
  if (status != KES_OK && status != KES_BUFFER_TOO_SMALL) {
    rc = fail("tokenize", status, kes_model_last_error(model));
    goto done;
  }
  tokens = (int32_t*)malloc((n_tokens ? n_tokens : 1) * sizeof(int32_t));
  if (tokens == NULL) goto done;
  status = kes_tokenize(model, argv[2], strlen(argv[2]),
                        KES_TOKENIZE_ADD_SPECIAL | KES_TOKENIZE_PARSE_SPECIAL, tokens, n_tokens,
                        &n_tokens);
  if (status != KES_OK) {
    rc = fail("tokenize", status, kes_model_last_error(model));
    goto done;
  }

  session_params.n_threads = 1;
  status = kes_session_create(model, &session_params, NULL, 0, &session);
  if (status != KES_OK) {
    rc = fail("session", status, kes_last_error());
    goto done;
  }

  sampler.temperature = 0.0f;                  /* greedy */
  fwrite(argv[2], 1, strlen(argv[2]), stdout); /* as `kestrel run` echoes its prompt */
  status = kes_generate(session, tokens, n_tokens, &sampler, max_tokens, print_piece, NULL);
  fputc('\n', stdout);
  if (status != KES_OK) {
    rc = fail("generate", status, kes_session_last_error(session));
    goto done;
  }
  rc = 0;

done:
  kes_session_destroy(session);
  kes_model_close(model);
  free(tokens);
  return rc;
}
