#include "converters/ct2/whisper_tokenizer.h"

#include <fstream>
#include <iterator>

#include "converters/hf_json_fields.h"
#include "converters/tokenizer_table.h"

namespace kestrel::ct2 {
namespace {

using hf::JsonNode;
using nlohmann::json;

constexpr int8_t kNormal = 1, kControl = 3;

std::string Num(uint64_t v) { return std::to_string(v); }

Status ReadLines(const std::string& path, std::vector<std::string>* lines) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::Error("cannot open '" + path + "'");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    lines->push_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  return OkStatus();
}

Status ExpectString(const JsonNode& node, const std::string& expected) {
  std::string found;
  KES_RETURN_IF_ERROR(hf::GetString(node, &found));
  KES_CHECK_OR_RETURN(found == expected,
                      node.Where() + ": expected \"" + expected + "\", found \"" + found + "\"");
  return OkStatus();
}

Status ExpectBool(const JsonNode& node, bool expected) {
  bool found = false;
  KES_RETURN_IF_ERROR(hf::GetBool(node, &found));
  KES_CHECK_OR_RETURN(found == expected, node.Where() + ": expected " +
                                             (expected ? "true" : "false") +
                                             " (the only value "
                                             "Kestrel's byte-level BPE implements)");
  return OkStatus();
}

// An optional field that must be null or absent, or one of the no-op values given.
Status ExpectNullOr(const JsonNode& node, const json& allowed) {
  if (node.is_null() || *node.value == allowed) return OkStatus();
  return Status::Error(node.Where() + ": expected null or " + allowed.dump() + ", found " +
                       node.value->dump());
}

Status ReadModel(const JsonNode& root, const std::vector<std::string>& pieces,
                 fb::TokenizerT* out) {
  const JsonNode model = root.Child("model");
  KES_RETURN_IF_ERROR(hf::ExpectType(model, json::value_t::object));
  KES_RETURN_IF_ERROR(ExpectString(model.Child("type"), "BPE"));
  KES_RETURN_IF_ERROR(ExpectNullOr(model.Child("dropout"), json()));
  KES_RETURN_IF_ERROR(ExpectNullOr(model.Child("unk_token"), json()));
  KES_RETURN_IF_ERROR(ExpectNullOr(model.Child("continuing_subword_prefix"), json("")));
  KES_RETURN_IF_ERROR(ExpectNullOr(model.Child("end_of_word_suffix"), json("")));
  const JsonNode vocab = model.Child("vocab");
  KES_RETURN_IF_ERROR(hf::ExpectType(vocab, json::value_t::object));
  for (const auto& [piece, value] : vocab.value->items()) {
    uint64_t id = 0;
    KES_RETURN_IF_ERROR(hf::GetUint(vocab.Child(piece), &id));
    KES_CHECK_OR_RETURN(
        id < pieces.size() && pieces[id] == piece,
        vocab.Where() + ": \"" + piece + "\" has id " + Num(id) + ", which vocabulary.txt gives " +
            (id < pieces.size() ? "to \"" + pieces[id] + "\""
                                : "no piece (it has " + Num(pieces.size()) + " lines)"));
  }
  const JsonNode merges = model.Child("merges");
  KES_RETURN_IF_ERROR(hf::ExpectType(merges, json::value_t::array));
  out->merges.reserve(merges.value->size());
  for (size_t i = 0; i < merges.value->size(); ++i) {
    const json& m = (*merges.value)[i];
    const std::string where = merges.Where() + "[" + Num(i) + "]";
    if (m.is_string()) {
      out->merges.push_back(m.get<std::string>());
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      out->merges.push_back(m[0].get<std::string>() + " " + m[1].get<std::string>());
    } else {
      return Status::Error(where + ": expected \"left right\" or [\"left\", \"right\"], found " +
                           safetensors::JsonKind(m));
    }
  }
  return OkStatus();
}

// GPT-2's byte-level pre-tokenizer and decoder, as Whisper's tokenizer.json sets them.
Status CheckByteLevel(const JsonNode& root) {
  KES_RETURN_IF_ERROR(ExpectNullOr(root.Child("normalizer"), json()));
  const JsonNode pre = root.Child("pre_tokenizer");
  KES_RETURN_IF_ERROR(hf::ExpectType(pre, json::value_t::object));
  KES_RETURN_IF_ERROR(ExpectString(pre.Child("type"), "ByteLevel"));
  KES_RETURN_IF_ERROR(ExpectBool(pre.Child("add_prefix_space"), false));
  if (pre.Child("use_regex").present())
    KES_RETURN_IF_ERROR(ExpectBool(pre.Child("use_regex"), true));
  const JsonNode decoder = root.Child("decoder");
  KES_RETURN_IF_ERROR(hf::ExpectType(decoder, json::value_t::object));
  return ExpectString(decoder.Child("type"), "ByteLevel");
}

// "<|12.34|>": a timestamp token, which Whisper's tokenizer.json leaves out.
bool IsTimestamp(const std::string& piece) {
  if (piece.size() < 8 || piece.compare(0, 2, "<|") != 0 ||
      piece.compare(piece.size() - 2, 2, "|>") != 0) {
    return false;
  }
  const std::string inner = piece.substr(2, piece.size() - 4);
  const size_t dot = inner.find('.');
  if (dot == std::string::npos || dot == 0 || inner.size() - dot != 3) return false;
  for (size_t i = 0; i < inner.size(); ++i) {
    if (i != dot && (inner[i] < '0' || inner[i] > '9')) return false;
  }
  return true;
}

Status ReadAddedTokens(const JsonNode& root, fb::TokenizerT* out) {
  KES_RETURN_IF_ERROR(hf::ForEachAddedToken(
      root, [&](const JsonNode& token, uint64_t id, const std::string& content, bool special) {
        KES_CHECK_OR_RETURN(
            id < out->pieces.size() && out->pieces[id] == content,
            token.Where() + ": \"" + content + "\" has id " + Num(id) +
                ", which vocabulary.txt gives " +
                (id < out->pieces.size() ? "to \"" + out->pieces[id] + "\"" : "no piece"));
        // Hugging Face's Whisper lists the timestamps as added tokens that are not "special";
        // they are control tokens all the same.
        KES_CHECK_OR_RETURN(special || IsTimestamp(content),
                            token.Where() + ": \"" + content +
                                "\" is not special (Kestrel reads Whisper's special and timestamp "
                                "tokens only)");
        out->types[id] = kControl;
        if (content == "<|endoftext|>") out->eos_id = static_cast<int32_t>(id);
        return OkStatus();
      }));
  KES_CHECK_OR_RETURN(out->eos_id >= 0,
                      root.Child("added_tokens").Where() + ": no \"<|endoftext|>\" token");
  return OkStatus();
}

// A Hugging Face folder has no vocabulary.txt: every id's piece comes from tokenizer.json's
// model.vocab and added_tokens, and every id of the model's vocabulary needs one.
Status PiecesFromTokenizerJson(const JsonNode& root, size_t vocab_rows,
                               std::vector<std::string>* pieces) {
  pieces->assign(vocab_rows, std::string());
  std::vector<bool> named(vocab_rows, false);
  const auto name = [&](const JsonNode& where, uint64_t id, const std::string& piece) {
    KES_CHECK_OR_RETURN(
        id < vocab_rows && !named[id],
        where.Where() + ": \"" + piece + "\" has id " + Num(id) +
            (id < vocab_rows ? ", which another piece has too"
                             : ", outside the model's vocabulary of " + Num(vocab_rows)));
    (*pieces)[id] = piece;
    named[id] = true;
    return OkStatus();
  };
  KES_RETURN_IF_ERROR(
      hf::ForEachVocabEntry(root, [&](const JsonNode& node, uint64_t id, const std::string& piece) {
        return name(node, id, piece);
      }));
  KES_RETURN_IF_ERROR(hf::ForEachAddedToken(
      root, [&](const JsonNode& token, uint64_t id, const std::string& content, bool) {
        if (id < vocab_rows && named[id] && (*pieces)[id] == content)
          return OkStatus();  // in vocab
        return name(token, id, content);
      }));
  for (size_t id = 0; id < vocab_rows; ++id) {
    KES_CHECK_OR_RETURN(named[id], root.Where() + ": no token has id " + Num(id) +
                                       " (expected one for every row of the model's " +
                                       Num(vocab_rows) + "-token vocabulary)");
  }
  return OkStatus();
}

}  // namespace

