// Byte-level BPE on a hand-made vocabulary (merge order, ties, special tokens, bytes outside
// UTF-8, decoding) and the pre-tokenizers' word splits, written from their regular expressions.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/pretokenizer.h"
#include "runtime/tokenizer.h"
#include "tests/support/byte_level_alphabet.h"

namespace kestrel {
namespace {

using test::ByteLevelCharacter;

// 256 byte tokens, then merged pieces, then two control tokens.
struct TinyBpe {
  std::vector<std::string> pieces, merges;
  std::vector<int8_t> types;
  Tokenizer tok;

  explicit TinyBpe(PreTokenizer pre) {
    for (unsigned b = 0; b < 256; ++b) pieces.push_back(ByteLevelCharacter(b));
    const std::string sp = ByteLevelCharacter(' ');  // "Ġ"
    // Rank order matters: "ab" before "bc", so "abc" -> "ab" "c"; "Ġt" "he" "Ġthe" make " the".
    for (const auto& [l, r] : std::vector<std::pair<std::string, std::string>>{
             {"a", "b"}, {"b", "c"}, {sp, "t"}, {"h", "e"}, {sp + "t", "he"}, {"a", "a"}}) {
      merges.push_back(l + " " + r);
      pieces.push_back(l + r);
    }
    types.assign(pieces.size(), 1);
    for (const char* special : {"<|im_start|>", "<|im_end|>"}) {
      pieces.push_back(special);
      types.push_back(3);
    }
    std::vector<float> scores(pieces.size(), 0.0f);
    TokenizerConfig config;
    config.algorithm = TokenizerAlgorithm::kByteLevelBpe;
    config.pre = pre;
    config.eos_id = static_cast<int32_t>(pieces.size() - 1);
    const Status s = tok.Init(
        pieces.size(), [&](size_t i) { return std::string_view(pieces[i]); }, scores.data(),
        types.data(), config, merges.size(), [&](size_t i) { return std::string_view(merges[i]); });
    EXPECT_TRUE(s.ok()) << s.message();
  }
  int32_t Id(const std::string& piece) const { return tok.Find(piece); }
  std::vector<int32_t> Encode(const std::string& text, bool special = false) const {
    std::vector<int32_t> ids;
    EXPECT_TRUE(tok.Encode(text, false, special, &ids).ok());
    return ids;
  }
};

TEST(TokenizerBpe, MergesByRankThenLeftmost) {
  TinyBpe t(PreTokenizer::kGpt2);
  EXPECT_EQ(t.Encode("abc"), (std::vector<int32_t>{t.Id("ab"), t.Id("c")}));
  EXPECT_EQ(t.Encode("bc"), (std::vector<int32_t>{t.Id("bc")}));
  // "aaa": the two "aa" pairs tie; the leftmost merges first.
  EXPECT_EQ(t.Encode("aaa"), (std::vector<int32_t>{t.Id("aa"), t.Id("a")}));
  const std::string sp = ByteLevelCharacter(' ');
  EXPECT_EQ(t.Encode("x the"), (std::vector<int32_t>{t.Id("x"), t.Id(sp + "the")}));
}

TEST(TokenizerBpe, SpecialTokensOnlyWhenParsed) {
  TinyBpe t(PreTokenizer::kGpt2);
  const int32_t start = t.Id("<|im_start|>");
  EXPECT_EQ(t.Encode("<|im_start|>ab", true), (std::vector<int32_t>{start, t.Id("ab")}));
  const std::vector<int32_t> plain = t.Encode("<|im_start|>ab", false);
  EXPECT_GT(plain.size(), 2u);
  EXPECT_EQ(t.tok.Decode(plain), "<|im_start|>ab");
  EXPECT_TRUE(t.tok.IsEndOfGeneration(t.Id("<|im_end|>")));
}

TEST(TokenizerBpe, DecodeGivesEveryByteBack) {
  TinyBpe t(PreTokenizer::kLlama3);
  std::string all;
  for (int b = 0; b < 128; ++b) all += static_cast<char>(b);  // NUL and controls included
  EXPECT_EQ(t.tok.Decode(t.Encode(all)), all);
  EXPECT_EQ(t.tok.Decode(t.Encode("the café, 日本 😀\n\t x")), "the café, 日本 😀\n\t x");
}

// The issue-35 case: SmolLM2's vocabulary has no token for the byte 0x04 ("Ą" in the byte
// alphabet) and its unknown id is <|endoftext|>. llama.cpp drops a symbol with no token (it
// looks each of its bytes up alone, and none is a token); typed text must never become a
// control token.
TEST(TokenizerBpe, CharacterWithoutTokenIsDroppedNotUnknown) {
  for (const PreTokenizer pre : {PreTokenizer::kSmolLm, PreTokenizer::kLlama3}) {
    std::vector<std::string> pieces = {"<|endoftext|>"};
    std::vector<int8_t> types = {3};
    for (unsigned b = 0; b < 256; ++b) {
      if (b == 0x04 || b == 0x00) continue;
      pieces.push_back(ByteLevelCharacter(b));
      types.push_back(1);
    }
    std::vector<float> scores(pieces.size(), 0.0f);
    TokenizerConfig config;
    config.algorithm = TokenizerAlgorithm::kByteLevelBpe;
    config.pre = pre;
    config.unk_id = config.bos_id = config.eos_id = 0;
    Tokenizer tok;
    ASSERT_TRUE(tok.Init(
                       pieces.size(), [&](size_t i) { return std::string_view(pieces[i]); },
                       scores.data(), types.data(), config)
                    .ok());
    const int32_t a = tok.Find("a"), b = tok.Find("b");
    for (const bool parse_special : {false, true}) {
      std::vector<int32_t> ids;
      ASSERT_TRUE(tok.Encode("a\x04"
                             "b",
                             false, parse_special, &ids)
                      .ok());
      EXPECT_EQ(ids, (std::vector<int32_t>{a, b})) << "parse_special=" << parse_special;
      ASSERT_TRUE(tok.Encode(std::string("\x04\x00\x04", 3), false, parse_special, &ids).ok());
      EXPECT_EQ(ids, std::vector<int32_t>{}) << "parse_special=" << parse_special;
    }
  }
}

// As llama.cpp reads text before pre-tokenizing (unicode_cpts_from_utf8): a byte that starts no
// UTF-8 sequence becomes U+FFFD, an overlong form its code point, a surrogate encoded in UTF-8
// stays as it is.
TEST(TokenizerBpe, InvalidUtf8ReadsAsLlamaCppReadsIt) {
  TinyBpe t(PreTokenizer::kSmolLm);
  const auto bytes = [&](std::string_view s) {
    std::vector<int32_t> ids;
    for (unsigned char c : s) ids.push_back(t.Id(ByteLevelCharacter(c)));
    return ids;
  };
  EXPECT_EQ(t.Encode("\xFF"), bytes("\xEF\xBF\xBD"));
  EXPECT_EQ(t.Encode("\x80\x80"), bytes("\xEF\xBF\xBD\xEF\xBF\xBD"));
  EXPECT_EQ(t.Encode("\xC3"), bytes("\xEF\xBF\xBD"));  // truncated at the end
  EXPECT_EQ(t.Encode("\xC1\x81"), bytes("A"));         // overlong 'A'
  EXPECT_EQ(t.Encode(std::string("\xC0\x80", 2)), bytes(std::string(1, '\0')));
  EXPECT_EQ(t.Encode("\xED\xA0\x80"), bytes("\xED\xA0\x80"));  // lone surrogate U+D800
  EXPECT_EQ(t.tok.Decode(t.Encode("x\xFEy")), "x\xEF\xBF\xBDy");
}

TEST(TokenizerBpe, InitRejectsBadMerges) {
  std::vector<std::string> pieces = {"a", "b"};
  std::vector<int8_t> types = {1, 1};
  std::vector<float> scores = {0, 0};
  TokenizerConfig config;
  config.algorithm = TokenizerAlgorithm::kByteLevelBpe;
  for (const std::string merge : {"a b", "ab", "a c"}) {
    Tokenizer tok;
    const Status s = tok.Init(
        2, [&](size_t i) { return std::string_view(pieces[i]); }, scores.data(), types.data(),
        config, 1, [&](size_t) { return std::string_view(merge); });
    ASSERT_FALSE(s.ok()) << merge;
    EXPECT_NE(s.message().find("merge 0"), std::string::npos) << s.message();
  }
}

std::vector<std::string> Words(PreTokenizer pre, std::string_view text) {
  std::vector<std::string_view> views;
  PreTokenize(pre, text, &views);
  return std::vector<std::string>(views.begin(), views.end());
}

using W = std::vector<std::string>;

TEST(PreTokenizer, Gpt2) {
  EXPECT_EQ(Words(PreTokenizer::kGpt2, "Hello world's  end 123 ok!?"),
            (W{"Hello", " world", "'s", " ", " end", " 123", " ok", "!?"}));
  EXPECT_EQ(Words(PreTokenizer::kGpt2, "a\n\nb  "), (W{"a", "\n", "\n", "b", "  "}));
  EXPECT_EQ(Words(PreTokenizer::kGpt2, "日本語 текст"), (W{"日本語", " текст"}));
}

TEST(PreTokenizer, SmolLmSplitsEveryDigit) {
  EXPECT_EQ(Words(PreTokenizer::kSmolLm, "x 2024 y"), (W{"x", " ", "2", "0", "2", "4", " y"}));
}

TEST(PreTokenizer, Llama3AndQwen2) {
  EXPECT_EQ(Words(PreTokenizer::kLlama3, "I'M here: 12345 (ok)\n\n  x"),
            (W{"I", "'M", " here", ":", " ", "123", "45", " (", "ok", ")\n\n", " ", " x"}));
  EXPECT_EQ(Words(PreTokenizer::kQwen2, "v12"), (W{"v", "1", "2"}));
  EXPECT_EQ(Words(PreTokenizer::kLlama3, "a \n b"), (W{"a", " \n", " b"}));
}

// GPT-4o's: a word ends where lower case turns upper, an upper-case run keeps one lower-case
// tail, contractions stay on their word in any case, '/' stays after punctuation.
TEST(PreTokenizer, Gpt4oSplitsAtCaseChanges) {
  EXPECT_EQ(Words(PreTokenizer::kGpt4o, "HelloWorld HTTPServer don'T"),
            (W{"Hello", "World", " HTTPServer", " don'T"}));
  EXPECT_EQ(Words(PreTokenizer::kGpt4o, "12345 a/b//\n"), (W{"123", "45", " a", "/b", "//\n"}));
}

TEST(PreTokenizer, SanitizeUtf8ReadsBytesAsLlamaCppDoes) {
  const std::string fffd = "\xEF\xBF\xBD";
  EXPECT_EQ(SanitizeUtf8("ok \xC3\xA9 \xF0\x9F\x98\x80"), "ok \xC3\xA9 \xF0\x9F\x98\x80");
  EXPECT_EQ(SanitizeUtf8("\xF8\x88\x80\x80\x80"), fffd + fffd + fffd + fffd + fffd);
  EXPECT_EQ(SanitizeUtf8("\xE3\x81"
                         "a"),
            fffd + fffd + "a");                             // truncated: each byte alone
  EXPECT_EQ(SanitizeUtf8("\xE0\x80\xAF"), "/");             // overlong
  EXPECT_EQ(SanitizeUtf8("\xED\xBF\xBF"), "\xED\xBF\xBF");  // lone low surrogate kept
  // Above U+10FFFF llama.cpp throws; one U+FFFD for the whole sequence here.
  EXPECT_EQ(SanitizeUtf8("a\xF4\x90\x80\x80"
                         "b"),
            "a" + fffd + "b");
  EXPECT_EQ(SanitizeUtf8(std::string("\0", 1)), std::string("\0", 1));
}

TEST(PreTokenizer, NamesAndErrors) {
  PreTokenizer pre;
  ASSERT_TRUE(ParsePreTokenizer("llama-bpe", &pre).ok());
  EXPECT_EQ(pre, PreTokenizer::kLlama3);
  const Status s = ParsePreTokenizer("deepseek-coder", &pre);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("'deepseek-coder'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("smollm"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace kestrel
