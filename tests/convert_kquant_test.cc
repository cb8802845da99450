// kestrel-convert --weights q4_k_m, q4_k, q5_k, q6_k from an F32 GGUF, end to end:
// - every weight gets the type llama.cpp's quantize tool gives it (checked against a table
//   written out here for the tiny Llama and Qwen2 models, and against the types of the shipped
//   Gemma 3 270M Q4_K_M file, name by name);
// - every quantized weight, read back through the runtime's lookup, has exactly the values of
//   ggml's own quantize -> dequantize of the same F32 tensor (ggml_quantize_chunk via
//   tests/py/ggml_oracle.py);
// - the converted model runs, with finite logits close to the f32 conversion's;
// - rows no K-quant nor its fallback fits give a clear error (q4_k) or F16 (q4_k_m, as llama.cpp).
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "converters/gguf/dequantize.h"
#include "converters/gguf/gguf_file.h"
#include "converters/gguf_import.h"
#include "converters/weight_recipe.h"
#include "runtime/format.h"
#include "runtime/model.h"
#include "tests/support/test_support.h"

namespace kestrel {
namespace {

using test::Describe;
using test::ProcessResult;

// rows of 256 (d_model), 64 (attn_output: 4 heads of 16) and 320 (ffn_down).
constexpr char kKquantSizes[] = "--d-model 256 --ffn 320 --f32";

// The ggml type name of a .kes dtype ("Q8_0" for q8).
std::string GgmlName(fb::DType dtype) {
  std::string name = DTypeName(dtype);
  if (name == "q8" || name == "q4") name += "_0";
  for (char& c : name) c = static_cast<char>(std::toupper(c));
  return name;
}

// The types llama.cpp 0.3.36 gives the tiny models (4 layers: UseMoreBits holds for layers 2
// and 3), worked out by hand from llama_tensor_get_type and tensor_type_fallback.
std::string ExpectedType(const std::string& recipe, const std::string& name, bool tied) {
  const auto has = [&](const char* part) { return name.find(part) != std::string::npos; };
  const bool rows_320 = has("ffn_down"), rows_64 = has("attn_output");
  const bool more_bits = has("blk.2.") || has("blk.3.");
  std::string type;
  if (recipe == "q4_k_m") {
    if (name == "output.weight" || (tied && name == "token_embd.weight"))
      type = "Q6_K";
    else if (has("attn_v") || has("ffn_down"))
      type = more_bits ? "Q6_K" : "Q4_K";
    else
      type = "Q4_K";
  } else {
    type = recipe == "q4_k" ? "Q4_K" : recipe == "q5_k" ? "Q5_K" : "Q6_K";
  }
  if (rows_320 || rows_64) {
    type = type == "Q4_K" ? "Q5_0" : type == "Q5_K" ? "Q5_1" : "Q8_0";
  }
  return type;
}

std::vector<int32_t> Tokens(size_t vocab) {
  std::vector<int32_t> tokens;
  for (int32_t i = 0; i < 24; ++i) tokens.push_back((i * 37 + 11) % static_cast<int32_t>(vocab));
  return tokens;
}

std::vector<float> Score(const Model& model, const std::vector<int32_t>& tokens) {
  std::vector<float> logits;
  EXPECT_EQ(test::ScoreAll(model, tokens, 1, 64, &logits), "");
  return logits;
}

// The importer alone: token_embd.weight stored as dtype.
Status ImportEmbeddingAs(const gguf::File& file, fb::DType dtype) {
  KesModel m;
  uint32_t id;
  const gguf::TensorInfo* embd = file.FindTensor("token_embd.weight");
  return ImportTensor(file, "token_embd.weight", dtype, {embd->ne[1], embd->ne[0]}, &m, &id);
}

// kestrel-convert GGUF KES --weights WEIGHTS, then the model opened.
void ConvertAndOpen(const std::string& gguf, const std::string& kes, const char* weights,
                    std::unique_ptr<Model>* model) {
  const ProcessResult r = test::Convert({gguf, kes, "--weights", weights});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << Describe(r);
  const Status s = Model::Open(kes, model);
  ASSERT_TRUE(s.ok()) << s.message();
}

// Every row of quantized matrix `id`, read back through the runtime's embedding lookup, is
// bit for bit `expected` ([rows, k]).
void ExpectValues(const Model& model, uint32_t id, const std::vector<float>& expected,
                  const char* what) {
  const fb::Tensor* t = model.meta().tensors()->Get(id);
  const size_t rows = t->shape()->Get(0), k = t->shape()->Get(1);
  ASSERT_EQ(expected.size(), rows * k);
  std::vector<int32_t> all(rows);
  for (size_t i = 0; i < rows; ++i) all[i] = static_cast<int32_t>(i);
  const test::LookupFn lookup = test::QuantizedLookup(t->dtype());
  ASSERT_NE(lookup, nullptr);
  std::vector<float> got(rows * k);
  lookup(model.TensorData(id), rows, k, all.data(), rows, 1.0f, got.data());
  EXPECT_EQ(0, std::memcmp(got.data(), expected.data(), got.size() * sizeof(float))) << what;
}

std::string MakeGguf(const std::string& arch, const std::string& sizes,
                     const std::string& stem = "") {
  const std::string path = test::ScratchPath("kquant-" + arch + stem + ".gguf");
  const std::string error = test::RunHostCommand(
      std::string(KESTREL_PYTHON) + " " + KESTREL_SOURCE_DIR + "/tests/py/make_tiny_llama.py " +
      path + " --arch " + arch + " " + sizes);
  EXPECT_EQ(error, "");
  return path;
}

struct Case {
  const char* arch;
  const char* recipe;
};
// How ctest and gtest name a case (instead of its raw bytes).
void PrintTo(const Case& c, std::ostream* os) { *os << c.arch << " --weights " << c.recipe; }

// Against the F32 model whose weights are ggml's quantize -> dequantize, the only difference is
// the int8 activations of the quantized matmuls: 1-2% of the logit range on these random-weight
// models (see tiny_model_logits_test); a wrong layout or kernel errs by the whole range.
constexpr double kLogitTolerance = 0.05;

class ConvertKquant : public ::testing::TestWithParam<Case> {};

TEST_P(ConvertKquant, TypesValuesAndLogits) {
  const Case& c = GetParam();
  const std::string gguf_path = MakeGguf(c.arch, kKquantSizes);
  const std::string kes = test::ScratchPath(std::string("kquant-") + c.recipe + ".kes");
  const std::string f32 = test::ScratchPath("kquant-f32.kes");
  std::unique_ptr<Model> model, reference;
  ASSERT_NO_FATAL_FAILURE(ConvertAndOpen(gguf_path, kes, c.recipe, &model));
  ASSERT_NO_FATAL_FAILURE(ConvertAndOpen(gguf_path, f32, "f32", &reference));
  std::unique_ptr<gguf::File> file;
  ASSERT_TRUE(gguf::File::Open(gguf_path, &file).ok());
  const bool tied = file->FindTensor("output.weight") == nullptr;

  // Each quantized weight's F32 source, and ggml's blocks for it, in one run of the oracle.
  struct Job {
    uint32_t id;
    std::string type, in, out;
  };
  std::vector<Job> jobs;
  std::string list, fake_quant;
  const auto* tensors = model->meta().tensors();
  for (uint32_t id = 0; id < tensors->size(); ++id) {
    const fb::Tensor* t = tensors->Get(id);
    const std::string name = t->name()->str();
    if (t->shape()->size() != 2) {
      EXPECT_EQ(t->dtype(), fb::DType::F32) << name;
      continue;
    }
    EXPECT_EQ(GgmlName(t->dtype()), ExpectedType(c.recipe, name, tied)) << name;
    std::vector<float> source;
    ASSERT_TRUE(gguf::DequantizeTensor(*file->FindTensor(name), &source).ok());
    Job job{id, GgmlName(t->dtype()), test::ScratchPath("kquant-" + name + ".f32"),
            test::ScratchPath("kquant-" + name + ".bin")};
    ASSERT_TRUE(test::WriteRaw(job.in, source));
    list +=
        job.type + " " + std::to_string(t->shape()->Get(1)) + " " + job.in + " " + job.out + "\n";
    jobs.push_back(job);
    fake_quant += name + " " + job.type + "\n";
  }
  const std::string list_path = test::ScratchPath("kquant-jobs.txt");
  ASSERT_TRUE(
      test::WriteBytes(list_path, reinterpret_cast<const uint8_t*>(list.data()), list.size()));
  ASSERT_EQ(test::RunHostCommand(std::string(KESTREL_PYTHON) + " " + KESTREL_SOURCE_DIR +
                                 "/tests/py/ggml_oracle.py batch " + list_path),
            "");
  for (const Job& job : jobs) {
    const fb::Tensor* t = tensors->Get(job.id);
    SCOPED_TRACE(t->name()->str() + " as " + job.type);
    const size_t rows = t->shape()->Get(0), k = t->shape()->Get(1);
    const std::vector<uint8_t> blocks = test::ReadBytes(job.out);
    gguf::GgmlType type = gguf::GgmlType::F32;
    for (gguf::GgmlType g :
         {gguf::GgmlType::Q8_0, gguf::GgmlType::Q4_0, gguf::GgmlType::Q4_1, gguf::GgmlType::Q5_0,
          gguf::GgmlType::Q5_1, gguf::GgmlType::Q4_K, gguf::GgmlType::Q5_K, gguf::GgmlType::Q6_K}) {
      if (job.type == gguf::GgmlTypeName(g)) type = g;
    }
    ASSERT_EQ(blocks.size(), rows * k / gguf::BlockElements(type) * gguf::BlockBytes(type));
    std::vector<float> expected(rows * k);
    ASSERT_TRUE(gguf::DequantizeRow(type, blocks.data(), rows * k, expected.data()).ok());
    ExpectValues(*model, job.id, expected,
                 "the .kes values are not ggml's quantize -> dequantize of the F32 tensor");
    std::remove(job.in.c_str());
    std::remove(job.out.c_str());
  }

  // The same model with every weight quantized and dequantized by ggml, converted as f32.
  const std::string fake_list = test::ScratchPath("kquant-fake-quant.txt");
  ASSERT_TRUE(test::WriteBytes(fake_list, reinterpret_cast<const uint8_t*>(fake_quant.data()),
                               fake_quant.size()));
  const std::string fake_gguf =
      MakeGguf(c.arch, std::string(kKquantSizes) + " --fake-quant " + fake_list, "-fake");
  const std::string fake_kes = test::ScratchPath("kquant-fake.kes");
  std::unique_ptr<Model> fake;
  ASSERT_NO_FATAL_FAILURE(ConvertAndOpen(fake_gguf, fake_kes, "f32", &fake));

  // The K-quants' matmuls get activations with a scale per 256 where their rows allow it
  // (QuantizeRows scale_block 256: ops/matmul_blocks.h PreferredActivationScaleBlock), the
  // others a scale per 32: the FFN's 320-wide input here.
  size_t per_256 = 0, per_32 = 0;
  for (const fb::Plan* plan : *model->meta().plans()) {
    for (const fb::Op* op : *plan->ops()) {
      const fb::QuantizeRows* q = op->params_as_QuantizeRows();
      if (q == nullptr) continue;
      const uint64_t row = plan->buffers()->Get(op->inputs()->Get(0))->row_elems();
      EXPECT_EQ(q->scale_block(), row % 256 == 0 ? 256u : 32u) << "rows of " << row;
      ++(q->scale_block() == 256 ? per_256 : per_32);
    }
  }
  EXPECT_GT(per_256, 0u);
  EXPECT_GT(per_32, 0u);

  const std::vector<int32_t> tokens = Tokens(model->vocab_size());
  const std::vector<float> logits = Score(*model, tokens);
  for (float v : logits) ASSERT_TRUE(std::isfinite(v));
  const size_t vocab = model->vocab_size();
  const double vs_dequantized =
      test::LargestLogitError(logits.data(), Score(*fake, tokens).data(), tokens.size(), vocab);
  const double vs_f32 = test::LargestLogitError(logits.data(), Score(*reference, tokens).data(),
                                                tokens.size(), vocab);
  EXPECT_LT(vs_dequantized, kLogitTolerance);
  std::printf(
      "%s %s: largest logit error %.4f of the range vs ggml-dequantized f32 weights, "
      "%.4f vs the original f32 weights\n",
      c.arch, c.recipe, vs_dequantized, vs_f32);
  for (const std::string& path : {gguf_path, kes, f32, list_path, fake_list, fake_gguf, fake_kes}) {
    std::remove(path.c_str());
  }
}

INSTANTIATE_TEST_SUITE_P(Recipes, ConvertKquant,
                         ::testing::Values(Case{"llama", "q4_k_m"}, Case{"qwen2", "q4_k_m"},
                                           Case{"llama", "q4_k"}, Case{"llama", "q5_k"},
                                           Case{"llama", "q6_k"}),
                         [](const auto& info) {
                           return std::string(info.param.arch) + "_" + info.param.recipe;
                         });

// --weights keep of a GGUF whose matrices of rows of 256 are Q3_K or Q2_K (ggml's own quantizers,
// as llama.cpp's Q3_K_S/M/L and Q2_K mixes hold them; Kestrel has no quantizer for either): the
// tensors stay in their type, read back as exactly the GGUF's values (the embedding lookup, also
// the tied LM head), and the model runs as the F32 model of ggml's quantize -> dequantize of the
// same weights, up to the int8 activations.
struct KeptLowBitCase {
  const char* name;  // ggml's type name
  gguf::GgmlType ggml;
  fb::DType dtype;
};

class ConvertKeepLowBit : public ::testing::TestWithParam<KeptLowBitCase> {};

TEST_P(ConvertKeepLowBit, KeepsGgmlValuesAndRuns) {
  const KeptLowBitCase& c = GetParam();
  const std::string tag = std::string("-") + c.name;
  const std::string f32_gguf = MakeGguf("llama", kKquantSizes);
  std::unique_ptr<gguf::File> source;
  ASSERT_TRUE(gguf::File::Open(f32_gguf, &source).ok());
  std::string list;
  size_t n_low_bit = 0;
  for (const gguf::TensorInfo& t : source->tensors()) {
    if (t.ne.size() == 2 && t.ne[0] % 256 == 0) {
      list += t.name + " " + c.name + "\n";
      ++n_low_bit;
    }
  }
  ASSERT_GE(n_low_bit, 4u) << "token_embd and the attention and FFN inputs have rows of 256";
  const std::string list_path = test::ScratchPath("kquant" + tag + ".txt");
  ASSERT_TRUE(
      test::WriteBytes(list_path, reinterpret_cast<const uint8_t*>(list.data()), list.size()));
  const std::string quant_gguf =
      MakeGguf("llama", std::string(kKquantSizes) + " --ggml-quant " + list_path, tag);
  const std::string fake_gguf =
      MakeGguf("llama", std::string(kKquantSizes) + " --fake-quant " + list_path, tag + "-fake");
  const std::string kes = test::ScratchPath("kquant" + tag + ".kes");
  const std::string fake_kes = test::ScratchPath("kquant" + tag + "-fake.kes");
  std::unique_ptr<Model> model, fake;
  ASSERT_NO_FATAL_FAILURE(ConvertAndOpen(quant_gguf, kes, "keep", &model));
  ASSERT_NO_FATAL_FAILURE(ConvertAndOpen(fake_gguf, fake_kes, "f32", &fake));
  std::unique_ptr<gguf::File> file;
  ASSERT_TRUE(gguf::File::Open(quant_gguf, &file).ok());
  const auto* tensors = model->meta().tensors();
  size_t kept = 0;
  for (uint32_t id = 0; id < tensors->size(); ++id) {
    const fb::Tensor* t = tensors->Get(id);
    const gguf::TensorInfo* info = file->FindTensor(t->name()->str());
    if (info == nullptr || info->type != c.ggml) continue;
    SCOPED_TRACE(t->name()->str());
    ASSERT_EQ(t->dtype(), c.dtype);
    ++kept;
    const size_t rows = t->shape()->Get(0), k = t->shape()->Get(1);
    EXPECT_EQ(t->size(), rows * k / 256 * gguf::BlockBytes(c.ggml)) << "exactly the GGUF's bytes";
    std::vector<float> expected;
    ASSERT_TRUE(gguf::DequantizeTensor(*info, &expected).ok());
    ExpectValues(*model, id, expected, "the .kes values are not the GGUF's");
  }
  EXPECT_EQ(kept, n_low_bit);

  const std::vector<int32_t> tokens = Tokens(model->vocab_size());
  const std::vector<float> logits = Score(*model, tokens);
  for (float v : logits) ASSERT_TRUE(std::isfinite(v));
  const double error = test::LargestLogitError(logits.data(), Score(*fake, tokens).data(),
                                               tokens.size(), model->vocab_size());
  std::printf(
      "llama keep with %s: largest logit error %.4f of the range vs ggml-dequantized "
      "f32 weights\n",
      c.name, error);
  EXPECT_LT(error, kLogitTolerance);

  // Kept, never made: asking the importer for the type from F32 values is a clear error.
  const Status s = ImportEmbeddingAs(*source, c.dtype);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(std::string("no ") + DTypeName(c.dtype) + " quantizer"),
            std::string::npos)
      << s.message();
  for (const std::string& path : {f32_gguf, list_path, quant_gguf, fake_gguf, kes, fake_kes}) {
    std::remove(path.c_str());
  }
}

INSTANTIATE_TEST_SUITE_P(
    Types, ConvertKeepLowBit,
    ::testing::Values(KeptLowBitCase{"Q3_K", gguf::GgmlType::Q3_K, fb::DType::Q3_K},
                      KeptLowBitCase{"Q2_K", gguf::GgmlType::Q2_K, fb::DType::Q2_K}),
    [](const auto& info) { return std::string(info.param.name); });

// Gemma 3 270M is 640 wide, not a multiple of 256: most of its matrices take the fallback. The
// shipped Q4_K_M file (made by llama.cpp from the bf16 checkpoint) shows what llama.cpp chose.
TEST(WeightRecipe, ChoosesTheTypesOfTheShippedGemmaQ4_K_M) {
  std::unique_ptr<gguf::File> file;
  const Status s = gguf::File::Open(KESTREL_MODEL_GGUF, &file);
  ASSERT_TRUE(s.ok()) << s.message() << "\nrun scripts/fetch-model.sh";
  std::map<std::string, gguf::GgmlType> types;
  ASSERT_TRUE(ChooseWeightTypes(*file, WeightRecipe::kQ4_K_M, &types).ok());
  std::map<std::string, int> counts;
  for (const gguf::TensorInfo& t : file->tensors()) {
    const auto chosen = types.find(t.name);
    if (chosen == types.end()) {  // not quantized: the 1-D norms
      EXPECT_EQ(t.ne.size(), 1u) << t.name;
      continue;
    }
    EXPECT_STREQ(gguf::GgmlTypeName(chosen->second), gguf::GgmlTypeName(t.type)) << t.name;
    ++counts[gguf::GgmlTypeName(t.type)];
  }
  // token_embd and 9 attn_v (Q6_K, rows of 640) as Q8_0; 9 ffn_down Q6_K; attn_output and the
  // other ffn_down Q4_K; attn_q/k, the other attn_v, ffn_gate/up Q5_0 (Q4_K's fallback).
  EXPECT_EQ(counts,
            (std::map<std::string, int>{{"Q8_0", 10}, {"Q6_K", 9}, {"Q4_K", 27}, {"Q5_0", 81}}));
}

TEST(WeightRecipe, UseMoreBitsAsLlamaCpp) {
  // 18 layers (Gemma 3 270M): the first and last eighth (0, 1, 15, 16, 17) and every third.
  std::vector<int> more;
  for (int i = 0; i < 18; ++i) {
    if (UseMoreBits(i, 18)) more.push_back(i);
  }
  EXPECT_EQ(more, (std::vector<int>{0, 1, 4, 7, 10, 13, 15, 16, 17}));
}

// Rows of 48: neither Q4_K (256) nor its fallback Q5_0 (32) fits.
TEST(ConvertKquantBadInput, RowsNoTypeFitsAreAnErrorForQ4_KAndF16ForQ4_K_M) {
  const std::string gguf_path = MakeGguf("llama", "--d-model 48 --f32");
  const std::string kes = test::ScratchPath("kquant-d48.kes");
  ProcessResult r = test::Convert({gguf_path, kes, "--weights", "q4_k"});
  ASSERT_TRUE(r.exited && r.exit_code == 1) << Describe(r);
  EXPECT_EQ(r.err.find("kestrel-convert: error: "), 0u) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "expected one line: " << r.err;
  for (const char* part : {"tensor '", "rows of 48 elements", "Q4_K", "blocks of 256",
                           "blocks of 32", "--weights q4_k_m"}) {
    EXPECT_NE(r.err.find(part), std::string::npos) << part << " in " << r.err;
  }
  EXPECT_FALSE(test::Exists(kes));

  r = test::Convert({gguf_path, kes, "--weights", "q4_k_m"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << Describe(r);
  std::unique_ptr<Model> model;
  ASSERT_TRUE(Model::Open(kes, &model).ok());
  const auto* tensors = model->meta().tensors();
  for (uint32_t id = 0; id < tensors->size(); ++id) {
    const fb::Tensor* t = tensors->Get(id);
    if (t->shape()->size() == 2 && t->shape()->Get(1) == 48) {
      EXPECT_EQ(t->dtype(), fb::DType::F16) << t->name()->str();
    }
  }
  for (float v : Score(*model, Tokens(model->vocab_size()))) ASSERT_TRUE(std::isfinite(v));

  // The importer itself refuses a K-quant for rows it cannot hold.
  std::unique_ptr<gguf::File> file;
  ASSERT_TRUE(gguf::File::Open(gguf_path, &file).ok());
  const Status s = ImportEmbeddingAs(*file, fb::DType::Q6_K);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("rows of 48 elements cannot be stored as q6_k (blocks of 256)"),
            std::string::npos)
      << s.message();
  std::remove(gguf_path.c_str());
  std::remove(kes.c_str());
}

}  // namespace
}  // namespace kestrel
