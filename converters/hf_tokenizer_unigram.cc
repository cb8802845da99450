// tokenizer.json of a SentencePiece Unigram model (XLM-RoBERTa: bge-m3, multilingual-e5,
// bge-reranker; T5), as transformers' SpmConverter writes it. The runtime runs SentencePiece's
// own algorithm (runtime/tokenizer_unigram.cc), so only the shapes SpmConverter produces for a
// model whose NormalizerSpec has add_dummy_prefix, remove_extra_whitespaces and
// escape_whitespaces set are accepted; anything else is an error naming it:
//   normalizer:    Sequence[Precompiled, Replace(Regex " {2,}" -> " ")] (older transformers:
//                  bge-m3, multilingual-e5, T5), or Sequence[Precompiled, Strip(right),
//                  Replace(Regex " {2,}" -> "▁")] (newer), each also without Precompiled
//                  (a model without a charsmap);
//   pre_tokenizer: Metaspace, replacement "▁", prepending "always" (add_prefix_space true or
//                  prepend_scheme "always"), split true when given;
//   decoder:       Metaspace, replacement "▁";
//   model:         Unigram: vocab [[piece, score], ...], unk_id, byte_fallback false.
#include "converters/hf_tokenizer_internal.h"

namespace kestrel::hf {
namespace {

using nlohmann::json;

constexpr const char* kSpaceMark = "\xE2\x96\x81";  // U+2581

JsonNode Item(const JsonNode& list, size_t i) {
  return JsonNode{&(*list.value)[i], list.file, list.path + "[" + std::to_string(i) + "]"};
}

// Standard base64 with padding, as `tokenizers` writes precompiled_charsmap.
Status DecodeBase64(const JsonNode& node, const std::string& text, std::string* out) {
  const auto digit = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
  };
  KES_CHECK_OR_RETURN(text.size() % 4 == 0, node.Where() +
                                                ": expected base64 (a multiple of 4 "
                                                "characters), found " +
                                                std::to_string(text.size()) + " characters");
  out->clear();
  out->reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    uint32_t group = 0;
    int padding = 0;
    for (size_t k = 0; k < 4; ++k) {
      const char c = text[i + k];
      const bool pad = c == '=' && i + 4 == text.size() && k >= 2 && (k == 3 || text[i + 3] == '=');
      const int d = pad ? 0 : digit(c);
      KES_CHECK_OR_RETURN(d >= 0, node.Where() + ": expected base64, found the character '" +
                                      std::string(1, c) + "' at " + std::to_string(i + k));
      padding += pad;
      group = group << 6 | static_cast<uint32_t>(d);
    }
    for (int k = 0; k < 3 - padding; ++k) *out += static_cast<char>(group >> (16 - 8 * k) & 0xFF);
  }
  return OkStatus();
}

// model.vocab: [[piece, score], ...], id = index.
Status ReadVocab(const JsonNode& model, VocabIndex* vocab) {
  JsonNode node;
  size_t n = 0;
  KES_RETURN_IF_ERROR(ModelVocab(model, json::value_t::array, &node, &n));
  std::vector<std::string> pieces(n);
  std::vector<float> scores(n);
  for (size_t i = 0; i < n; ++i) {
    const JsonNode entry = Item(node, i);
    const json& v = *entry.value;
    KES_CHECK_OR_RETURN(v.is_array() && v.size() == 2 && v[0].is_string() && v[1].is_number(),
                        entry.Where() + ": expected [\"piece\", score]");
    pieces[i] = v[0].get<std::string>();
    scores[i] = v[1].get<float>();
  }
  KES_RETURN_IF_ERROR(StartVocab(std::move(pieces), node.Where(), vocab));
  vocab->table->scores = std::move(scores);
  return OkStatus();
}

Status ReadModel(const JsonNode& root, VocabIndex* vocab) {
  const JsonNode model = root.Child("model");
  KES_RETURN_IF_ERROR(ReadVocab(model, vocab));
  fb::TokenizerT* t = vocab->table;
  uint64_t unk = 0;
  KES_RETURN_IF_ERROR(GetUint(model.Child("unk_id"), &unk));  // null: no unknown token
  KES_CHECK_OR_RETURN(unk < t->pieces.size(), model.Where() + ".unk_id: expected an id below " +
                                                  std::to_string(t->pieces.size()) + ", found " +
                                                  std::to_string(unk));
  t->unk_id = static_cast<int32_t>(unk);
  const JsonNode fallback = model.Child("byte_fallback");
  bool byte_fallback = false;
  if (!fallback.is_null()) KES_RETURN_IF_ERROR(GetBool(fallback, &byte_fallback));
  KES_CHECK_OR_RETURN(!byte_fallback, model.Where() +
                                          ".byte_fallback: expected false (Kestrel's Unigram "
                                          "has no byte fallback), found true");
  return OkStatus();
}

// A Replace normalizer: pattern {"Regex": " {2,}"}, content `content`.
Status ExpectSpaceRunReplace(const JsonNode& node, const std::string& content) {
  KES_RETURN_IF_ERROR(ExpectTypeName(node, "Replace"));
  std::string pattern, found;
  KES_RETURN_IF_ERROR(GetString(node.Child("pattern").Child("Regex"), &pattern));
  KES_RETURN_IF_ERROR(GetString(node.Child("content"), &found));
  KES_CHECK_OR_RETURN(pattern == " {2,}" && found == content,
                      node.Where() + ": expected runs of spaces (\" {2,}\") replaced by \"" +
                          content + "\", found \"" + pattern + "\" by \"" + found + "\"");
  return OkStatus();
}

