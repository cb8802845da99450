#!/usr/bin/env python3
"""Token-id lookup and decoding from a GGUF vocabulary, for hand-built oracle prompts.

This is not a tokenizer: `--pieces` looks each piece up verbatim (write '▁' for a leading
space) and fails if a piece is not a single token. Decoding maps '▁' to a space and byte
tokens '<0xAB>' to their byte.

  oracle_vocab.py --gguf M.gguf --pieces The ▁capital ▁of --bos --tokens-out P.i32
  oracle_vocab.py --gguf M.gguf --decode GEN.i32
"""

import argparse
import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from oracle_gguf import open_reader  # noqa: E402

_BYTE_TOKEN = re.compile(r"^<0x([0-9A-Fa-f]{2})>$")


def read_vocab(reader):
    """Returns (pieces: list[str], bos_id: int or None)."""
    field = reader.fields.get("tokenizer.ggml.tokens")
    if field is None:
        raise ValueError("GGUF has no 'tokenizer.ggml.tokens'")
    pieces = [bytes(field.parts[i]).decode("utf-8") for i in field.data]
    bos = reader.fields.get("tokenizer.ggml.bos_token_id")
    return pieces, (int(bos.contents()) if bos is not None else None)


def lookup(pieces, wanted):
    index = {p: i for i, p in enumerate(pieces)}
    ids = []
    for piece in wanted:
        if piece not in index:
            raise ValueError(f"piece {piece!r} is not a token of this vocabulary")
        ids.append(index[piece])
    return ids


def decode(pieces, ids):
    out = bytearray()
    for i in ids:
        piece = pieces[i]
        byte = _BYTE_TOKEN.match(piece)
        if byte:
            out.append(int(byte.group(1), 16))
        else:
            out += piece.replace("\u2581", " ").encode("utf-8")
    return out.decode("utf-8", errors="replace")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--pieces", nargs="+", help="token pieces to look up verbatim")
    ap.add_argument("--bos", action="store_true", help="prepend the BOS id")
    ap.add_argument("--tokens-out", help="write the looked-up ids as raw little-endian int32")
    ap.add_argument("--decode", help="raw little-endian int32 file to decode")
    args = ap.parse_args()

    pieces, bos = read_vocab(open_reader(args.gguf))
    if args.pieces:
        ids = lookup(pieces, args.pieces)
        if args.bos:
            if bos is None:
                sys.exit("--bos given but the GGUF has no tokenizer.ggml.bos_token_id")
            ids = [bos] + ids
        print(" ".join(map(str, ids)))
        if args.tokens_out:
            np.asarray(ids, dtype="<i4").tofile(args.tokens_out)
    if args.decode:
        ids = np.fromfile(args.decode, dtype="<i4")
        print(" ".join(f"{i}:{pieces[i]!r}" for i in ids))
        print(repr(decode(pieces, ids)))


if __name__ == "__main__":
    main()
