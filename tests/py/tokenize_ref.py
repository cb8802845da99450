#!/usr/bin/env python3
"""Reference tokenizer for GGUF "llama" (SentencePiece BPE) vocabularies, the oracle for
Kestrel's runtime tokenizer.

The BPE itself is Google's `sentencepiece` (SentencePieceProcessor), not our code: the GGUF
vocabulary (pieces, scores, token types) is turned into a SentencePiece ModelProto (BPE,
byte fallback, identity normalizer, no dummy prefix, no whitespace removal) and loaded as is.

Special tokens typed literally in the text are split out here, before SentencePiece sees the
text, the way llama.cpp does it (which Kestrel follows): `split_special` takes the special
pieces longest first and turns every non-overlapping occurrence in still-raw text into its id;
user-defined pieces always, control (and unknown) pieces only in cases flagged parse_special.
Only the raw text between them goes to SentencePiece. SentencePiece's own handling differs in
two ways, which is why it is not used for this step:
- it never parses control pieces in the text;
- it matches user-defined pieces after turning spaces into U+2581, llama.cpp before. Gemma 3's
  user-defined runs of 2..31 spaces are stored with raw spaces, so SentencePiece never matches
  them; renaming them to U+2581 runs would instead wrongly match a U+2581 the user typed.
The GGUF unknown token is made the proto's UNKNOWN piece (SentencePiece needs exactly one;
Gemma 3's GGUF types it as control).

  tokenize_ref.py --gguf M.gguf --cases CASES.bin --out IDS.txt

CASES.bin is a sequence of records "<parse_special 0|1> <n_bytes>\\n" + n_bytes of UTF-8 text
+ "\\n". IDS.txt gets one line per case: the token ids separated by spaces (no BOS/EOS).
"""

import argparse
import struct
import sys

import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2 as sp_pb2

NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6


# GGUF metadata value types -> struct format of one scalar (8 string, 9 array handled apart).
_SCALAR = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q",
           11: "<q", 12: "<d"}


def read_gguf_metadata(path):
    """All metadata key/values of a GGUF file (v2/v3, little-endian) as Python values.

    A small reader of its own rather than gguf.GGUFReader, which takes close to a minute to turn
    a 262144-entry token array into NumPy views. Tensor infos and data are not read."""
    with open(path, "rb") as f:
        data = f.read(64 << 20)  # metadata sits at the front; 64 MiB is far more than needed
    if data[:4] != b"GGUF":
        raise ValueError(f"{path}: not a GGUF file")
    version, = struct.unpack_from("<I", data, 4)
    if version not in (2, 3):
        raise ValueError(f"{path}: GGUF version {version}, expected 2 or 3")
    _, kv_count = struct.unpack_from("<QQ", data, 8)
    pos = 24

    def string(pos):
        n, = struct.unpack_from("<Q", data, pos)
        pos += 8
        if pos + n > len(data):
            raise ValueError(f"{path}: string at byte {pos} runs past the metadata read")
        return data[pos:pos + n].decode("utf-8"), pos + n

    def value(kind, pos):
        if kind == 8:
            return string(pos)
        if kind == 9:
            elem, count = struct.unpack_from("<IQ", data, pos)
            pos += 12
            if elem in _SCALAR:
                fmt = _SCALAR[elem]
                size = struct.calcsize(fmt)
                items = list(struct.unpack_from(f"<{count}{fmt[1]}", data, pos))
                return items, pos + size * count
            items = []
            for _ in range(count):
                item, pos = value(elem, pos)
                items.append(item)
            return items, pos
        if kind not in _SCALAR:
            raise ValueError(f"{path}: unknown metadata value type {kind}")
        v, = struct.unpack_from(_SCALAR[kind], data, pos)
        return v, pos + struct.calcsize(_SCALAR[kind])

    meta = {}
    for _ in range(kv_count):
        key, pos = string(pos)
        kind, = struct.unpack_from("<I", data, pos)
        meta[key], pos = value(kind, pos + 4)
    return meta


def read_gguf_vocab(path):
    meta = read_gguf_metadata(path)
    for key in ("tokenizer.ggml.model", "tokenizer.ggml.tokens", "tokenizer.ggml.scores",
                "tokenizer.ggml.token_type"):
        if key not in meta:
            raise ValueError(f"{path}: no '{key}'")
    if meta["tokenizer.ggml.model"] != "llama":
        raise ValueError(f"{path}: tokenizer.ggml.model is {meta['tokenizer.ggml.model']!r}, "
                         "expected 'llama'")
    pieces = meta["tokenizer.ggml.tokens"]
    scores = [float(x) for x in meta["tokenizer.ggml.scores"]]
    types = [int(x) for x in meta["tokenizer.ggml.token_type"]]
    if not len(pieces) == len(scores) == len(types):
        raise ValueError(f"{path}: tokens, scores and token_type differ in length")
    unk_id = int(meta.get("tokenizer.ggml.unknown_token_id", -1))
    if meta.get("tokenizer.ggml.add_space_prefix", True):
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
    for part in split_special(text, specials):
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

    def specials(kinds):
        return sorted(((i, p) for i, p in enumerate(pieces) if types[i] in kinds and p),
                      key=lambda t: (-len(t[1].encode("utf-8")), t[0]))

    with_control = specials((CONTROL, UNKNOWN, USER_DEFINED))
    user_defined = specials((USER_DEFINED,))
    with open(args.out, "w") as out:
        for parse_special, text in read_cases(args.cases):
            ids = encode(sp, text, with_control if parse_special else user_defined)
            out.write(" ".join(map(str, ids)) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
