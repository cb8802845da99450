#!/usr/bin/env python3
"""Writes the real Qwen vocabulary as a GGUF tokenizer, as llama.cpp's convert_hf_to_gguf.py
writes Qwen2/Qwen3 files: byte-level BPE (tokenizer.ggml.model "gpt2", pre "qwen2"), the 151,643
regular tokens, the merges, and Qwen3's 26 added tokens (<|endoftext|> to </think>).

The regular tokens and their ranks are qwen.tiktoken, the file Qwen's own tokenizer is built
from (Qwen1 to Qwen3 share it), as the dashscope wheel on PyPI ships it (scripts/fetch-model.sh
puts it in models/). Its ranks are the merge order: each token of more than one byte is the merge
of the two parts that byte-level BPE, stopped below the token's own rank, leaves of it
(llama.cpp's QwenModel.bpe, convert_hf_to_gguf.py), and the merges are listed by rank. Pieces are
the tokens' bytes in GPT-2's byte-to-unicode alphabet.

The file is tokenizer only, with the hyper-parameters llama.cpp reads before it reads a
vocabulary (a qwen3 of one tiny layer, no tensors): Kestrel's tests read it with the converter's
tokenizer import (tests/tokenizer_qwen_vocab_test.cc), llama.cpp with vocab_only.

  qwen_vocab_gguf.py --tiktoken models/qwen-vocabulary/qwen.tiktoken --out OUT.gguf [--pre NAME]
"""
import argparse
import base64

import gguf

NORMAL, CONTROL, USER_DEFINED = 1, 3, 4
# Qwen3's added tokens from id 151643, typed as convert_hf_to_gguf.py types them: control where
# Qwen's tokenizer_config marks them special or they look special (<|...|>), else user-defined
# (always split out of text).
ADDED = [("<|endoftext|>", CONTROL), ("<|im_start|>", CONTROL), ("<|im_end|>", CONTROL),
         ("<|object_ref_start|>", CONTROL), ("<|object_ref_end|>", CONTROL),
         ("<|box_start|>", CONTROL), ("<|box_end|>", CONTROL), ("<|quad_start|>", CONTROL),
         ("<|quad_end|>", CONTROL), ("<|vision_start|>", CONTROL), ("<|vision_end|>", CONTROL),
         ("<|vision_pad|>", CONTROL), ("<|image_pad|>", CONTROL), ("<|video_pad|>", CONTROL),
         ("<tool_call>", USER_DEFINED), ("</tool_call>", USER_DEFINED),
         ("<|fim_prefix|>", CONTROL), ("<|fim_middle|>", CONTROL),
         ("<|fim_suffix|>", CONTROL), ("<|fim_pad|>", CONTROL),
         ("<|repo_name|>", CONTROL), ("<|file_sep|>", CONTROL),
         ("<tool_response>", USER_DEFINED), ("</tool_response>", USER_DEFINED),
         ("<think>", USER_DEFINED), ("</think>", USER_DEFINED)]


def byte_alphabet():
    """GPT-2's bytes_to_unicode: printable bytes as themselves, the rest shifted past 255."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + \
        list(range(0xAE, 0x100))
    chars, n = printable[:], 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(printable, chars)}


def split_of(ranks, token, max_rank):
    """The two parts byte-level BPE leaves of `token` when merges of rank >= max_rank stop."""
    parts = [bytes([b]) for b in token]
    while True:
        best, best_rank = None, None
        for i in range(len(parts) - 1):
            rank = ranks.get(parts[i] + parts[i + 1])
            if rank is not None and (best_rank is None or rank < best_rank):
                best, best_rank = i, rank
        if best_rank is None or best_rank >= max_rank:
            return parts
        parts = parts[:best] + [parts[best] + parts[best + 1]] + parts[best + 2:]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tiktoken", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--pre", default="qwen2",
                    help="tokenizer.ggml.pre: another pre-tokenizer over the same vocabulary "
                         "(gpt-4o: Phi-4-mini's)")
    args = ap.parse_args()
    ranks = {}
    with open(args.tiktoken, "rb") as f:
        for line in f:
            if line.strip():
                token, rank = line.split()
                ranks[base64.b64decode(token)] = int(rank)
    by_rank = sorted(ranks.items(), key=lambda item: item[1])
    if [rank for _, rank in by_rank] != list(range(len(by_rank))):
        raise SystemExit(f"{args.tiktoken}: expected ranks 0..{len(by_rank) - 1}")
    alphabet = byte_alphabet()

    def piece(token):
        return "".join(alphabet[b] for b in token)

    tokens = [piece(token) for token, _ in by_rank]
    merges = []
    for token, rank in by_rank:
        if len(token) > 1:
            parts = split_of(ranks, token, rank)
            if len(parts) != 2:
                raise SystemExit(f"token {rank} is not one merge of two tokens: {parts}")
            merges.append(f"{piece(parts[0])} {piece(parts[1])}")
    types = [NORMAL] * len(tokens)
    for text, kind in ADDED:
        tokens.append(text)
        types.append(kind)

    w = gguf.GGUFWriter(args.out, "qwen3")
    w.add_name("qwen-vocabulary")
    for key, value in [("block_count", 1), ("context_length", 4096), ("embedding_length", 64),
                       ("feed_forward_length", 128), ("attention.head_count", 4),
                       ("attention.head_count_kv", 4), ("attention.key_length", 16),
                       ("attention.value_length", 16), ("rope.dimension_count", 16)]:
        w.add_uint32(f"qwen3.{key}", value)
    w.add_float32("qwen3.attention.layer_norm_rms_epsilon", 1e-6)
    w.add_float32("qwen3.rope.freq_base", 1e6)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(args.pre)
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    endoftext, im_end = len(by_rank), len(by_rank) + 2
    w.add_bos_token_id(endoftext)
    w.add_eos_token_id(im_end)
    w.add_pad_token_id(endoftext)
    w.add_add_bos_token(False)
    w.write_header_to_file()
    w.write_kv_data_to_file()  # no tensors
    w.close()


if __name__ == "__main__":
    main()
