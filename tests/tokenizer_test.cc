// Tokenizer tests: rules on tiny hand-made vocabularies, then Gemma 3's real vocabulary against
// an independent oracle (tests/py/tokenize_ref.py: Google's sentencepiece loaded with the same
// vocabulary), compared id for id.
#include "runtime/tokenizer.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "converters/gguf/gguf_file.h"
#include "tools/printable.h"

namespace kestrel {
namespace {

constexpr int8_t kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kByte = 6;

struct TinyVocab {
  std::vector<std::string> pieces;
  std::vector<float> scores;
  std::vector<int8_t> types;

  int32_t Add(std::string piece, float score = 0.0f, int8_t type = kNormal) {
    pieces.push_back(std::move(piece));
    scores.push_back(score);
    types.push_back(type);
    return static_cast<int32_t>(pieces.size() - 1);
  }
  void AddAllBytes() {
    for (int b = 0; b < 256; ++b) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "<0x%02X>", b);
      Add(buf, 0.0f, kByte);
    }
  }
  Status Init(Tokenizer* tok, const TokenizerConfig& config = {}) const {
    return tok->Init(
        pieces.size(), [this](size_t i) { return std::string_view(pieces[i]); }, scores.data(),
        types.data(), config);
  }
};

std::vector<int32_t> Encode(const Tokenizer& tok, std::string_view text, bool add_special = false,
                            bool parse_special = false) {
  std::vector<int32_t> ids;
  const Status s = tok.Encode(text, add_special, parse_special, &ids);
  EXPECT_TRUE(s.ok()) << s.message();
  return ids;
}

std::string Pieces(const Tokenizer& tok, const std::vector<int32_t>& ids) {
  std::string out;
  for (int32_t id : ids) {
    out += out.empty() ? "[" : " ";
    out += std::to_string(id) + ":" + std::string(tok.Piece(id));
  }
  return out + "]";
}

using Ids = std::vector<int32_t>;

// --- merges --------------------------------------------------------------------------------

TEST(TokenizerTiny, MergesHighestScoreFirst) {
  TinyVocab v;
  const int32_t a = v.Add("a"), b = v.Add("b"), c = v.Add("c"), d = v.Add("d");
  const int32_t ab = v.Add("ab", -2.0f), bc = v.Add("bc", -1.0f), cd = v.Add("cd", -3.0f);
  Tokenizer tok;
  ASSERT_TRUE(v.Init(&tok).ok());
  EXPECT_EQ(Encode(tok, "abc"), (Ids{a, bc}));  // bc outscores ab; "abc" is no token
  EXPECT_EQ(Encode(tok, "bcd"), (Ids{bc, d}));
  EXPECT_EQ(Encode(tok, "abcd"), (Ids{a, bc, d}));  // once bc is taken, ab and cd are gone
  EXPECT_EQ(Encode(tok, "cdab"), (Ids{cd, ab}));
  EXPECT_EQ(Encode(tok, "dcba"), (Ids{d, c, b, a}));
}

TEST(TokenizerTiny, MergesChainIntoLongerPieces) {
  TinyVocab v;
  const int32_t a = v.Add("a"), b = v.Add("b");
  const int32_t ab = v.Add("ab", -1.0f), abab = v.Add("abab", -5.0f), aba = v.Add("aba", -9.0f);
  Tokenizer tok;
  ASSERT_TRUE(v.Init(&tok).ok());
  EXPECT_EQ(Encode(tok, "abab"), (Ids{abab}));
  EXPECT_EQ(Encode(tok, "ababa"), (Ids{abab, a}));  // ab,ab,a -> abab,a (aba never formed)
  EXPECT_EQ(Encode(tok, "ba"), (Ids{b, a}));
  EXPECT_EQ(Encode(tok, "aba"), (Ids{aba}));  // ab first, then ab+a is a token too
  EXPECT_EQ(Encode(tok, "bab"), (Ids{b, ab}));
}

TEST(TokenizerTiny, EqualScoresMergeLeftmostFirst) {
  TinyVocab v;
  const int32_t a = v.Add("a");
  const int32_t aa = v.Add("aa", -1.0f);
  const int32_t x = v.Add("x"), y = v.Add("y"), z = v.Add("z");
  const int32_t xy = v.Add("xy", -4.0f), yz = v.Add("yz", -4.0f);
  Tokenizer tok;
  ASSERT_TRUE(v.Init(&tok).ok());
  EXPECT_EQ(Encode(tok, "aaa"), (Ids{aa, a}));
  EXPECT_EQ(Encode(tok, "aaaaa"), (Ids{aa, aa, a}));
  EXPECT_EQ(Encode(tok, "xyz"), (Ids{xy, z}));
  EXPECT_EQ(Encode(tok, "zyz"), (Ids{z, yz}));
  (void)x;
  (void)y;
}

TEST(TokenizerTiny, SpacesBecomeU2581AndDecodeBack) {
  TinyVocab v;
  const int32_t h = v.Add("h"), i = v.Add("i"), sp = v.Add("\xE2\x96\x81");
  const int32_t sp_h = v.Add("\xE2\x96\x81h", -1.0f), hi = v.Add("hi", -2.0f);
  const int32_t sp_hi = v.Add("\xE2\x96\x81hi", -3.0f);
  Tokenizer tok;
  ASSERT_TRUE(v.Init(&tok).ok());
  EXPECT_EQ(Encode(tok, "hi hi"), (Ids{hi, sp_hi}));
  EXPECT_EQ(Encode(tok, "  h"), (Ids{sp, sp_h}));
  EXPECT_EQ(Encode(tok, "i "), (Ids{i, sp}));
  EXPECT_EQ(tok.Decode(Encode(tok, " hi  h i ")), " hi  h i ");
  EXPECT_EQ(tok.TokenText(sp_hi), " hi");
  EXPECT_EQ(tok.Piece(sp_hi), "\xE2\x96\x81hi");
  (void)h;
}

