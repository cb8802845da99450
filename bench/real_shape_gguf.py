#!/usr/bin/env python3
"""Llama-architecture GGUFs with random weights at the shapes people run, for speed comparisons.

Speed depends on shapes, not values: a matmul over a 2048 x 8192 Q4_K matrix reads the same bytes
and does the same multiply-adds whatever the numbers in it are, so random weights at a real
model's shape, quantized by llama.cpp's own `llama-quantize`, run at the speed the real weights of
that shape run at. These files stand in where the real weights cannot be downloaded; their
output is noise (perplexity means nothing on them), their speed is the real one.

For each --shapes name the script writes an F16 GGUF (2-D weights F16, norms and rope_freqs F32:
what convert_hf_to_gguf.py writes) one tensor at a time, in chunks of rows, so an 8B shape needs
well under 1 GB of memory, then runs `llama-quantize F16.gguf OUT.gguf TYPE` (llama.cpp's usual
mixes: Q4_K_M keeps its Q6_K tensors) for each --types entry and deletes the F16 file unless
--keep-f16 or F16 itself is asked for. Outputs already there are kept, so a second run is instant.

Shapes (the models' Hugging Face config.json; head_dim = d_model / heads everywhere):

| name | d_model | layers | heads | KV heads | FFN | vocab | rope theta | context | head |
| :-- | --: | --: | --: | --: | --: | --: | --: | --: | :-- |
| smollm2-1.7b | 2048 | 24 | 32 | 32 | 8192 | 49152 | 130000 | 8192 | tied |
| llama-3.2-1b | 2048 | 16 | 32 | 8 | 8192 | 128256 | 500000 | 131072 | tied |
| llama-3.2-3b | 3072 | 28 | 24 | 8 | 8192 | 128256 | 500000 | 131072 | tied |
| llama-3.1-8b | 4096 | 32 | 32 | 8 | 14336 | 128256 | 500000 | 131072 | output |
| tiny | 256 | 2 | 4 | 2 | 512 | 49152 | 10000 | 2048 | tied |
| tiny-llama3 | 256 | 2 | 4 | 2 | 512 | 49408 | 500000 | 2048 | tied |

(HuggingFaceTB/SmolLM2-1.7B, meta-llama/Llama-3.2-1B, Llama-3.2-3B, Llama-3.1-8B; rms_norm_eps
1e-5 for all. `tiny` and `tiny-llama3` are no real models: quick checks of the tools, seconds
to make; tiny-llama3 has a padded vocabulary and Llama 3.2's rope_freqs, as the Llama 3 shapes;
tests/real_shape_gguf_test.cc runs it.) The Llama 3
shapes carry rope_freqs.weight, the per-pair divisors of their "llama3" RoPE scaling (factor 32
for 3.2, 8 for 3.1; low/high frequency factors 1 and 4; original context 8192), computed as
convert_hf_to_gguf.py does.

Tokenizer: copied from a real GGUF (--tokenizer-from, default SmolLM2-135M-Instruct's byte-level
BPE `gpt2` vocabulary of 49152 tokens, with its chat template), so prompts tokenize and chat
works. Where a shape's vocabulary is larger (Llama 3's 128256), it is padded with tokens
`<|pad_N|>` of type UNUSED (what convert_hf_to_gguf.py does for holes in a vocabulary): no text
ever maps to them, but the embedding table and the output head keep the real shape, and with them
the real bytes and FLOPs of the head, which at 1-3B is a large part of decode.

Weights: normal, std 0.02 (--std), from numpy's PCG64 seeded by --seed and the tensor's index;
norm weights 1.

    .venv/bin/python bench/real_shape_gguf.py --shapes smollm2-1.7b,llama-3.2-3b --types q4_k_m

The files land in models/real-shapes/ (git-ignored), named SHAPE.TYPE.gguf; the script prints
their paths on stdout, one a line. llama-quantize comes from --llama-cpp-bin (default
build/llama.cpp/build/bin; scripts/build-llama-cpp.sh builds it).
"""
import argparse
import math
import os
import subprocess
import sys
from pathlib import Path

