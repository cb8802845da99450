#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora (fuzz/corpus/<target>/): small, valid inputs of every
kind each target reads, from which libFuzzer's mutations start.

  gguf_convert   tiny GGUFs: Gemma 3 (a global layer every 2nd), Llama (Llama 3 RoPE factors),
                 Qwen2 (biases, tied head), with every quant type the converter reads: F32, F16,
                 BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 in the first three, Q4_K/Q5_K/Q6_K (kept)
                 and Q2_K/Q3_K (dequantized) in two Qwen2s with FFNs of 256. The harness picks the
                 --weights choice from a file's last byte, so some seeds come in copies with
                 different last bytes.
  kes_loader     those GGUFs converted by kestrel-convert (keep, f32, f16, q8, q4, q4_k_m), a tiny
                 Whisper (16 positions, q8), and
                 a tiny BERT encoder.
  hf_checkpoint  tiny BERT checkpoints (mean/cls/max pooling, with and without 2_Normalize,
                 vocab.txt only, sharded), a tiny Whisper, and decoder folders written back
                 from the llama, qwen2 and gemma3 GGUFs (tests/py/gguf_to_hf_decoder.py), in
                 the archive format of hf_checkpoint_fuzz.cc.
  tokenizer      texts for each tokenizer (English, code, CJK, emoji, invalid UTF-8, special
                 tokens, whitespace runs); and the Unigram tokenizer the target reads,
                 fuzz/unigram_tokenizer/tokenizer.json (tests/py/make_unigram_tokenizer.py with
                 a few normalization rules: full-width ASCII, ligatures, spaces, zero-width
                 characters, a composition; a charsmap of a few kilobytes).
  ct2_model      tiny CTranslate2 model.bin files laid out as WhisperSpec (scalars, fused
                 projections, the tied projection as an alias) in float16, float32, bfloat16
                 and int8 with float32 scales, binary versions 5 and 6.

The models reuse the test generators (tests/py/make_tiny_*.py) with smaller sizes. Random
K-quant blocks are written directly (gguf-py cannot quantize to K types) with sane scales.

usage: make_seeds.py --convert build/release/kestrel-convert [--out fuzz/corpus]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "py"))

import gguf  # noqa: E402
from gguf import GGMLQuantizationType as Q  # noqa: E402
import ct2_model  # noqa: E402
import make_tiny_bert  # noqa: E402
import make_tiny_gemma3  # noqa: E402
import make_tiny_llama  # noqa: E402
import make_tiny_whisper  # noqa: E402
import make_unigram_tokenizer  # noqa: E402
import gguf_to_hf_decoder  # noqa: E402
import pack_checkpoint  # noqa: E402

# K-quant blocks (256 values): bytes per block and the byte offsets of their f16 scales.
K_BLOCKS = {Q.Q2_K: (84, [80, 82]), Q.Q3_K: (110, [108]), Q.Q4_K: (144, [0, 2]),
            Q.Q5_K: (176, [0, 2]), Q.Q6_K: (210, [208])}


