#!/usr/bin/env python3
"""Reference tokenizer for GGUF "llama" (SentencePiece BPE) vocabularies, the oracle for
Kestrel's runtime tokenizer.

The BPE itself is Google's `sentencepiece` (SentencePieceProcessor), not our code: the GGUF
vocabulary (pieces, scores, token types) is turned into a SentencePiece ModelProto (BPE,
byte fallback, identity normalizer, no dummy prefix, no whitespace removal) and loaded as is.
Two adjustments make SentencePiece reproduce llama.cpp's semantics, which Kestrel follows:

1. Control tokens typed literally in the text ("<start_of_turn>") are split out before
   encoding when --parse-special is set for a case (SentencePiece never parses control pieces;
   llama.cpp does with parse_special). `split_special` below does that split the way llama.cpp
   does (longest token first, leftmost occurrence, all occurrences); the raw pieces between
   them go to SentencePiece one by one.
2. llama.cpp matches user-defined tokens against the raw text, before spaces become U+2581;
   SentencePiece matches them in the model after escaping. User-defined pieces that contain
   spaces (Gemma 3's runs of 2..31 spaces) are therefore given to SentencePiece with their
   spaces written as U+2581, so that "a   b" gives [a, "   ", b] in both.
The GGUF unknown token is made the proto's UNKNOWN piece (SentencePiece needs exactly one;
Gemma 3's GGUF types it as control).

  tokenize_ref.py --gguf M.gguf --cases CASES.bin --out IDS.txt

CASES.bin is a sequence of records "<parse_special 0|1> <n_bytes>\\n" + n_bytes of UTF-8 text
+ "\\n". IDS.txt gets one line per case: the token ids separated by spaces (no BOS/EOS).
"""

import argparse
import sys

import gguf
import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2 as sp_pb2

SPACE = "\u2581"
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6


def read_gguf_vocab(path):
    reader = gguf.GGUFReader(path)

    def field(key):
        f = reader.fields.get(key)
        if f is None:
            raise ValueError(f"{path}: no '{key}'")
        return f

    model = field("tokenizer.ggml.model").contents()
    if model != "llama":
        raise ValueError(f"{path}: tokenizer.ggml.model is {model!r}, expected 'llama'")
    tokens = field("tokenizer.ggml.tokens")
    pieces = [bytes(tokens.parts[i]).decode("utf-8") for i in tokens.data]
    scores = [float(x) for x in field("tokenizer.ggml.scores").contents()]
    types = [int(x) for x in field("tokenizer.ggml.token_type").contents()]
    unk = reader.fields.get("tokenizer.ggml.unknown_token_id")
    unk_id = int(unk.contents()) if unk is not None else -1
    space_prefix = reader.fields.get("tokenizer.ggml.add_space_prefix")
    add_space_prefix = bool(space_prefix.contents()) if space_prefix is not None else True
    if add_space_prefix:
        raise ValueError("add_space_prefix vocabularies are not supported by this oracle")
    return pieces, scores, types, unk_id


def build_processor(pieces, scores, types, unk_id):
    proto = sp_pb2.ModelProto()
    proto.trainer_spec.model_type = sp_pb2.TrainerSpec.BPE
    proto.trainer_spec.byte_fallback = True
    proto.trainer_spec.unk_id = unk_id
    # The processor must not add anything itself: BOS/EOS are the caller's business.
    proto.trainer_spec.bos_id = -1
    proto.trainer_spec.eos_id = -1
    proto.trainer_spec.pad_id = -1
    norm = proto.normalizer_spec
    norm.name = "identity"
    norm.precompiled_charsmap = b""
    norm.add_dummy_prefix = False
    norm.remove_extra_whitespaces = False
    norm.escape_whitespaces = True
    for i, (piece, score, kind) in enumerate(zip(pieces, scores, types)):
        p = proto.pieces.add()
        if kind == USER_DEFINED:
            piece = piece.replace(" ", SPACE)  # adjustment 2 in the module doc
        p.piece = piece
        p.score = score
        p.type = UNKNOWN if i == unk_id else (kind if kind in (
            NORMAL, CONTROL, USER_DEFINED, UNUSED, BYTE) else NORMAL)
    sp = spm.SentencePieceProcessor()
    sp.LoadFromSerializedProto(proto.SerializeToString())
    return sp


def split_special(text, specials):
    """Splits `text` into str fragments and int token ids, llama.cpp's way: for each special
    token, longest first (ties: lower id first), every non-overlapping occurrence inside a
    still-raw fragment, searched left to right, becomes its id."""
    parts = [text]
    for tid, piece in specials:
        out = []
        for part in parts:
            if isinstance(part, int):
                out.append(part)
                continue
            pieces = part.split(piece)
            for k, raw in enumerate(pieces):
                if k:
                    out.append(tid)
                if raw:
                    out.append(raw)
        parts = out
    return parts


def encode(sp, text, specials):
    ids = []
    for part in split_special(text, specials) if specials else [text]:
        if isinstance(part, int):
            ids.append(part)
        elif part:
            ids.extend(sp.EncodeAsIds(part))
    return ids


def read_cases(path):
    data = open(path, "rb").read()
    cases, pos = [], 0
    while pos < len(data):
        end = data.index(b"\n", pos)
        flag, size = data[pos:end].split()
        start = end + 1
        text = data[start:start + int(size)].decode("utf-8")
        if data[start + int(size):start + int(size) + 1] != b"\n":
            raise ValueError(f"{path}: record at byte {pos} is not followed by a newline")
        cases.append((flag == b"1", text))
        pos = start + int(size) + 1
    return cases


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--cases", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    pieces, scores, types, unk_id = read_gguf_vocab(args.gguf)
    sp = build_processor(pieces, scores, types, unk_id)
    # Control pieces only: user-defined ones SentencePiece handles itself.
    specials = sorted(((i, p) for i, p in enumerate(pieces) if types[i] == CONTROL and p),
                      key=lambda t: (-len(t[1].encode("utf-8")), t[0]))
    with open(args.out, "w") as out:
        for parse_special, text in read_cases(args.cases):
            ids = encode(sp, text, specials if parse_special else None)
            out.write(" ".join(map(str, ids)) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
