// The C API's session state (kes_session_save_state / load_state, to buffers and files) and its
// memory figures (kes_session_memory), on the tiny random-weight models: a state restored into a
// fresh session continues with exactly the tokens of an uninterrupted run (greedy, sampled with
// a seed, from the middle of a generation, past the context with every ring wrapped, f16, f32
// and int8 KV caches) and the same logits bit for bit; a state holds only the positions in use;
// cut, damaged, foreign and mismatched states are refused with KES_BAD_STATE and a message
// saying which, leaving the session as it was; files are replaced whole. The memory figures
// equal what `kestrel inspect` prints.
#include <dirent.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "kestrel/kestrel.h"
#include "tests/support/c_api_test_support.h"
#include "tests/support/test_support.h"

namespace kestrel {
namespace {

using test::Describe;
using test::ProcessResult;

kes_session_params Params(size_t context, kes_kv_type kv = KES_KV_F16) {
  kes_session_params p = kes_session_default_params();
  p.n_threads = 1;
  p.context_length = context;
  p.kv_type = kv;
  return p;
}

test::SessionPtr Create(const kes_model* model, const kes_session_params& params) {
  kes_session* session = nullptr;
  EXPECT_EQ(kes_session_create(model, &params, nullptr, 0, &session), KES_OK) << kes_last_error();
  return test::SessionPtr(session);
}

kes_sampler_params Sampler(float temperature, uint64_t seed = 0) {
  kes_sampler_params p = kes_sampler_default_params();
  p.temperature = temperature;
  p.seed = seed;
  return p;
}

std::vector<int32_t> Prompt(const kes_model* model, size_t n) {
  kes_model_info info;
  info.struct_size = sizeof(info);
  EXPECT_EQ(kes_model_get_info(model, &info), KES_OK);
  std::vector<int32_t> prompt;
  for (size_t i = 0; i < n; ++i) {
    prompt.push_back(static_cast<int32_t>((i * 37 + 11) % info.n_vocab));
  }
  return prompt;
}

int Keep(void* user_data, int32_t token, const char*, size_t) {
  static_cast<std::vector<int32_t>*>(user_data)->push_back(token);
  return 0;
}

std::vector<int32_t> Generate(kes_session* s, const std::vector<int32_t>& prompt, size_t n,
                              const kes_sampler_params& sampler) {
  std::vector<int32_t> tokens;
  EXPECT_EQ(kes_generate(s, prompt.data(), prompt.size(), &sampler, n, Keep, &tokens), KES_OK)
      << kes_session_last_error(s);
  return tokens;
}

std::vector<uint8_t> Save(kes_session* s) {
  size_t need = 0;
  EXPECT_EQ(kes_session_state_size(s, &need), KES_OK);
  size_t size = 0;
  EXPECT_EQ(kes_session_save_state(s, nullptr, 0, &size), KES_BUFFER_TOO_SMALL);
  EXPECT_EQ(size, need);
  EXPECT_EQ(std::string(kes_session_last_error(s)),
            "buf: expected a capacity of at least " + std::to_string(need) + " bytes, found 0");
  std::vector<uint8_t> state(need);
  EXPECT_EQ(kes_session_save_state(s, state.data(), state.size(), &size), KES_OK)
      << kes_session_last_error(s);
  EXPECT_EQ(size, need);
  return state;
}

size_t Position(const kes_session* s) {
  size_t position = 0;
  EXPECT_EQ(kes_session_position(s, &position), KES_OK);
  return position;
}

std::vector<int32_t> Concat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// The logits after each of `forced`, run one at a time: a check more exacting than the tokens
// of greedy generation, which on the tiny random models soon repeats one token.
std::vector<float> LogitsAfter(kes_session* s, const std::vector<int32_t>& forced) {
  std::vector<float> all;
  for (int32_t token : forced) {
    EXPECT_EQ(kes_session_prefill(s, &token, 1), KES_OK) << kes_session_last_error(s);
    const float* logits = nullptr;
    size_t n = 0;
    EXPECT_EQ(kes_session_logits(s, &logits, &n), KES_OK);
    all.insert(all.end(), logits, logits + n);
  }
  return all;
}

// Greedy: stopped after a prompt, or in the middle of a generation (its last token not yet
// run), a restored session gives the uninterrupted run's tokens, with either KV type.
TEST(CApiState, RestoredSessionContinuesAsTheUninterruptedRun) {
  test::ModelPtr model = test::Open(test::TinyPath(test::kTinyGemma3));
  const std::vector<int32_t> prompt = Prompt(model.get(), 20);
  for (kes_kv_type kv : {KES_KV_F16, KES_KV_F32}) {  // int8 needs heads of 32: not tiny's
    SCOPED_TRACE("kv type " + std::to_string(kv));
    const kes_session_params params = Params(128, kv);
    test::SessionPtr whole = Create(model.get(), params);
    const std::vector<int32_t> reference = Generate(whole.get(), prompt, 30, Sampler(0));
    ASSERT_EQ(reference.size(), 30u) << "the tiny model stops at no end token";

    test::SessionPtr first = Create(model.get(), params);
    ASSERT_EQ(kes_session_prefill(first.get(), prompt.data(), prompt.size()), KES_OK);
    const std::vector<uint8_t> after_prompt = Save(first.get());
    const std::vector<int32_t> head = Generate(first.get(), {}, 12, Sampler(0));
    const std::vector<uint8_t> mid = Save(first.get());
    EXPECT_EQ(Position(first.get()), prompt.size() + 12);
    const std::vector<int32_t> forced = Prompt(model.get(), 16);
    const std::vector<float> mid_logits = LogitsAfter(first.get(), forced);

    test::SessionPtr fresh = Create(model.get(), params);
    ASSERT_EQ(kes_session_load_state(fresh.get(), after_prompt.data(), after_prompt.size()), KES_OK)
        << kes_session_last_error(fresh.get());
    EXPECT_EQ(Position(fresh.get()), prompt.size());
    EXPECT_EQ(Generate(fresh.get(), {}, 30, Sampler(0)), reference);

    test::SessionPtr other = Create(model.get(), params);
    ASSERT_EQ(kes_session_load_state(other.get(), mid.data(), mid.size()), KES_OK)
        << kes_session_last_error(other.get());
    EXPECT_EQ(Position(other.get()), prompt.size() + 12);
    EXPECT_EQ(Concat(head, Generate(other.get(), {}, 18, Sampler(0))), reference);
    ASSERT_EQ(kes_session_load_state(other.get(), mid.data(), mid.size()), KES_OK);
    const std::vector<float> restored = LogitsAfter(other.get(), forced);
    ASSERT_EQ(restored.size(), mid_logits.size());
    EXPECT_EQ(std::memcmp(restored.data(), mid_logits.data(), restored.size() * sizeof(float)), 0);
    // The same session goes back to the state too.
    ASSERT_EQ(kes_session_load_state(first.get(), after_prompt.data(), after_prompt.size()),
              KES_OK);
    EXPECT_EQ(Generate(first.get(), {}, 30, Sampler(0)), reference);
  }
}

// Sampling: each kes_generate seeds its sampler, so the same seed after a load gives the
// uninterrupted run's tokens; next_token after a load of a state saved right after a prefill is
// seeded afresh, as after that prefill.
TEST(CApiState, SampledWithASeedAfterALoad) {
  test::ModelPtr model = test::Open(test::TinyPath(test::kTinyGemma3));
  const std::vector<int32_t> prompt = Prompt(model.get(), 9);
  const kes_session_params params = Params(64);
  const kes_sampler_params sampler = Sampler(0.9f, 1234);
  test::SessionPtr whole = Create(model.get(), params);
  ASSERT_EQ(kes_session_prefill(whole.get(), prompt.data(), prompt.size()), KES_OK);
  const std::vector<uint8_t> state = Save(whole.get());
  const std::vector<int32_t> reference = Generate(whole.get(), {}, 25, sampler);

  test::SessionPtr fresh = Create(model.get(), params);
  ASSERT_EQ(kes_session_load_state(fresh.get(), state.data(), state.size()), KES_OK);
  EXPECT_EQ(Generate(fresh.get(), {}, 25, sampler), reference);
  ASSERT_EQ(kes_session_load_state(fresh.get(), state.data(), state.size()), KES_OK);
  std::vector<int32_t> pulled;
  for (size_t i = 0; i < 25; ++i) {
    int32_t token = -1;
    ASSERT_EQ(kes_session_next_token(fresh.get(), &sampler, &token, nullptr, 0, nullptr), KES_OK);
    pulled.push_back(token);
  }
  EXPECT_EQ(pulled, reference);
}

// A state saved in the middle of pulled, sampled tokens holds the sampler's place in its random
// sequence: pulling on after a load gives the uninterrupted run's tokens.
TEST(CApiState, PulledSamplingGoesOnAfterALoad) {
  test::ModelPtr model = test::Open(test::TinyPath(test::kTinyGemma3));
  const std::vector<int32_t> prompt = Prompt(model.get(), 9);
  const kes_session_params params = Params(64);
  const kes_sampler_params sampler = Sampler(1.0f, 77);
  const auto pull = [&](kes_session* s, size_t n) {
    std::vector<int32_t> tokens;
    for (size_t i = 0; i < n; ++i) {
      int32_t token = -1;
      EXPECT_EQ(kes_session_next_token(s, &sampler, &token, nullptr, 0, nullptr), KES_OK);
      tokens.push_back(token);
    }
    return tokens;
  };
  test::SessionPtr whole = Create(model.get(), params);
  ASSERT_EQ(kes_session_prefill(whole.get(), prompt.data(), prompt.size()), KES_OK);
  const std::vector<int32_t> reference = pull(whole.get(), 30);

  test::SessionPtr first = Create(model.get(), params);
  ASSERT_EQ(kes_session_prefill(first.get(), prompt.data(), prompt.size()), KES_OK);
  const std::vector<int32_t> head = pull(first.get(), 12);
  const std::vector<uint8_t> state = Save(first.get());
  test::SessionPtr fresh = Create(model.get(), params);
  ASSERT_EQ(kes_session_load_state(fresh.get(), state.data(), state.size()), KES_OK);
  EXPECT_EQ(Concat(head, pull(fresh.get(), 18)), reference);
  // Other params than the saved sampler's: seeded afresh, as any change of params does.
  kes_sampler_params other = sampler;
  other.seed = 78;
  ASSERT_EQ(kes_session_load_state(fresh.get(), state.data(), state.size()), KES_OK);
  int32_t token = -1;
  ASSERT_EQ(kes_session_next_token(fresh.get(), &other, &token, nullptr, 0, nullptr), KES_OK);
}

// Past the context every ring has wrapped (and the sinks stay): the state still restores, to
// the same tokens and the same logits bit for bit.
TEST(CApiState, WrappedRingsRestore) {
  test::ModelPtr model = test::Open(test::TinyPath(test::kTinyGemma3));
  const std::vector<int32_t> prompt = Prompt(model.get(), 12);
  const std::vector<int32_t> forced = Prompt(model.get(), 40);
  kes_session_params params = Params(16);
  params.kv_sinks = 2;
  const kes_sampler_params sampler = Sampler(1.0f, 99);
  // Two uninterrupted runs: one for the tokens, one for the logits.
  test::SessionPtr whole = Create(model.get(), params);
  const std::vector<int32_t> head = Generate(whole.get(), prompt, 100, Sampler(0));
  ASSERT_GT(Position(whole.get()), 16u + 64u) << "every ring wrapped";
  const std::vector<uint8_t> state = Save(whole.get());
  test::SessionPtr twin = Create(model.get(), params);
  EXPECT_EQ(Generate(twin.get(), prompt, 100, Sampler(0)), head);
  const std::vector<int32_t> reference = Generate(whole.get(), {}, 50, sampler);
  const std::vector<float> logits = LogitsAfter(twin.get(), forced);

  test::SessionPtr fresh = Create(model.get(), params);
  ASSERT_EQ(kes_session_load_state(fresh.get(), state.data(), state.size()), KES_OK)
      << kes_session_last_error(fresh.get());
  EXPECT_EQ(Generate(fresh.get(), {}, 50, sampler), reference);
  ASSERT_EQ(kes_session_load_state(fresh.get(), state.data(), state.size()), KES_OK);
  const std::vector<float> restored = LogitsAfter(fresh.get(), forced);
  ASSERT_EQ(restored.size(), logits.size());
  EXPECT_EQ(std::memcmp(restored.data(), logits.data(), logits.size() * sizeof(float)), 0);
}

// The tiny Llama with heads of 32 (tests/session_concurrency_test.cc's), so that its KV cache
// can be int8: a state then holds each row's scales too.
constexpr test::TinyFamily kTinyLlamaHead32 = {"tiny-llama-head32", "make_tiny_llama.py",
                                               "--arch llama --head-dim 32", "llama_oracle.py"};

TEST(CApiState, Int8KvCacheRestores) {
  test::TinyModel tiny;
  ASSERT_EQ(test::MakeTinyModel(&tiny, kTinyLlamaHead32), "");
  test::ModelPtr model = test::Open(tiny.kes);
  const std::vector<int32_t> prompt = Prompt(model.get(), 10);
  const std::vector<int32_t> forced = Prompt(model.get(), 24);
  const kes_session_params params = Params(32, KES_KV_INT8);
  // Inside the context, then past it with every ring wrapped.
  for (size_t generated : {12, 100}) {
    SCOPED_TRACE(std::to_string(generated) + " tokens generated");
    test::SessionPtr whole = Create(model.get(), params);
    test::SessionPtr twin = Create(model.get(), params);
    const std::vector<int32_t> head = Generate(whole.get(), prompt, generated, Sampler(0));
    EXPECT_EQ(Generate(twin.get(), prompt, generated, Sampler(0)), head);
    const std::vector<uint8_t> state = Save(whole.get());
    const std::vector<float> logits = LogitsAfter(twin.get(), forced);
    test::SessionPtr fresh = Create(model.get(), params);
    ASSERT_EQ(kes_session_load_state(fresh.get(), state.data(), state.size()), KES_OK)
        << kes_session_last_error(fresh.get());
    const std::vector<float> restored = LogitsAfter(fresh.get(), forced);
    ASSERT_EQ(restored.size(), logits.size());
    EXPECT_EQ(std::memcmp(restored.data(), logits.data(), logits.size() * sizeof(float)), 0);
  }
}

// A state holds the positions in use, not the arena: a short prompt's is a small part of the
// KV cache, and a full ring's is bounded by it.
TEST(CApiState, HoldsOnlyThePositionsInUse) {
  test::ModelPtr model = test::Open(test::TinyPath(test::kTinyGemma3));
  const kes_session_params params = Params(256, KES_KV_F32);
  kes_memory_info memory;
  memory.struct_size = sizeof(memory);
  ASSERT_EQ(kes_session_memory(model.get(), &params, &memory), KES_OK) << kes_last_error();
  test::SessionPtr s = Create(model.get(), params);
  size_t empty = 0, short_prompt = 0;
  ASSERT_EQ(kes_session_state_size(s.get(), &empty), KES_OK);
  const std::vector<int32_t> prompt = Prompt(model.get(), 8);
  ASSERT_EQ(kes_session_prefill(s.get(), prompt.data(), prompt.size()), KES_OK);
  ASSERT_EQ(kes_session_state_size(s.get(), &short_prompt), KES_OK);
  EXPECT_LT(empty, 256u) << "an empty sequence is its header";
  EXPECT_GT(short_prompt, empty);
  // The KV rows of 8 positions of 256, and the logits.
  EXPECT_LT(short_prompt - empty, memory.kv_cache_bytes / 8) << short_prompt;
}

// Every refusal is KES_BAD_STATE with a message that says why, and leaves the session as it
// was.
TEST(CApiState, RefusesCutDamagedForeignAndMismatchedStates) {
  test::ModelPtr model = test::Open(test::TinyPath(test::kTinyGemma3));
  const std::vector<int32_t> prompt = Prompt(model.get(), 10);
  test::SessionPtr source = Create(model.get(), Params(64));
  ASSERT_EQ(kes_session_prefill(source.get(), prompt.data(), prompt.size()), KES_OK);
  const std::vector<uint8_t> state = Save(source.get());

  test::SessionPtr target = Create(model.get(), Params(64));
  ASSERT_EQ(kes_session_prefill(target.get(), prompt.data(), 3), KES_OK);
  const auto refused = [&](kes_session* s, const std::vector<uint8_t>& bytes,
                           const std::string& expected) {
    const size_t before = Position(s);
    EXPECT_EQ(kes_session_load_state(s, bytes.data(), bytes.size()), KES_BAD_STATE);
    const std::string message = kes_session_last_error(s);
    EXPECT_NE(message.find(expected), std::string::npos) << message;
    EXPECT_EQ(message, kes_last_error());
    EXPECT_EQ(Position(s), before) << "a refused state changes nothing";
  };
  refused(target.get(), std::vector<uint8_t>(state.begin(), state.end() - 1),
          "the state is cut short: expected " + std::to_string(state.size()) + " bytes, found " +
              std::to_string(state.size() - 1));
  refused(target.get(), std::vector<uint8_t>(state.begin(), state.begin() + 10),
          "the state is cut short: 10 bytes, less than its 128-byte header");
  std::vector<uint8_t> longer = state;
  longer.push_back(0);
  refused(target.get(), longer, "(bytes after its end)");
  std::vector<uint8_t> damaged = state;
  damaged[damaged.size() / 2] ^= 0x10;
  refused(target.get(), damaged, "the state is damaged: its checksum is");
  std::vector<uint8_t> magic = state;
  magic[0] = 'X';
  refused(target.get(), magic, "not a Kestrel session state");
  std::vector<uint8_t> version = state;
  version[8] = 2;  // format_version, before the checksummed bytes
  refused(target.get(), version, "the state is of format version 2, this library reads version 1");
  std::vector<uint8_t> text(state.size(), 'a');
  refused(target.get(), text, "not a Kestrel session state");

  test::SessionPtr longer_context = Create(model.get(), Params(128));
  refused(longer_context.get(), state,
          "the state was saved by a session with a context of 64 tokens; this session's is 128");
  test::SessionPtr f32 = Create(model.get(), Params(64, KES_KV_F32));
  refused(f32.get(), state,
          "the state was saved by a session with a f16 KV cache; this "
          "session's is f32");
  kes_session_params sinks = Params(64);
  sinks.kv_sinks = 2;
  test::SessionPtr fewer_sinks = Create(model.get(), sinks);
  refused(fewer_sinks.get(), state, "the state was saved by a session with 4 attention sinks");

  test::ModelPtr llama = test::Open(test::TinyPath(test::kTinyLlama));
  test::SessionPtr foreign = Create(llama.get(), Params(64));
  refused(foreign.get(), state, "the state was saved from another model (weights 0x");

  EXPECT_EQ(kes_session_load_state(target.get(), nullptr, 0), KES_INVALID_ARGUMENT);
  EXPECT_STREQ(kes_status_name(KES_BAD_STATE), "KES_BAD_STATE");
  // And after all that, the good state still loads.
  ASSERT_EQ(kes_session_load_state(target.get(), state.data(), state.size()), KES_OK);
  EXPECT_EQ(Position(target.get()), prompt.size());
}

std::vector<std::string> FolderEntries(const std::string& folder) {
  std::vector<std::string> names;
  if (DIR* dir = opendir(folder.c_str())) {
    while (dirent* e = readdir(dir)) {
      const std::string name = e->d_name;
      if (name != "." && name != "..") names.push_back(name);
    }
    closedir(dir);
  }
  return names;
}

// Files: written whole under a temporary name and renamed over the old file, which stays as it
// was when the write fails; read back to the same continuation.
TEST(CApiState, FilesAreReplacedWholeAndReadBack) {
  test::ModelPtr model = test::Open(test::TinyPath(test::kTinyGemma3));
  const std::vector<int32_t> prompt = Prompt(model.get(), 10);
  const std::string folder = test::ScratchPath("state-files");
  std::remove((folder + "/session.state").c_str());
  ASSERT_EQ(test::RunHostCommand("mkdir -p '" + folder + "'"), "");
  const std::string path = folder + "/session.state";
  test::SessionPtr s = Create(model.get(), Params(64));
  ASSERT_EQ(kes_session_prefill(s.get(), prompt.data(), 4), KES_OK);
  ASSERT_EQ(kes_session_save_state_file(s.get(), path.c_str()), KES_OK)
      << kes_session_last_error(s.get());
  ASSERT_EQ(kes_session_prefill(s.get(), prompt.data() + 4, prompt.size() - 4), KES_OK);
  ASSERT_EQ(kes_session_save_state_file(s.get(), path.c_str()), KES_OK);
  EXPECT_EQ(test::ReadBytes(path), Save(s.get())) << "replaced by the newer state";
  EXPECT_EQ(FolderEntries(folder), std::vector<std::string>{"session.state"})
      << "no temporary left behind";
  const std::vector<int32_t> reference = Generate(s.get(), {}, 20, Sampler(0));

  test::SessionPtr fresh = Create(model.get(), Params(64));
  ASSERT_EQ(kes_session_load_state_file(fresh.get(), path.c_str()), KES_OK)
      << kes_session_last_error(fresh.get());
  EXPECT_EQ(Generate(fresh.get(), {}, 20, Sampler(0)), reference);

  const std::string missing = folder + "/no-such-folder/session.state";
  EXPECT_EQ(kes_session_save_state_file(s.get(), missing.c_str()), KES_IO_ERROR);
  EXPECT_NE(std::string(kes_session_last_error(s.get())).find(missing), std::string::npos)
      << kes_session_last_error(s.get());
  EXPECT_EQ(kes_session_load_state_file(fresh.get(), missing.c_str()), KES_IO_ERROR);
  EXPECT_NE(std::string(kes_session_last_error(fresh.get())).find("cannot open"),
            std::string::npos);
  const std::string cut = folder + "/cut.state";
  const std::vector<uint8_t> bytes = test::ReadBytes(path);
  ASSERT_TRUE(test::WriteBytes(cut, bytes.data(), bytes.size() / 2));
  EXPECT_EQ(kes_session_load_state_file(fresh.get(), cut.c_str()), KES_BAD_STATE);
  const std::string message = kes_session_last_error(fresh.get());
  EXPECT_NE(message.find(cut + "': the state is cut short"), std::string::npos) << message;
  ASSERT_TRUE(test::WriteBytes(cut, bytes.data(), 0));
  EXPECT_EQ(kes_session_load_state_file(fresh.get(), cut.c_str()), KES_BAD_STATE);
  EXPECT_EQ(kes_session_save_state_file(s.get(), nullptr), KES_INVALID_ARGUMENT);
}

// kes_session_memory gives the figures `kestrel inspect` prints, for any context and KV type,
// and the arena kes_session_arena_size asks; an older, shorter struct gets its own fields only.
TEST(CApiMemory, FiguresAreKestrelInspects) {
  const std::string path = test::TinyPath(test::kTinyGemma3);
  test::ModelPtr model = test::Open(path);
  for (kes_kv_type kv : {KES_KV_F16, KES_KV_F32}) {
    const kes_session_params params = Params(64, kv);
    kes_memory_info m;
    m.struct_size = sizeof(m);
    ASSERT_EQ(kes_session_memory(model.get(), &params, &m), KES_OK) << kes_last_error();
    size_t arena = 0;
    ASSERT_EQ(kes_session_arena_size(model.get(), &params, &arena), KES_OK);
    EXPECT_EQ(m.arena_bytes, arena);
    EXPECT_EQ(m.context_length, 64u);
    EXPECT_EQ(m.total_bytes, m.weights_bytes + m.arena_bytes);
    EXPECT_GT(m.kv_cache_bytes, 0u);
    EXPECT_LE(m.activations_bytes + m.kv_cache_bytes + m.attention_bytes + m.sampler_bytes,
              m.arena_bytes);
    const ProcessResult r =
        test::Cli({"inspect", path, "--ctx", "64", "--kv-type", kv == KES_KV_F32 ? "f32" : "f16"});
    ASSERT_TRUE(r.exited && r.exit_code == 0) << Describe(r);
    const auto expect_line = [&](const std::string& label, uint64_t bytes) {
      const std::string line = label + std::to_string(bytes) + " B (";
      EXPECT_NE(r.out.find(line), std::string::npos) << line << "\n" << r.out;
    };
    expect_line("  weights:      ", m.weights_bytes);
    expect_line("  activations:  ", m.activations_bytes);
    expect_line("  KV cache:     ", m.kv_cache_bytes);
    expect_line("  attention:    ", m.attention_bytes);
    expect_line("  sampler:      ", m.sampler_bytes);
    expect_line("  arena total:  ", m.arena_bytes);
    expect_line("  total:        ", m.total_bytes);
  }
  kes_memory_info old;
  std::memset(&old, 0xAB, sizeof(old));
  old.struct_size = offsetof(kes_memory_info, activations_bytes);
  ASSERT_EQ(kes_session_memory(model.get(), nullptr, &old), KES_OK) << kes_last_error();
  EXPECT_GT(old.weights_bytes, 0u);
  uint64_t untouched;
  std::memset(&untouched, 0xAB, sizeof(untouched));
  EXPECT_EQ(old.activations_bytes, untouched) << "past the caller's struct_size";
  kes_memory_info bad;
  bad.struct_size = sizeof(bad) + 8;
  EXPECT_EQ(kes_session_memory(model.get(), nullptr, &bad), KES_INVALID_ARGUMENT);
  kes_session_params sinks = Params(8);
  sinks.kv_sinks = 8;
  kes_memory_info m;
  m.struct_size = sizeof(m);
  EXPECT_EQ(kes_session_memory(model.get(), &sinks, &m), KES_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kes_last_error()).find("kv_sinks"), std::string::npos) << kes_last_error();
}

}  // namespace
}  // namespace kestrel