def random_kquant(values, qtype, rng):
    rows, cols = values.shape
    size, scale_offsets = K_BLOCKS[qtype]
    blocks = rng.integers(0, 256, size=(rows, cols // 256, size), dtype=np.uint8)
    scale = np.frombuffer(np.float16(0.002).tobytes(), dtype=np.uint8)
    for offset in scale_offsets:
        blocks[:, :, offset:offset + 2] = scale
    return blocks.reshape(rows, -1)


def make_quantize(rng):
    """A quantize() for the generators that also writes K types where rows allow them."""
    original = make_tiny_llama.quantize

    def quantize(values, qtype):
        cols = values.shape[-1]
        if qtype in K_BLOCKS:
            if cols % 256 == 0:
                return random_kquant(values, qtype, rng), qtype
            qtype = Q.Q4_0 if cols % 32 == 0 else Q.F16
        return original(values, qtype)
    return quantize


def run_main(module, argv):
    saved = sys.argv
    sys.argv = [module.__name__] + argv
    try:
        module.main()
    finally:
        sys.argv = saved


def write_gguf_seeds(out, tmp):
    """Returns {stem: path} of the GGUFs written (the .kes seeds are converted from them)."""
    made = {}

    # Gemma 3: 2 layers (the second global: sliding_window_pattern 2), d_model 32, and a
    # vocabulary of 60 pieces (four byte tokens): mutations should mostly hit metadata and
    # plans, and each run of a model should cost little.
    g = make_tiny_gemma3
    g.N_LAYERS, g.D_MODEL, g.FFN_DIM, g.N_HEADS, g.N_KV_HEADS = 2, 32, 32, 2, 1
    g.CONTEXT, g.WINDOW = 64, 4
    full_vocab = g.build_vocab

    def small_vocab():
        pieces, scores, types = full_vocab()
        keep = [i for i in range(len(pieces)) if i < 7 or 7 + 0x41 <= i < 7 + 0x45 or
                7 + 256 <= i < 7 + 256 + 49]
        return [pieces[i] for i in keep], [scores[i] for i in keep], [types[i] for i in keep]
    g.build_vocab = small_vocab
    writer = gguf.GGUFWriter

    class PatternWriter(writer):
        def add_name(self, name):
            super().add_name(name)
            self.add_uint32("gemma3.attention.sliding_window_pattern", 2)
    gguf.GGUFWriter = PatternWriter  # tiny_gguf.new_writer makes the writer
    try:
        path = tmp / "gemma3.gguf"
        run_main(g, [str(path), "--seed", "3"])
        made["gemma3"] = path
    finally:
        gguf.GGUFWriter = writer
        g.build_vocab = full_vocab

    m = make_tiny_llama
    m.N_LAYERS, m.N_HEADS, m.N_KV_HEADS, m.CONTEXT, m.N_MERGES = 2, 2, 1, 64, 24
    small = ["--d-model", "32", "--ffn", "32", "--head-dim", "16"]
    for stem, args in [("llama", ["--arch", "llama", "--rope-scaling", "llama3"]),
                       ("qwen2", ["--arch", "qwen2"])]:
        path = tmp / f"{stem}.gguf"
        run_main(m, [str(path), "--seed", "4"] + args + small)
        made[stem] = path

    # Qwen2s with an FFN of 256, so each layer's ffn_down (rows of 256) takes a K type: layers
    # 0, 1, 2 get the three types listed (matrix j of layer l takes type (7 l + j) mod 3).
    rng = np.random.default_rng(5)
    saved_quantize, saved_types = m.quantize, m.MATRIX_TYPES
    m.N_LAYERS, m.N_HEADS, m.N_KV_HEADS = 3, 2, 1
    m.quantize = make_quantize(rng)
    try:
        for stem, types in [("qwen2-k456", [Q.Q4_K, Q.Q5_K, Q.Q6_K]),
                            ("qwen2-k23", [Q.Q2_K, Q.Q3_K, Q.Q8_0])]:
            m.MATRIX_TYPES = types
            path = tmp / f"{stem}.gguf"
            run_main(m, [str(path), "--seed", "6", "--arch", "qwen2", "--d-model", "32",
                         "--ffn", "256", "--head-dim", "16"])
            made[stem] = path
    finally:
        m.quantize, m.MATRIX_TYPES = saved_quantize, saved_types

    target = out / "gguf_convert"
    for stem, path in made.items():
        data = path.read_bytes()
        # Last byte: the harness's --weights choice (0 keep, 1 f32, 2 f16, 3 q8, 4 q4, 5 q4_k_m).
        choices = [0, 5] if "-k" in stem else [0, 3]
        for choice in choices:
            (target / f"{stem}-w{choice}.gguf").write_bytes(data[:-1] + bytes([choice]))
    return made


def write_decoder_folder_seeds(out, ggufs, tmp):
    """Decoder folders (converters/hf/decoder_gguf.h) written back from the tiny GGUFs: Llama
    with Llama 3 RoPE and Qwen2 with byte-level BPE, Gemma 3 with a SentencePiece tokenizer.model
    as a multimodal folder."""
    target = out / "hf_checkpoint"
    for stem, args in [("llama", []), ("qwen2", ["--string-merges"]),
                       ("gemma3", ["--multimodal"])]:
        folder = tmp / f"{stem}-hf"
        run_main(gguf_to_hf_decoder, [str(ggufs[stem]), str(folder)] + args)
        (target / f"{stem}-hf.bin").write_bytes(pack_checkpoint.pack(folder))


def write_kes_seeds(out, ggufs, convert, tmp):
    target = out / "kes_loader"
    jobs = [("gemma3", "keep"), ("gemma3", "q4"), ("llama", "keep"), ("llama", "f16"),
            ("qwen2", "q8"), ("qwen2-k456", "keep"), ("qwen2-k23", "q4_k_m")]
    for stem, weights in jobs:
        dest = target / f"{stem}-{weights}.kes"
        subprocess.run([convert, str(ggufs[stem]), str(dest), "--weights", weights,
                        "--prefill-tokens", "16"], check=True, stdout=subprocess.DEVNULL)
    whisper = tmp / "whisper"
    run_main(make_tiny_whisper, [str(whisper), "--positions", "16"])
    subprocess.run([convert, str(whisper), str(target / "whisper-q8.kes"), "--weights", "q8"],
                   check=True, stdout=subprocess.DEVNULL)
    bert = tmp / "bert-mean"
    dest = target / "bert-q8.kes"
    subprocess.run([convert, str(bert), str(dest), "--weights", "q8", "--max-batch", "2"],
                   check=True, stdout=subprocess.DEVNULL)


def write_bert_seeds(out, tmp):
    b = make_tiny_bert
    b.LAYERS, b.HIDDEN, b.INTERMEDIATE, b.HEADS, b.MAX_POSITIONS = 1, 32, 32, 2, 24
    variants = [("bert-mean", []), ("bert-cls", ["--pooling", "cls", "--no-normalize"]),
                ("bert-max", ["--pooling", "max", "--keep-accents", "--no-pooler"]),
                ("bert-sharded", ["--shards", "2"])]
    target = out / "hf_checkpoint"
    for stem, args in variants:
        folder = tmp / stem
        run_main(b, [str(folder), "--max-seq-length", "16"] + args)
        (target / f"{stem}.bin").write_bytes(pack_checkpoint.pack(folder))
    # vocab.txt alone (no tokenizer.json), and no sentence-transformers files at all.
    folder = tmp / "bert-mean"
    keep = {"config.json", "model.safetensors", "vocab.txt", "tokenizer_config.json"}
    (target / "bert-vocab-only.bin").write_bytes(pack_checkpoint.pack(folder, only=keep))
    # A tiny Whisper in Hugging Face's layout (its audio encoder and tokenizer).
    whisper = tmp / "whisper-hf"
    run_main(make_tiny_whisper, [str(whisper), "--hf", "--positions", "16"])
    (target / "whisper-hf.bin").write_bytes(pack_checkpoint.pack(whisper))


TEXTS = [
    "Hello, world! The quick brown fox jumps over the lazy dog.",
    "def f(x):\n\treturn x ** 2  # squares\n\n\n    indented   spaces",
    "中文文本，日本語のテキスト、한국어 텍스트",
    "emoji 👍🏽 and flags 🇫🇷 and zwj 👩‍👩‍👧",
    "\u2581already\u2581marked and   runs   \t\n\r\n of whitespace",
    "<start_of_turn>user\nhi<end_of_turn>\n<bos><eos><pad><mask>",
    "<|im_start|>system\nYou are helpful.<|im_end|><|endoftext|>",
    "[CLS] Café naïve RÉSUMÉ [SEP] [MASK] [PAD] [UNK]",
    "numbers 1234567890 3.14159 1,000,000 and 'quotes' \"double\" it's we'll",
]
INVALID = [b"\xff\xfe invalid \xc3 utf-8 \xe2\x82 \xf0\x9f\x98", b"\x00\x01\x02 nul and controls \x7f",
           b"\xed\xa0\x80 surrogate \xc0\xaf overlong"]


UNIGRAM_RULES = ([(f"{c:X}", f"{c - 0xFEE0:X}") for c in range(0xFF01, 0xFF5F)] +
                 [("FB01", "66 69"), ("FB02", "66 6C"), ("FB00", "66 66"), ("3000", "20"),
                  ("9", "20"), ("A", "20"), ("D", "20"), ("A0", "20"), ("200B", ""), ("FEFF", ""),
                  ("65 301", "E9"), ("2026", "2E 2E 2E")])
UNIGRAM_TEXTS = [
    "Ｆｕｌｌｗｉｄｔｈ　ｔｅｘｔ ﬁne ﬂow … e\u0301 zero\u200bwidth\ufeff",
    "a <mask> b<s>c</s>d<pad><unk>  runs   of\t\nspaces  ",
]


def write_unigram_tokenizer(tmp):
    """fuzz/unigram_tokenizer/tokenizer.json, which tokenizer_fuzz.cc loads."""
    rules = tmp / "rules.tsv"
    rules.write_text("".join(f"{a}\t{b}\n" for a, b in UNIGRAM_RULES), encoding="utf-8")
    folder = tmp / "unigram"
    make_unigram_tokenizer.write_folder(folder, vocab_size=400, seed=3, rule_tsv=rules)
    (HERE / "unigram_tokenizer").mkdir(exist_ok=True)
    shutil.copy(folder / "tokenizer.json", HERE / "unigram_tokenizer" / "tokenizer.json")


def write_tokenizer_seeds(out):
    target = out / "tokenizer"
    n = 0
    for i, text in enumerate([t.encode() for t in TEXTS] + INVALID):
        for selector in (0, 1, 2, 8 + (i % 3), 4 + (i % 3)):
            (target / f"text-{n:02d}.bin").write_bytes(bytes([selector]) + text)
            n += 1
    # The Unigram tokenizer (selector bit 4), with and without special tokens.
    for i, text in enumerate([t.encode() for t in TEXTS + UNIGRAM_TEXTS] + INVALID):
        (target / f"unigram-{i:02d}.bin").write_bytes(bytes([16 + 4 * (i % 3)]) + text)


def ct2_model_bin(version, weight_dtype, rng):
    """A model.bin in the layout converters/ct2/ct2_file.h describes, shaped like a 1-layer
    Whisper of width 8: dtype ids 0 float32, 1 int8, 4 float16, 5 bfloat16."""
    width, vocab = 8, 12
    variables = [("decoder/activation", [], 1, bytes([3])),
                 ("decoder/num_heads", [], 2, (2).to_bytes(2, "little")),
                 ("encoder/num_heads", [], 2, (2).to_bytes(2, "little"))]

    def matrix(name, rows, cols):
        values = rng.standard_normal((rows, cols)).astype(np.float32)
        if weight_dtype == 4:
            variables.append((name, [rows, cols], 4, values.astype(np.float16).tobytes()))
        elif weight_dtype == 5:
            bits = (values.view(np.uint32) >> 16).astype(np.uint16)
            variables.append((name, [rows, cols], 5, bits.tobytes()))
        elif weight_dtype == 1:
            scale = np.abs(values).max(axis=1) / 127 + 1e-6
            quants = np.round(values / scale[:, None]).astype(np.int8)
            variables.append((name, [rows, cols], 1, quants.tobytes()))
            variables.append((name + "_scale", [rows], 0, (1 / scale).astype(np.float32).tobytes()))
        else:
            variables.append((name, [rows, cols], 0, values.tobytes()))

    def vector(name, n):
        variables.append((name, [n], 0, rng.standard_normal(n).astype(np.float32).tobytes()))

    variables.append(("encoder/conv1/weight", [width, 4, 3], 0,
                      rng.standard_normal((width, 4, 3)).astype(np.float32).tobytes()))
    vector("encoder/conv1/bias", width)
    matrix("encoder/layer_0/self_attention/linear_0/weight", 3 * width, width)
    vector("encoder/layer_0/self_attention/linear_0/bias", 3 * width)
    vector("encoder/layer_0/self_attention/layer_norm/gamma", width)
    matrix("decoder/layer_0/attention/linear_1/weight", 2 * width, width)
    matrix("decoder/embeddings/weight", vocab, width)
    return ct2_model.model_bin("WhisperSpec", variables,
                               [("decoder/projection/weight", "decoder/embeddings/weight")],
                               version=version)


def write_ct2_seeds(out, tmp):
    rng = np.random.default_rng(13)
    target = out / "ct2_model"
    # A whole tiny Whisper (16 positions), which converts; its tokenizer files are the ones
    # the harness converts every input with.
    whisper = tmp / "whisper-ct2"
    run_main(make_tiny_whisper, [str(whisper), "--positions", "16"])
    shutil.copy(whisper / "model.bin", target / "whisper-tiny.bin")
    tokenizer = HERE / "ct2_tokenizer"
    tokenizer.mkdir(exist_ok=True)
    for name in ("vocabulary.txt", "tokenizer.json"):
        shutil.copy(whisper / name, tokenizer / name)
    for version in (5, 6):
        for dtype, name in ((4, "f16"), (0, "f32"), (5, "bf16"), (1, "int8")):
            (target / f"whisper-v{version}-{name}.bin").write_bytes(
                ct2_model_bin(version, dtype, rng))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--convert", required=True, help="kestrel-convert to make the .kes seeds")
    ap.add_argument("--out", default=str(HERE / "corpus"))
    args = ap.parse_args()
    out = Path(args.out)
    for target in ("gguf_convert", "kes_loader", "hf_checkpoint", "tokenizer", "ct2_model"):
        shutil.rmtree(out / target, ignore_errors=True)
        (out / target).mkdir(parents=True)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        ggufs = write_gguf_seeds(out, tmp)
        write_bert_seeds(out, tmp)
        write_decoder_folder_seeds(out, ggufs, tmp)
        write_kes_seeds(out, ggufs, os.path.abspath(args.convert), tmp)
        write_ct2_seeds(out, tmp)
        write_unigram_tokenizer(tmp)
    write_tokenizer_seeds(out)
    total = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    print(f"wrote {sum(1 for f in out.rglob('*') if f.is_file())} seeds, {total} bytes, to {out}")


if __name__ == "__main__":
    main()
