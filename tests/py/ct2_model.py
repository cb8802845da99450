"""CTranslate2's model.bin layout (converters/ct2/ct2_file.h describes it), written and read with
NumPy, for the tiny Whisper models of the tests and the fuzz seeds:
  u32 binary version, string spec name, u32 spec revision, u32 variable count, then per variable
  string name, u8 rank, u32 dims, u8 dtype, u32 byte count, bytes; then u32 alias count and
  (alias, target) string pairs. Strings: u16 length including a NUL, bytes, NUL.
"""
import struct

import numpy as np

# CTranslate2's dtype ids; bfloat16 has no NumPy type and travels as uint16 bits.
DTYPES = {0: np.float32, 1: np.int8, 2: np.int16, 3: np.int32, 4: np.float16, 5: np.uint16}


def string(text):
    data = text.encode() + b"\0"
    return len(data).to_bytes(2, "little") + data


def model_bin(spec, variables, aliases=(), version=6, revision=3):
    """variables: (name, shape, dtype id, raw bytes) in file order; aliases: (alias, target)."""
    out = version.to_bytes(4, "little") + string(spec) + revision.to_bytes(4, "little")
    out += len(variables).to_bytes(4, "little")
    for name, shape, dtype, data in variables:
        out += string(name) + bytes([len(shape)])
        out += b"".join(int(d).to_bytes(4, "little") for d in shape)
        out += bytes([dtype]) + len(data).to_bytes(4, "little") + data
    out += len(aliases).to_bytes(4, "little")
    for alias, target in aliases:
        out += string(alias) + string(target)
    return out


def read_model_bin(path):
    """{name: array} with aliases resolved, and the spec name."""
    b = open(path, "rb").read()
    pos = 0

    def take(fmt):
        nonlocal pos
        v = struct.unpack_from(fmt, b, pos)
        pos += struct.calcsize(fmt)
        return v[0]

    def text():
        nonlocal pos
        n = take("<H")
        s = b[pos:pos + n - 1].decode()
        pos += n
        return s

    take("<I")
    spec = text()
    take("<I")
    out = {}
    for _ in range(take("<I")):
        name = text()
        shape = [take("<I") for _ in range(take("<B"))]
        dtype = DTYPES[take("<B")]
        size = take("<I")
        count = int(np.prod(shape)) if shape else 1
        out[name] = np.frombuffer(b, dtype=dtype, count=count, offset=pos).reshape(shape)
        pos += size
    for _ in range(take("<I")):
        alias = text()
        out[alias] = out[text()]
    return out, spec
