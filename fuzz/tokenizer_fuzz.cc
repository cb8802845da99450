// Fuzz target: the four tokenizers, with the real vocabularies of the fetched models
// (scripts/fetch-model.sh): Gemma 3's SentencePiece BPE, SmolLM2's byte-level BPE (with its own
// pre-tokenizer, and with GPT-4o's) and all-MiniLM-L6-v2's WordPiece, and a small trained
// SentencePiece Unigram model in XLM-RoBERTa's tokenizer.json layout (fuzz/unigram_tokenizer/,
// written by fuzz/make_seeds.py: a charsmap of a few rules), each loaded the way a converted
// model loads it (converter import, FlatBuffer, InitTokenizer). The folder is
// KESTREL_FUZZ_MODELS, else models/ of the source tree; a missing model is a fatal error, not a
// skip. Input: byte 0 picks the tokenizer (bits 0-1, plus 4 with bit 4: the Unigram one),
// add_special (bit 2) and parse_special (bit 3); the rest is the text to encode, and is also read
// as little-endian int32 ids to decode (any values, out-of-range ones included). Checked besides
// "no crash": every id is inside the vocabulary, and where the tokenizers promise it, decoding
// gives the text back:
//   - byte-level BPE without parse_special: valid UTF-8 comes back without the bytes whose
//     byte-level character has no token (a vocabulary may lack some, such as SmolLM2's for 0x04,
//     0x06 or 0xC0: they are dropped, as llama.cpp drops them);
//   - SentencePiece without parse_special: valid UTF-8 without U+2581 (the piece alphabet's
//     space, which decodes as ' ', as in SentencePiece), with the prefix space dropped again.
//     Not invalid UTF-8: text is split into characters by lead bytes after spaces became U+2581
//     (llama.cpp's way), so a truncated sequence before a space swallows part of the U+2581,
//     which then comes back as its bytes.
// WordPiece and Unigram normalize (lower-case, strip accents, map characters, drop spaces): no
// round trip.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "converters/gguf/gguf_file.h"
#include "converters/gguf_tokenizer.h"
#include "converters/hf_tokenizer.h"
#include "fuzz/fuzz_support.h"
#include "converters/tokenizer_table.h"
#include "tests/support/byte_level_alphabet.h"

namespace {

using namespace kestrel;

// `pre`: another byte-level pre-tokenizer over the file's vocabulary, or "" for its own.
Tokenizer LoadGguf(const std::string& path, const std::string& pre = "") {
  std::unique_ptr<gguf::File> file;
  fb::TokenizerT table;
  Tokenizer tokenizer;
  Status s = gguf::File::Open(path, &file);
  if (s.ok()) s = ImportTokenizer(*file, &table);
  if (!pre.empty()) table.pre = pre;
  if (s.ok()) s = TokenizerFromTable(table, &tokenizer);
  if (!s.ok()) fuzz::Die(path + ": " + s.message() + " (run scripts/fetch-model.sh)");
  return tokenizer;
}

Tokenizer LoadHf(const std::string& folder) {
  fb::TokenizerT table;
  Tokenizer tokenizer;
  Status s = ReadHfTokenizer(folder, &table);
  if (s.ok()) s = TokenizerFromTable(table, &tokenizer);
  if (!s.ok()) fuzz::Die(folder + ": " + s.message() + " (run scripts/fetch-model.sh)");
  return tokenizer;
}

const std::vector<Tokenizer>& Tokenizers() {
  static const std::vector<Tokenizer> tokenizers = [] {
    const char* env = std::getenv("KESTREL_FUZZ_MODELS");
    const std::string dir = env && *env ? env : KESTREL_SOURCE_DIR "/models";
    std::vector<Tokenizer> t;
    t.push_back(LoadGguf(dir + "/gemma-3-270m-q4_k_m.gguf"));
    t.push_back(LoadGguf(dir + "/SmolLM2-135M-Instruct.Q4_1.gguf"));
    t.push_back(LoadHf(dir + "/all-MiniLM-L6-v2"));
    t.push_back(LoadGguf(dir + "/SmolLM2-135M-Instruct.Q4_1.gguf", "gpt-4o"));
    t.push_back(LoadHf(KESTREL_SOURCE_DIR "/fuzz/unigram_tokenizer"));
    return t;
  }();
  return tokenizers;
}

// Strict UTF-8: no overlong forms, surrogates or code points above U+10FFFF.
bool IsValidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = s[i];
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    uint32_t cp = n == 1 ? c : c & (0x7F >> n);
    for (size_t k = 1; k < n; ++k) {
      const unsigned char d = s[i + k];
      if ((d >> 6) != 2) return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    static constexpr uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n;
  }
  return true;
}

std::string Hex(std::string_view s) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

// What a byte-level BPE decodes `text` (valid UTF-8) back to: the text less the bytes whose
// character has no token.
std::string ByteLevelRoundTrip(const Tokenizer& tokenizer, std::string_view text) {
  std::string out;
  for (char c : text) {
    if (tokenizer.Find(test::ByteLevelCharacter(static_cast<uint8_t>(c))) >= 0) out += c;
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)Tokenizers();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t pick = (data[0] & 3) + ((data[0] & 16) ? 4 : 0);
  const Tokenizer& tokenizer = Tokenizers()[pick % Tokenizers().size()];
  const bool add_special = data[0] & 4, parse_special = data[0] & 8;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);

  std::vector<int32_t> ids;
  if (tokenizer.Encode(text, add_special, parse_special, &ids).ok()) {
    for (int32_t id : ids) {
      if (id < 0 || static_cast<size_t>(id) >= tokenizer.vocab_size()) {
        fuzz::Die("id " + std::to_string(id) + " outside the vocabulary for text " + Hex(text));
      }
    }
    const std::string decoded = tokenizer.Decode(ids);
    const TokenizerAlgorithm algorithm = tokenizer.config().algorithm;
    const int32_t unk = tokenizer.config().unk_id;
    const bool round_trip = !parse_special && IsValidUtf8(text) &&
                            (unk < 0 || std::find(ids.begin(), ids.end(), unk) == ids.end()) &&
                            (algorithm == TokenizerAlgorithm::kByteLevelBpe ||
                             (algorithm == TokenizerAlgorithm::kSentencePiece &&
                              text.find("\xE2\x96\x81") == std::string_view::npos));
    const std::string expected = round_trip && algorithm == TokenizerAlgorithm::kByteLevelBpe
                                     ? ByteLevelRoundTrip(tokenizer, text)
                                     : std::string(text);
    if (round_trip && decoded != expected) {
      fuzz::Die("Decode(Encode(text)) differs from the text: " + Hex(text) + " -> " + Hex(decoded) +
                ", expected " + Hex(expected));
    }
  } else if (tokenizer.config().algorithm != TokenizerAlgorithm::kWordPiece) {
    // SentencePiece: Gemma 3 has a byte token for every byte; byte-level BPE never fails;
    // Unigram has its unknown token.
    fuzz::Die("Encode failed on text " + Hex(text));
  }

  std::vector<int32_t> any_ids((size - 1) / 4);
  if (!any_ids.empty()) std::memcpy(any_ids.data(), data + 1, any_ids.size() * 4);
  (void)tokenizer.Decode(any_ids);
  for (int32_t id : any_ids) (void)tokenizer.TokenText(id);
  return 0;
}