TEST(TokenizerTiny, AddSpacePrefixAtStartAndAfterSpecialTokens) {
  TinyVocab v;
  const int32_t bos = v.Add("<s>", 0.0f, kControl), eos = v.Add("</s>", 0.0f, kControl);
  const int32_t h = v.Add("h"), sp = v.Add("\xE2\x96\x81"), sp_h = v.Add("\xE2\x96\x81h", -1.0f);
  TokenizerConfig config;
  config.bos_id = bos;
  config.eos_id = eos;
  config.add_bos = true;
  config.add_eos = true;
  config.add_space_prefix = true;
  Tokenizer tok;
  ASSERT_TRUE(v.Init(&tok, config).ok());
  EXPECT_EQ(Encode(tok, "h"), (Ids{sp_h}));
  EXPECT_EQ(Encode(tok, "h", /*add_special=*/true), (Ids{bos, sp_h, eos}));
  EXPECT_EQ(Encode(tok, "h</s>h", false, /*parse_special=*/true), (Ids{sp_h, eos, sp_h}));
  EXPECT_EQ(Encode(tok, ""), Ids{});
  EXPECT_EQ(Encode(tok, "", true), (Ids{bos, eos}));
  EXPECT_EQ(tok.Decode(Encode(tok, "h h", true)), "h h");  // the added space is dropped again
  EXPECT_EQ(tok.Decode(Encode(tok, " h")), " h");
  (void)h;
  (void)sp;
}

// --- characters missing from the vocabulary --------------------------------------------------

TEST(TokenizerTiny, ByteFallbackForMissingCharacters) {
  TinyVocab v;
  const int32_t a = v.Add("a"), b = v.Add("b");
  const int32_t unk = v.Add("<unk>", 0.0f, kUnknown);
  const int32_t byte0 = static_cast<int32_t>(v.pieces.size());
  v.AddAllBytes();
  TokenizerConfig config;
  config.unk_id = unk;
  Tokenizer tok;
  ASSERT_TRUE(v.Init(&tok, config).ok());
  // U+00E9 is C3 A9; U+1F600 is F0 9F 98 80.
  EXPECT_EQ(Encode(tok,
                   "a\xC3\xA9"
                   "b"),
            (Ids{a, byte0 + 0xC3, byte0 + 0xA9, b}));
  EXPECT_EQ(Encode(tok, "\xF0\x9F\x98\x80"),
            (Ids{byte0 + 0xF0, byte0 + 0x9F, byte0 + 0x98, byte0 + 0x80}));
  // Malformed UTF-8 still encodes and decodes back to the same bytes. As in llama.cpp a lead
  // byte decides the symbol length, so 0xFF swallows the next three bytes, 'b' included.
  const std::string bad =
      "a\xFF\xE3\x81"
      "b\x80";
  EXPECT_EQ(Encode(tok, bad),
            (Ids{a, byte0 + 0xFF, byte0 + 0xE3, byte0 + 0x81, byte0 + 'b', byte0 + 0x80}));
  EXPECT_EQ(Encode(tok, "b\xC3"), (Ids{b, byte0 + 0xC3}));  // truncated at the end
  EXPECT_EQ(tok.Decode(Encode(tok, bad)), bad);
  EXPECT_EQ(tok.Decode(Encode(tok, "\xC3\xA9t\xC3\xA9")), "\xC3\xA9t\xC3\xA9");
  for (int byte : {0x00, 0x41, 0xC3, 0xFF}) {
    ASSERT_EQ(tok.TokenText(byte0 + byte).size(), 1u);
    EXPECT_EQ(static_cast<unsigned char>(tok.TokenText(byte0 + byte)[0]), byte);
  }
}

TEST(TokenizerTiny, UnknownTokenWithoutByteTokens) {
  TinyVocab v;
  const int32_t a = v.Add("a"), b = v.Add("b");
  const int32_t unk = v.Add("<unk>", 0.0f, kUnknown);
  TokenizerConfig config;
  config.unk_id = unk;
  Tokenizer tok;
  ASSERT_TRUE(v.Init(&tok, config).ok());
  EXPECT_EQ(Encode(tok,
                   "a\xC3\xA9\xC3\xA9"
                   "b"),
            (Ids{a, unk, unk, b}));  // one per character
  EXPECT_EQ(tok.TokenText(unk), "");

  Tokenizer no_unk;
  ASSERT_TRUE(v.Init(&no_unk).ok());
  std::vector<int32_t> ids = {42};
  const Status s = no_unk.Encode("a\xC3\xA9", false, false, &ids);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("neither its byte tokens nor an unknown token"), std::string::npos)
      << s.message();
  EXPECT_EQ(ids, Ids{42});  // left alone on error
}

// llama.cpp's byte_to_token: a byte without a <0xAB> token falls back to the piece that is that
// byte alone; only where neither exists (llama.cpp aborts there) does the unknown token stand
// for the character.
TEST(TokenizerTiny, ByteFallbackToSingleBytePieces) {
  TinyVocab v;
  const int32_t x = v.Add("x"), a = v.Add("a");
  const int32_t unk = v.Add("<unk>", 0.0f, kUnknown);
  const int32_t ff = v.Add("<0xFF>", 0.0f, kByte), e9 = v.Add("<0xE9>", 0.0f, kByte);
  TokenizerConfig config;
  config.unk_id = unk;
  Tokenizer tok;
  ASSERT_TRUE(v.Init(&tok, config).ok());
  // 0xFF starts a 4-byte symbol: "\xFFa\xE9" is one symbol of three bytes, not a token.
  EXPECT_EQ(Encode(tok,
                   "x\xFF"
                   "a\xE9"),
            (Ids{x, ff, a, e9}));
  EXPECT_EQ(Encode(tok, "\xC3\xA9"), (Ids{unk}));  // no <0xC3> and no "\xC3" piece
}

