#!/usr/bin/env python3
"""Kestrel's encoder next to ONNX Runtime on this machine, on the same BERT weights (issue 10).

ONNX Runtime runs the models bench/setup_onnx_bert.py writes from the Hugging Face checkpoint
(f32: the encoder + mean pooling + normalize with ONNX Runtime's fused BERT ops; int8: its
dynamic quantization of that graph), on the CPU provider with intra_op_num_threads = N,
inter_op_num_threads = 1, sequential execution and all graph optimizations. Inputs are
`batch` texts of exactly `seq` tokens ([CLS], random word ids, [SEP]; no padding), timed as
session.run calls from Python: per configuration one warm-up, then --reps repetitions, each
running the session enough times to last --min-time seconds; the median repetition gives the
latency of one call (ms) and texts/s = batch / latency.

Kestrel's figures come from `KESTREL bench MODEL.kes --threads N --seq-len S,.. --batch B,..
--json`, whose output holds rows {"threads": N, "seq_len": S, "batch": B, "texts_per_s": X,
"latency_ms": Y} under the key "encode" (see KESTREL_* below to adapt the parsing). Formats pair as f32 with the f32 ONNX model and q8 with
the int8 one. Prints a Markdown table (with the ratio Kestrel/ORT in texts/s) and the machine.

Run it on a quiet machine (the load average is printed): with Linux's autogroup scheduling
(/proc/sys/kernel/sched_autogroup_enabled = 1) another shell's build shares the CPU with the
benchmark whatever `nice` it runs at; 2-thread figures suffer most.

Setup (not CI):
    bash scripts/setup-bench.sh --onnx        # .venv-bench, models/onnx/*.onnx, checked
    .venv-bench/bin/python bench/compare_onnxruntime.py                   # ONNX Runtime only
    .venv-bench/bin/python bench/compare_onnxruntime.py --kestrel build/release/kestrel \\
        --kes-f32 minilm-f32.kes --kes-q8 minilm-q8.kes
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

try:
    import onnxruntime as ort
except ImportError:
    sys.exit("compare_onnxruntime.py: error: onnxruntime is missing; run it with "
             ".venv-bench/bin/python after scripts/setup-bench.sh --onnx")

REPO = Path(__file__).resolve().parent.parent

# How `kestrel bench --json` reports an encoder (change here if the CLI's output changes).
KESTREL_BENCH_KEY = "encode"
KESTREL_SEQ, KESTREL_BATCH, KESTREL_THREADS = "seq_len", "batch", "threads"
KESTREL_TEXTS_PER_S, KESTREL_LATENCY_MS = "texts_per_s", "latency_ms"

# Kestrel format -> ONNX model suffix it is compared with.
FORMATS = {"f32": "f32", "q8": "int8"}


def ort_inputs(seq, batch, vocab_size, cls_id=101, sep_id=102, seed=0):
    """A batch of full-length sequences: [CLS] w1 .. w(seq-2) [SEP], word ids drawn above the
    special tokens (1000.. for BERT's uncased vocabulary)."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(min(1000, vocab_size // 2), vocab_size, size=(batch, seq), dtype=np.int64)
    ids[:, 0], ids[:, -1] = cls_id, sep_id
    return {"input_ids": ids, "attention_mask": np.ones_like(ids),
            "token_type_ids": np.zeros_like(ids)}


def ort_session(path, threads):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])


def time_ort(sess, feed, reps, min_time):
    """Median seconds per session.run over `reps` repetitions, after one warm-up call."""
    t0 = time.perf_counter()
    sess.run(None, feed)  # warm-up: first-call allocations and kernel selection
    once = time.perf_counter() - t0
    calls = max(1, int(min_time / max(once, 1e-6)))
    samples = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(calls):
            sess.run(None, feed)
        samples.append((time.perf_counter() - t0) / calls)
    return statistics.median(samples)


def kestrel_rows(kestrel, model, threads, seqs, batches, extra_args):
    """{(seq, batch): (texts_per_s, latency_ms)} from `kestrel bench MODEL --threads N --json`."""
    cmd = [kestrel, "bench", str(model), "--threads", str(threads), "--seq-len", seqs,
           "--batch", batches, "--json", *extra_args]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"compare_onnxruntime.py: error: {' '.join(cmd)} exited {proc.returncode}:\n"
                 f"{proc.stderr.strip()}")
    # The JSON object is the whole output, or else its last line (after progress lines).
    for text in (proc.stdout, proc.stdout.strip().splitlines()[-1:] or [""]):
        try:
            doc = json.loads(text if isinstance(text, str) else text[0])
            break
        except json.JSONDecodeError:
            doc = None
    if not isinstance(doc, dict) or not isinstance(doc.get(KESTREL_BENCH_KEY), list):
        sys.exit(f"compare_onnxruntime.py: error: {' '.join(cmd)} printed no JSON object with an "
                 f"{KESTREL_BENCH_KEY!r} list; stdout begins {proc.stdout[:300]!r}")
    # Rows may name their thread count (kestrel bench takes --threads 1,2): keep this one's.
    return {(int(r[KESTREL_SEQ]), int(r[KESTREL_BATCH])):
            (float(r[KESTREL_TEXTS_PER_S]), float(r[KESTREL_LATENCY_MS]))
            for r in doc[KESTREL_BENCH_KEY] if int(r.get(KESTREL_THREADS, threads)) == threads}