Status ReadWhisperTokenizer(const std::string& folder, size_t vocab_rows, fb::TokenizerT* out) {
  nlohmann::json storage;
  JsonNode root;
  KES_RETURN_IF_ERROR(hf::OpenJsonObject(folder + "/tokenizer.json", &storage, &root));
  const std::string vocab_path = folder + "/vocabulary.txt";
  std::vector<std::string> pieces;
  const bool has_vocabulary = std::ifstream(vocab_path).good();
  if (has_vocabulary) {
    KES_RETURN_IF_ERROR(ReadLines(vocab_path, &pieces));
    KES_CHECK_OR_RETURN(pieces.size() == vocab_rows, "'" + vocab_path + "': " + Num(pieces.size()) +
                                                         " pieces (expected " + Num(vocab_rows) +
                                                         ", the model's vocabulary)");
  } else {
    KES_RETURN_IF_ERROR(PiecesFromTokenizerJson(root, vocab_rows, &pieces));
  }
  *out = fb::TokenizerT();
  out->kind = fb::TokenizerKind::ByteLevelBpe;
  out->pre = "gpt2";
  out->types.assign(pieces.size(), kNormal);
  out->scores.assign(pieces.size(), 0.0f);
  KES_RETURN_IF_ERROR(ReadModel(root, pieces, out));
  KES_RETURN_IF_ERROR(CheckByteLevel(root));
  out->pieces = std::move(pieces);
  KES_RETURN_IF_ERROR(ReadAddedTokens(root, out));
  for (size_t id = 0; id < out->pieces.size(); ++id) {
    if (IsTimestamp(out->pieces[id])) out->types[id] = kControl;
  }
  out->add_bos = out->add_eos = out->add_space_prefix = false;
  Tokenizer check;
  return TokenizerFromTable(*out, &check)
      .WithContext("'" + (has_vocabulary ? vocab_path : folder + "/tokenizer.json") + "'");
}

}  // namespace kestrel::ct2