// --- special tokens ---------------------------------------------------------------------------

TEST(TokenizerTiny, ControlTokensSplitOnlyWithParseSpecial) {
  TinyVocab v;
  const int32_t turn = v.Add("<start_of_turn>", 0.0f, kControl);
  const int32_t end = v.Add("<end_of_turn>", 0.0f, kControl);
  const int32_t u = v.Add("u"), nl = v.Add("\n", 0.0f, kUserDefined);
  v.AddAllBytes();
  Tokenizer tok;
  ASSERT_TRUE(v.Init(&tok).ok());
  const std::string text = "<start_of_turn>u\nu<end_of_turn>\n";
  EXPECT_EQ(Encode(tok, text, false, true), (Ids{turn, u, nl, u, end, nl}));
  const Ids plain = Encode(tok, text, false, false);
  for (int32_t id : plain) EXPECT_NE(tok.Type(id), TokenType::kControl) << Pieces(tok, plain);
  EXPECT_EQ(tok.Decode(plain), text);                               // typed text stays text
  EXPECT_EQ(tok.Decode(Encode(tok, text, false, true)), "u\nu\n");  // control tokens print nothing
  EXPECT_EQ(tok.TokenText(turn), "");
}

TEST(TokenizerTiny, UserDefinedTokensAlwaysSplitAndNeverMergeAcross) {
  TinyVocab v;
  const int32_t a = v.Add("a"), tag = v.Add("<b>", 0.0f, kUserDefined);
  const int32_t spaces = v.Add("  ", 0.0f, kUserDefined);  // Gemma 3 stores space runs raw
  const int32_t sp = v.Add("\xE2\x96\x81"), sp_a = v.Add(
                                                "\xE2\x96\x81"
                                                "a",
                                                -1.0f);
  const int32_t a_lt = v.Add("a<", -0.5f);
  v.AddAllBytes();
  Tokenizer tok;
  ASSERT_TRUE(v.Init(&tok).ok());
  EXPECT_EQ(Encode(tok, "a<b>a"), (Ids{a, tag, a}));  // "a<" would merge if <b> were not split
  EXPECT_EQ(Encode(tok, "a  a"), (Ids{a, spaces, a}));
  EXPECT_EQ(Encode(tok, "a   a"), (Ids{a, spaces, sp_a}));
  EXPECT_EQ(Encode(tok, "a "), (Ids{a, sp}));
  EXPECT_EQ(tok.TokenText(spaces), "  ");
  EXPECT_EQ(tok.Decode(Encode(tok, "a<b>  a a<")), "a<b>  a a<");
  (void)a_lt;
}

TEST(TokenizerTiny, LongestSpecialTokenClaimsTextFirst) {
  // llama.cpp tries special tokens longest first over the whole text, not leftmost-longest:
  // in "wxyz", "xyz" (3 bytes) wins over "wx" (2 bytes) although "wx" starts earlier.
  TinyVocab v;
  const int32_t w = v.Add("w"), y = v.Add("y"), z = v.Add("z");
  const int32_t wx = v.Add("wx", 0.0f, kUserDefined), xyz = v.Add("xyz", 0.0f, kUserDefined);
  const int32_t nl1 = v.Add("\n", 0.0f, kUserDefined), nl2 = v.Add("\n\n", 0.0f, kUserDefined);
  const int32_t nl3 = v.Add("\n\n\n", 0.0f, kUserDefined);
  Tokenizer tok;
  ASSERT_TRUE(v.Init(&tok).ok());
  EXPECT_EQ(Encode(tok, "wxyz"), (Ids{w, xyz}));
  EXPECT_EQ(Encode(tok, "wxwxyzwx"), (Ids{wx, w, xyz, wx}));
  EXPECT_EQ(Encode(tok, "\n\n\n\n\n\n\n\n"), (Ids{nl3, nl3, nl2}));
  EXPECT_EQ(Encode(tok, "y\n\n\n\nz"), (Ids{y, nl3, nl1, z}));
}

TEST(TokenizerTiny, ControlPiecesAreNeverMergeResults) {
  TinyVocab v;
  const int32_t eos = v.Add("<eos>", 0.0f, kControl);
  const int32_t lt = v.Add("<");
  for (const char* c : {"e", "o", "s", ">"}) v.Add(c);
  // "<eos>" = "<" + "eos>" would be the last merge: eo, then eos, then eos>.
  v.Add("eo", -2.0f);
  v.Add("os", -3.0f);
  v.Add("eos", -1.5f);
  const int32_t eos_gt = v.Add("eos>", -1.0f);
  Tokenizer tok;
  ASSERT_TRUE(v.Init(&tok).ok());
  EXPECT_EQ(Encode(tok, "<eos>"), (Ids{lt, eos_gt}));
  EXPECT_EQ(Encode(tok, "<eos>", false, true), (Ids{eos}));
}

// --- add_special, text of tokens, accessors -----------------------------------------------

