// kestrel chat MODEL.kes: a multi-turn conversation on the terminal. Each line read is a user
// turn; the reply streams as it is generated; the KV cache is kept across turns, so each turn
// prefills only its own tokens. End of input (Ctrl-D) ends the chat.
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "runtime/chat_template.h"
#include "runtime/generate.h"
#include "runtime/model.h"
#include "runtime/session.h"
#include "tools/cli.h"

namespace kestrel::cli {
namespace {

const char kChatUsage[] =
    "usage: kestrel chat MODEL.kes [options]\n"
    "Reads one user turn per line from standard input; end of input (Ctrl-D) ends the chat.\n"
    "  --system TEXT       system prompt\n"
    "  --template NAME     chat format: gemma, chatml or llama3 (default: recognized from the\n"
    "                      model's chat template)\n"
    "  -n, --n-predict N   most tokens per reply (default 512)\n"
    "  -t, --threads N     threads (default 1)\n"
    "  -c, --ctx N         context length in tokens (default 4096); a longer chat goes on\n"
    "                      with the attention sinks and the most recent tokens\n"
    KESTREL_SAMPLER_FLAGS_USAGE
    KESTREL_KV_FLAGS_USAGE;

// The ids of one turn: markup with control tokens parsed, people's words as plain text.
Status EncodeTurn(const Tokenizer& tokenizer, const std::vector<ChatSegment>& segments,
                  std::vector<int32_t>* out) {
  out->clear();
  std::vector<int32_t> ids;
  for (const ChatSegment& segment : segments) {
    KES_RETURN_IF_ERROR(tokenizer.Encode(segment.text, /*add_special=*/false,
                                         /*parse_special=*/segment.markup, &ids));
    out->insert(out->end(), ids.begin(), ids.end());
  }
  return OkStatus();
}

}  // namespace

int ChatCommand(const std::vector<std::string>& args) {
  std::string model_path, system, template_name;
  SessionOptions session_options;
  GenerateOptions gen;
  gen.max_new_tokens = 512;
  gen.sampler.temperature = 0.8f;
  FlagReader flags(args);
  while (!flags.Done()) {
    const std::string arg = flags.Next();
    Status s;
    if (arg == "-h" || arg == "--help") {
      std::fputs(kChatUsage, stdout);
      return 0;
    } else if (arg == "--system") {
      s = flags.Value(arg, &system);
    } else if (arg == "--template") {
      s = flags.Value(arg, &template_name);
    } else if (arg == "-n" || arg == "--n-predict") {
      s = flags.Int(arg, 1, 1 << 24, &gen.max_new_tokens);
    } else if (arg == "-t" || arg == "--threads") {
      s = flags.Int(arg, 1, 256, &session_options.n_threads);
    } else if (arg == "-c" || arg == "--ctx") {
      s = flags.Int(arg, 1, 1 << 24, &session_options.context_length);
    } else if (SamplerFlag(flags, arg, &gen.sampler, &s) ||
               KvFlag(flags, arg, &session_options.kv, &s)) {
      // taken, s says whether its value was valid
    } else {
      s = flags.Positional(arg, "chat", kChatUsage, &model_path);
    }
    if (!s.ok()) return Fail(s.message());
  }
  if (model_path.empty()) return Fail(std::string("no model given\n") + kChatUsage);

  std::unique_ptr<Model> model;
  Status s = Model::Open(model_path, &model);
  if (!s.ok()) return Fail(s.message());
  ChatFormat format;
  if (template_name.empty()) {
    const auto* jinja = model->meta().tokenizer()->chat_template();
    s = DetectChatFormat(jinja ? jinja->string_view() : std::string_view(), &format);
  } else {
    s = ParseChatFormat(template_name, &format);
  }
  if (!s.ok()) return Fail(s.message());
  std::unique_ptr<Session> session;
  s = CreateSession(*model, session_options, &session);
  if (!s.ok()) return Fail(s.message());
  std::fprintf(stderr, "chat format %s, context %zu tokens, KV %s; end with Ctrl-D\n",
               ChatFormatName(format), session->context_length(),
               ops::KvTypeName(session_options.kv.type));

  const Tokenizer& tokenizer = model->tokenizer();
  std::vector<int32_t> tokens;
  std::string line;
  bool first = true;
  while (true) {
    std::fputs("> ", stderr);
    if (!std::getline(std::cin, line)) break;
    if (line.empty()) continue;
    s = EncodeTurn(tokenizer, ChatTurn(format, first, system, line), &tokens);
    if (!s.ok()) return Fail(s.message());
    if (first && tokenizer.config().add_bos && tokenizer.config().bos_id >= 0) {
      tokens.insert(tokens.begin(), tokenizer.config().bos_id);
    }
    GenerateStats stats;
    s = Generate(*session, tokens.data(), tokens.size(), gen, StreamToken, nullptr, &stats);
    std::fputc('\n', stdout);
    std::fflush(stdout);
    if (!s.ok()) return Fail(s.message());
    first = false;
  }
  std::fputc('\n', stderr);
  return 0;
}

}  // namespace kestrel::cli
