// `kestrel transcribe` and `kestrel bench` on a Whisper model in a Kestrel built without audio
// (KESTREL_WITH_AUDIO=OFF, compiled instead of tools/cmd_transcribe.cc and
// tools/cmd_bench_audio.cc): the commands are still listed, and say why they cannot run.
#include <string>
#include <vector>

#include "runtime/without_audio.h"
#include "tools/bench_stats.h"
#include "tools/cli.h"

namespace kestrel::cli {

int TranscribeCommand(const std::vector<std::string>&) {
  return Fail(std::string("transcribe: ") + kWithoutAudioMessage);
}

int BenchAudioEncoder(const std::string& model_path, const Model&, const EncoderBenchOptions&) {
  return Fail("bench: " + model_path + " is a speech model (Whisper): " + kWithoutAudioMessage);
}

}  // namespace kestrel::cli
