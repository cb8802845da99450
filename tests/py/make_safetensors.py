"""Writes a .safetensors file with the safetensors package (PyPI), for the C++ reader's
interoperability test, and the values it holds as raw little-endian f32 (F16 and BF16 decoded
by numpy) beside it: OUT and OUT.f32 (tensors "a" F32 (2, 3), "b" F16 (5,), "c" BF16 (2, 2), in
that order). Usage: make_safetensors.py OUT"""
import sys

import numpy as np
from safetensors import TensorSpec, serialize_file

out = sys.argv[1]
rng = np.random.default_rng(7)
a = rng.standard_normal((2, 3)).astype(np.float32)
b = np.array([0.1, -2.5, 65504.0, 6e-8, -0.0], dtype=np.float16)
c_bits = np.array([[0x3FC0, 0x8001], [0x7F80, 0x4049]], dtype=np.uint16)  # BF16, via raw bits


def spec(array, dtype):
    return TensorSpec(dtype=dtype, shape=list(array.shape), data_ptr=array.ctypes.data,
                      data_len=array.nbytes)


# numpy has no bfloat16: the package takes raw bytes with the dtype named.
serialize_file({"a": spec(a, "float32"), "b": spec(b, "float16"), "c": spec(c_bits, "bfloat16")},
               out, metadata={"format": "pt", "note": "kestrel"})
c = (c_bits.astype(np.uint32) << 16).view(np.float32)
np.concatenate([a.ravel(), b.astype(np.float32), c.ravel()]).astype("<f4").tofile(out + ".f32")