from compare_llama_cpp import copy_field  # bench/: one metadata copier for both scripts

REPO = Path(__file__).resolve().parent.parent

# Llama 3's RoPE frequency scaling ("rope_scaling": {"rope_type": "llama3", ...} in config.json).
LLAMA3_1_ROPE = {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                 "original_context": 8192}
LLAMA3_2_ROPE = dict(LLAMA3_1_ROPE, factor=32.0)

SHAPES = {
    "smollm2-1.7b": dict(d_model=2048, layers=24, heads=32, kv_heads=32, ffn=8192, vocab=49152,
                         rope_theta=130000.0, context=8192, tied=True, rope_scaling=None),
    "llama-3.2-1b": dict(d_model=2048, layers=16, heads=32, kv_heads=8, ffn=8192, vocab=128256,
                         rope_theta=500000.0, context=131072, tied=True,
                         rope_scaling=LLAMA3_2_ROPE),
    "llama-3.2-3b": dict(d_model=3072, layers=28, heads=24, kv_heads=8, ffn=8192, vocab=128256,
                         rope_theta=500000.0, context=131072, tied=True,
                         rope_scaling=LLAMA3_2_ROPE),
    "llama-3.1-8b": dict(d_model=4096, layers=32, heads=32, kv_heads=8, ffn=14336, vocab=128256,
                         rope_theta=500000.0, context=131072, tied=False,
                         rope_scaling=LLAMA3_1_ROPE),
    "tiny": dict(d_model=256, layers=2, heads=4, kv_heads=2, ffn=512, vocab=49152,
                 rope_theta=10000.0, context=2048, tied=True, rope_scaling=None),
    "tiny-llama3": dict(d_model=256, layers=2, heads=4, kv_heads=2, ffn=512, vocab=49408,
                        rope_theta=500000.0, context=2048, tied=True,
                        rope_scaling=LLAMA3_2_ROPE),
}
# Checks of the tools, not models: left out of --shapes all.
TEST_SHAPES = ("tiny", "tiny-llama3")
RMS_EPS = 1e-5
# llama-quantize's names of the types this script is meant for; any other name it knows works too.
DEFAULT_TYPES = ("Q4_K_M", "Q5_K_M", "Q6_K", "Q8_0", "Q4_0")
DEFAULT_TOKENIZER = REPO / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
# Generated and written this many values at a time: bounds memory whatever the tensor's size.
CHUNK_VALUES = 1 << 24


def die(message):
    print(f"real_shape_gguf: error: {message}", file=sys.stderr)
    sys.exit(1)


def log(message):
    print(message, file=sys.stderr, flush=True)


def import_modules():
    try:
        import numpy as np
        import gguf
    except ImportError as e:
        die(f"{e.name or e} is not installed in {sys.executable}: start this script with "
            f".venv/bin/python (pip install -r scripts/requirements.txt)")
    return np, gguf


