// The precompiled charsmap (runtime/spm_normalizer.h) on a hand-built darts-clone array, its
// checks against hostile blobs, and SentencePiece's whitespace rules. The charsmaps of trained
// models are compared with SentencePiece by tests/py/compare_unigram_tokenizers.py.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "runtime/spm_normalizer.h"
#include "tests/support/charsmap_blob.h"

namespace kestrel {
namespace {

using test::Blob;
using test::kTwoRuleStrings;
using test::Node;
using test::TwoRuleUnits;
using test::ValueUnit;

TEST(PrecompiledCharsmap, LongestRuleWins) {
  PrecompiledCharsmap map;
  ASSERT_TRUE(map.Init(Blob(TwoRuleUnits(), kTwoRuleStrings)).ok());
  const auto check = [&map](const std::string& input, const std::string& replacement,
                            size_t consumed) {
    const PrecompiledCharsmap::Match m = map.NormalizePrefix(input);
    EXPECT_EQ(m.replacement, replacement) << input;
    EXPECT_EQ(m.consumed, consumed) << input;
  };
  check("ABC", "x y", 2);
  check("AC", "a", 1);
  check("A", "a", 1);
  check("BA", "B", 1);                // no rule: the character itself
  check("\xC3\xA9x", "\xC3\xA9", 2);  // é
  check(
      "\xFF"
      "A",
      "\xEF\xBF\xBD", 1);                    // not UTF-8: U+FFFD for one byte
  check("\xC3", "\xEF\xBF\xBD", 1);          // truncated
  check("\xED\xA0\x80", "\xEF\xBF\xBD", 1);  // a surrogate
  check("\xC0\x80", "\xEF\xBF\xBD", 1);      // overlong
  check(std::string("\0A", 2), std::string("\0", 1), 1);
}

TEST(PrecompiledCharsmap, EmptyBlobHasNoRules) {
  PrecompiledCharsmap map;
  ASSERT_TRUE(map.Init("").ok());
  EXPECT_TRUE(map.empty());
  EXPECT_EQ(map.NormalizePrefix("AB").replacement, "A");
}

TEST(SpmNormalizer, WhitespaceRules) {
  PrecompiledCharsmap map;
  ASSERT_TRUE(map.Init(Blob(TwoRuleUnits(), kTwoRuleStrings)).ok());
  std::string out;
  const SpmNormalizerOptions xlmr;  // all three on
  NormalizeSpm(map, xlmr, "  A  AB  ", &out);
  EXPECT_EQ(out,
            "\xE2\x96\x81"
            "a\xE2\x96\x81"
            "x\xE2\x96\x81"
            "y");
  NormalizeSpm(map, xlmr, "   ", &out);
  EXPECT_EQ(out, "");
  NormalizeSpm(map, xlmr, "", &out);
  EXPECT_EQ(out, "");
  SpmNormalizerOptions plain;
  plain.add_dummy_prefix = false;
  plain.remove_extra_whitespaces = false;
  plain.escape_whitespaces = false;
  NormalizeSpm(map, plain, "  A  AB  ", &out);
  EXPECT_EQ(out, "  a  x y  ");
}

TEST(PrecompiledCharsmap, RefusesHostileBlobs) {
  const std::vector<uint32_t> good = TwoRuleUnits();
  struct Case {
    const char* what;
    std::string blob;
    const char* message;
  };
  std::vector<uint32_t> far_child = good;
  far_child[0x41] = Node(0x41 ^ 0x100, true, 'A');  // children past the one block
  std::vector<uint32_t> far_value = good;
  far_value[0x10] = ValueUnit(6);  // past the 6 bytes of replacements
  std::string huge = Blob(good, kTwoRuleStrings);
  huge[1] = 0x7F;  // a trie size larger than the blob
  std::string ragged = Blob(good, kTwoRuleStrings);
  ragged[0] = 4;  // 1028 bytes: not whole blocks
  const Case cases[] = {
      {"too short", "ab", "at least 4 bytes"},
      {"huge trie", huge, "whole 1024-byte blocks"},
      {"ragged trie", ragged, "whole 1024-byte blocks"},
      {"no replacements", Blob(good, ""), "end with NUL"},
      {"unterminated", Blob(good, std::string("a\0x y", 5)), "end with NUL"},
      {"child out of bounds", Blob(far_child, kTwoRuleStrings), "expected children within"},
      {"value out of bounds", Blob(far_value, kTwoRuleStrings), "replacement offset below"},
  };
  for (const Case& c : cases) {
    PrecompiledCharsmap map;
    ASSERT_TRUE(map.Init(Blob(good, kTwoRuleStrings)).ok());
    const Status s = map.Init(c.blob);
    ASSERT_FALSE(s.ok()) << c.what;
    EXPECT_NE(s.message().find(c.message), std::string::npos) << c.what << ": " << s.message();
    EXPECT_EQ(map.NormalizePrefix("AB").replacement, "x y") << c.what << ": map left as it was";
  }
}

TEST(PrecompiledCharsmap, CyclicArrayIsCheckedAndMatchesBoundedByInput) {
  std::vector<uint32_t> units = TwoRuleUnits();
  units[0x41] = Node(0x41, false, 'A');  // "A"'s children are the root's: "AAAA..." loops
  PrecompiledCharsmap map;
  ASSERT_TRUE(map.Init(Blob(units, kTwoRuleStrings)).ok());
  EXPECT_EQ(map.NormalizePrefix("AAAAAAAA").consumed, 1u);  // no rule ends: the character
}

// Random mutations of a valid blob: Init refuses or accepts, and whatever it accepts is looked
// up without reading outside the blob (the ASan build checks).
TEST(PrecompiledCharsmap, MutatedBlobsNeverReadOutOfBounds) {
  const std::string good = Blob(TwoRuleUnits(), kTwoRuleStrings);
  std::mt19937 rng(7);
  size_t accepted = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string blob = good;
    for (int k = 0, n = 1 + static_cast<int>(rng() % 4); k < n; ++k) {
      blob[4 + rng() % (blob.size() - 4)] = static_cast<char>(rng());
    }
    PrecompiledCharsmap map;
    if (!map.Init(blob).ok()) continue;
    ++accepted;
    std::string input;
    for (int k = 0; k < 16; ++k) input += "AB\x10\x80\xC2\xFF"[rng() % 6];
    for (size_t i = 0; i < input.size(); ++i) {
      const PrecompiledCharsmap::Match m = map.NormalizePrefix(std::string_view(input).substr(i));
      EXPECT_GT(m.consumed, 0u);
    }
  }
  EXPECT_GT(accepted, 0u);
}

}  // namespace
}  // namespace kestrel