TEST(TokenizerTiny, BosEosAndEndOfGeneration) {
  TinyVocab v;
  const int32_t pad = v.Add("<pad>", 0.0f, kControl), eos = v.Add("<eos>", 0.0f, kControl);
  const int32_t bos = v.Add("<bos>", 0.0f, kControl), eot = v.Add("<eot>", 0.0f, kControl);
  const int32_t a = v.Add("a");
  TokenizerConfig config;
  config.bos_id = bos;
  config.eos_id = eos;
  config.eot_id = eot;
  config.pad_id = pad;
  config.add_bos = true;
  Tokenizer tok;
  ASSERT_TRUE(v.Init(&tok, config).ok());
  EXPECT_EQ(Encode(tok, "a", true), (Ids{bos, a}));
  EXPECT_EQ(Encode(tok, "a", false), (Ids{a}));
  EXPECT_EQ(Encode(tok, "", true), (Ids{bos}));
  EXPECT_TRUE(tok.IsEndOfGeneration(eos));
  EXPECT_TRUE(tok.IsEndOfGeneration(eot));
  EXPECT_FALSE(tok.IsEndOfGeneration(bos));
  EXPECT_FALSE(tok.IsEndOfGeneration(-1));
  EXPECT_EQ(tok.config().bos_id, bos);
  EXPECT_EQ(tok.vocab_size(), 5u);
  EXPECT_EQ(tok.Decode({bos, a, eot, a, eos}), "aa");
}

TEST(TokenizerTiny, OutOfRangeIdsGiveEmptyText) {
  TinyVocab v;
  const int32_t a = v.Add("a", -7.5f);
  Tokenizer tok;
  ASSERT_TRUE(v.Init(&tok).ok());
  EXPECT_EQ(tok.TokenText(-1), "");
  EXPECT_EQ(tok.TokenText(1), "");
  EXPECT_EQ(tok.TokenText(INT32_MAX), "");
  EXPECT_EQ(tok.Piece(-5), "");
  EXPECT_EQ(tok.Piece(1), "");
  EXPECT_EQ(tok.Decode({-3, a, 99, a}), "aa");
  EXPECT_EQ(tok.Score(a), -7.5f);
  EXPECT_EQ(tok.Find("a"), a);
  EXPECT_EQ(tok.Find("b"), -1);
  EXPECT_EQ(tok.Find(""), -1);
}

TEST(TokenizerTiny, UndefinedTypeActsAsNormal) {
  TinyVocab v;
  const int32_t a = v.Add("a", 0.0f, 0), b = v.Add("b", 0.0f, 0), ab = v.Add("ab", -1.0f, 0);
  Tokenizer tok;
  ASSERT_TRUE(v.Init(&tok).ok());
  EXPECT_EQ(tok.Type(a), TokenType::kUndefined);
  EXPECT_EQ(Encode(tok, "abb"), (Ids{ab, b}));
  EXPECT_EQ(tok.Decode({ab, b}), "abb");
}

TEST(TokenizerTiny, RepeatedPieceResolvesToLowestId) {
  TinyVocab v;
  const int32_t first = v.Add("a", -1.0f);
  v.Add("a", 0.0f);
  Tokenizer tok;
  ASSERT_TRUE(v.Init(&tok).ok());
  EXPECT_EQ(tok.Find("a"), first);
  EXPECT_EQ(Encode(tok, "aa"), (Ids{first, first}));
}

TEST(TokenizerTiny, CopiesAreIndependentOfTheOriginal) {
  TinyVocab v;
  const int32_t ab = v.Add("ab", -1.0f), a = v.Add("a"), b = v.Add("b");
  v.Add("<t>", 0.0f, kUserDefined);
  auto original = std::make_unique<Tokenizer>();
  ASSERT_TRUE(v.Init(original.get()).ok());
  const Tokenizer copy = *original;
  Tokenizer moved = std::move(*original);
  original.reset();
  EXPECT_EQ(Encode(copy, "aba<t>"), (Ids{ab, a, 3}));
  EXPECT_EQ(Encode(moved, "bab"), (Ids{b, ab}));
}

// --- Init validation --------------------------------------------------------------------------

Status InitWith(TinyVocab v, TokenizerConfig config = {}) {
  Tokenizer tok;
  return v.Init(&tok, config);
}

void ExpectInitError(const Status& s, const std::string& needle) {
  ASSERT_FALSE(s.ok()) << "expected an error mentioning '" << needle << "'";
  EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
}

TEST(TokenizerTiny, InitRejectsBadVocabularies) {
  TinyVocab good;
  good.Add("a");
  good.Add("<0x41>", 0.0f, kByte);
  ASSERT_TRUE(InitWith(good).ok());

  Tokenizer tok;
  float score = 0.0f;
  int8_t type = kNormal;
  ExpectInitError(tok.Init(0, [](size_t) { return std::string_view("a"); }, &score, &type, {}),
                  "at least 1 token");
  ExpectInitError(tok.Init(1, nullptr, &score, &type, {}), "required");

  TokenizerConfig config;
  config.bos_id = 2;
  ExpectInitError(InitWith(good, config), "bos id expected in [-1, 2), found 2");
  config = {};
  config.eot_id = -2;
  ExpectInitError(InitWith(good, config), "eot id");
  config = {};
  config.add_bos = true;
  ExpectInitError(InitWith(good, config), "add_bos is set but there is no bos id");
  config = {};
  config.add_eos = true;
  ExpectInitError(InitWith(good, config), "add_eos");

  TinyVocab bad = good;
  bad.Add("<0xZZ>", 0.0f, kByte);
  ExpectInitError(InitWith(bad), "token 2 is a byte token");
  bad = good;
  bad.Add("<0x4>", 0.0f, kByte);
  ExpectInitError(InitWith(bad), "byte token");
  bad = good;
  bad.Add("x", 0.0f, 7);
  ExpectInitError(InitWith(bad), "token 2 type expected 0..6, found 7");
  bad = good;
  bad.Add("x", 0.0f, -1);
  ExpectInitError(InitWith(bad), "type expected 0..6, found -1");
  bad = good;
  bad.Add("x", std::nanf(""));
  ExpectInitError(InitWith(bad), "token 2 score is NaN");
  bad = good;
  bad.Add("\xC3");
  ExpectInitError(InitWith(bad), "token 2 piece is not valid UTF-8");
  bad = good;
  bad.Add("\xC0\x80");  // overlong NUL
  ExpectInitError(InitWith(bad), "not valid UTF-8");
  bad = good;
  bad.Add("\xED\xA0\x80");  // surrogate
  ExpectInitError(InitWith(bad), "not valid UTF-8");
}

