#!/usr/bin/env python3
"""Compares `kestrel embed` with the float64 NumPy oracle (tests/py/bert_oracle.py), text by text.

It writes the texts to a temporary file (one per line), runs
    KESTREL embed MODEL.kes -f FILE --json
which prints {"embeddings": [[...], ...], "token_counts": [...]} (one vector per line, in order),
embeds the same texts with the oracle (token ids from the Hugging Face `tokenizers` library,
truncated as sentence-transformers does), and prints the min and mean cosine similarity and the
worst texts. Exit status: 0 when every cosine >= --min-cosine (and token counts, when the tool
gives them, match the oracle's), 1 when not, 2 when the tool or the inputs fail.

  --texts corpus   tests/py/embed_corpus.py (120 texts, some over 256 word pieces): for real
                   checkpoints such as all-MiniLM-L6-v2
  --texts tiny     texts built from the checkpoint's own vocabulary (vocab.txt, or a Unigram
                   tokenizer.json's pieces: words, word pieces run together, punctuation,
                   digits, CJK) plus words it lacks, some longer than a tiny model's
                   max_seq_length: for tests/py/make_tiny_bert.py folders
  --ids            kestrel embed --ids with the oracle's token ids instead of -f with texts:
                   the model alone, without kestrel's tokenizer
  --rerank         a cross-encoder: `kestrel rerank MODEL -q QUERY -f DOCS --json` against the
                   oracle's logits of each (query, document) pair, for a few queries over the
                   texts; passes when every |logit difference| <= --max-logit-error and the
                   token counts match

usage: compare_embeddings.py --kestrel PATH --model MODEL.kes --checkpoint HF_DIR
                             --min-cosine X [--texts tiny|corpus] [--ids]
                             [--kestrel-arg ARG ...]
e.g.   compare_embeddings.py --kestrel build/release/kestrel --model minilm-f32.kes \\
           --checkpoint models/all-MiniLM-L6-v2 --min-cosine 0.99999
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bert_oracle  # noqa: E402


def tiny_texts(checkpoint, n=48, seed=5):
    """Texts from the checkpoint's vocabulary, so most words are known to a tiny vocabulary;
    unknown words (other scripts, emoji) and letters-only words (split into '##x' pieces) mixed
    in, and lengths up to past a max_seq_length of 48 so truncation is hit too."""
    vocab_txt = Path(checkpoint) / "vocab.txt"
    if vocab_txt.exists():
        vocab = vocab_txt.read_text(encoding="utf-8").split("\n")
    else:
        with open(Path(checkpoint) / "tokenizer.json", encoding="utf-8") as f:
            model = json.load(f)["model"]
        if isinstance(model["vocab"], dict):  # byte-level BPE: U+0120 starts words
            vocab = [p.replace("\u0120", "") for p in model["vocab"] if p.isascii() or
                     p.startswith("\u0120") and p[1:].isascii()]
        else:  # Unigram: pieces start words with U+2581; no "##" pieces
            vocab = [p.replace("\u2581", "") for p, _ in model["vocab"]]
        vocab = [p for p in vocab if p and not p.startswith("<")]
    whole = [t for t in vocab if t and not t.startswith("##") and not t.startswith("[")]
    words = [t for t in whole if len(t) > 1]
    symbols = [t for t in whole if len(t) == 1]  # letters, digits, punctuation, CJK
    pieces = [t[2:] for t in vocab if t.startswith("##") and len(t) > 2]
    unknown = ["😀", "Привет", "עולם", "🦅", "ภาษา"]
    pieces = pieces or [w for w in words if len(w) <= 3]
    rng = random.Random(seed)
    texts = ["a", "the cat", ".", "中文", "Café naïve ÜBER", "😀"]
    while len(texts) < n:
        out = []
        for _ in range(rng.choice([2, 5, 9, 14, 20, 30, 45, 60])):
            r = rng.random()
            if r < 0.5:
                w = rng.choice(words)
            elif r < 0.65:
                w = rng.choice(symbols)
            elif r < 0.8:  # a word run into pieces: exercises '##' continuation
                w = rng.choice(words) + "".join(rng.choices(pieces, k=rng.randint(1, 2)))
            elif r < 0.9:
                w = rng.choice(unknown)
            else:
                w = rng.choice(words).upper()  # the normalizer lower-cases
            out.append(w)
        texts.append(" ".join(out))
    return texts


def run_kestrel(kestrel, model, lines, extra_args, ids):
    """(embeddings [n, d], token counts or None) from `kestrel embed ... --json`; lines are
    texts (-f) or, with ids, token-id sequences (--ids, one per line, space-separated)."""
    if ids:
        lines = [" ".join(map(str, seq)) for seq in lines]
    with tempfile.NamedTemporaryFile("w", encoding="utf-8", suffix=".txt", delete=False) as f:
        f.write("".join(t + "\n" for t in lines))
        path = f.name
    try:
        cmd = [kestrel, "embed", model, "--ids" if ids else "-f", path, "--json", *extra_args]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, encoding="utf-8")
        except OSError as e:
            fail(f"cannot run {kestrel}: {e}")
        if proc.returncode != 0:
            fail(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr.strip()}")
        try:
            out = json.loads(proc.stdout)
            emb = np.asarray(out["embeddings"], dtype=np.float64)
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as e:
            fail(f"kestrel embed --json printed no {{\"embeddings\": [[...]]}} object ({e}); "
                 f"stdout begins: {proc.stdout[:300]!r}")
        counts = out.get("token_counts")
        return emb, counts
    finally:
        os.unlink(path)


def run_rerank(kestrel, model, query, documents, extra_args):
    """(logits, token counts) from `kestrel rerank MODEL -q QUERY -f FILE --json`."""
    with tempfile.NamedTemporaryFile("w", encoding="utf-8", suffix=".txt", delete=False) as f:
        f.write("".join(d + "\n" for d in documents))
        path = f.name
    try:
        cmd = [kestrel, "rerank", model, "-q", query, "-f", path, "--json", *extra_args]
        proc = subprocess.run(cmd, capture_output=True, text=True, encoding="utf-8")
        if proc.returncode != 0:
            fail(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr.strip()}")
        try:
            out = json.loads(proc.stdout)
            return np.asarray(out["logits"], dtype=np.float64), out["token_counts"]
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as e:
            fail(f"kestrel rerank --json printed no {{\"logits\": [...]}} object ({e}); "
                 f"stdout begins: {proc.stdout[:300]!r}")
    finally:
        os.unlink(path)


def compare_rerank(args, ckpt, texts):
    """Each of a few queries (short, and long enough to be cut) against all texts."""
    queries = [texts[1], texts[7], " ".join(texts[8:11])]
    ok = True
    for model in args.model:
        for query in queries:
            pairs = bert_oracle.tokenize_pairs(ckpt, query, texts)
            want = bert_oracle.score(ckpt, pairs)[:, 0]
            got, counts = run_rerank(args.kestrel, model, query, texts, args.kestrel_arg)
            if got.shape != want.shape:
                fail(f"kestrel gave {got.shape} logits, the oracle {want.shape}")
            err = np.abs(got - want)
            print(f"{model}: query {query[:40]!r}: {len(texts)} documents, logits "
                  f"{want.min():+.3f}..{want.max():+.3f}, largest error {err.max():.2e} "
                  f"(allowed {args.max_logit_error})")
            ok &= bool(err.max() <= args.max_logit_error)
            bad = [i for i, (c, p) in enumerate(zip(counts, pairs)) if c != len(p[0])]
            for i in bad[:5]:
                print(f"  token count: kestrel {counts[i]}, tokenizers {len(pairs[i][0])}: "
                      f"{texts[i][:60]!r}")
            ok &= not bad
            # The order a user sees: the same ranking where the oracle's scores are apart.
            order_want, order_got = np.argsort(-want), np.argsort(-got)
            gaps = np.abs(np.diff(want[order_want]))
            if not np.array_equal(order_want, order_got) and gaps.min() > 2 * args.max_logit_error:
                print("  the ranking differs from the oracle's")
                ok = False
    return ok


def fail(message):
    print(f"compare_embeddings.py: error: {message}", file=sys.stderr)
    sys.exit(2)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kestrel", required=True, help="the kestrel CLI")
    ap.add_argument("--model", required=True, action="append",
                    help=".kes converted from --checkpoint (repeatable: the oracle runs once)")
    ap.add_argument("--checkpoint", required=True, help="the Hugging Face checkpoint folder")
    ap.add_argument("--min-cosine", type=float, action="append",
                    help="the bar, one per --model in the same order (or one for all)")
    ap.add_argument("--rerank", action="store_true",
                    help="the models are cross-encoders: compare kestrel rerank's logits")
    ap.add_argument("--max-logit-error", type=float, default=1e-4,
                    help="--rerank: the largest |logit difference| allowed")
    ap.add_argument("--texts", choices=["corpus", "tiny"], default="corpus")
    ap.add_argument("--ids", action="store_true",
                    help="give kestrel the oracle's token ids (kestrel embed --ids) instead of "
                         "the texts: compares the model alone, without its tokenizer")
    ap.add_argument("--both", action="store_true", help="run each model from texts and from ids")
    ap.add_argument("--kestrel-arg", action="append", default=[],
                    help="extra argument for kestrel embed (repeatable), e.g. --kestrel-arg=-t2")
    args = ap.parse_args()
    if not args.rerank and not args.min_cosine:
        fail("give --min-cosine (or --rerank)")
    args.min_cosine = args.min_cosine or [0.0]
    if len(args.min_cosine) == 1:
        args.min_cosine *= len(args.model)
    if len(args.min_cosine) != len(args.model):
        fail(f"{len(args.model)} --model but {len(args.min_cosine)} --min-cosine")

    try:
        ckpt = bert_oracle.Checkpoint.load(args.checkpoint)
    except (OSError, ValueError, KeyError) as e:
        fail(str(e))
    if args.texts == "corpus":
        from embed_corpus import TEXTS as texts
    else:
        texts = tiny_texts(args.checkpoint)
    if args.rerank:
        ok = compare_rerank(args, ckpt, texts)
        print("PASS" if ok else "FAIL")
        sys.exit(0 if ok else 1)

    ids = bert_oracle.tokenize(ckpt, texts)
    want = bert_oracle.embed(ckpt, ids)
    modes = [False, True] if args.both else [args.ids]
    ok = True
    for model, bar in zip(args.model, args.min_cosine):
        for use_ids in modes:
            print(f"== {model} from {'token ids' if use_ids else 'texts'}")
            ok &= compare(args, model, bar, use_ids, texts, ids, want)
    print("PASS" if ok else "FAIL")
    sys.exit(0 if ok else 1)


def compare(args, model, bar, use_ids, texts, ids, want):
    """Runs kestrel on one model and prints how its embeddings compare; True when they pass."""
    got, counts = run_kestrel(args.kestrel, model, ids if use_ids else texts,
                              args.kestrel_arg, use_ids)
    if got.ndim != 2 or got.shape != want.shape:
        fail(f"kestrel gave embeddings of shape {got.shape}, the oracle {want.shape} "
             f"({len(texts)} texts)")

    cos = (got * want).sum(axis=1) / (np.linalg.norm(got, axis=1) * np.linalg.norm(want, axis=1))
    cos = np.nan_to_num(cos, nan=-1.0)  # a zero or NaN vector from the tool counts as a miss
    order = np.argsort(cos)
    print(f"{len(texts)} texts ({args.texts}), {got.shape[1]} dims: cosine min {cos.min():.7f}, "
          f"mean {cos.mean():.7f} (need >= {bar})")
    for i in order[:3]:
        print(f"  {cos[i]:.7f}  {len(ids[i]):4d} tokens  {texts[i][:70]!r}")

    ok = bool(cos.min() >= bar)
    if counts is not None:
        # Token counts with [CLS] and [SEP], after truncation: equal counts are a cheap check
        # that the tool tokenized and truncated as the Hugging Face tokenizer did.
        bad = [i for i, (c, t) in enumerate(zip(counts, ids)) if c != len(t)]
        if len(counts) != len(ids):
            print(f"token_counts has {len(counts)} entries for {len(ids)} texts")
            ok = False
        elif bad:
            ok = False
            print(f"token counts differ from the Hugging Face tokenizer's on {len(bad)} texts:")
            for i in bad[:5]:
                print(f"  kestrel {counts[i]}, tokenizers {len(ids[i])}: {texts[i][:70]!r}")
    return ok


if __name__ == "__main__":
    main()
