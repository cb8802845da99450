#!/usr/bin/env python3
"""Carry a real-shape GGUF to a machine that cannot make one, in a few megabytes.

    gguf_skeleton.py shrink BIG.gguf SKELETON      # needs the gguf package
    gguf_skeleton.py expand SKELETON BIG.gguf      # plain Python, nothing to install

A skeleton keeps the GGUF's whole header (metadata, tokenizer, tensor table) and, per tensor
type, one sample of 256 blocks from the first tensor of that type. Expanding writes a file of
the same size and layout whose every tensor is its type's sample repeated. Speed depends on
shapes and types, not on values (bench/real_shape_gguf.py's files hold random weights for the
same reason), so an expanded file benchmarks as the original does; its output text means
nothing. Meant for benchmark machines without network or Python packages, where the 1-5 GB
file itself would not travel.
"""
import argparse
import json
import struct
import sys
from pathlib import Path

MAGIC = b"KESKEL1\n"
SAMPLE_BLOCKS = 256
CHUNK = 64 << 20


def shrink(src: Path, dst: Path) -> None:
    from gguf import GGUFReader, GGML_QUANT_SIZES

    reader = GGUFReader(src)
    samples = {}   # tensor type -> bytes
    tensors = []
    for t in reader.tensors:
        kind = int(t.tensor_type)
        if kind not in samples:
            block_bytes = GGML_QUANT_SIZES[t.tensor_type][1]
            take = min(int(t.n_bytes), block_bytes * SAMPLE_BLOCKS)
            with open(src, "rb") as f:
                f.seek(int(t.data_offset))
                samples[kind] = f.read(take)
        tensors.append([int(t.data_offset), int(t.n_bytes), kind])
    header_len = int(reader.data_offset)
    with open(src, "rb") as f:
        header = f.read(header_len)
    index = {"file_bytes": src.stat().st_size, "header_bytes": header_len, "tensors": tensors,
             "samples": {str(k): len(v) for k, v in samples.items()}}
    blob = json.dumps(index).encode()
    with open(dst, "wb") as out:
        out.write(MAGIC + struct.pack("<Q", len(blob)) + blob + header)
        for kind in index["samples"]:
            out.write(samples[int(kind)])
    print(f"{dst}: {dst.stat().st_size} bytes for {index['file_bytes']} "
          f"({len(tensors)} tensors, types {sorted(samples)})")


def expand(src: Path, dst: Path) -> None:
    with open(src, "rb") as f:
        if f.read(len(MAGIC)) != MAGIC:
            sys.exit(f"{src}: not a skeleton (expected the {MAGIC!r} magic)")
        (blob_len,) = struct.unpack("<Q", f.read(8))
        index = json.loads(f.read(blob_len))
        header = f.read(index["header_bytes"])
        samples = {int(k): f.read(n) for k, n in index["samples"].items()}
    tmp = dst.with_name(dst.name + ".part")
    with open(tmp, "wb") as out:
        out.write(header)
        for offset, n_bytes, kind in sorted(index["tensors"]):
            out.write(b"\0" * (offset - out.tell()))   # alignment padding
            sample = samples[kind]
            chunk = sample * max(1, CHUNK // len(sample))
            left = n_bytes
            while left:
                piece = chunk[:left]
                out.write(piece)
                left -= len(piece)
        out.write(b"\0" * (index["file_bytes"] - out.tell()))
    tmp.replace(dst)
    print(f"{dst}: {index['file_bytes']} bytes")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("action", choices=["shrink", "expand"])
    ap.add_argument("src", type=Path)
    ap.add_argument("dst", type=Path)
    args = ap.parse_args()
    (shrink if args.action == "shrink" else expand)(args.src, args.dst)


if __name__ == "__main__":
    main()
