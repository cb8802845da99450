/* text_only_probe MODEL.kes: what a program linked with a Kestrel built without audio
 * (KESTREL_WITH_AUDIO=OFF) sees (tests/text_only_library_test.sh): text works (tokenize, give
 * the text back, generate greedily), and every transcriber call refuses with KES_UNSUPPORTED
 * and a message naming KESTREL_WITH_AUDIO, leaving no handle. A C99 program on kestrel.h alone,
 * as any consumer is. Prints "OK" and exits 0 when all of it holds. */
#include <stdio.h>
#include <string.h>

#include "kestrel/kestrel.h"

static int failures = 0;

static void check(int ok, const char* what, const char* detail) {
  if (!ok) {
    fprintf(stderr, "FAIL: %s (%s)\n", what, detail);
    ++failures;
  }
}

/* A refused transcriber call: KES_UNSUPPORTED, and kes_last_error says why. */
static void check_refused(const char* call, kes_status status) {
  char what[128];
  snprintf(what, sizeof(what), "%s gives KES_UNSUPPORTED", call);
  check(status == KES_UNSUPPORTED, what, kes_status_name(status));
  snprintf(what, sizeof(what), "%s's message names KESTREL_WITH_AUDIO=OFF", call);
  check(strstr(kes_last_error(), "built without audio (KESTREL_WITH_AUDIO=OFF)") != NULL, what,
        kes_last_error());
}

static int count_piece(void* user_data, int32_t token, const char* piece, size_t piece_len) {
  (void)token;
  (void)piece;
  (void)piece_len;
  ++*(size_t*)user_data;
  return 0;
}

int main(int argc, char** argv) {
  const char text[] = "hello world";
  kes_model* model = NULL;
  kes_session* session = NULL;
  kes_transcriber* transcriber = (kes_transcriber*)&failures; /* must come back NULL */
  kes_transcriber_params tp = kes_transcriber_default_params();
  kes_session_params sp = kes_session_default_params();
  kes_sampler_params sampler = kes_sampler_default_params();
  int32_t tokens[64];
  size_t n_tokens = 0, n_bytes = 0, generated = 0;
  char back[64];
  const char* code = "x";
  size_t code_len = 1;
  float samples[160] = {0};
  kes_status status;

  if (argc != 2) {
    fprintf(stderr, "usage: text_only_probe MODEL.kes\n");
    return 2;
  }
  status = kes_model_open(argv[1], NULL, &model);
  if (status != KES_OK) {
    fprintf(stderr, "FAIL: open %s: %s\n", argv[1], kes_last_error());
    return 1;
  }

  /* Text: tokenize, give the text back, generate. */
  status = kes_tokenize(model, text, strlen(text), 0, tokens, 64, &n_tokens);
  check(status == KES_OK && n_tokens > 0, "kes_tokenize", kes_model_last_error(model));
  status = kes_detokenize(model, tokens, n_tokens, back, sizeof(back), &n_bytes);
  check(status == KES_OK && n_bytes == strlen(text) && memcmp(back, text, n_bytes) == 0,
        "kes_detokenize gives the text back", kes_model_last_error(model));
  sp.n_threads = 1;
  status = kes_session_create(model, &sp, NULL, 0, &session);
  check(status == KES_OK, "kes_session_create", kes_last_error());
  if (status == KES_OK) {
    sampler.temperature = 0.0f;
    status = kes_generate(session, tokens, n_tokens, &sampler, 3, count_piece, &generated);
    check(status == KES_OK && generated > 0, "kes_generate", kes_session_last_error(session));
  }

  /* Speech: refused, whatever the arguments, with the defaults still filled in. */
  check(tp.struct_size == sizeof(tp) && tp.max_audio_seconds == 30,
        "kes_transcriber_default_params", "its defaults");
  check_refused("kes_transcriber_create", kes_transcriber_create(model, &tp, &transcriber));
  check(transcriber == NULL, "kes_transcriber_create leaves no handle", "not NULL");
  check_refused("kes_transcribe_pcm",
                kes_transcribe_pcm(NULL, samples, 160, 16000, NULL, NULL, NULL));
  check_refused("kes_transcribe_file", kes_transcribe_file(NULL, "speech.wav", NULL, NULL, NULL));
  check_refused("kes_transcriber_language", kes_transcriber_language(NULL, &code, &code_len));
  check(strcmp(kes_transcriber_last_error(NULL), "") == 0, "kes_transcriber_last_error(NULL)",
        "not empty");
  kes_transcriber_destroy(NULL);

  kes_session_destroy(session);
  kes_model_close(model);
  if (failures != 0) return 1;
  printf("OK: text works, transcription refused: %s\n", kes_last_error());
  return 0;
}