TEST(TokenizerTiny, FailedInitKeepsThePreviousVocabulary) {
  TinyVocab good;
  const int32_t ab = good.Add("ab", -1.0f);
  good.Add("a");
  good.Add("b");
  Tokenizer tok;
  std::vector<int32_t> ids;
  EXPECT_FALSE(tok.Encode("ab", false, false, &ids).ok());  // before any Init
  ASSERT_TRUE(good.Init(&tok).ok());
  TinyVocab bad = good;
  bad.Add("x", 0.0f, 9);
  EXPECT_FALSE(bad.Init(&tok).ok());
  EXPECT_EQ(tok.vocab_size(), 3u);
  EXPECT_EQ(Encode(tok, "ab"), (Ids{ab}));
}

// --- Gemma 3's vocabulary against sentencepiece ---------------------------------------------

struct OracleCase {
  std::string text;
  bool parse_special;
};

// Strings the real vocabulary is checked on. Each is encoded with parse_special = false, and
// the ones marked true also with parse_special = true.
std::vector<std::pair<std::string, bool>> RealVocabStrings() {
  return {
      {"", false},
      {"Hello world", false},
      {"Hello, world! How are you today?", false},
      {"The quick brown fox jumps over the lazy dog.", false},
      {" leading space", false},
      {"trailing space ", false},
      {"  two leading spaces", false},
      {"multiple   spaces    between     words", false},
      {"a                                        b", false},  // 40 spaces: longer than any run
      {" ", false},
      {"     ", false},
      {"tab\tseparated\tvalues", false},
      {"\t\tdouble tab indent", false},
      {"line one\nline two", false},
      {"paragraph\n\n\nnext", false},
      {"\n", false},
      {"\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n", false},
      {"mixed \t \n whitespace \r\n windows line", false},
      {"Caf\xC3\xA9 na\xC3\xAFve r\xC3\xA9sum\xC3\xA9 \xC3\xBC"
       "ber stra\xC3\x9F"
       "e",
       false},
      {"\xC3\x85ngstr\xC3\xB6m and \xC3\x89mile Zola, se\xC3\xB1or", false},
      {"\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\xE3\x81\xAE\xE3\x83\x86\xE3\x82\xAD\xE3\x82\xB9\xE3"
       "\x83\x88\xE3\x81\xA7\xE3\x81\x99\xE3\x80\x82",
       false},  // Japanese
      {"\xE4\xBD\xA0\xE5\xA5\xBD\xEF\xBC\x8C\xE4\xB8\x96\xE7\x95\x8C\xEF\xBC\x81",
       false},  // 你好，世界！
      {"\xED\x95\x9C\xEA\xB5\xAD\xEC\x96\xB4 \xED\x85\x8D\xEC\x8A\xA4\xED\x8A\xB8",
       false},  // Korean
      {"\xD9\x85\xD8\xB1\xD8\xAD\xD8\xA8\xD8\xA7 \xD8\xA8\xD8\xA7\xD9\x84\xD8\xB9\xD8\xA7\xD9\x84"
       "\xD9\x85",
       false},  // Arabic
      {"\xE0\xA4\xA8\xE0\xA4\xAE\xE0\xA4\xB8\xE0\xA5\x8D\xE0\xA4\xA4\xE0\xA5\x87 "
       "\xE0\xA4\xA6\xE0\xA5\x81\xE0\xA4\xA8\xE0\xA4\xBF\xE0\xA4\xAF\xE0\xA4\xBE",
       false},  // Devanagari
      {"\xD0\x9F\xD1\x80\xD0\xB8\xD0\xB2\xD0\xB5\xD1\x82, \xD0\xBC\xD0\xB8\xD1\x80!", false},
      {"\xCE\x93\xCE\xB5\xCE\xB9\xCE\xAC \xCF\x83\xCE\xBF\xCF\x85 \xCE\xBA\xCF\x8C\xCF\x83\xCE\xBC"
       "\xCE\xB5",
       false},                                                                       // Greek
      {"\xD7\xA9\xD7\x9C\xD7\x95\xD7\x9D \xD7\xA2\xD7\x95\xD7\x9C\xD7\x9D", false},  // Hebrew
      {"\xE0\xB8\xAA\xE0\xB8\xA7\xE0\xB8\xB1\xE0\xB8\xAA\xE0\xB8\x94\xE0\xB8\xB5", false},  // Thai
      {"emoji \xF0\x9F\x98\x80\xF0\x9F\x98\x82\xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD", false},
      {"family \xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x91\xA7\xE2\x80\x8D"
       "\xF0\x9F\x91\xA6 ZWJ",
       false},
      {"flags \xF0\x9F\x87\xAB\xF0\x9F\x87\xB7\xF0\x9F\x87\xAF\xF0\x9F\x87\xB5\xF0\x9F\x87\xBA"
       "\xF0\x9F\x87\xB8",
       false},
      {"\xE2\x9D\xA4\xEF\xB8\x8F heart with variation selector", false},
      {"combining e\xCC\x81 vs \xC3\xA9 and a\xCC\x8A", false},
      {"hieroglyphs \xF0\x93\x80\x80\xF0\x93\x80\x81\xF0\x93\x80\x82", false},  // byte fallback
      {"cuneiform \xF0\x92\x80\x80 linear b \xF0\x90\x80\x80", false},
      {"private use \xEE\x80\x80\xEF\xA3\xBF and \xF4\x8F\xBF\xBD", false},
      {"math \xE2\x88\x80x\xE2\x88\x88\xE2\x84\x9D: x\xC2\xB2 \xE2\x89\xA5 0, \xE2\x88\x91 "
       "\xE2\x88\xAB \xE2\x88\x9E",
       false},
      {"control chars \x01\x02\x7F and NUL-free", false},
      {"int main() {\n  std::vector<int> v{1, 2, 3};\n  for (auto& x : v) x *= 2;\n  return "
       "0;\n}\n",
       false},
      {"def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n", false},
      {"\tif (x) {\n\t\ty = x->next;\n\t}\n", false},
      {"SELECT id, name FROM users WHERE age >= 21 ORDER BY name;", false},
      {"{\"key\": [1, 2.5, -3e10, true, null], \"nested\": {\"a\": \"b\"}}", false},
      {"3.14159265358979 1,000,000 0x1F 1e-9 42% $19.99 \xE2\x82\xAC"
       "5",
       false},
      {"1234567890 12345678901234567890", false},
      {"https://www.example.com/path/to/page?query=1&lang=en#section-2", false},
      {"email: someone@example.org, phone +1 (555) 123-4567", false},
      {"# Heading\n\n- item **bold** and _italic_\n- `code` [link](http://x.y)\n\n> quote\n",
       false},
      {"| a | b |\n|---|---|\n| 1 | 2 |", false},
      {"<table><tr><td>cell</td></tr></table> <b>bold</b> <i>it</i>", true},
      {"<start_of_turn>user\nWhat is 2+2?<end_of_turn>\n<start_of_turn>model\n", true},
      {"<bos><start_of_turn>user\nhi<end_of_turn>", true},
      {"text <eos> more <pad> and <unk> and <mask> <unused0><unused6241>", true},
      {"nested <start_of_<start_of_turn>turn> broken", true},
      {"<start_of_image> [multimodal] <end_of_image>", true},
      {"<start_of_turn>", true},
      {"ALL CAPS SHOUTING AND MiXeD cAsE", false},
      {"hyphen-ated words, don't stop; it's (really) \"quoted\" 'single'", false},
      {"repeated aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa letters", false},
      {"...!!!?\?\?---___===+++***", false},
      {"\xE2\x80\x9C"
       "curly quotes\xE2\x80\x9D \xE2\x80\x94 em dash \xE2\x80\xA6 ellipsis",
       false},
      {"no\xC2\xA0"
       "break\xE2\x80\x83"
       "em\xE3\x80\x80ideographic spaces",
       false},
      {"antidisestablishmentarianism pneumonoultramicroscopicsilicovolcanoconiosis", false},
  };
}

