// Runs a fuzz target's LLVMFuzzerTestOneInput over files, without libFuzzer: the ordinary test
// suite (every build, sanitizers and qemu ARM included) replays each target's seed corpus and
// the inputs of every crash found so far (fuzz/regressions/<target>), so a fixed bug stays fixed.
//   <target>_replay PATH... : each PATH a file or a folder of files (not recursive).
// Fails when no input at all was found: a replay of nothing would pass without checking anything.
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int* argc, char*** argv);

namespace {

bool IsDirectory(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool ReadFile(const std::string& path, std::vector<uint8_t>* out) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return false;
  out->clear();
  uint8_t buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) out->insert(out->end(), buf, buf + n);
  const bool ok = !std::ferror(f);
  std::fclose(f);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    const std::string path = argv[i];
    if (!IsDirectory(path)) {
      files.push_back(path);
      continue;
    }
    DIR* dir = opendir(path.c_str());
    if (!dir) {
      std::fprintf(stderr, "replay: cannot open folder %s\n", path.c_str());
      return 1;
    }
    std::vector<std::string> names;
    while (const dirent* e = readdir(dir)) {
      const std::string name = e->d_name;
      // Dot files (.gitkeep) and notes are not inputs.
      if (name[0] != '.' && name != "README.md") names.push_back(path + "/" + name);
    }
    closedir(dir);
    std::sort(names.begin(), names.end());
    files.insert(files.end(), names.begin(), names.end());
  }
  std::vector<uint8_t> data;
  for (const std::string& file : files) {
    if (!ReadFile(file, &data)) {
      std::fprintf(stderr, "replay: cannot read %s\n", file.c_str());
      return 1;
    }
    std::printf("replay: %s (%zu bytes)\n", file.c_str(), data.size());
    std::fflush(stdout);
    LLVMFuzzerTestOneInput(data.data(), data.size());
  }
  if (files.empty()) {
    std::fprintf(stderr, "replay: no inputs found in the paths given\n");
    return 1;
  }
  std::printf("replay: %zu inputs ran without a crash or sanitizer report\n", files.size());
  return 0;
}
