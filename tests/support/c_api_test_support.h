// What the C API's tests (tests/c_api_*_test.cc) share: owning pointers for its handles, a tiny
// model's .kes made once per process, and opening a model that the test expects to open.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>

#include "kestrel/kestrel.h"
#include "tests/support/test_support.h"

namespace kestrel::test {

struct ModelCloser {
  void operator()(kes_model* m) const { kes_model_close(m); }
};
struct SessionDestroyer {
  void operator()(kes_session* s) const { kes_session_destroy(s); }
};
struct EncoderDestroyer {
  void operator()(kes_encoder* e) const { kes_encoder_destroy(e); }
};
struct TranscriberDestroyer {
  void operator()(kes_transcriber* t) const { kes_transcriber_destroy(t); }
};
using ModelPtr = std::unique_ptr<kes_model, ModelCloser>;
using SessionPtr = std::unique_ptr<kes_session, SessionDestroyer>;
using EncoderPtr = std::unique_ptr<kes_encoder, EncoderDestroyer>;
using TranscriberPtr = std::unique_ptr<kes_transcriber, TranscriberDestroyer>;

// A tiny model's .kes path (MakeTinyModel), made once per process and family.
inline const std::string& TinyPath(const TinyFamily& family) {
  static std::map<const TinyFamily*, std::string> paths;
  std::string& path = paths[&family];
  if (path.empty()) {
    TinyModel tiny;
    const std::string error = MakeTinyModel(&tiny, family);
    EXPECT_EQ(error, "");
    path = tiny.kes;
  }
  return path;
}

// The model at `path` with the default params; a failure fails the test (and gives null).
inline ModelPtr Open(const std::string& path) {
  kes_model* model = nullptr;
  EXPECT_EQ(kes_model_open(path.c_str(), nullptr, &model), KES_OK) << kes_last_error();
  return ModelPtr(model);
}

}  // namespace kestrel::test
