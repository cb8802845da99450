"""ggml's own quantizers, the oracle for the converter's K-quant and 32-block quantizers
(converters/quantize.h, converters/quantize_k.h).

scripts/fetch-ggml-oracle.sh builds llama.cpp's ggml-base (ggml.c, ggml-quants.c) as a shared
library; this loads it with ctypes and calls ggml_quantize_chunk, the function llama.cpp's
llama_model_quantize calls for each tensor, with no importance matrix:

    size_t ggml_quantize_chunk(enum ggml_type type, const float * src, void * dst,
                               int64_t start, int64_t nrows, int64_t n_per_row,
                               const float * imatrix);

  ggml_oracle.py quantize TYPE N_PER_ROW IN.f32 OUT.bin
      IN.f32 holds little-endian float32 values, rows of N_PER_ROW; OUT.bin receives ggml's blocks
      of type TYPE (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K), row after row.
  ggml_oracle.py batch LIST
      The same for each line "TYPE N_PER_ROW IN.f32 OUT.bin" of LIST, loading ggml once.

Exits non-zero with a message when the library cannot be built or loaded: the tests that use it
fail rather than skip.
"""

import ctypes
import os
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# ggml.h's enum ggml_type.
GGML_TYPES = {"Q4_0": 2, "Q4_1": 3, "Q5_0": 6, "Q5_1": 7, "Q8_0": 8, "Q2_K": 10, "Q3_K": 11,
              "Q4_K": 12, "Q5_K": 13, "Q6_K": 14}


def load_library() -> ctypes.CDLL:
    result = subprocess.run(["bash", os.path.join(ROOT, "scripts", "fetch-ggml-oracle.sh")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if result.returncode != 0:
        sys.exit(f"scripts/fetch-ggml-oracle.sh failed ({result.returncode}):\n{result.stderr}")
    lib = ctypes.CDLL(result.stdout.strip().splitlines()[-1])
    lib.ggml_quantize_chunk.restype = ctypes.c_size_t
    lib.ggml_quantize_chunk.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
                                        ctypes.c_int64, ctypes.c_int64, ctypes.c_int64,
                                        ctypes.c_void_p]
    lib.ggml_row_size.restype = ctypes.c_size_t
    lib.ggml_row_size.argtypes = [ctypes.c_int, ctypes.c_int64]
    return lib


def quantize_rows(lib: ctypes.CDLL, type_name: str, rows: np.ndarray) -> np.ndarray:
    """float32 [nrows, n_per_row] -> ggml's blocks, uint8 [nrows, row bytes]."""
    if type_name not in GGML_TYPES:
        sys.exit(f"unknown type {type_name}: expected one of {', '.join(GGML_TYPES)}")
    ggml_type = GGML_TYPES[type_name]
    rows = np.ascontiguousarray(rows, dtype="<f4")
    nrows, n_per_row = rows.shape
    row_size = lib.ggml_row_size(ggml_type, n_per_row)
    out = np.zeros((nrows, row_size), dtype=np.uint8)
    written = lib.ggml_quantize_chunk(ggml_type, rows.ctypes.data, out.ctypes.data, 0, nrows,
                                      n_per_row, None)
    if written != out.size:
        sys.exit(f"ggml_quantize_chunk wrote {written} bytes, expected {out.size}")
    return out


def quantize(lib: ctypes.CDLL, type_name: str, n_per_row: int, in_path: str,
             out_path: str) -> None:
    values = np.fromfile(in_path, dtype="<f4")
    if n_per_row <= 0 or values.size % n_per_row != 0:
        sys.exit(f"{in_path}: {values.size} values are not whole rows of {n_per_row}")
    quantize_rows(lib, type_name, values.reshape(-1, n_per_row)).tofile(out_path)


def main() -> None:
    if len(sys.argv) == 6 and sys.argv[1] == "quantize":
        quantize(load_library(), sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5])
    elif len(sys.argv) == 3 and sys.argv[1] == "batch":
        lib = load_library()
        with open(sys.argv[2]) as jobs:
            for line in jobs:
                type_name, n_per_row, in_path, out_path = line.split()
                quantize(lib, type_name, int(n_per_row), in_path, out_path)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