bool ReadGemmaVocab(const std::string& path, Tokenizer* tok, std::string* error) {
  std::unique_ptr<gguf::File> file;
  Status s = gguf::File::Open(path, &file);
  std::vector<std::string> pieces;
  std::vector<float> scores;
  std::vector<int64_t> types64;
  std::string model;
  if (s.ok()) s = file->GetString("tokenizer.ggml.model", &model);
  if (s.ok() && model != "llama") s = Status::Error("tokenizer.ggml.model is " + model);
  if (s.ok()) s = file->GetStringArray("tokenizer.ggml.tokens", &pieces);
  if (s.ok()) s = file->GetFloatArray("tokenizer.ggml.scores", &scores);
  if (s.ok()) s = file->GetIntArray("tokenizer.ggml.token_type", &types64);
  if (s.ok() && (scores.size() != pieces.size() || types64.size() != pieces.size())) {
    s = Status::Error("tokens/scores/token_type lengths differ");
  }
  TokenizerConfig config;
  const std::pair<const char*, int32_t*> ids[] = {
      {"tokenizer.ggml.bos_token_id", &config.bos_id},
      {"tokenizer.ggml.eos_token_id", &config.eos_id},
      {"tokenizer.ggml.unknown_token_id", &config.unk_id},
      {"tokenizer.ggml.padding_token_id", &config.pad_id}};
  for (const auto& [key, dst] : ids) {
    int64_t v = -1;
    if (s.ok()) s = file->GetInt(key, &v);
    *dst = static_cast<int32_t>(v);
  }
  if (s.ok()) s = file->GetBool("tokenizer.ggml.add_bos_token", &config.add_bos);
  if (s.ok()) s = file->GetBool("tokenizer.ggml.add_eos_token", &config.add_eos);
  if (s.ok()) s = file->GetBool("tokenizer.ggml.add_space_prefix", &config.add_space_prefix);
  if (!s.ok()) {
    *error = s.message();
    return false;
  }
  std::vector<int8_t> types(types64.begin(), types64.end());
  config.eot_id = -1;
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (pieces[i] == "<end_of_turn>") config.eot_id = static_cast<int32_t>(i);
  }
  s = tok->Init(
      pieces.size(), [&](size_t i) { return std::string_view(pieces[i]); }, scores.data(),
      types.data(), config);
  if (!s.ok()) *error = s.message();
  return s.ok();
}

// Defined below, after the vocabulary helpers it shares with the fixture.
bool RunOracle(const std::vector<OracleCase>& cases, std::vector<Ids>* out, std::string* error);

