// The fixture of the suites that share the tiny model (MakeTinyModel's default family): made once
// per test executable, the first time a suite needs it, and kept to its end; a test of a suite
// whose set-up failed fails with the reason instead of running on a missing file.
// Header-only: the support library does not link GoogleTest.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "tests/support/test_support.h"

namespace kestrel::test {

class TinyModelSuite : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (tiny_ == nullptr) {
      tiny_ = new TinyModel();
      setup_error_ = new std::string(MakeTinyModel(tiny_));
    }
  }
  void SetUp() override { ASSERT_TRUE(setup_error_->empty()) << *setup_error_; }

  // Never freed: the suites of one executable share them, and leak checkers ignore what stays
  // reachable.
  static inline TinyModel* tiny_ = nullptr;
  static inline std::string* setup_error_ = nullptr;
};

}  // namespace kestrel::test
