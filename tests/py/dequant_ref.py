"""Reference dequantization for tests/dequantize_test.cc, done by gguf-py (gguf.quants), which is
itself bit-exact with ggml.

  dequant_ref.py blocks TYPE IN.bin OUT.bin
      IN.bin holds whole blocks of ggml type TYPE (a name such as Q4_K); OUT.bin receives their
      values as little-endian float32.
  dequant_ref.py model-hashes MODEL.gguf OUT.txt
      One line per tensor, in file order: name, type name, element count and the SHA-256 of the
      dequantized values as little-endian float32 bytes (row-major).
  dequant_ref.py quantize TYPE IN.f32 OUT.bin
      IN.f32 holds little-endian float32 values (a multiple of the block size); OUT.bin receives
      gguf.quants.quantize's blocks of type TYPE (Q8_0, Q4_0, Q4_1, Q5_0 or Q5_1: ggml's reference
      quantizers; gguf-py has no K-quant quantizer, tests/py/ggml_oracle.py calls ggml for those).
  dequant_ref.py sizes TYPE...
      Prints "TYPE block_elements block_bytes" per type, from gguf-py's GGML_QUANT_SIZES.
"""

import hashlib
import sys

import numpy as np
from gguf import GGMLQuantizationType, GGML_QUANT_SIZES, GGUFReader
from gguf.quants import dequantize, quantize


def dequantize_blocks(type_name: str, in_path: str, out_path: str) -> None:
    qtype = GGMLQuantizationType[type_name]
    _, type_size = GGML_QUANT_SIZES[qtype]
    raw = np.fromfile(in_path, dtype=np.uint8)
    if raw.size % type_size != 0:
        sys.exit(f"{in_path}: {raw.size} bytes is not a whole number of {type_name} blocks "
                 f"of {type_size} bytes")
    values = dequantize(raw.reshape(1, -1), qtype)
    np.ascontiguousarray(values, dtype="<f4").tofile(out_path)


def quantize_values(type_name: str, in_path: str, out_path: str) -> None:
    qtype = GGMLQuantizationType[type_name]
    block_elements, _ = GGML_QUANT_SIZES[qtype]
    values = np.fromfile(in_path, dtype="<f4")
    if values.size % block_elements != 0:
        sys.exit(f"{in_path}: {values.size} values is not a whole number of {type_name} blocks")
    # Blocks of subnormal or huge values overflow 1 / scale; that is part of what is compared.
    with np.errstate(all="ignore"):
        blocks = quantize(values.reshape(1, -1), qtype)
    np.ascontiguousarray(blocks, dtype=np.uint8).tofile(out_path)


def model_hashes(model_path: str, out_path: str) -> None:
    reader = GGUFReader(model_path)
    with open(out_path, "w") as out:
        for tensor in reader.tensors:
            # One tensor at a time: token_embd alone is 640 MiB as float32.
            values = np.ascontiguousarray(dequantize(tensor.data, tensor.tensor_type), dtype="<f4")
            if values.size != tensor.n_elements:
                sys.exit(f"{tensor.name}: dequantized {values.size} values, "
                         f"expected {tensor.n_elements}")
            digest = hashlib.sha256(values.data).hexdigest()
            out.write(f"{tensor.name} {tensor.tensor_type.name} {tensor.n_elements} {digest}\n")
            del values


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] == "blocks":
        dequantize_blocks(sys.argv[2], sys.argv[3], sys.argv[4])
    elif len(sys.argv) == 5 and sys.argv[1] == "quantize":
        quantize_values(sys.argv[2], sys.argv[3], sys.argv[4])
    elif len(sys.argv) >= 3 and sys.argv[1] == "sizes":
        for name in sys.argv[2:]:
            block_elements, block_bytes = GGML_QUANT_SIZES[GGMLQuantizationType[name]]
            print(name, block_elements, block_bytes)
    elif len(sys.argv) == 4 and sys.argv[1] == "model-hashes":
        model_hashes(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