Status ReadNormalizer(const JsonNode& root, fb::UnigramT* unigram) {
  const JsonNode node = root.Child("normalizer");
  KES_RETURN_IF_ERROR(ExpectType(node, json::value_t::object));
  KES_RETURN_IF_ERROR(ExpectTypeName(node, "Sequence"));
  const JsonNode steps = node.Child("normalizers");
  KES_RETURN_IF_ERROR(ExpectType(steps, json::value_t::array));
  size_t next = 0;
  const auto type_of = [&](size_t i) {
    const json& step = (*steps.value)[i];
    return step.is_object() && step.contains("type") && step["type"].is_string()
               ? step["type"].get<std::string>()
               : std::string();
  };
  if (next < steps.value->size() && type_of(next) == "Precompiled") {
    const JsonNode map = Item(steps, next++).Child("precompiled_charsmap");
    std::string base64, blob;
    KES_RETURN_IF_ERROR(GetString(map, &base64));
    KES_RETURN_IF_ERROR(DecodeBase64(map, base64, &blob));
    unigram->precompiled_charsmap.assign(blob.begin(), blob.end());
  }
  const size_t left = steps.value->size() - next;
  if (left == 2 && type_of(next) == "Strip") {  // newer transformers: Strip, then "▁" for runs
    const JsonNode strip = Item(steps, next++);
    bool left_side = true, right_side = false;
    KES_RETURN_IF_ERROR(GetBool(strip.Child("strip_left"), &left_side));
    KES_RETURN_IF_ERROR(GetBool(strip.Child("strip_right"), &right_side));
    KES_CHECK_OR_RETURN(!left_side && right_side,
                        strip.Where() + ": expected trailing whitespace stripped only");
    KES_RETURN_IF_ERROR(ExpectSpaceRunReplace(Item(steps, next), kSpaceMark));
  } else {
    KES_CHECK_OR_RETURN(left == 1, steps.Where() +
                                       ": expected [Precompiled,] Replace or [Precompiled,] "
                                       "Strip, Replace (SentencePiece's normalizer), found " +
                                       std::to_string(steps.value->size()) + " steps");
    KES_RETURN_IF_ERROR(ExpectSpaceRunReplace(Item(steps, next), " "));
  }
  unigram->remove_extra_whitespaces = true;
  unigram->escape_whitespaces = true;
  return OkStatus();
}

// A Metaspace pre-tokenizer or decoder that prepends "▁" to every fragment ("always").
Status ReadMetaspace(const JsonNode& node, fb::UnigramT* unigram) {
  KES_RETURN_IF_ERROR(ExpectType(node, json::value_t::object));
  KES_RETURN_IF_ERROR(ExpectTypeName(node, "Metaspace"));
  std::string replacement;
  KES_RETURN_IF_ERROR(GetString(node.Child("replacement"), &replacement));
  KES_CHECK_OR_RETURN(replacement == kSpaceMark, node.Where() +
                                                     ".replacement: expected \"\xE2\x96\x81\" "
                                                     "(U+2581), found \"" +
                                                     replacement + "\"");
  // tokenizers < 0.14 write add_prefix_space; later ones prepend_scheme, some both.
  const JsonNode scheme = node.Child("prepend_scheme");
  std::string prepend = "always";
  if (!scheme.is_null()) {
    KES_RETURN_IF_ERROR(GetString(scheme, &prepend));
  } else {
    bool add_prefix_space = false;
    KES_RETURN_IF_ERROR(GetBool(node.Child("add_prefix_space"), &add_prefix_space));
    if (!add_prefix_space) prepend = "never";
  }
  KES_CHECK_OR_RETURN(prepend == "always", node.Where() +
                                               ": expected \"▁\" prepended always (prepend_scheme "
                                               "\"always\" or add_prefix_space true), found \"" +
                                               prepend + "\"");
  const JsonNode split = node.Child("split");
  bool split_words = true;
  if (!split.is_null()) KES_RETURN_IF_ERROR(GetBool(split, &split_words));
  KES_CHECK_OR_RETURN(split_words, node.Where() + ".split: expected true, found false");
  unigram->add_dummy_prefix = true;
  return OkStatus();
}

}  // namespace

Status ReadUnigramJson(const JsonNode& root, VocabIndex* vocab) {
  KES_RETURN_IF_ERROR(ReadModel(root, vocab));
  fb::TokenizerT* t = vocab->table;
  t->kind = fb::TokenizerKind::Unigram;
  t->unigram = std::make_unique<fb::UnigramT>();
  KES_RETURN_IF_ERROR(ReadNormalizer(root, t->unigram.get()));
  KES_RETURN_IF_ERROR(ReadMetaspace(root.Child("pre_tokenizer"), t->unigram.get()));
  KES_RETURN_IF_ERROR(ReadMetaspace(root.Child("decoder"), t->unigram.get()));
  KES_RETURN_IF_ERROR(ReadPostProcessor(root, vocab));
  KES_RETURN_IF_ERROR(ReadAddedTokens(root, vocab));
  return ReadPadding(root, vocab);
}

}  // namespace kestrel::hf