def tensor_plan(shape):
    """[(name, numpy shape (outer dimension first), kind)] in llama.cpp's order; kind is "matrix"
    (random, F16), "norm" (ones, F32) or "rope_freqs" (F32)."""
    d, ffn = shape["d_model"], shape["ffn"]
    head_dim = d // shape["heads"]
    kv = shape["kv_heads"] * head_dim
    plan = []
    if shape["rope_scaling"]:
        plan.append(("rope_freqs.weight", (head_dim // 2,), "rope_freqs"))
    plan.append(("token_embd.weight", (shape["vocab"], d), "matrix"))
    for i in range(shape["layers"]):
        b = f"blk.{i}."
        plan += [(b + "attn_norm.weight", (d,), "norm"),
                 (b + "attn_q.weight", (d, d), "matrix"),
                 (b + "attn_k.weight", (kv, d), "matrix"),
                 (b + "attn_v.weight", (kv, d), "matrix"),
                 (b + "attn_output.weight", (d, d), "matrix"),
                 (b + "ffn_norm.weight", (d,), "norm"),
                 (b + "ffn_gate.weight", (ffn, d), "matrix"),
                 (b + "ffn_up.weight", (ffn, d), "matrix"),
                 (b + "ffn_down.weight", (d, ffn), "matrix")]
    plan.append(("output_norm.weight", (d,), "norm"))
    if not shape["tied"]:
        plan.append(("output.weight", (shape["vocab"], d), "matrix"))
    return plan


def llama3_rope_factors(shape, np):
    """Per-pair divisors of the RoPE frequencies, as convert_hf_to_gguf.py's LlamaModel writes
    them for rope_type "llama3"."""
    s = shape["rope_scaling"]
    head_dim = shape["d_model"] // shape["heads"]
    freqs = 1.0 / (shape["rope_theta"] ** (np.arange(0, head_dim, 2, dtype=np.float32) / head_dim))
    low_wavelen = s["original_context"] / s["low_freq_factor"]
    high_wavelen = s["original_context"] / s["high_freq_factor"]
    factors = []
    for freq in freqs:
        wavelen = 2 * math.pi / freq
        if wavelen < high_wavelen:
            factors.append(1.0)
        elif wavelen > low_wavelen:
            factors.append(s["factor"])
        else:
            smooth = ((s["original_context"] / wavelen - s["low_freq_factor"])
                      / (s["high_freq_factor"] - s["low_freq_factor"]))
            factors.append(1 / ((1 - smooth) / s["factor"] + smooth))
    return np.asarray(factors, dtype=np.float32)


def add_tokenizer(writer, reader, vocab, gguf):
    """Copies every tokenizer.* field of the reader's file; pads tokens and their types up to
    `vocab` entries with UNUSED `<|pad_N|>` tokens."""
    fields = reader.fields
    tokens = [bytes(fields["tokenizer.ggml.tokens"].parts[i])
              for i in fields["tokenizer.ggml.tokens"].data]
    types = [int(t) for t in fields["tokenizer.ggml.token_type"].contents()]
    n_file = len(tokens)
    if len(tokens) > vocab:
        die(f"the tokenizer has {len(tokens)} tokens, more than the shape's vocabulary of {vocab}:"
            f" give --tokenizer-from a GGUF with at most {vocab}")
    for i in range(len(tokens), vocab):
        tokens.append(f"<|pad_{i}|>".encode())
        types.append(int(gguf.TokenType.UNUSED))
    for name, field in fields.items():
        if not name.startswith("tokenizer."):
            continue
        array = gguf.GGUFValueType.ARRAY
        if name == "tokenizer.ggml.tokens":
            writer.add_key_value(name, tokens, array, sub_type=gguf.GGUFValueType.STRING)
        elif name == "tokenizer.ggml.token_type":
            writer.add_key_value(name, types, array, sub_type=gguf.GGUFValueType.INT32)
        elif name == "tokenizer.ggml.scores":
            scores = list(field.contents()) + [-1000.0] * (vocab - n_file)
            writer.add_key_value(name, scores, array, sub_type=gguf.GGUFValueType.FLOAT32)
        else:
            copy_field(writer, field, gguf)


def write_f16_gguf(name, shape, path, tokenizer_from, seed, std, np, gguf):
    """The shape's F16 GGUF, written tensor by tensor in chunks (no tensor is ever whole in
    memory), to path + ".part" and renamed when complete."""
    plan = tensor_plan(shape)
    d = shape["d_model"]
    writer = gguf.GGUFWriter(None, "llama")
    writer.add_name(f"{name} shape, random weights")
    writer.add_description(f"bench/real_shape_gguf.py --seed {seed} --std {std}: random weights "
                           f"at the shape of {name}, for speed measurements only")
    writer.add_context_length(shape["context"])
    writer.add_embedding_length(d)
    writer.add_block_count(shape["layers"])
    writer.add_feed_forward_length(shape["ffn"])
    writer.add_head_count(shape["heads"])
    writer.add_head_count_kv(shape["kv_heads"])
    writer.add_rope_freq_base(shape["rope_theta"])
    writer.add_layer_norm_rms_eps(RMS_EPS)
    writer.add_rope_dimension_count(d // shape["heads"])
    writer.add_vocab_size(shape["vocab"])
    writer.add_file_type(int(gguf.LlamaFileType.MOSTLY_F16))
    add_tokenizer(writer, gguf.GGUFReader(tokenizer_from), shape["vocab"], gguf)
    for tname, tshape, kind in plan:
        dtype = np.float16 if kind == "matrix" else np.float32
        nbytes = math.prod(tshape) * np.dtype(dtype).itemsize
        writer.add_tensor_info(tname, tshape, np.dtype(dtype), nbytes)

    tmp = path.with_name(path.name + ".part")
    tmp.unlink(missing_ok=True)
    writer.write_header_to_file(tmp)
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    # GGUFWriter.write_tensor_data takes a whole tensor; an 8B shape's embedding alone is 1 GB of
    # F16 (2 GB as float32 while generated). The same bytes, a chunk of rows at a time, aligned
    # as write_tensor_data aligns them.
    fout = writer.fout[0]
    for index, (tname, tshape, kind) in enumerate(plan):
        writer.write_padding(fout, fout.tell())
        if kind == "norm":
            np.ones(tshape, dtype=np.float32).tofile(fout)
        elif kind == "rope_freqs":
            llama3_rope_factors(shape, np).tofile(fout)
        else:
            rng = np.random.default_rng([seed, index])
            rows, cols = tshape
            step = max(1, CHUNK_VALUES // cols)
            for first in range(0, rows, step):
                n = min(step, rows - first)
                chunk = rng.standard_normal((n, cols), dtype=np.float32)
                chunk *= std
                chunk.astype(np.float16).tofile(fout)
        nbytes = math.prod(tshape) * (2 if kind == "matrix" else 4)
        writer.write_padding(fout, nbytes)
    writer.close()
    os.replace(tmp, path)


def quantize(quantize_bin, src, dst, qtype, threads):
    tmp = dst.with_name(dst.name + ".part")
    tmp.unlink(missing_ok=True)
    cmd = [str(quantize_bin), str(src), str(tmp), qtype, str(threads)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0 or not tmp.is_file():
        tmp.unlink(missing_ok=True)
        tail = "\n".join((r.stdout + r.stderr).strip().splitlines()[-20:])
        die(f"{' '.join(cmd)} failed with {r.returncode}:\n{tail}")
    os.replace(tmp, dst)


def describe(path, gguf):
    """'1.03 GB, Q4_K x169, Q6_K x25, F32 x49': what the file holds."""
    reader = gguf.GGUFReader(path)
    counts = {}
    for t in reader.tensors:
        counts[t.tensor_type.name] = counts.get(t.tensor_type.name, 0) + 1
    kinds = ", ".join(f"{k} x{n}" for k, n in sorted(counts.items(), key=lambda kv: -kv[1]))
    return f"{path.stat().st_size / 1e9:.2f} GB, {kinds}"


def parameter_count(shape):
    return sum(math.prod(s) for _, s, _ in tensor_plan(shape))


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="shapes: " + ", ".join(
                                     f"{n} ({parameter_count(s) / 1e9:.2f}B parameters)"
                                     for n, s in SHAPES.items()))
    ap.add_argument("--shapes", default="smollm2-1.7b",
                    help=f"comma-separated shape names, or 'all' for every real one "
                         f"(default smollm2-1.7b; known: {', '.join(SHAPES)})")
    ap.add_argument("--types", default=",".join(t.lower() for t in DEFAULT_TYPES),
                    help="comma-separated llama-quantize types, any case; F16 keeps the "
                         "unquantized file (default q4_k_m,q5_k_m,q6_k,q8_0,q4_0)")
    ap.add_argument("--out-dir", type=Path, default=REPO / "models" / "real-shapes",
                    help="where the files go (default models/real-shapes)")
    ap.add_argument("--llama-cpp-bin", type=Path, default=REPO / "build" / "llama.cpp" / "build" /
                    "bin", metavar="DIR",
                    help="folder holding llama.cpp's llama-quantize (default "
                         "build/llama.cpp/build/bin, from scripts/build-llama-cpp.sh)")
    ap.add_argument("--tokenizer-from", type=Path, default=DEFAULT_TOKENIZER, metavar="GGUF",
                    help="GGUF whose tokenizer the files get (default "
                         "models/SmolLM2-135M-Instruct.Q4_1.gguf)")
    ap.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    ap.add_argument("--std", type=float, default=0.02,
                    help="standard deviation of the weights (default 0.02)")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1,
                    help="llama-quantize threads (default: all cores)")
    ap.add_argument("--keep-f16", action="store_true",
                    help="keep the F16 intermediate (SHAPE.F16.gguf) after quantizing")
    args = ap.parse_args()
    if args.shapes == "all":
        args.shapes = [n for n in SHAPES if n not in TEST_SHAPES]
    else:
        args.shapes = [s for s in args.shapes.split(",") if s]
        unknown = [s for s in args.shapes if s not in SHAPES]
        if unknown or not args.shapes:
            ap.error(f"unknown shape {', '.join(unknown) or '(none given)'}: expected one of "
                     f"{', '.join(SHAPES)} or 'all'")
    args.types = [t.upper() for t in args.types.split(",") if t]
    if not args.types:
        ap.error("--types: expected at least one type, e.g. q4_k_m")
    if args.std <= 0 or args.threads < 1:
        ap.error("--std must be > 0 and --threads >= 1")
    return args


def main():
    args = parse_args()
    np, gguf = import_modules()
    quantize_bin = args.llama_cpp_bin / "llama-quantize"
    needs_quantize = any(t != "F16" for t in args.types)
    if needs_quantize and not (quantize_bin.is_file() and os.access(quantize_bin, os.X_OK)):
        die(f"no executable llama-quantize in {args.llama_cpp_bin}: build llama.cpp's tools with "
            f"scripts/build-llama-cpp.sh and pass the folder it prints as --llama-cpp-bin")
    if not args.tokenizer_from.is_file():
        die(f"--tokenizer-from {args.tokenizer_from}: no such file (scripts/fetch-model.sh "
            f"fetches SmolLM2-135M-Instruct)")
    args.out_dir.mkdir(parents=True, exist_ok=True)

    made = []
    for name in args.shapes:
        shape = SHAPES[name]
        f16 = args.out_dir / f"{name}.F16.gguf"
        outputs = {t: (f16 if t == "F16" else args.out_dir / f"{name}.{t}.gguf")
                   for t in args.types}
        missing = [t for t, p in outputs.items() if not p.exists()]
        wrote_f16 = False
        if missing and not f16.exists():
            log(f"writing {f16} ({parameter_count(shape) / 1e9:.2f}B random parameters)")
            write_f16_gguf(name, shape, f16, args.tokenizer_from, args.seed, args.std, np, gguf)
            wrote_f16 = True
        for t in missing:
            if t != "F16":
                log(f"writing {outputs[t]} (llama-quantize {t})")
                quantize(quantize_bin, f16, outputs[t], t, args.threads)
        # Only the F16 this run wrote: one an earlier run kept (--keep-f16) stays.
        if wrote_f16 and not args.keep_f16 and "F16" not in args.types:
            f16.unlink()
        for t, path in outputs.items():
            # Reading a file back takes seconds (gguf-py parses the whole vocabulary): only the
            # new ones are described, so a second run stays quick.
            log(f"{path.name}: " + (describe(path, gguf) if t in missing else "already there"))
            made.append(path)
    for path in made:
        print(path)


if __name__ == "__main__":
    main()
