// bench/real_shape_gguf.py, the writer of random-weight GGUFs at real model shapes, on its
// smallest Llama 3-like shape (tiny-llama3: a vocabulary padded past the copied tokenizer's and
// the llama3 RoPE scaling's rope_freqs, the two things the real Llama 3 shapes add), F16 only so
// that no llama-quantize is needed: the file has the promised layout, Kestrel converts it and
// runs it, and a second run reuses it.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cstdio>
#include <string>

#include "tests/support/test_support.h"

namespace kestrel {
namespace {

using test::Describe;
using test::ProcessResult;

// The file's layout, checked with gguf-py (the reader llama.cpp's own scripts use).
constexpr char kCheckLayout[] = R"PY(
import sys, gguf, numpy as np
r = gguf.GGUFReader(sys.argv[1])
f = r.fields
field = f["tokenizer.ggml.tokens"]
tokens = [bytes(field.parts[i]).decode() for i in field.data]
types = list(f["tokenizer.ggml.token_type"].contents())
assert len(tokens) == 49408 == len(types), len(tokens)
assert tokens[49152] == "<|pad_49152|>" and tokens[-1] == "<|pad_49407|>", tokens[-1]
assert types[49152] == types[-1] == 5, types[-1]  # UNUSED
assert tokens[1] == "<|im_start|>" and types[1] == 3, tokens[1]  # SmolLM2's, copied
t = {x.name: x for x in r.tensors}
assert len(t) == 1 + 1 + 2 * 9 + 1, sorted(t)  # rope_freqs, embedding, 2 layers, output_norm
assert "output.weight" not in t  # tied
emb = t["token_embd.weight"]
assert emb.tensor_type == gguf.GGMLQuantizationType.F16 and list(emb.shape) == [256, 49408]
std = float(np.asarray(emb.data, dtype=np.float32).std())
assert 0.019 < std < 0.021, std
assert list(t["blk.1.attn_k.weight"].shape) == [256, 128]  # 2 KV heads of 64
assert list(t["blk.0.ffn_down.weight"].shape) == [512, 256]
assert float(np.asarray(t["blk.0.attn_norm.weight"].data).min()) == 1.0
rope = np.asarray(t["rope_freqs.weight"].data)
assert rope.shape == (32,) and rope[0] == 1.0 and rope[-1] == 32.0, rope  # llama3, factor 32
assert f["llama.rope.freq_base"].contents() == 500000.0
)PY";

std::string MakeShape(const std::string& out_dir) {
  return test::RunHostCommand(std::string(KESTREL_PYTHON) + " " + KESTREL_SOURCE_DIR +
                              "/bench/real_shape_gguf.py --shapes tiny-llama3 --types f16 "
                              "--out-dir " +
                              out_dir + " > " + out_dir + ".paths");
}

// `gguf` converts to `kes` (weights kept), and `kestrel bench` runs that.
void ExpectConvertsAndBenches(const std::string& gguf, const std::string& kes) {
  const ProcessResult convert = test::Convert({gguf, kes, "--weights", "keep"});
  ASSERT_TRUE(convert.exited && convert.exit_code == 0) << Describe(convert);
  const ProcessResult bench =
      test::Cli({"bench", kes, "-p", "8", "-n", "2", "-t", "1", "-r", "1", "--json"});
  ASSERT_TRUE(bench.exited && bench.exit_code == 0) << Describe(bench);
  EXPECT_NE(bench.out.find("\"tokens_per_second\""), std::string::npos) << bench.out;
}

double ModifiedTime(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return -1;
  return static_cast<double>(st.st_mtim.tv_sec) + 1e-9 * st.st_mtim.tv_nsec;
}

TEST(RealShapeGguf, WritesTheShapeKestrelRunsItAndASecondRunReusesIt) {
  const std::string dir = test::ScratchPath("real-shapes");
  const std::string gguf = dir + "/tiny-llama3.F16.gguf", kes = dir + "/tiny-llama3.kes";
  ASSERT_EQ(MakeShape(dir), "");
  const std::vector<uint8_t> paths = test::ReadBytes(dir + ".paths");
  EXPECT_EQ(std::string(paths.begin(), paths.end()), gguf + "\n");

  const std::string check = dir + "/check_layout.py";
  ASSERT_TRUE(test::WriteBytes(check, reinterpret_cast<const uint8_t*>(kCheckLayout),
                               sizeof(kCheckLayout) - 1));
  EXPECT_EQ(test::RunHostCommand(std::string(KESTREL_PYTHON) + " " + check + " " + gguf), "");

  ASSERT_NO_FATAL_FAILURE(ExpectConvertsAndBenches(gguf, kes));
  // The copied tokenizer works: SmolLM2-135M-Instruct's own ids for this text.
  const ProcessResult ids = test::Cli({"tokenize", kes, "-p", "Hello world", "--ids"});
  ASSERT_TRUE(ids.exited && ids.exit_code == 0) << Describe(ids);
  EXPECT_EQ(ids.out, "[19556, 905]\n");

  const double first = ModifiedTime(gguf);
  ASSERT_EQ(MakeShape(dir), "");
  EXPECT_EQ(ModifiedTime(gguf), first) << "the second run wrote " << gguf << " again";

  for (const std::string& path : {gguf, kes, check, dir + ".paths"}) std::remove(path.c_str());
  ::rmdir(dir.c_str());
}

// bench/gguf_skeleton.py carries such a file to a machine without network in megabytes: the
// expanded file has the original's size, header and tensor table, every tensor filled with its
// type's sample, and Kestrel converts and runs it as it does the original.
constexpr char kCheckExpanded[] = R"PY(
import sys, gguf
a, b = gguf.GGUFReader(sys.argv[1]), gguf.GGUFReader(sys.argv[2])
assert open(sys.argv[1], "rb").read(a.data_offset) == open(sys.argv[2], "rb").read(b.data_offset)
ta, tb = {t.name: t for t in a.tensors}, {t.name: t for t in b.tensors}
assert sorted(ta) == sorted(tb), sorted(tb)
seen = {}
for t in a.tensors:
    u = tb[t.name]
    assert (u.tensor_type, list(u.shape), u.data_offset) == (t.tensor_type, list(t.shape), t.data_offset)
    # The sample: 256 blocks of the first tensor of each type, repeated.
    n = 256 * gguf.GGML_QUANT_SIZES[t.tensor_type][1]
    sample = seen.setdefault(t.tensor_type, bytes(t.data.tobytes()[:n]))
    got = bytes(u.data.tobytes()[:2 * n])
    assert got == (sample * (len(got) // len(sample) + 1))[:len(got)], t.name
)PY";

TEST(RealShapeGguf, ASkeletonExpandsToAFileOfTheSameShapeThatRuns) {
  const std::string dir = test::ScratchPath("skeleton");
  const std::string gguf = dir + "/tiny-llama3.F16.gguf", skeleton = dir + "/tiny.skel";
  const std::string expanded = dir + "/expanded.gguf", kes = dir + "/expanded.kes";
  ASSERT_EQ(MakeShape(dir), "");
  const std::string script =
      std::string(KESTREL_PYTHON) + " " + KESTREL_SOURCE_DIR + "/bench/gguf_skeleton.py ";
  ASSERT_EQ(test::RunHostCommand(script + "shrink " + gguf + " " + skeleton + " > /dev/null"), "");
  // Expanding needs no package: the interpreter alone, isolated from site-packages.
  ASSERT_EQ(test::RunHostCommand(std::string(KESTREL_PYTHON) + " -I -S " + KESTREL_SOURCE_DIR +
                                 "/bench/gguf_skeleton.py expand " + skeleton + " " + expanded +
                                 " > /dev/null"),
            "");
  EXPECT_LT(test::ReadBytes(skeleton).size(), test::ReadBytes(gguf).size() / 4);
  EXPECT_EQ(test::ReadBytes(expanded).size(), test::ReadBytes(gguf).size());

  const std::string check = dir + "/check_expanded.py";
  ASSERT_TRUE(test::WriteBytes(check, reinterpret_cast<const uint8_t*>(kCheckExpanded),
                               sizeof(kCheckExpanded) - 1));
  EXPECT_EQ(
      test::RunHostCommand(std::string(KESTREL_PYTHON) + " " + check + " " + gguf + " " + expanded),
      "");
  ASSERT_NO_FATAL_FAILURE(ExpectConvertsAndBenches(expanded, kes));

  for (const std::string& path : {gguf, skeleton, expanded, kes, check, dir + ".paths"}) {
    std::remove(path.c_str());
  }
  ::rmdir(dir.c_str());
}

}  // namespace
}  // namespace kestrel
