// kestrel chat MODEL.kes: a multi-turn conversation on the terminal. Each line read is a user
// turn; the reply streams as it is generated; the KV cache is kept across turns, so each turn
// prefills only its own tokens. End of input (Ctrl-D) ends the chat.
// The conversation is written out by the model's own Jinja chat template, as llama.cpp's --jinja
// does (runtime/chat_conversation.h); a model without one, or whose template fails, gets the
// built-in format its turn markers name (runtime/chat_template.h).
// A turn longer than the whole context is reported and skipped, and the chat goes on (llama.cpp's
// server refuses such a request and serves the next); the exit code is then 1, so that a script
// feeding a conversation learns that a turn got no reply.
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "runtime/chat_conversation.h"
#include "runtime/chat_writer.h"
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
    "  --system-file FILE  read the system prompt from FILE\n"
    "  --template NAME     write the chat in the built-in format gemma, chatml or llama3\n"
    "                      instead of by the model's own Jinja chat template\n"
    "  --no-think          ask a thinking model (Qwen3, SmolLM3) to reply without its\n"
    "                      reasoning block: its template's enable_thinking set to false\n"
    "  --verbose-prompt    print each turn's prompt, as the model gets it, to stderr\n"
    "  -n, --n-predict N   most tokens per reply (default 512)\n" KESTREL_THREADS_USAGE
    "  -c, --ctx N         context length in tokens (default 4096, at most the model's); a\n"
    "                      longer chat goes on with the attention sinks and the most recent\n"
    "                      tokens; a turn longer than the context is skipped with an "
    "error\n" KESTREL_SAMPLER_FLAGS_USAGE KESTREL_KV_FLAGS_USAGE;

// Streams each reply token and keeps it for the conversation's record.
void StreamAndKeep(void* reply, int32_t token, std::string_view text) {
  static_cast<std::vector<int32_t>*>(reply)->push_back(token);
  StreamToken(nullptr, token, text);
}

}  // namespace

int ChatCommand(const std::vector<std::string>& args) {
  std::string model_path, system, system_file, template_name;
  bool ctx_given = false, verbose_prompt = false, no_think = false;
  SessionOptions session_options;
  session_options.n_threads = DefaultThreads();
  GenerateOptions gen;
  gen.max_new_tokens = 512;
  gen.sampler.temperature = 0.8f;
  const auto flag = [&](FlagReader& flags, const std::string& arg, Status* s) {
    if (arg == "--system") {
      *s = flags.Value(arg, &system);
    } else if (arg == "--system-file") {
      *s = flags.Value(arg, &system_file);
      if (s->ok() && system_file == "-") {
        *s = Status::Error("--system-file: standard input holds the conversation; give a file");
      }
    } else if (arg == "--template") {
      *s = flags.Value(arg, &template_name);
    } else if (arg == "--no-think") {
      no_think = true;
    } else if (arg == "--verbose-prompt") {
      verbose_prompt = true;
    } else if (arg == "-n" || arg == "--n-predict") {
      *s = flags.Int(arg, 1, 1 << 24, &gen.max_new_tokens);
    } else {
      return GenerationFlag(flags, arg, &session_options, &ctx_given, &gen.sampler, s);
    }
    return true;
  };
  if (std::optional<int> exit_code =
          ReadCommandFlags(args, "chat", kChatUsage, flag, &model_path)) {
    return *exit_code;
  }
  if (!system.empty() && !system_file.empty()) {
    return Fail(std::string("give the system prompt with one of --system and --system-file\n") +
                kChatUsage);
  }

  std::unique_ptr<Model> model;
  Status s = OpenTextGenerator(model_path, ctx_given, &session_options, &model);
  if (s.ok() && !system_file.empty()) s = ReadInputText("--system-file", system_file, &system);
  if (!s.ok()) return Fail(s.message());
  // The model's Jinja template when it renders, else a built-in format: a template that fails
  // costs one warning line, not the chat.
  ChatWriter writer;
  s = ChooseChatWriter(*model, template_name, system, &writer);
  if (!s.ok()) return Fail(s.message());
  if (!writer.warning.empty()) {
    std::fprintf(stderr, "kestrel: warning: %s\n", writer.warning.c_str());
  }
  if (no_think) SetEnableThinking(&writer, false);
  const std::string chat_format = writer.Describe();
  std::unique_ptr<ChatConversation> chat = MakeChatConversation(*model, std::move(writer), system);
  std::unique_ptr<Session> session;
  s = CreateSession(*model, session_options, &session);
  if (!s.ok()) return Fail(s.message());
  std::fprintf(stderr, "chat format %s, context %zu tokens, KV %s; end with Ctrl-D\n",
               chat_format.c_str(), session->context_length(),
               ops::KvTypeName(session_options.kv.type));

  std::vector<int32_t> tokens, reply;
  reply.reserve(gen.max_new_tokens);  // no allocation while tokens stream
  std::string line, prompt, note;
  bool skipped = false;
  while (true) {
    std::fputs("> ", stderr);
    if (!std::getline(std::cin, line)) break;
    if (!line.empty() && line.back() == '\r') line.pop_back();  // CRLF input
    if (line.empty()) continue;
    s = chat->BeginTurn(*session, line, &tokens, &prompt, &note);
    if (!s.ok()) {
      // The template refused this conversation (raise_exception); nothing of the turn ran.
      std::fprintf(stderr, "kestrel: error: %s; the turn was skipped\n", s.message().c_str());
      skipped = true;
      continue;
    }
    if (!note.empty()) std::fprintf(stderr, "kestrel: note: %s\n", note.c_str());
    if (verbose_prompt) {
      std::fprintf(stderr, "prompt (%zu tokens): %s\n", tokens.size(), prompt.c_str());
    }
    if (tokens.size() > session->context_length()) {
      // Nothing of it was prefilled and the conversation does not hold it (BeginTurn may have
      // taken the session back to where the renderings part, which the next turn redoes).
      std::fprintf(stderr,
                   "kestrel: error: this turn is %zu tokens, more than the context of %zu "
                   "tokens (--ctx); the turn was skipped\n",
                   tokens.size(), session->context_length());
      skipped = true;
      continue;
    }
    size_t ahead = 0;
    s = PrefillWithProgress(*session, tokens.data(), tokens.size(), &ahead);
    if (!s.ok()) return Fail(s.message());
    GenerateStats stats;
    reply.clear();
    s = Generate(*session, tokens.data() + ahead, tokens.size() - ahead, gen, StreamAndKeep, &reply,
                 &stats);
    std::fputc('\n', stdout);
    std::fflush(stdout);
    if (!s.ok()) return Fail(s.message());
    chat->EndTurn(reply, stats.decode_steps);
  }
  std::fputc('\n', stderr);
  return skipped ? 1 : 0;
}

}  // namespace kestrel::cli