def machine():
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"{cpu}, {os.cpu_count()} cores, {platform.machine()}"


def ints(text):
    return [int(x) for x in text.split(",") if x]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--onnx-dir", default=str(REPO / "models" / "onnx"))
    ap.add_argument("--name", default="all-MiniLM-L6-v2", help="ONNX file stem")
    ap.add_argument("--checkpoint", default=str(REPO / "models" / "all-MiniLM-L6-v2"),
                    help="the Hugging Face folder the models came from (for its vocabulary)")
    ap.add_argument("--kestrel", help="kestrel CLI (without it: ONNX Runtime only)")
    ap.add_argument("--kes-f32", help=".kes with f32 weights")
    ap.add_argument("--kes-q8", help=".kes with q8 weights")
    ap.add_argument("--kestrel-arg", action="append", default=[],
                    help="extra argument for kestrel bench (repeatable)")
    ap.add_argument("--formats", default="f32,q8")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--seq", default="16,128")
    ap.add_argument("--batch", default="1,32")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--min-time", type=float, default=0.5,
                    help="seconds each repetition runs at least")
    ap.add_argument("--json-out", help="also write the rows here")
    args = ap.parse_args()

    formats = [f for f in args.formats.split(",") if f]
    for f in formats:
        if f not in FORMATS:
            ap.error(f"unknown format {f!r} (f32 or q8)")
    kes = {"f32": args.kes_f32, "q8": args.kes_q8}
    if args.kestrel:
        missing = [f for f in formats if not kes[f]]
        if missing:
            ap.error(f"--kestrel needs --kes-{missing[0]} (or --formats without it)")

    # Word ids come from the checkpoint's vocabulary (only its size and [CLS]/[SEP] matter).
    ckpt = Path(args.checkpoint)
    try:
        vocab = json.loads((ckpt / "config.json").read_text())["vocab_size"]
        words = (ckpt / "vocab.txt").read_text(encoding="utf-8").split("\n")
        cls_id, sep_id = words.index("[CLS]"), words.index("[SEP]")
    except (OSError, KeyError, ValueError) as e:
        sys.exit(f"compare_onnxruntime.py: error: {ckpt}: {e}")

    load_before = os.getloadavg()
    rows = []
    for fmt in formats:
        path = Path(args.onnx_dir) / f"{args.name}-{FORMATS[fmt]}.onnx"
        if not path.exists():
            sys.exit(f"compare_onnxruntime.py: error: {path} is missing; run "
                     "scripts/setup-bench.sh --onnx")
        for threads in ints(args.threads):
            sess = ort_session(path, threads)
            ref = kestrel_rows(args.kestrel, kes[fmt], threads, args.seq, args.batch,
                               args.kestrel_arg) if args.kestrel else {}
            for seq in ints(args.seq):
                for batch in ints(args.batch):
                    sec = time_ort(sess, ort_inputs(seq, batch, vocab, cls_id, sep_id),
                                   args.reps, args.min_time)
                    k = ref.get((seq, batch))
                    rows.append({"format": fmt, "threads": threads, "seq": seq, "batch": batch,
                                 "ort_texts_per_s": batch / sec, "ort_latency_ms": sec * 1e3,
                                 "kestrel_texts_per_s": k[0] if k else None,
                                 "kestrel_latency_ms": k[1] if k else None})
                    print(f"  {fmt} t{threads} seq {seq} batch {batch}: ORT {batch / sec:.1f} "
                          f"texts/s", file=sys.stderr, flush=True)

    print(f"\nMachine: {machine()}; onnxruntime {ort.__version__}; load average "
          f"{load_before[0]:.2f} before, {os.getloadavg()[0]:.2f} after\n")
    print("| format (Kestrel / ORT) | threads | seq | batch | ORT texts/s | ORT ms "
          "| Kestrel texts/s | Kestrel ms | Kestrel/ORT |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        k = r["kestrel_texts_per_s"]
        kcols = (f"{k:.1f} | {r['kestrel_latency_ms']:.2f} | {k / r['ort_texts_per_s']:.2f}x"
                 if k else "- | - | -")
        print(f"| {r['format']} / {FORMATS[r['format']]} | {r['threads']} | {r['seq']} | "
              f"{r['batch']} | {r['ort_texts_per_s']:.1f} | {r['ort_latency_ms']:.2f} | {kcols} |")
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"machine": machine(), "onnxruntime": ort.__version__, "rows": rows}, f,
                      indent=1)


if __name__ == "__main__":
    main()