class TokenizerGemma3Test : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tok_ = new Tokenizer;
    std::ifstream probe(KESTREL_MODEL_GGUF);
    if (!probe.good()) {
      load_error_ = new std::string(std::string("model file ") + KESTREL_MODEL_GGUF +
                                    " is missing: run scripts/fetch-model.sh");
      return;
    }
    std::string error;
    const auto start = std::chrono::steady_clock::now();
    if (!ReadGemmaVocab(KESTREL_MODEL_GGUF, tok_, &error)) {
      load_error_ = new std::string("reading the vocabulary of " + std::string(KESTREL_MODEL_GGUF) +
                                    ": " + error);
      return;
    }
    std::printf("vocabulary read and tokenizer built in %.0f ms\n",
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                    .count());
  }
  static void TearDownTestSuite() {
    delete tok_;
    delete load_error_;
    tok_ = nullptr;
    load_error_ = nullptr;
  }
  void SetUp() override {
    if (load_error_ != nullptr) FAIL() << *load_error_;
  }
  // Encodes every case with Kestrel and with the sentencepiece oracle and expects the same ids.
  // With check_decode, texts without special parsing must also decode back verbatim (except
  // those holding a typed U+2581, which decodes as a space).
  void ExpectSameAsOracle(const std::vector<OracleCase>& cases, bool check_decode) {
    std::vector<Ids> expected;
    std::string error;
    ASSERT_TRUE(RunOracle(cases, &expected, &error)) << error;
    size_t mismatches = 0, tokens = 0;
    for (size_t i = 0; i < cases.size(); ++i) {
      const Ids got = Encode(*tok_, cases[i].text, false, cases[i].parse_special);
      tokens += got.size();
      if (got != expected[i]) ++mismatches;
      EXPECT_EQ(got, expected[i]) << "text \"" << cli::Printable(cases[i].text)
                                  << "\" parse_special=" << cases[i].parse_special
                                  << "\n  kestrel: " << Pieces(*tok_, got)
                                  << "\n  oracle:  " << Pieces(*tok_, expected[i]);
      if (check_decode && !cases[i].parse_special &&
          cases[i].text.find("\xE2\x96\x81") == std::string::npos) {
        EXPECT_EQ(tok_->Decode(got), cases[i].text)
            << "text \"" << cli::Printable(cases[i].text) << "\"";
      }
    }
    std::printf("%zu cases, %zu tokens, %zu mismatches\n", cases.size(), tokens, mismatches);
  }
  static Tokenizer* tok_;
  static std::string* load_error_;
};
Tokenizer* TokenizerGemma3Test::tok_ = nullptr;
std::string* TokenizerGemma3Test::load_error_ = nullptr;

// Runs tests/py/tokenize_ref.py on the cases; returns one id list per case.
bool RunOracle(const std::vector<OracleCase>& cases, std::vector<Ids>* out, std::string* error) {
  // Per-process names: ctest -j runs the tests of this binary side by side.
  const std::string prefix =
      std::string(KESTREL_TEST_TMP) + "/tokenizer-" + std::to_string(::getpid());
  const std::string cases_path = prefix + "-cases.bin";
  const std::string ids_path = prefix + "-oracle-ids.txt";
  std::remove(ids_path.c_str());
  {
    std::ofstream f(cases_path, std::ios::binary);
    for (const OracleCase& c : cases) {
      f << (c.parse_special ? 1 : 0) << ' ' << c.text.size() << '\n' << c.text << '\n';
    }
    if (!f.good()) {
      *error = "cannot write " + cases_path;
      return false;
    }
  }
  const std::string command = std::string(KESTREL_PYTHON) + " " + KESTREL_SOURCE_DIR +
                              "/tests/py/tokenize_ref.py --gguf " + KESTREL_MODEL_GGUF +
                              " --cases " + cases_path + " --out " + ids_path;
  const int rc = std::system(command.c_str());
  if (rc != 0) {
    *error = "oracle failed (exit " + std::to_string(rc) + "): " + command;
    return false;
  }
  std::ifstream f(ids_path);
  std::string line;
  out->clear();
  while (std::getline(f, line)) {
    std::istringstream in(line);
    Ids ids;
    int32_t id;
    while (in >> id) ids.push_back(id);
    out->push_back(std::move(ids));
  }
  if (out->size() != cases.size()) {
    *error = "oracle wrote " + std::to_string(out->size()) + " lines for " +
             std::to_string(cases.size()) + " cases";
    return false;
  }
  return true;
}

TEST_F(TokenizerGemma3Test, MatchesSentencePieceOracleOnVariedStrings) {
  std::vector<OracleCase> cases;
  for (const auto& [text, also_special] : RealVocabStrings()) {
    cases.push_back({text, false});
    if (also_special) cases.push_back({text, true});
  }
  ASSERT_GE(RealVocabStrings().size(), 50u);
  ExpectSameAsOracle(cases, /*check_decode=*/false);
}

