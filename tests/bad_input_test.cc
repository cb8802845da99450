// Bad input gets a clear error, never a crash (design.md principle 3: the file is untrusted).
//
// A tiny random-weight Gemma 3 (tests/py/make_tiny_gemma3.py, converted with kestrel-convert) is
// broken in every way we can think of: missing, empty, truncated at every length, wrong magic or
// version, random bytes flipped in its FlatBuffer, and semantic corruptions written back through
// the object API (bad offsets, sizes, shapes, dtypes, op codes, ids, arena ranges, plans,
// tokenizer). Through the API each must give a Status naming the problem; through the CLI exit
// code 1 (not a signal) with "kestrel: error: ..." as the only line on stderr (usage errors may
// add the usage text after it). Bad flags, prompts longer than the context and out-of-range
// token ids are covered the same way. Build with -DKESTREL_SANITIZE=ON too: there a read out of
// bounds is a crash, and the CLI runs are sanitized as well.
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "converters/gguf/gguf_file.h"
#include "converters/kes_model.h"
#include "runtime/format.h"
#include "runtime/generate.h"
#include "runtime/memory_plan.h"
#include "runtime/model.h"
#include "runtime/session.h"
#include "tests/support/test_support.h"
#include "tests/support/tiny_model_test.h"

namespace kestrel {
namespace {

using namespace test;  // NOLINT: the shared test helpers

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    lines.push_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  return lines;
}

enum class Usage { kNo, kAllowed };

// Exit code 1 from the program itself, stderr "<tool>: error: ..." naming every keyword on its
// first line, and nothing else on stderr but, for usage errors, the usage text.
::testing::AssertionResult IsCleanError(const ProcessResult& r, const std::string& tool,
                                        const std::vector<std::string>& keywords,
                                        Usage usage = Usage::kNo) {
  if (!r.exited || r.exit_code != 1) {
    return ::testing::AssertionFailure() << "expected exit code 1, got " << Describe(r);
  }
  const std::vector<std::string> lines = Lines(r.err);
  const std::string prefix = tool + ": error: ";
  if (lines.empty() || lines[0].compare(0, prefix.size(), prefix) != 0) {
    return ::testing::AssertionFailure()
           << "stderr does not start with '" << prefix << "': " << Describe(r);
  }
  for (const std::string& k : keywords) {
    if (lines[0].find(k) == std::string::npos) {
      return ::testing::AssertionFailure() << "error does not mention '" << k << "': " << lines[0];
    }
  }
  const bool usage_follows =
      usage == Usage::kAllowed && lines.size() > 1 && lines[1].compare(0, 7, "usage: ") == 0;
  if (lines.size() != 1 && !usage_follows) {
    return ::testing::AssertionFailure() << "expected one line on stderr: " << Describe(r);
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult Succeeded(const ProcessResult& r) {
  if (r.exited && r.exit_code == 0 && r.err.find("error") == std::string::npos) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << Describe(r);
}

::testing::AssertionResult FailsWith(const Status& s, const std::vector<std::string>& keywords) {
  if (s.ok()) return ::testing::AssertionFailure() << "expected an error, got ok";
  if (s.message().find('\n') != std::string::npos) {
    return ::testing::AssertionFailure() << "message spans several lines: " << s.message();
  }
  for (const std::string& k : keywords) {
    if (s.message().find(k) == std::string::npos) {
      return ::testing::AssertionFailure()
             << "message does not mention '" << k << "': " << s.message();
    }
  }
  return ::testing::AssertionSuccess() << s.message();
}

// A 64-byte aligned copy of exactly `size` bytes: the sanitizers flag any read past its end.
class ExactCopy {
 public:
  ExactCopy(const uint8_t* data, size_t size) : size_(size) {
    void* p = nullptr;
    if (posix_memalign(&p, kKesAlignment, size > 0 ? size : 1) != 0) std::abort();
    if (size > 0) std::memcpy(p, data, size);
    data_ = static_cast<uint8_t*>(p);
  }
  ~ExactCopy() { std::free(data_); }
  ExactCopy(const ExactCopy&) = delete;
  ExactCopy& operator=(const ExactCopy&) = delete;
  uint8_t* data() { return data_; }
  size_t size() const { return size_; }

 private:
  uint8_t* data_;
  size_t size_;
};

// A model over its own exact copy of the bytes, which it borrows (declared first: freed last).
struct CopiedModel {
  std::unique_ptr<ExactCopy> bytes;
  std::unique_ptr<Model> model;
};

Status OpenFromBytes(const uint8_t* data, size_t size, CopiedModel* out) {
  out->model.reset();
  out->bytes = std::make_unique<ExactCopy>(data, size);
  return Model::FromMemory(out->bytes->data(), size, &out->model);
}

uint32_t MetadataSize(const std::vector<uint8_t>& file) {
  uint32_t size;
  std::memcpy(&size, file.data() + 12, 4);
  return size;
}

// Runs a model that loaded: a session, a prompt prefilled in two chunks' worth of tokens and a
// few greedy tokens. Whatever the numbers, it must not crash. Returns false when the session
// could not be made (a clean error is fine too).
bool Exercise(const Model& model, size_t threads) {
  MemoryPlan memory;
  const size_t ctx = std::min<size_t>(40, model.hparams().context_length());
  // A corrupted file may legally ask for a huge arena; allocating it proves nothing here.
  if (!PlanMemory(model, ctx, &memory).ok() || memory.arena_bytes > (size_t{256} << 20)) {
    return false;
  }
  SessionOptions options;
  options.context_length = ctx;
  options.n_threads = threads;
  std::unique_ptr<Session> session;
  if (!Session::Create(model, options, &session).ok()) return false;
  std::vector<int32_t> prompt(std::min<size_t>(12, ctx));
  for (size_t i = 0; i < prompt.size(); ++i) {
    prompt[i] = static_cast<int32_t>((i * 37 + 2) % model.vocab_size());
  }
  GenerateOptions gen;
  gen.max_new_tokens = 6;
  GenerateStats stats;
  (void)Generate(*session, prompt.data(), prompt.size(), gen, nullptr, nullptr, &stats);
  return true;
}

// ---------------------------------------------------------------------------------------------
class TinyModelTest : public TinyModelSuite {
 protected:
  const std::string& kes() const { return tiny_->kes; }
  const std::vector<uint8_t>& bytes() const { return tiny_->bytes; }
  std::unique_ptr<Model> OpenTiny() const {
    std::unique_ptr<Model> model;
    Status s = Model::Open(tiny_->kes, &model);
    EXPECT_TRUE(s.ok()) << s.message();
    return model;
  }
};

// ---------------------------------------------------------------------------------------------
// The tiny model itself works: generator, converter, inspect and run, for every weight dtype.

using TinyGgufTest = TinyModelTest;

TEST_F(TinyGgufTest, IsDeterministicPerSeedAndMixesWeightTypes) {
  const std::string again = ScratchPath("seed1.gguf"), other = ScratchPath("seed2.gguf");
  ASSERT_EQ(MakeTinyGguf(again, 1), "");
  ASSERT_EQ(MakeTinyGguf(other, 2), "");
  const std::vector<uint8_t> reference = ReadBytes(tiny_->gguf);
  EXPECT_TRUE(ReadBytes(again) == reference) << "same seed, different bytes";
  EXPECT_FALSE(ReadBytes(other) == reference) << "different seeds, same bytes";
  std::remove(again.c_str());
  std::remove(other.c_str());

  std::unique_ptr<gguf::File> file;
  Status s = gguf::File::Open(tiny_->gguf, &file);
  ASSERT_TRUE(s.ok()) << s.message();
  std::string arch;
  ASSERT_TRUE(file->GetString("general.architecture", &arch).ok());
  EXPECT_EQ(arch, "gemma3");
  EXPECT_EQ(file->tensors().size(), 2u + 6u * 13u);
  using T = gguf::GgmlType;
  for (T type : {T::F32, T::F16, T::BF16, T::Q8_0, T::Q4_0, T::Q4_1, T::Q5_0, T::Q5_1}) {
    size_t count = 0;
    for (const gguf::TensorInfo& t : file->tensors()) count += t.type == type;
    EXPECT_GT(count, 0u) << "no tensor of type " << gguf::GgmlTypeName(type);
  }
}

class TinyRunTest : public TinyModelTest, public ::testing::WithParamInterface<const char*> {};

TEST_P(TinyRunTest, ConvertsInspectsAndRuns) {
  const std::string dtype = GetParam();
  const std::string out = ScratchPath("positive-" + dtype + ".kes");
  const ProcessResult convert = Convert({tiny_->gguf, out, "--weights", dtype});
  ASSERT_TRUE(Succeeded(convert));
  EXPECT_NE(convert.out.find("wrote"), std::string::npos) << convert.out;

  const ProcessResult inspect = Cli({"inspect", out});
  EXPECT_TRUE(Succeeded(inspect));
  EXPECT_NE(inspect.out.find("gemma3"), std::string::npos) << inspect.out;
  EXPECT_NE(inspect.out.find("6 (5 sliding-window of 8 tokens, 1 global)"), std::string::npos)
      << inspect.out;
  EXPECT_NE(inspect.out.find("  " + dtype + " "), std::string::npos)
      << "no " << dtype << " tensors listed:\n"
      << inspect.out;

  // Two thread counts, a prefill and a decode test each, in JSON.
  const ProcessResult bench =
      Cli({"bench", out, "-p", "24", "-n", "12", "-t", "1,2", "-r", "2", "--json"});
  EXPECT_TRUE(Succeeded(bench));
  size_t rows = 0;
  for (size_t at = 0; (at = bench.out.find("\"tokens_per_second\"", at)) != std::string::npos;
       ++at) {
    ++rows;
  }
  EXPECT_EQ(rows, 4u) << bench.out;
  const std::vector<std::string> keys = {"\"test\": \"pp24\"",
                                         "\"test\": \"tg12\"",
                                         "\"ttft_ms\"",
                                         "\"p99\"",
                                         "\"peak_rss_bytes\"",
                                         "\"target\"",
                                         "\"weights\": \"" + dtype + "\""};
  for (const std::string& key : keys) {
    EXPECT_NE(bench.out.find(key), std::string::npos) << key << " missing:\n" << bench.out;
  }

  // 20 tokens pass the sliding window of 8 several times, so the rings wrap.
  const ProcessResult run = Cli({"run", out, "-p", "hello world", "-n", "20", "--temp", "0"});
  EXPECT_TRUE(Succeeded(run));
  EXPECT_EQ(run.out.compare(0, 11, "hello world"), 0) << run.out;
  EXPECT_NE(run.err.find("prefill: "), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("decode: "), std::string::npos) << run.err;
  EXPECT_NE(run.err.find(" tokens/s)"), std::string::npos) << run.err;
  std::remove(out.c_str());
}

INSTANTIATE_TEST_SUITE_P(WeightDtypes, TinyRunTest,
                         ::testing::Values("f32", "f16", "bf16", "q8", "q4"));

// ---------------------------------------------------------------------------------------------
// Files that are not .kes models.

using KesFileTest = TinyModelTest;

TEST_F(KesFileTest, MissingFileDirectoryAndEmptyFile) {
  const std::string missing = ScratchPath("does-not-exist.kes");
  std::unique_ptr<Model> model;
  EXPECT_TRUE(FailsWith(Model::Open(missing, &model), {"cannot open", missing}));
  EXPECT_TRUE(IsCleanError(Cli({"run", missing, "-p", "hi"}), "kestrel", {"cannot open"}));
  EXPECT_TRUE(IsCleanError(Cli({"inspect", missing}), "kestrel", {"cannot open"}));

  const std::string dir = TmpPath("");
  EXPECT_TRUE(FailsWith(Model::Open(dir, &model), {"not a regular file"}));
  EXPECT_TRUE(IsCleanError(Cli({"run", dir, "-p", "hi"}), "kestrel", {"not a regular file"}));

  const std::string empty = ScratchPath("empty.kes");
  ASSERT_TRUE(WriteBytes(empty, nullptr, 0)) << empty;
  EXPECT_TRUE(FailsWith(Model::Open(empty, &model), {"not a .kes file", "found 0"}));
  EXPECT_TRUE(IsCleanError(Cli({"inspect", empty}), "kestrel", {"not a .kes file"}));
  std::remove(empty.c_str());

  EXPECT_TRUE(FailsWith(Model::FromMemory(nullptr, 100, &model), {"null"}));
  EXPECT_TRUE(FailsWith(Model::FromMemory(nullptr, 0, &model), {"not a .kes file"}));
  ExactCopy copy(bytes().data(), bytes().size());
  EXPECT_TRUE(FailsWith(Model::FromMemory(copy.data() + 8, bytes().size() - 8, &model),
                        {"64-byte aligned"}));
  EXPECT_EQ(model, nullptr);
}

// A file of 3 GiB (sparse: it takes no disk) is more than a 32-bit board can map: a clear error
// there, not a failed stat or a wrapped size. There it starts as a .kes file does (the magic is
// read before mapping); a 64-bit build maps it and finds no .kes magic.
TEST_F(KesFileTest, LargerThanTheAddressSpace) {
  const std::string path = ScratchPath("huge.kes");
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(fd, 0) << path;
  if (sizeof(size_t) == 4) {
    uint8_t preamble[kKesPreambleBytes] = {};
    std::memcpy(preamble, kKesMagic, sizeof(kKesMagic));
    const uint32_t version = kKesFormatVersion;
    std::memcpy(preamble + 8, &version, 4);
    ASSERT_EQ(::write(fd, preamble, sizeof(preamble)), static_cast<ssize_t>(sizeof(preamble)));
  }
  const off_t size = off_t{3} << 30;
  static_assert(sizeof(off_t) == 8, "build with _FILE_OFFSET_BITS=64");
  const bool sized = ::ftruncate(fd, size) == 0;
  ::close(fd);
  ASSERT_TRUE(sized) << "cannot make a sparse 3 GiB file at " << path;
  std::unique_ptr<Model> model;
  if (sizeof(size_t) == 4) {
    EXPECT_TRUE(FailsWith(Model::Open(path, &model),
                          {"3221225472 bytes", "more than this platform can map"}));
    EXPECT_TRUE(
        IsCleanError(Cli({"inspect", path}), "kestrel", {"more than this platform can map"}));
  } else {
    EXPECT_TRUE(FailsWith(Model::Open(path, &model), {"not a .kes file"}));
  }
  EXPECT_EQ(model, nullptr);
  std::remove(path.c_str());
}

TEST_F(KesFileTest, WrongMagicOrVersion) {
  std::vector<uint8_t> file = bytes();
  file[0] = 'X';
  CopiedModel model;
  EXPECT_TRUE(FailsWith(OpenFromBytes(file.data(), file.size(), &model), {"wrong magic"}));
  const std::string path = ScratchPath("magic.kes");
  ASSERT_TRUE(WriteBytes(path, file.data(), file.size())) << path;
  EXPECT_TRUE(IsCleanError(Cli({"run", path, "-p", "hi"}), "kestrel", {"wrong magic"}));

  // A GGUF handed to the runtime is the likeliest mix-up.
  EXPECT_TRUE(IsCleanError(Cli({"inspect", tiny_->gguf}), "kestrel", {"not a .kes file"}));

  file = bytes();
  const uint32_t version = kKesFormatVersion + 1;
  std::memcpy(file.data() + 8, &version, 4);
  EXPECT_TRUE(FailsWith(OpenFromBytes(file.data(), file.size(), &model),
                        {"format version", "expected " + std::to_string(kKesFormatVersion),
                         "found " + std::to_string(kKesFormatVersion + 1)}));
  ASSERT_TRUE(WriteBytes(path, file.data(), file.size())) << path;
  EXPECT_TRUE(IsCleanError(Cli({"inspect", path}), "kestrel", {"format version"}));

  // A file from an older Kestrel (format version 1: positional op arguments) asks for a
  // re-conversion instead of failing somewhere inside the plan.
  file = bytes();
  const uint32_t old_version = 1;
  std::memcpy(file.data() + 8, &old_version, 4);
  EXPECT_TRUE(FailsWith(OpenFromBytes(file.data(), file.size(), &model),
                        {"format version 1", "older Kestrel", "convert the model again"}));
  ASSERT_TRUE(WriteBytes(path, file.data(), file.size())) << path;
  EXPECT_TRUE(IsCleanError(Cli({"run", path, "-p", "hi"}), "kestrel", {"convert the model again"}));

  // The preamble's metadata size larger than the file.
  file = bytes();
  const uint32_t huge = 0xFFFFFFF0u;
  std::memcpy(file.data() + 12, &huge, 4);
  EXPECT_TRUE(FailsWith(OpenFromBytes(file.data(), file.size(), &model), {"truncated"}));
  std::remove(path.c_str());
}

TEST_F(KesFileTest, TruncatedAtAnyLengthFailsCleanly) {
  const std::vector<uint8_t>& file = bytes();
  const size_t metadata_end = kKesPreambleBytes + MetadataSize(file);
  const size_t weights_offset = fb::GetModel(file.data() + kKesPreambleBytes)->weights_offset();
  std::vector<size_t> lengths;
  // Every length through the preamble and the first 2 KiB, then a stride through the metadata.
  for (size_t n = 0; n < metadata_end + 128; n += n < 2048 ? 1 : 7) lengths.push_back(n);
  for (size_t k = 0; k < 32; ++k) {
    lengths.push_back(weights_offset + k * (file.size() - weights_offset) / 32);
  }
  lengths.push_back(file.size() - 1);
  size_t failures = 0;
  for (size_t n : lengths) {
    CopiedModel model;
    const Status s = OpenFromBytes(file.data(), n, &model);
    const char* expected = n < kKesPreambleBytes ? "not a .kes file" : "truncated";
    EXPECT_TRUE(FailsWith(s, {expected})) << "truncated to " << n << " bytes";
    failures += !s.ok();
  }
  EXPECT_EQ(failures, lengths.size());

  // The same through files and the CLI, at a few lengths.
  const std::string path = ScratchPath("truncated.kes");
  for (size_t n :
       {size_t{10}, size_t{100}, metadata_end - 1, weights_offset + 1000, file.size() - 1}) {
    ASSERT_TRUE(WriteBytes(path, file.data(), n)) << path;
    std::unique_ptr<Model> model;
    EXPECT_TRUE(FailsWith(Model::Open(path, &model), {path})) << n << " bytes";
    EXPECT_TRUE(IsCleanError(Cli({"run", path, "-p", "hi", "-n", "2"}), "kestrel", {}))
        << n << " bytes";
  }
  std::remove(path.c_str());
}

// The preamble agrees with a truncated FlatBuffer, so the verifier itself sees it cut short.
// (Weights left out: a cut that happened to verify would still lack them.)
TEST_F(KesFileTest, TruncatedMetadataFailsVerification) {
  const std::vector<uint8_t>& file = bytes();
  const uint32_t fb_size = MetadataSize(file);
  size_t failed_verification = 0, trials = 0;
  for (uint32_t n = 0; n < fb_size; n += n < 512 ? 1 : 5) {
    std::vector<uint8_t> cut(file.begin(), file.begin() + kKesPreambleBytes + n);
    std::memcpy(cut.data() + 12, &n, 4);
    CopiedModel model;
    const Status s = OpenFromBytes(cut.data(), cut.size(), &model);
    ++trials;
    EXPECT_TRUE(FailsWith(s, {})) << "metadata cut to " << n << " bytes";
    failed_verification += s.message().find("FlatBuffer failed verification") != std::string::npos;
  }
  // Only cutting alignment padding off the end could leave a buffer that still verifies.
  EXPECT_GE(failed_verification + 8, trials);
}

TEST_F(KesFileTest, FlippedMetadataBytesNeverCrash) {
  const std::vector<uint8_t>& file = bytes();
  const uint32_t fb_size = MetadataSize(file);
  std::mt19937 rng(20240611);
  const std::string path = ScratchPath("flipped.kes");
  size_t failed = 0, loaded = 0, ran = 0, cli_runs = 0;
  constexpr int kTrials = 400;
  for (int trial = 0; trial < kTrials; ++trial) {
    std::vector<uint8_t> corrupt(file);
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) {
      corrupt[kKesPreambleBytes + rng() % fb_size] ^= static_cast<uint8_t>(1 + rng() % 255);
    }
    CopiedModel model;
    const Status s = OpenFromBytes(corrupt.data(), corrupt.size(), &model);
    if (s.ok()) {
      ++loaded;
      ran += Exercise(*model.model, 1 + trial % 2);
    } else {
      ++failed;
      EXPECT_TRUE(FailsWith(s, {})) << "trial " << trial;
    }
    // A few through the CLI: a clean run or a clean one-line error.
    if (trial % 40 == 0) {
      ASSERT_TRUE(WriteBytes(path, corrupt.data(), corrupt.size())) << path;
      const ProcessResult r =
          Cli({"run", path, "-p", "hello", "-n", "4", "--temp", "0", "--ctx", "32"});
      ++cli_runs;
      if (s.ok()) {
        EXPECT_TRUE(r.exited && (r.exit_code == 0 || IsCleanError(r, "kestrel", {})))
            << "trial " << trial << ": " << Describe(r);
      } else {
        EXPECT_TRUE(IsCleanError(r, "kestrel", {})) << "trial " << trial;
      }
    }
  }
  std::remove(path.c_str());
  std::printf("%d trials: %zu rejected, %zu loaded (%zu of them ran), %zu through the CLI\n",
              kTrials, failed, loaded, ran, cli_runs);
  // Both outcomes must occur, or the trials test less than they seem to.
  EXPECT_GT(failed, 0u);
  EXPECT_GT(ran, 0u);
}

// ---------------------------------------------------------------------------------------------
// Semantic corruption: a well-formed FlatBuffer that says something impossible.

struct Unpacked {
  std::unique_ptr<fb::ModelT> meta;
  std::vector<uint8_t> blob;  // the original weight blob
};

Unpacked Unpack(const std::vector<uint8_t>& file) {
  const fb::Model* model = fb::GetModel(file.data() + kKesPreambleBytes);
  Unpacked u;
  u.meta.reset(model->UnPack());
  u.blob.assign(file.begin() + model->weights_offset(),
                file.begin() + model->weights_offset() + model->weights_size());
  return u;
}

// kestrel::WriteKes with the original tensor bytes. It recomputes tensor offsets and sizes and
// the weights' place, so those are corrupted with WriteRaw instead.
Status WriteWithWriteKes(Unpacked u, const std::function<void(fb::ModelT&)>& corrupt,
                         const std::string& path) {
  KesModel model;
  for (const auto& t : u.meta->tensors) {
    model.tensor_bytes.emplace_back(u.blob.begin() + t->offset,
                                    u.blob.begin() + t->offset + t->size);
  }
  corrupt(*u.meta);
  model.meta = std::move(*u.meta);
  return WriteKes(&model, path);
}

// Preamble, FlatBuffer and the original blob, with the metadata exactly as given (except
// weights_offset, placed after the FlatBuffer unless keep_weights_offset).
Status WriteRaw(Unpacked u, const std::function<void(fb::ModelT&)>& corrupt,
                const std::string& path, bool keep_weights_offset) {
  corrupt(*u.meta);
  flatbuffers::FlatBufferBuilder builder;
  builder.Finish(fb::Model::Pack(builder, u.meta.get()), fb::ModelIdentifier());
  const uint64_t blob_at = AlignUp(kKesPreambleBytes + builder.GetSize(), kKesAlignment);
  if (!keep_weights_offset) {
    u.meta->weights_offset = blob_at;
    builder.Clear();
    builder.Finish(fb::Model::Pack(builder, u.meta.get()), fb::ModelIdentifier());
  }
  std::vector<uint8_t> file(blob_at + u.blob.size(), 0);
  const uint32_t version = kKesFormatVersion, size = builder.GetSize();
  std::memcpy(file.data(), kKesMagic, sizeof(kKesMagic));
  std::memcpy(file.data() + 8, &version, 4);
  std::memcpy(file.data() + 12, &size, 4);
  std::memcpy(file.data() + kKesPreambleBytes, builder.GetBufferPointer(), size);
  std::copy(u.blob.begin(), u.blob.end(), file.begin() + blob_at);
  if (!WriteBytes(path, file.data(), file.size())) return Status::Error("cannot write " + path);
  return OkStatus();
}

// Lookups by name in the object tree, so corruptions read as what they change.
fb::TensorT& Tensor(fb::ModelT& m, const std::string& name) {
  for (auto& t : m.tensors) {
    if (t->name == name) return *t;
  }
  ADD_FAILURE() << "no tensor " << name;
  return *m.tensors[0];
}
fb::PlanT& Plan(fb::ModelT& m, const std::string& name) {
  for (auto& p : m.plans) {
    if (p->name == name) return *p;
  }
  ADD_FAILURE() << "no plan " << name;
  return *m.plans[0];
}
// The nth op of kind `kind` in the decode plan.
fb::OpT& DecodeOp(fb::ModelT& m, fb::OpParams kind, int nth = 0) {
  for (auto& op : Plan(m, "decode").ops) {
    if (op->params.type == kind && nth-- == 0) return *op;
  }
  ADD_FAILURE() << "no such op";
  return *Plan(m, "decode").ops[0];
}
uint32_t BufferId(fb::PlanT& p, const std::string& name) {
  for (uint32_t i = 0; i < p.buffers.size(); ++i) {
    if (p.buffers[i]->name == name) return i;
  }
  ADD_FAILURE() << "no buffer " << name;
  return 0;
}
// The buffer called `name` in the decode plan.
fb::BufferT& DecodeBuffer(fb::ModelT& m, const std::string& name) {
  fb::PlanT& plan = Plan(m, "decode");
  return *plan.buffers[BufferId(plan, name)];
}

enum class Writer { kWriteKes, kRaw, kRawKeepWeightsOffset };

struct Corruption {
  const char* name;
  Writer writer;
  std::function<void(fb::ModelT&)> corrupt;
  std::vector<std::string> keywords;  // the error must name the problem with all of them
};

const std::vector<Corruption>& Corruptions() {
  using Kind = fb::OpParams;
  static const std::vector<Corruption> all = {
      // Tensors against the weight blob.
      {"TensorOffsetPastBlob",
       Writer::kRaw,
       [](fb::ModelT& m) { Tensor(m, "blk.2.ffn_up.weight").offset = m.weights_size + 64; },
       {"blk.2.ffn_up.weight", "outside the weight blob"}},
      {"TensorOffsetHuge",
       Writer::kRaw,
       [](fb::ModelT& m) { Tensor(m, "blk.0.attn_q.weight").offset = ~uint64_t{63}; },
       {"blk.0.attn_q.weight", "outside the weight blob"}},
      {"TensorOffsetMisaligned",
       Writer::kRaw,
       [](fb::ModelT& m) { Tensor(m, "blk.1.attn_k.weight").offset += 4; },
       {"blk.1.attn_k.weight", "offset", "not 64-byte aligned"}},
      {"TensorSizeNotShape",
       Writer::kRaw,
       [](fb::ModelT& m) { Tensor(m, "blk.3.attn_v.weight").size -= 4; },
       {"blk.3.attn_v.weight", "bytes for its shape"}},
      {"TensorShapeNotSize",
       Writer::kWriteKes,
       [](fb::ModelT& m) { Tensor(m, "output_norm.weight").shape = {65}; },
       {"output_norm.weight", "bytes for its shape"}},
      {"TensorShapeOverflows",
       Writer::kWriteKes,
       [](fb::ModelT& m) {
         Tensor(m, "output_norm.weight").shape = {uint64_t{1} << 32, uint64_t{1} << 32, 64};
       },
       {"output_norm.weight", "overflows"}},
      {"TensorShapeZero",
       Writer::kWriteKes,
       [](fb::ModelT& m) { Tensor(m, "output_norm.weight").shape = {0}; },
       {"output_norm.weight", "zero"}},
      {"WeightsSizePastEnd",
       Writer::kRaw,
       [](fb::ModelT& m) { m.weights_size += 64; },
       {"truncated", "weights"}},
      {"WeightsOffsetMisaligned",
       Writer::kRawKeepWeightsOffset,
       [](fb::ModelT& m) { m.weights_offset += 8; },
       {"weights offset", "not 64-byte aligned"}},
      {"WeightsOffsetInsideMetadata",
       Writer::kRawKeepWeightsOffset,
       [](fb::ModelT& m) { m.weights_offset = 64; },
       {"weights offset", "overlaps the metadata"}},
      {"MetadataVersion",
       Writer::kRaw,
       [](fb::ModelT& m) { m.format_version = 7; },
       {"metadata format version 7"}},
      {"NoTensors", Writer::kRaw, [](fb::ModelT& m) { m.tensors.clear(); }, {"no tensors"}},
      {"NoHyperParams",
       Writer::kWriteKes,
       [](fb::ModelT& m) { m.hparams.reset(); },
       {"no hyper-parameters"}},
      // Shapes and dtypes against the ops that use them.
      {"MatMulShapeMismatch",
       Writer::kWriteKes,
       [](fb::ModelT& m) {
         Tensor(m, "blk.0.ffn_gate.weight").shape = {64, 160};
       },
       {"MatMul", "expected rows of 160 elements, found 64"}},
      {"MatMulNot2D",
       Writer::kWriteKes,
       [](fb::ModelT& m) {
         Tensor(m, "blk.4.attn_output.weight").shape = {64, 8, 8};
       },
       {"MatMul", "blk.4.attn_output.weight", "expected 2 dimensions, found 3"}},
      {"EmbeddingRowsNotVocab",
       Writer::kWriteKes,
       [](fb::ModelT& m) {
         auto& t = Tensor(m, "token_embd.weight");
         t.shape = {t.shape[0] / 2, t.shape[1] * 2};
       },
       {"Embed", "rows, expected vocab_size"}},
      {"TensorDtypeI32",
       Writer::kWriteKes,
       [](fb::ModelT& m) { Tensor(m, "blk.0.attn_q.weight").dtype = fb::DType::I32; },
       {"blk.0.attn_q.weight", "expected dtype f32, f32-panels, f16, bf16, q8, q4, q4_1",
        "found code 3"}},
      // Panels hold whole panels of 16 rows: a size short of the last panel is refused.
      {"TensorPanelsShort",
       Writer::kRaw,
       [](fb::ModelT& m) {
         auto& t = Tensor(m, "blk.0.attn_q.weight");
         t.dtype = fb::DType::F32_PANELS;
         t.size -= 4 * t.shape[1] * sizeof(float);
       },
       {"blk.0.attn_q.weight", "bytes for its shape and f32-panels", "found size"}},
      {"TensorPanelsNotMatrix",
       Writer::kWriteKes,
       [](fb::ModelT& m) { Tensor(m, "output_norm.weight").dtype = fb::DType::F32_PANELS; },
       {"output_norm.weight", "expected a matrix for dtype f32-panels"}},
      // The f32 bytes relabelled q8: the size no longer fits the shape.
      {"TensorDtypeQ8SizeMismatch",
       Writer::kWriteKes,
       [](fb::ModelT& m) { Tensor(m, "blk.0.attn_q.weight").dtype = fb::DType::Q8_0; },
       {"blk.0.attn_q.weight", "bytes for its shape and q8", "found size"}},
      {"TensorDtypeActivations",
       Writer::kWriteKes,
       [](fb::ModelT& m) { Tensor(m, "blk.0.attn_q.weight").dtype = fb::DType::Q8_ACT; },
       {"blk.0.attn_q.weight", "expected dtype", "found code 6"}},
      // An f32 matmul fed quantized activations.
      {"MatMulInputQuantized",
       Writer::kWriteKes,
       [](fb::ModelT& m) { DecodeBuffer(m, "blk.0.attn_in").dtype = fb::DType::Q8_ACT; },
       {"blk.0.attn_in", "expected dtype f32, found q8-activations"}},
      {"TensorDtypeUnknown",
       Writer::kWriteKes,
       [](fb::ModelT& m) { Tensor(m, "blk.0.attn_q.weight").dtype = static_cast<fb::DType>(99); },
       {"blk.0.attn_q.weight", "expected dtype", "found code 99"}},
      {"NormWeightF16",
       Writer::kWriteKes,
       [](fb::ModelT& m) {
         auto& t = Tensor(m, "blk.0.attn_norm.weight");  // same bytes: f32 [64] as f16 [128]
         t.dtype = fb::DType::F16;
         t.shape = {128};
       },
       {"RmsNorm", "gamma", "expected f32 [64], found f16"}},
      {"ActivationDtypeI32",
       Writer::kWriteKes,
       [](fb::ModelT& m) { DecodeBuffer(m, "blk.0.q").dtype = fb::DType::I32; },
       {"blk.0.q", "expected dtype f32, found i32"}},
      {"BufferDtypeUnknown",
       Writer::kWriteKes,
       [](fb::ModelT& m) { DecodeBuffer(m, "blk.0.q").dtype = static_cast<fb::DType>(200); },
       {"buffer", "expected dtype f32, i32 or q8-activations", "found code 200"}},
      {"KvCacheDtype",
       Writer::kWriteKes,
       [](fb::ModelT& m) { m.kv->dtype = fb::DType::F16; },
       {"KV cache", "expected dtype f32, found f16"}},
      {"KvLayerHeadsZero",
       Writer::kWriteKes,
       [](fb::ModelT& m) { m.kv->layers[3]->n_kv_heads = 0; },
       {"KV layer 3", "found 0 x 16"}},
      // Ops.
      {"UnknownOpKind",
       Writer::kWriteKes,
       [](fb::ModelT& m) {
         auto& op = *Plan(m, "decode").ops[3];
         op.params.Reset();
         op.params.type = static_cast<fb::OpParams>(99);
       },
       {"decode", "op 3", "unknown op kind 99"}},
      {"InputBufferIdOutOfRange",
       Writer::kWriteKes,
       [](fb::ModelT& m) { DecodeOp(m, Kind::MatMul, 2).inputs[0] = 100000; },
       {"buffer id 100000 is out of range"}},
      {"OutputBufferIdOutOfRange",
       Writer::kWriteKes,
       [](fb::ModelT& m) { DecodeOp(m, Kind::Add).outputs[0] = 4000000000u; },
       {"buffer id 4000000000 is out of range"}},
      {"TensorIdOutOfRange",
       Writer::kWriteKes,
       [](fb::ModelT& m) { DecodeOp(m, Kind::RmsNorm, 5).weights[0] = 80; },
       {"tensor id 80 is out of range", "80 tensors"}},
      {"TokenInputIdOutOfRange",
       Writer::kWriteKes,
       [](fb::ModelT& m) { Plan(m, "prefill").inputs[0]->buffer = 12345; },
       {"prefill", "input 'tokens'", "buffer id 12345 out of range"}},
      {"NoTokenInput",
       Writer::kWriteKes,
       [](fb::ModelT& m) { Plan(m, "decode").inputs.clear(); },
       {"decode", "declares no inputs"}},
      {"LogitsNotVocab",
       Writer::kWriteKes,
       [](fb::ModelT& m) {
         auto& plan = Plan(m, "decode");
         plan.outputs[0]->buffer = BufferId(plan, "output_norm");
       },
       {"output 'logits'", "logits must be f32 rows of vocab_size"}},
      {"LogitsAsInput",
       Writer::kWriteKes,
       [](fb::ModelT& m) { Plan(m, "decode").inputs[0]->role = fb::IoRole::Logits; },
       {"logits can only be an output"}},
      {"WrongOperandCount",
       Writer::kWriteKes,
       [](fb::ModelT& m) { DecodeOp(m, Kind::RmsNorm, 1).weights.clear(); },
       {"RmsNorm", "expected 1 weights, found 0"}},
      {"EpsilonNegative",
       Writer::kWriteKes,
       [](fb::ModelT& m) { DecodeOp(m, Kind::RmsNorm, 2).params.AsRmsNorm()->eps = -1.0f; },
       {"epsilon must be positive"}},
      {"EpsilonNaN",
       Writer::kWriteKes,
       [](fb::ModelT& m) { DecodeOp(m, Kind::RmsNorm, 2).params.AsRmsNorm()->eps = std::nanf(""); },
       {"epsilon must be positive"}},
      {"NormLengthNotDividing",
       Writer::kWriteKes,
       [](fb::ModelT& m) { DecodeOp(m, Kind::RmsNorm, 0).params.AsRmsNorm()->dim = 48; },
       {"norm length 48 does not divide rows of 64"}},
      {"RopeOddHeadDim",
       Writer::kWriteKes,
       [](fb::ModelT& m) {
         auto* rope = DecodeOp(m, Kind::Rope).params.AsRope();
         rope->n_heads = 5;
         rope->head_dim = 15;
       },
       {"Rope", "even head_dim", "5 x 15"}},
      {"RopeStyleUnknown",
       Writer::kWriteKes,
       [](fb::ModelT& m) {
         DecodeOp(m, Kind::Rope).params.AsRope()->style = static_cast<fb::RopeStyle>(7);
       },
       {"Rope", "unknown RoPE style 7"}},
      {"KvLayerOutOfRange",
       Writer::kWriteKes,
       [](fb::ModelT& m) { DecodeOp(m, Kind::Attention, 1).params.AsAttention()->layer = 99; },
       {"Attention", "KV layer 99 out of range"}},
      {"KvStoreLayerHuge",
       Writer::kWriteKes,
       [](fb::ModelT& m) { DecodeOp(m, Kind::KvStore).params.AsKvStore()->layer = 4000000000u; },
       {"KvStore", "KV layer 4000000000 out of range"}},
      {"AttentionHeadsMismatch",
       Writer::kWriteKes,
       [](fb::ModelT& m) { DecodeOp(m, Kind::Attention).params.AsAttention()->n_kv_heads = 3; },
       {"Attention", "heads do not match the KV layer"}},
      {"AttentionWindowMismatch",
       Writer::kWriteKes,
       [](fb::ModelT& m) { DecodeOp(m, Kind::Attention).params.AsAttention()->window = 3; },
       {"Attention", "sliding window 3 does not match the KV layer's window 8"}},
      {"AttentionCausalOnSlidingLayer",
       Writer::kWriteKes,
       [](fb::ModelT& m) {
         DecodeOp(m, Kind::Attention).params.AsAttention()->mask = fb::AttentionMask::Causal;
       },
       {"Attention", "causal attention over a sliding-window KV layer"}},
      {"AttentionNegativeSoftCap",
       Writer::kWriteKes,
       [](fb::ModelT& m) { DecodeOp(m, Kind::Attention).params.AsAttention()->logit_softcap = -1; },
       {"Attention", "logit_softcap must be 0 (off) or positive and finite, found -1"}},
      {"MatMulLastRowIntoTokenRows",
       Writer::kWriteKes,
       [](fb::ModelT& m) { DecodeOp(m, Kind::MatMul).params.AsMatMul()->last_row_only = true; },
       {"last-row output must be one f32 row"}},
      {"MatMulBiasWrongLength",
       Writer::kWriteKes,
       [](fb::ModelT& m) {
         DecodeOp(m, Kind::MatMul).weights.push_back(Plan(m, "decode").ops[0]->weights[0]);
       },
       {"MatMul", "bias", "expected f32 [64]"}},
      // The arena.
      {"ArenaOffsetPastActivations",
       Writer::kWriteKes,
       [](fb::ModelT& m) {
         auto& plan = Plan(m, "decode");
         plan.buffers[BufferId(plan, "blk.1.gate")]->arena_offset = plan.activation_bytes;
       },
       {"exceed the activation region"}},
      {"ArenaOffsetHuge",
       Writer::kWriteKes,
       [](fb::ModelT& m) {
         auto& plan = Plan(m, "prefill");
         plan.buffers[BufferId(plan, "blk.1.gate")]->arena_offset = ~uint64_t{63};
       },
       {"exceed the activation region"}},
      {"ArenaOffsetMisaligned",
       Writer::kWriteKes,
       [](fb::ModelT& m) { Plan(m, "decode").buffers[2]->arena_offset += 4; },
       {"arena offset", "not 64-byte aligned"}},
      {"BufferTooSmall",
       Writer::kWriteKes,
       [](fb::ModelT& m) {
         auto& plan = Plan(m, "prefill");
         plan.buffers[BufferId(plan, "blk.0.up")]->size = 64;
       },
       {"plan 'prefill' buffer", "expected at least", "found 64"}},
      {"BufferRowsHuge",
       Writer::kWriteKes,
       [](fb::ModelT& m) {
         auto& buffer = *Plan(m, "decode").buffers[2];
         buffer.per_token = false;
         buffer.fixed_rows = uint64_t{1} << 40;
       },
       {"rows"}},
      {"PlanActivationsAboveModel",
       Writer::kWriteKes,
       [](fb::ModelT& m) { Plan(m, "score").activation_bytes = m.activation_bytes + 64; },
       {"score", "more than the model's"}},
      {"PlanMaxTokensZero",
       Writer::kWriteKes,
       [](fb::ModelT& m) { Plan(m, "prefill").max_tokens = 0; },
       {"max_tokens 0 out of range"}},
      // Plans.
      {"NoDecodePlan",
       Writer::kWriteKes,
       [](fb::ModelT& m) {
         auto& plans = m.plans;
         for (size_t i = 0; i < plans.size(); ++i) {
           if (plans[i]->name == "decode") plans.erase(plans.begin() + i);
         }
       },
       {"no 'decode' plan"}},
      {"NoPrefillPlan",
       Writer::kWriteKes,
       [](fb::ModelT& m) { Plan(m, "prefill").name = "prefil"; },
       {"no 'prefill' plan"}},
      // Tokenizer.
      {"TokenizerScoresCount",
       Writer::kWriteKes,
       [](fb::ModelT& m) { m.tokenizer->scores.pop_back(); },
       {"tokenizer", "pieces, scores and types", "410, 409, 410"}},
      {"VocabSizeNotTokenizer",
       Writer::kWriteKes,
       [](fb::ModelT& m) { m.hparams->vocab_size += 1; },
       {"tokenizer", "expected 411"}},
      {"TokenizerTypeInvalid",
       Writer::kWriteKes,
       [](fb::ModelT& m) { m.tokenizer->types[300] = 9; },
       {"tokenizer", "300", "type"}},
      {"TokenizerScoreNaN",
       Writer::kWriteKes,
       [](fb::ModelT& m) { m.tokenizer->scores[300] = std::nanf(""); },
       {"tokenizer", "300", "NaN"}},
      {"TokenizerBosOutOfRange",
       Writer::kWriteKes,
       [](fb::ModelT& m) { m.tokenizer->bos_id = 5000; },
       {"tokenizer", "5000"}},
      {"TokenizerPieceNotUtf8",
       Writer::kWriteKes,
       [](fb::ModelT& m) { m.tokenizer->pieces[300] = "\xff\xfe"; },
       {"tokenizer", "not valid UTF-8"}},
      {"TokenizerBytePieceWrong",
       Writer::kWriteKes,
       [](fb::ModelT& m) { m.tokenizer->pieces[7 + 65] = "<0xZZ>"; },
       {"tokenizer", "byte token"}},
      {"TokenizerMissing",
       Writer::kWriteKes,
       [](fb::ModelT& m) { m.tokenizer.reset(); },
       {"no tokenizer"}},
  };
  return all;
}

void PrintTo(const Corruption& c, std::ostream* os) { *os << c.name; }

class CorruptionTest : public TinyModelTest, public ::testing::WithParamInterface<Corruption> {};

TEST_P(CorruptionTest, ErrorNamesTheProblem) {
  const Corruption& c = GetParam();
  const std::string path = ScratchPath(std::string(c.name) + ".kes");
  Unpacked u = Unpack(bytes());
  ASSERT_NE(u.meta, nullptr);
  const Status written =
      c.writer == Writer::kWriteKes
          ? WriteWithWriteKes(std::move(u), c.corrupt, path)
          : WriteRaw(std::move(u), c.corrupt, path, c.writer == Writer::kRawKeepWeightsOffset);
  ASSERT_TRUE(written.ok()) << written.message();

  std::unique_ptr<Model> model;
  EXPECT_TRUE(FailsWith(Model::Open(path, &model), c.keywords));
  EXPECT_EQ(model, nullptr);
  const std::vector<uint8_t> file = ReadBytes(path);
  CopiedModel copied;
  EXPECT_TRUE(FailsWith(OpenFromBytes(file.data(), file.size(), &copied), c.keywords));
  EXPECT_TRUE(IsCleanError(Cli({"inspect", path}), "kestrel", c.keywords));
  std::remove(path.c_str());
}

INSTANTIATE_TEST_SUITE_P(Kes, CorruptionTest, ::testing::ValuesIn(Corruptions()),
                         [](const ::testing::TestParamInfo<Corruption>& info) {
                           return std::string(info.param.name);
                         });

// The writers above change only what they are told: unchanged, the model loads and runs.
TEST_F(TinyModelTest, UncorruptedRewriteLoads) {
  for (Writer writer : {Writer::kWriteKes, Writer::kRaw}) {
    const std::string path = ScratchPath("rewritten.kes");
    Unpacked u = Unpack(bytes());
    const auto nothing = [](fb::ModelT&) {};
    const Status written = writer == Writer::kWriteKes
                               ? WriteWithWriteKes(std::move(u), nothing, path)
                               : WriteRaw(std::move(u), nothing, path, false);
    ASSERT_TRUE(written.ok()) << written.message();
    std::unique_ptr<Model> model;
    const Status s = Model::Open(path, &model);
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_TRUE(Exercise(*model, 1));
    std::remove(path.c_str());
  }
}

// ---------------------------------------------------------------------------------------------
// Sessions: context and token ids.

using SessionInputTest = TinyModelTest;

// Past the context a session goes on (sinks plus the most recent tokens); only a prompt longer
// than the context is refused, by Generate.
TEST_F(SessionInputTest, PrefillPastTheContextGoesOn) {
  std::unique_ptr<Model> model = OpenTiny();
  ASSERT_NE(model, nullptr);
  SessionOptions options;
  options.context_length = 16;
  std::unique_ptr<Session> session;
  Status s = Session::Create(*model, options, &session);
  ASSERT_TRUE(s.ok()) << s.message();
  std::vector<int32_t> tokens(200, 300);
  ASSERT_TRUE(session->Prefill(tokens.data(), 17).ok());
  EXPECT_EQ(session->position(), 17u);
  ASSERT_TRUE(session->Prefill(tokens.data(), 150).ok());  // past-context steps of 64 at most
  ASSERT_TRUE(session->Decode(300).ok());
  EXPECT_EQ(session->position(), 168u);
  for (size_t i = 0; i < model->vocab_size(); ++i) ASSERT_TRUE(std::isfinite(session->logits()[i]));
  std::vector<float> logits(100 * model->vocab_size());
  session->Reset();
  ASSERT_TRUE(session->Prefill(tokens.data(), 10).ok());
  EXPECT_TRUE(session->Score(tokens.data(), 100, logits.data()).ok());
  for (float x : logits) ASSERT_TRUE(std::isfinite(x));

  session->Reset();
  GenerateStats stats;
  EXPECT_TRUE(
      FailsWith(Generate(*session, tokens.data(), 17, GenerateOptions(), nullptr, nullptr, &stats),
                {"more than the context"}));
  EXPECT_TRUE(
      FailsWith(Generate(*session, tokens.data(), 0, GenerateOptions(), nullptr, nullptr, &stats),
                {"empty"}));
}

TEST_F(SessionInputTest, TokenIdsOutOfRangeFail) {
  std::unique_ptr<Model> model = OpenTiny();
  ASSERT_NE(model, nullptr);
  SessionOptions options;
  options.context_length = 64;
  std::unique_ptr<Session> session;
  Status s = Session::Create(*model, options, &session);
  ASSERT_TRUE(s.ok()) << s.message();
  const int32_t vocab = static_cast<int32_t>(model->vocab_size());
  for (int32_t bad : {vocab, vocab + 1, -1, INT32_MIN, INT32_MAX}) {
    const int32_t tokens[3] = {2, bad, 5};
    EXPECT_TRUE(FailsWith(
        session->Prefill(tokens, 3),
        {"token 1 is id " + std::to_string(bad), "expected 0.." + std::to_string(vocab - 1)}));
    EXPECT_TRUE(FailsWith(session->Decode(bad), {std::to_string(bad)}));
    std::vector<float> logits(3 * model->vocab_size());
    EXPECT_TRUE(FailsWith(session->Score(tokens, 3, logits.data()), {std::to_string(bad)}));
    EXPECT_EQ(session->position(), 0u);
  }
  EXPECT_TRUE(FailsWith(session->Prefill(nullptr, 3), {"null"}));
  EXPECT_TRUE(FailsWith(session->Prefill(nullptr, 0), {"no tokens"}));
  const int32_t good[2] = {2, vocab - 1};
  EXPECT_TRUE(session->Prefill(good, 2).ok());
}

TEST_F(SessionInputTest, BadSessionOptionsFail) {
  std::unique_ptr<Model> model = OpenTiny();
  ASSERT_NE(model, nullptr);
  std::unique_ptr<Session> session;
  SessionOptions options;
  options.n_threads = 0;
  EXPECT_TRUE(FailsWith(Session::Create(*model, options, &session), {"threads", "found 0"}));
  options = SessionOptions();
  options.context_length = 0;
  EXPECT_TRUE(FailsWith(Session::Create(*model, options, &session), {"context length"}));
  options = SessionOptions();
  options.context_length = 32;
  std::vector<uint8_t> small(4096 + 64);
  options.arena = small.data() + (64 - reinterpret_cast<uintptr_t>(small.data()) % 64);
  options.arena_bytes = 4096;
  EXPECT_TRUE(FailsWith(Session::Create(*model, options, &session), {"arena too small"}));
  options.arena = static_cast<uint8_t*>(options.arena) + 4;
  EXPECT_TRUE(FailsWith(Session::Create(*model, options, &session), {"64-byte aligned"}));
  EXPECT_EQ(session, nullptr);
}

// ---------------------------------------------------------------------------------------------
// The command lines.

using CliTest = TinyModelTest;

TEST_F(CliTest, PromptLongerThanTheContext) {
  std::string prompt;
  for (int i = 0; i < 40; ++i) prompt += "the cat sat on the mat ";
  EXPECT_TRUE(IsCleanError(Cli({"run", kes(), "-p", prompt, "--ctx", "16", "-n", "4"}), "kestrel",
                           {"context"}));
  // A prompt that fits runs on past the end of the context (sinks plus the most recent tokens).
  const ProcessResult fits =
      Cli({"run", kes(), "-p", "the cat", "--ctx", "16", "-n", "100", "--temp", "0"});
  EXPECT_TRUE(Succeeded(fits));
}

TEST_F(CliTest, BadFlagsAndValues) {
  const std::string& m = kes();
  struct Case {
    std::vector<std::string> args;
    std::vector<std::string> keywords;
    Usage usage;
  };
  const std::vector<Case> cases = {
      {{"run", m, "-p", "hi", "--bogus"}, {"unknown option '--bogus'", "run"}, Usage::kAllowed},
      {{"inspect", m, "--bogus"}, {"unknown option '--bogus'", "inspect"}, Usage::kAllowed},
      {{"frobnicate", m}, {"unknown command 'frobnicate'"}, Usage::kAllowed},
      {{"run", m}, {"no prompt given"}, Usage::kAllowed},
      {{"run", "-p", "hi"}, {"no model given"}, Usage::kAllowed},
      {{"inspect"}, {"no model given"}, Usage::kAllowed},
      {{"run", m, "-p", "hi", "extra"}, {"unexpected argument 'extra'"}, Usage::kAllowed},
      {{"run", m, "-p"}, {"-p needs a value"}, Usage::kNo},
      {{"run", m, "-p", "hi", "-n", "abc"}, {"-n", "whole number", "'abc'"}, Usage::kNo},
      {{"run", m, "-p", "hi", "-n", "5x"}, {"-n", "'5x'"}, Usage::kNo},
      {{"run", m, "-p", "hi", "-n", "-3"}, {"-n", "'-3'"}, Usage::kNo},
      {{"run", m, "-p", "hi", "-n"}, {"-n needs a value"}, Usage::kNo},
      {{"run", m, "-p", "hi", "--temp", "-1"}, {"--temp", "'-1'"}, Usage::kNo},
      {{"run", m, "-p", "hi", "--temp", "nan"}, {"--temp", "'nan'"}, Usage::kNo},
      {{"run", m, "-p", "hi", "--top-p", "0"}, {"--top-p", "above 0"}, Usage::kNo},
      {{"run", m, "-p", "hi", "--top-p", "1.5"}, {"--top-p", "'1.5'"}, Usage::kNo},
      {{"run", m, "-p", "hi", "--top-k", "-1"}, {"--top-k", "'-1'"}, Usage::kNo},
      {{"run", m, "-p", "hi", "--threads", "0"}, {"--threads", "'0'"}, Usage::kNo},
      {{"run", m, "-p", "hi", "-t", "100000"}, {"-t", "'100000'"}, Usage::kNo},
      {{"run", m, "-p", "hi", "--ctx", "0"}, {"--ctx", "'0'"}, Usage::kNo},
      {{"run", m, "-p", "hi", "--ctx", "99999999999999999999"}, {"--ctx"}, Usage::kNo},
      {{"run", m, "-p", "hi", "--seed", "-5"}, {"--seed", "'-5'"}, Usage::kNo},
      {{"inspect", m, "--ctx", "x"}, {"--ctx", "'x'"}, Usage::kNo},
      {{"inspect", m, "--ctx"}, {"--ctx needs a value"}, Usage::kNo},
      {{"bench"}, {"no model given"}, Usage::kAllowed},
      {{"bench", m, "--bogus"}, {"unknown option '--bogus'", "bench"}, Usage::kAllowed},
      {{"bench", m, "-t", "0"}, {"--threads", "'0'"}, Usage::kNo},
      {{"bench", m, "-t", "1,,2"}, {"--threads", "''"}, Usage::kNo},
      {{"bench", m, "-t", "1,2,"}, {"--threads", "''"}, Usage::kNo},
      {{"bench", m, "-r", "0"}, {"-r", "'0'"}, Usage::kNo},
      {{"bench", m, "-p", "0", "-n", "0"}, {"nothing to run"}, Usage::kNo},
      {{"bench", m, "-p", "100000"}, {"exceed the model's context of 256"}, Usage::kNo},
      {{"cpu", "extra"}, {"unexpected argument 'extra'"}, Usage::kAllowed},
      // The KV-cache flags of run, chat, bench and perplexity; inspect takes --kv-type only.
      {{"run", m, "-p", "hi", "--kv-type", "q4"},
       {"--kv-type", "expected f32, f16 or int8", "found 'q4'"},
       Usage::kNo},
      {{"run", m, "-p", "hi", "--kv-type"}, {"--kv-type needs a value"}, Usage::kNo},
      {{"run", m, "-p", "hi", "--sinks", "-1"}, {"--sinks", "whole number", "'-1'"}, Usage::kNo},
      {{"run", m, "-p", "hi", "--sinks", "300"},
       {"--sinks", "expected fewer than the context of 256 tokens", "found 300"},
       Usage::kNo},
      {{"run", m, "-p", "hi", "--ctx", "16", "--sinks", "16"},
       {"--sinks", "context of 16 tokens", "found 16"},
       Usage::kNo},
      // The tiny model's heads of 16 take no int8 cache (blocks of 32): the runtime says so.
      {{"run", m, "-p", "hi", "--kv-type", "int8"},
       {"int8 KV cache", "multiple of 32", "found 16", "--kv-type f16 or f32"},
       Usage::kNo},
      {{"chat", m, "--kv-type", "F16"}, {"--kv-type", "found 'F16'"}, Usage::kNo},
      {{"chat", m, "--sinks", "1e3"}, {"--sinks", "'1e3'"}, Usage::kNo},
      {{"bench", m, "--kv-type", "int4"}, {"--kv-type", "f32, f16 or int8", "'int4'"}, Usage::kNo},
      {{"bench", m, "-p", "24", "-n", "8", "--sinks", "24"},
       {"--sinks", "context of 24 tokens", "found 24"},
       Usage::kNo},
      {{"bench", m, "--depth", "x"}, {"--depth", "whole number", "'x'"}, Usage::kNo},
      {{"bench", m, "-d", "0,,8"}, {"--depth", "''"}, Usage::kNo},
      {{"bench", m, "-p", "24", "-n", "8", "-d", "0,240"},
       {"-p/-n of 24 tokens at --depth 240", "exceed the model's context of 256"},
       Usage::kNo},
      {{"inspect", m, "--kv-type", "bf16"}, {"--kv-type", "found 'bf16'"}, Usage::kNo},
      {{"inspect", m, "--sinks", "4"}, {"unknown option '--sinks'", "inspect"}, Usage::kAllowed},
  };
  for (const Case& c : cases) {
    std::string joined;
    for (const std::string& a : c.args) joined += " " + a;
    const ProcessResult r = Cli(c.args);
    EXPECT_TRUE(IsCleanError(r, "kestrel", c.keywords, c.usage)) << "kestrel" << joined;
    // Nothing else done: run echoes no prompt, bench prints no table.
    EXPECT_EQ(r.out, "") << "kestrel" << joined;
  }
  // No arguments at all: the usage, and failure.
  const ProcessResult none = Cli({});
  EXPECT_TRUE(none.exited && none.exit_code == 1) << Describe(none);
  EXPECT_NE(none.err.find("usage: kestrel"), std::string::npos) << Describe(none);
}

TEST_F(CliTest, ConverterRejectsBadInputAndLeavesNothingBehind) {
  const std::string out = ScratchPath("convert-out.kes");
  const auto nothing_written = [&](const std::string& path) {
    EXPECT_FALSE(Exists(path)) << path << " was left behind";
    EXPECT_FALSE(Exists(path + ".tmp")) << path << ".tmp was left behind";
  };
  EXPECT_TRUE(IsCleanError(Convert({tiny_->gguf, out, "--bogus"}), "kestrel-convert",
                           {"unknown option '--bogus'"}, Usage::kAllowed));
  EXPECT_TRUE(IsCleanError(Convert({tiny_->gguf}), "kestrel-convert", {"need INPUT and OUTPUT"},
                           Usage::kAllowed));
  EXPECT_TRUE(IsCleanError(Convert({tiny_->gguf, out, "--weights", "int3"}), "kestrel-convert",
                           {"--weights", "'int3'"}));
  EXPECT_TRUE(IsCleanError(Convert({tiny_->gguf, out, "--prefill-tokens", "0"}), "kestrel-convert",
                           {"--prefill-tokens"}));
  const std::string missing = ScratchPath("missing.gguf");
  EXPECT_TRUE(IsCleanError(Convert({missing, out}), "kestrel-convert", {"cannot open", missing}));
  // A .kes file is not a GGUF.
  EXPECT_TRUE(IsCleanError(Convert({kes(), out}), "kestrel-convert", {"not a GGUF file"}));
  nothing_written(out);

  // Truncated GGUFs: the header, the metadata, the tensor infos, the data.
  const std::vector<uint8_t> gguf_bytes = ReadBytes(tiny_->gguf);
  const std::string cut = ScratchPath("cut.gguf");
  for (size_t n : {size_t{0}, size_t{3}, size_t{23}, size_t{200}, size_t{5000},
                   gguf_bytes.size() / 2, gguf_bytes.size() - 1}) {
    ASSERT_TRUE(WriteBytes(cut, gguf_bytes.data(), n)) << cut;
    EXPECT_TRUE(IsCleanError(Convert({cut, out}), "kestrel-convert", {})) << n << " bytes";
    nothing_written(out);
  }
  std::remove(cut.c_str());

  // Unwritable outputs: a folder that does not exist, and a path that is a folder.
  const std::string no_dir = ScratchPath("no-such-dir") + "/out.kes";
  EXPECT_TRUE(IsCleanError(Convert({tiny_->gguf, no_dir}), "kestrel-convert", {"cannot create"}));
  nothing_written(no_dir);
  const std::string dir = ScratchPath("a-folder");
  ::mkdir(dir.c_str(), 0755);
  EXPECT_TRUE(IsCleanError(Convert({tiny_->gguf, dir}), "kestrel-convert", {"cannot write", dir}));
  EXPECT_FALSE(Exists(dir + ".tmp")) << dir << ".tmp was left behind";
  struct stat st;
  EXPECT_TRUE(::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) << "the folder was replaced";
  ::rmdir(dir.c_str());
}

}  // namespace
}  // namespace kestrel
