// Session::Rewind on the tiny Gemma 3 (window-8 sliding layers and a global one), converted with
// --prefill-tokens 4 so that its sliding-window rings are small enough to wrap inside the
// context: going back keeps the keys before the position, so the next token's logits are those
// of a session that never saw the tokens after it; a rewind the rings can no longer serve fails
// and changes nothing.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/model.h"
#include "runtime/session.h"
#include "tests/support/test_support.h"

namespace kestrel {
namespace {

using namespace test;  // NOLINT: the shared test helpers

class SessionRewindTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TinyModel tiny;
    ASSERT_EQ(MakeTinyModel(&tiny), "");
    kes_ = ScratchPath("rewind-prefill4.kes");
    const ProcessResult r = Convert({tiny.gguf, kes_, "--prefill-tokens", "4"});
    ASSERT_TRUE(r.exited && r.exit_code == 0) << Describe(r);
    Status s = Model::Open(kes_, &model_);
    ASSERT_TRUE(s.ok()) << s.message();
    for (size_t i = 0; i < 140; ++i) {
      tokens_.push_back(static_cast<int32_t>((i * 37 + 11) % model_->vocab_size()));
    }
  }
  void TearDown() override {
    model_.reset();
    std::remove(kes_.c_str());
  }

  std::unique_ptr<Session> NewSession() {
    SessionOptions options;
    options.context_length = 256;
    std::unique_ptr<Session> session;
    Status s = Session::Create(*model_, options, &session);
    EXPECT_TRUE(s.ok()) << s.message();
    return session;
  }

  std::string kes_;
  std::unique_ptr<Model> model_;
  std::vector<int32_t> tokens_;
};

TEST_F(SessionRewindTest, GoesBackToWhatTheRingsStillHold) {
  const size_t vocab = model_->vocab_size();
  std::unique_ptr<Session> fresh = NewSession(), rewound = NewSession();
  ASSERT_TRUE(fresh && rewound);
  ASSERT_TRUE(fresh->Prefill(tokens_.data(), 127).ok());
  ASSERT_TRUE(fresh->Decode(tokens_[127]).ok());
  const std::vector<float> expected(fresh->logits(), fresh->logits() + vocab);

  // Three tokens past 127 overwrote only slots of positions a query at 127 no longer sees.
  ASSERT_TRUE(rewound->Prefill(tokens_.data(), 130).ok());
  Status s = rewound->Rewind(127);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(rewound->position(), 127u);
  ASSERT_TRUE(rewound->Decode(tokens_[127]).ok());
  EXPECT_LT(LargestLogitError(rewound->logits(), expected.data(), 1, vocab), 1e-5);

  // Twelve more tokens: the window-8 rings have overwritten what position 30 sees.
  ASSERT_TRUE(rewound->Prefill(tokens_.data() + 128, 12).ok());
  s = rewound->Rewind(30);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("cannot rewind from position 140 to 30"), std::string::npos)
      << s.message();
  EXPECT_EQ(rewound->position(), 140u);
  s = rewound->Rewind(141);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("expected at most the current position 140"), std::string::npos)
      << s.message();
  EXPECT_TRUE(rewound->Rewind(140).ok());
  // Position 0 sees nothing before it: always possible, as Reset.
  EXPECT_TRUE(rewound->Rewind(0).ok());
  EXPECT_EQ(rewound->position(), 0u);
}

}  // namespace
}  // namespace kestrel