// Random strings glued from fragments that stress the corners: runs of spaces, tabs and
// newlines, special tokens and pieces of them, a literal U+2581, scripts and byte fallback.
std::vector<std::string> RandomStrings(size_t count, uint32_t seed) {
  static const char* const kFragments[] = {"the",
                                           "The",
                                           " quick",
                                           "brown",
                                           "fox",
                                           " ",
                                           "  ",
                                           "   ",
                                           "        ",
                                           "\t",
                                           "\t\t",
                                           "\n",
                                           "\n\n",
                                           "\r\n",
                                           "0",
                                           "42",
                                           "3.14",
                                           ",",
                                           ".",
                                           "!",
                                           "?",
                                           "'s",
                                           "(",
                                           ")",
                                           "{",
                                           "}",
                                           "->",
                                           "::",
                                           "#",
                                           "*",
                                           "_",
                                           "=",
                                           "\"",
                                           "<",
                                           ">",
                                           "/",
                                           "<b>",
                                           "</b>",
                                           "<start_of_turn>",
                                           "<end_of_turn>",
                                           "<start_of",
                                           "_turn>",
                                           "<eos>",
                                           "<bos>",
                                           "<unused17>",
                                           "[multimodal]",
                                           "\xE2\x96\x81",
                                           "\xE2\x96\x81\xE2\x96\x81",
                                           "\xC3\xA9",
                                           "\xC3\xB1",
                                           "\xC3\x9F",
                                           "\xE6\x97\xA5\xE6\x9C\xAC",
                                           "\xE4\xB8\xAD",
                                           "\xD9\x85\xD8\xB1",
                                           "\xE0\xA4\xA8\xE0\xA4\xAE",
                                           "\xD0\x9F\xD1\x80",
                                           "\xF0\x9F\x98\x80",
                                           "\xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9",
                                           "\xF0\x9F\x87\xAB\xF0\x9F\x87\xB7",
                                           "\xF0\x93\x80\x80",
                                           "\xEE\x80\x80",
                                           "\xE2\x80\x8B",
                                           "ing",
                                           "tion",
                                           "un",
                                           "re",
                                           "http",
                                           "://",
                                           "www",
                                           "x",
                                           "y",
                                           "z",
                                           "Q",
                                           "\x01",
                                           "\x7F"};
  constexpr size_t kCount = sizeof(kFragments) / sizeof(kFragments[0]);
  std::mt19937 rng(seed);
  std::vector<std::string> out;
  for (size_t i = 0; i < count; ++i) {
    std::string text;
    const size_t n = 1 + rng() % 24;
    for (size_t k = 0; k < n; ++k) text += kFragments[rng() % kCount];
    out.push_back(std::move(text));
  }
  return out;
}

TEST_F(TokenizerGemma3Test, MatchesSentencePieceOracleOnRandomStrings) {
  const std::vector<std::string> strings = RandomStrings(400, 20240601);
  std::vector<OracleCase> cases;
  for (const std::string& text : strings) {
    cases.push_back({text, false});
    cases.push_back({text, true});
  }
  ExpectSameAsOracle(cases, /*check_decode=*/true);
}

TEST_F(TokenizerGemma3Test, DecodeOfEncodeGivesTheTextBack) {
  for (const auto& [text, also_special] : RealVocabStrings()) {
    EXPECT_EQ(tok_->Decode(Encode(*tok_, text, false, false)), text)
        << "text \"" << cli::Printable(text) << "\"";
    (void)also_special;
  }
}

TEST_F(TokenizerGemma3Test, ChatTurnsBecomeTheirControlIds) {
  const int32_t start = tok_->Find("<start_of_turn>"), end = tok_->Find("<end_of_turn>");
  const int32_t newline = tok_->Find("\n"), user = tok_->Find("user");
  ASSERT_GE(start, 0);
  ASSERT_GE(end, 0);
  ASSERT_GE(newline, 0);
  ASSERT_GE(user, 0);
  EXPECT_EQ(tok_->Type(start), TokenType::kControl);
  EXPECT_EQ(tok_->Type(newline), TokenType::kUserDefined);

  const Ids ids = Encode(*tok_, "<start_of_turn>user\nHi<end_of_turn>\n", true, true);
  ASSERT_EQ(ids.size(), 7u) << Pieces(*tok_, ids);
  EXPECT_EQ(ids[0], tok_->config().bos_id);  // GGUF's add_bos_token is true for Gemma 3
  EXPECT_EQ(ids[1], start);
  EXPECT_EQ(ids[2], user);
  EXPECT_EQ(ids[3], newline);
  EXPECT_EQ(ids[4], tok_->Find("Hi"));
  EXPECT_EQ(ids[5], end);
  EXPECT_EQ(ids[6], newline);
  EXPECT_TRUE(tok_->IsEndOfGeneration(end));
  EXPECT_TRUE(tok_->IsEndOfGeneration(tok_->config().eos_id));
  EXPECT_EQ(tok_->Decode(ids), "user\nHi\n");

  // Without parse_special the same text is plain text.
  const Ids plain = Encode(*tok_, "<start_of_turn>user", false, false);
  for (int32_t id : plain) EXPECT_NE(tok_->Type(id), TokenType::kControl) << Pieces(*tok_, plain);
}

TEST_F(TokenizerGemma3Test, TokenTextOfSpecialKinds) {
  EXPECT_EQ(tok_->vocab_size(), 262144u);
  EXPECT_EQ(tok_->TokenText(tok_->config().bos_id), "");
  EXPECT_EQ(tok_->TokenText(tok_->Find("<0x0A>")), "\n");
  EXPECT_EQ(tok_->TokenText(tok_->Find("\xE2\x96\x81the")), " the");
  EXPECT_EQ(tok_->TokenText(tok_->Find("<b>")), "<b>");
  EXPECT_EQ(tok_->TokenText(static_cast<int32_t>(tok_->vocab_size())), "");
}

TEST_F(TokenizerGemma3Test, EncodesAMegabyteOfText) {
  std::string text;
  for (const auto& [s, special] : RealVocabStrings()) text += s + "\n";
  while (text.size() < (1u << 20)) text += text;
  const auto start = std::chrono::steady_clock::now();
  const Ids ids = Encode(*tok_, text, true, true);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::printf("encoded %zu bytes into %zu tokens in %.1f ms (%.1f MB/s)\n", text.size(), ids.size(),
              ms, text.size() / 1e3 / ms);
  EXPECT_GT(ids.size(), text.size() / 20);
}

}  // namespace
}  // namespace kestrel
