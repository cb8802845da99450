"""What the decoder oracles (gemma3_oracle.py, llama_oracle.py) share around their forward passes:
the KV cache, the prompt file, the command line, greedy generation and the log lines.

Nothing here touches a model's arithmetic, so each oracle's forward pass stays written from its
own model's definition.
"""

import argparse
import sys

import numpy as np


class KVCache:
    """Keys (after RoPE, and QK-norm where the model has it) and values of every layer for
    positions [0, length)."""

    def __init__(self, cfg, max_len):
        self.k = np.zeros((cfg.n_layers, max_len, cfg.n_kv_heads, cfg.head_dim))
        self.v = np.zeros((cfg.n_layers, max_len, cfg.n_kv_heads, cfg.head_dim_v))
        self.length = 0

    def positions(self, n):
        """float64 positions of n new tokens [n], and of all positions up to theirs [ctx]."""
        end = self.length + n
        return np.arange(self.length, end, dtype=np.float64), np.arange(end, dtype=np.float64)

    def append(self, layer, k, v):
        """Stores a layer's keys and values of the new tokens; returns all of the layer's so far.
        The caller advances `length` once every layer has appended."""
        end = self.length + len(k)
        self.k[layer, self.length:end] = k
        self.v[layer, self.length:end] = v
        return self.k[layer, :end], self.v[layer, :end]


def read_tokens(path, vocab_size):
    tokens = np.fromfile(path, dtype="<i4").astype(np.int64)
    if tokens.size == 0:
        raise ValueError(f"{path}: expected at least one int32 token id, found none")
    bad = tokens[(tokens < 0) | (tokens >= vocab_size)]
    if bad.size:
        raise ValueError(f"{path}: token id {bad[0]} is outside the vocabulary [0, {vocab_size})")
    return tokens


def top2_gap(logits):
    """Distance between the best and second-best logit: small gaps make argmax fragile."""
    best_two = np.partition(logits, -2)[-2:]
    return float(best_two[1] - best_two[0])


def argument_parser(doc):
    """The options every decoder oracle takes; the oracle adds its own before parse_args."""
    ap = argparse.ArgumentParser(description=doc,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--tokens-file", required=True, help="prompt: raw little-endian int32 ids")
    ap.add_argument("--logits-out", required=True, help="raw little-endian float32 logits")
    ap.add_argument("--positions", choices=["all", "last"], default="all")
    ap.add_argument("--generate", type=int, default=0, metavar="N")
    ap.add_argument("--generated-out", help="raw little-endian int32 generated ids")
    ap.add_argument("--generated-gaps-out",
                    help="raw little-endian float32: top-1 minus top-2 logit at each generated "
                         "step; a tiny gap marks a step where a float32 runtime may fairly differ")
    return ap


def parse_args(ap):
    args = ap.parse_args()
    if args.generate < 0:
        ap.error("--generate must be >= 0")
    if args.generate and not args.generated_out:
        ap.error("--generate needs --generated-out")
    return args


def read_prompt(args, cfg):
    """(prompt tokens, positions the cache needs for them and --generate)."""
    tokens = read_tokens(args.tokens_file, cfg.vocab_size)
    max_len = len(tokens) + max(args.generate - 1, 0)
    if max_len > cfg.context_length:
        raise ValueError(f"{max_len} positions exceed the context length {cfg.context_length}")
    return tokens, max_len


def generate(args, logits, step):
    """--generate N greedy tokens from the prompt's last logits, without stopping at EOS;
    step(token) runs one token and returns the next logits. Writes --generated-out and
    --generated-gaps-out; returns (tokens, top-2 gaps)."""
    generated, gaps = [], []
    for i in range(args.generate):
        token = int(np.argmax(logits))  # argmax returns the first (lowest) id on ties
        generated.append(token)
        gaps.append(top2_gap(logits))
        if i + 1 < args.generate:
            logits = step(token)
    np.asarray(generated, dtype="<i4").tofile(args.generated_out)
    if args.generated_gaps_out:
        np.asarray(gaps, dtype="<f4").tofile(args.generated_gaps_out)
    return generated, gaps


def report(name, times, n_prompt, n_rows, vocab_size, generated, gaps, decode, notes=()):
    """The closing log lines on stderr. times: perf_counter at start, loaded, prefill, logits and
    end; decode(ids) -> text, called only when something was generated; notes: lines printed
    after the timings."""
    t_start, t_loaded, t_prefill, t_logits, t_end = times
    print(f"{name}: prefill {n_prompt} tokens {t_prefill - t_loaded:.2f}s, "
          f"lm_head {n_rows} rows {t_logits - t_prefill:.2f}s, "
          f"generate {len(generated)} tokens {t_end - t_logits:.2f}s", file=sys.stderr)
    for note in notes:
        print(f"{name}: {note}", file=sys.stderr)
    if generated:
        print(f"{name}: generated {' '.join(map(str, generated))} = "
              f"{decode(generated)!r}", file=sys.stderr)
    gap_note = f", min top-2 logit gap {min(gaps):.4f}" if gaps else ""
    print(f"{name}: OK prompt={n_prompt} logits=[{n_rows}, {vocab_size}] "
          f"generated={len(generated)}{gap_note} total={t_end - t_start:.2f}s", file=sys.stderr)
