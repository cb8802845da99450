#!/usr/bin/env python3
"""Independent float64 NumPy oracle for BERT sentence embeddings (Hugging Face checkpoints),
XLM-RoBERTa's, and the scores of cross-encoders (*ForSequenceClassification rerankers).

Written from the Hugging Face `BertModel` definition (transformers/models/bert/modeling_bert.py)
and sentence-transformers' Pooling and Normalize modules, not from Kestrel's code:

  embeddings  word[id] + position[p] + token_type[t], LayerNorm
  each layer  self-attention (q, k, v with bias; scores / sqrt(head_dim); padding keys masked)
              -> output dense + residual + LayerNorm
              -> intermediate dense + GELU (erf form) -> output dense + residual + LayerNorm
  pooling     as 1_Pooling/config.json says: CLS, max, mean (over non-padding tokens) or
              mean_sqrt_len; several true flags are concatenated in sentence-transformers' order
  normalize   L2, when modules.json lists sentence_transformers.models.Normalize

RoBERTa and XLM-RoBERTa (modeling_roberta.py, modeling_xlm_roberta.py) are the same model but for its positions: a token's
position id is its index plus pad_token_id + 1 (create_position_ids_from_input_ids), so the
first pad_token_id + 1 rows of the table are never read. A cross-encoder's score is its
classification head on the first token's last hidden state: BERT's pooler (dense, tanh) then
"classifier"; RoBERTa's "classifier.dense", tanh, "classifier.out_proj" (RobertaClassificationHead).

Input is token ids that already carry [CLS]/[SEP], so the model half depends on no tokenizer.
tokenize() is the separate helper that makes those ids with the Hugging Face `tokenizers` library,
truncated the sentence-transformers way (the first max_seq_length - 2 word pieces, then
[CLS] ... [SEP]).

As a library:
    ckpt = Checkpoint.load("models/all-MiniLM-L6-v2")
    ids = tokenize(ckpt, ["some text", ...])
    emb = embed(ckpt, ids)                        # [n, d] float64

As a tool:
    bert_oracle.py CKPT_DIR (-p TEXT ... | -f FILE) [--json]   embeddings (and token ids) of
                                                                texts (one per line in FILE)
    bert_oracle.py CKPT_DIR --check                             the published MiniLM cosines
"""
import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file

# ---------------------------------------------------------------------------------------------
# Checkpoint


class Checkpoint:
    """config.json, the weights as float64 and the sentence-transformers settings of a folder."""

    def __init__(self, folder, config, weights, pooling, normalize, max_seq_length):
        self.folder = Path(folder)
        self.config = config
        self.w = weights
        self.pooling = pooling            # list of modes, in concatenation order
        self.normalize = normalize
        self.max_seq_length = max_seq_length

    @staticmethod
    def load(folder):
        folder = Path(folder)
        config = _read_json(folder / "config.json")
        if config.get("model_type", "bert") not in ("bert", "roberta", "xlm-roberta"):
            raise ValueError(f"{folder}/config.json: model_type {config.get('model_type')!r} "
                             "is not 'bert', 'roberta' or 'xlm-roberta'")
        if config.get("position_embedding_type", "absolute") != "absolute":
            raise ValueError(f"{folder}: only absolute position embeddings are implemented")
        if config.get("hidden_act", "gelu") != "gelu":
            raise ValueError(f"{folder}: hidden_act {config['hidden_act']!r}: only 'gelu' (erf)")
        weights = _load_weights(folder)
        pooling, normalize, max_len = _sentence_transformers_settings(folder, config)
        return Checkpoint(folder, config, weights, pooling, normalize, max_len)


def _read_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: missing") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not valid JSON: {e}") from None


def _load_weights(folder):
    """All tensors as float64 (one file or shards listed in model.safetensors.index.json).
    Task-head checkpoints (BertForX, XLMRobertaForX) prefix the encoder's names with "bert." or
    "roberta.": dropped here."""
    index = folder / "model.safetensors.index.json"
    if index.exists():
        files = sorted(set(_read_json(index)["weight_map"].values()))
    else:
        files = ["model.safetensors"]
    raw = {}
    for name in files:
        path = folder / name
        if not path.exists():
            raise FileNotFoundError(f"{path}: missing")
        raw.update(load_file(str(path)))
    out = {}
    for k, v in raw.items():
        for prefix in ("bert.", "roberta."):
            k = k[len(prefix):] if k.startswith(prefix) else k
        out[k] = v.astype(np.float64) if v.dtype.kind == "f" else v
    return out


def _sentence_transformers_settings(folder, config):
    """(pooling modes, normalize, max_seq_length). Without sentence-transformers files the
    defaults are sentence-transformers' own for a bare Transformer: mean pooling, no
    normalization, max_seq_length = max_position_embeddings."""
    pooling, normalize = ["mean"], False
    max_len = config["max_position_embeddings"] - position_offset(config)
    modules_path = folder / "modules.json"
    if modules_path.exists():
        modules = _read_json(modules_path)
        for m in modules:
            kind = m["type"].rsplit(".", 1)[-1]
            if kind == "Pooling":
                pooling = _pooling_modes(_read_json(folder / m["path"] / "config.json"))
            elif kind == "Normalize":
                normalize = True
            elif kind not in ("Transformer",):
                raise ValueError(f"{modules_path}: module {m['type']} is not implemented")
    st = folder / "sentence_bert_config.json"
    if st.exists():
        max_len = min(max_len, int(_read_json(st).get("max_seq_length", max_len)))
    return pooling, normalize, max_len


def position_offset(config):
    """The position id of a sequence's first token: 0 for BERT, pad_token_id + 1 for RoBERTa."""
    roberta = config.get("model_type") in ("roberta", "xlm-roberta")
    return config.get("pad_token_id", 1) + 1 if roberta else 0


def _pooling_modes(cfg):
    # sentence-transformers' Pooling.forward concatenates in this order.
    order = [("pooling_mode_cls_token", "cls"), ("pooling_mode_max_tokens", "max"),
             ("pooling_mode_mean_tokens", "mean"), ("pooling_mode_mean_sqrt_len_tokens",
                                                    "mean_sqrt_len")]
    for unsupported in ("pooling_mode_weightedmean_tokens", "pooling_mode_lasttoken"):
        if cfg.get(unsupported):
            raise ValueError(f"pooling {unsupported} is not implemented")
    modes = [mode for key, mode in order if cfg.get(key)]
    if not modes:
        raise ValueError("1_Pooling/config.json turns on no pooling mode")
    return modes


# ---------------------------------------------------------------------------------------------
# Model

_erf = np.frompyfunc(math.erf, 1, 1)  # numpy has no erf; math.erf is correctly rounded enough


def gelu(x):
    """HF "gelu": the exact erf form, x * Phi(x) (not the tanh approximation)."""
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)).astype(np.float64))


def layer_norm(x, weight, bias, eps):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)  # biased variance, as torch's
    return (x - mean) / np.sqrt(var + eps) * weight + bias


def linear(x, w, prefix):
    """torch.nn.Linear: weight is [out, in]."""
    return x @ w[prefix + ".weight"].T + w[prefix + ".bias"]


def encoder(ckpt, ids, mask, token_types):
    """Last hidden state [batch, seq, hidden] of BertModel for padded ids [batch, seq] and
    mask [batch, seq] (1 = token, 0 = padding)."""
    c, w = ckpt.config, ckpt.w
    eps = c["layer_norm_eps"]
    n_heads = c["num_attention_heads"]
    batch, seq = ids.shape
    first = position_offset(c)
    if first + seq > c["max_position_embeddings"]:
        raise ValueError(f"{seq} tokens from position {first} exceed max_position_embeddings "
                         f"{c['max_position_embeddings']}")
    if ids.max() >= c["vocab_size"] or ids.min() < 0:
        raise ValueError("a token id is outside the vocabulary")

    x = (w["embeddings.word_embeddings.weight"][ids]
         + w["embeddings.position_embeddings.weight"][first + np.arange(seq)][None]
         + w["embeddings.token_type_embeddings.weight"][token_types])
    x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)

    hidden = x.shape[-1]
    head_dim = hidden // n_heads
    # HF adds (1 - mask) * finfo.min to the scores; -inf gives the same softmax (exactly zero
    # weight on padding) and no sequence is all padding, so no row is all -inf.
    key_bias = np.where(mask[:, None, None, :] > 0, 0.0, -np.inf)  # [batch, 1, 1, seq]

    def heads(t):  # [batch, seq, hidden] -> [batch, heads, seq, head_dim]
        return t.reshape(batch, seq, n_heads, head_dim).transpose(0, 2, 1, 3)

    for il in range(c["num_hidden_layers"]):
        p = f"encoder.layer.{il}."
        q = heads(linear(x, w, p + "attention.self.query"))
        k = heads(linear(x, w, p + "attention.self.key"))
        v = heads(linear(x, w, p + "attention.self.value"))
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(head_dim) + key_bias
        scores -= scores.max(axis=-1, keepdims=True)
        probs = np.exp(scores)
        probs /= probs.sum(axis=-1, keepdims=True)
        ctx = (probs @ v).transpose(0, 2, 1, 3).reshape(batch, seq, hidden)
        x = layer_norm(linear(ctx, w, p + "attention.output.dense") + x,
                       w[p + "attention.output.LayerNorm.weight"],
                       w[p + "attention.output.LayerNorm.bias"], eps)
        h = gelu(linear(x, w, p + "intermediate.dense"))
        x = layer_norm(linear(h, w, p + "output.dense") + x,
                       w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"], eps)
    return x


def pool(ckpt, hidden, mask):
    """sentence-transformers Pooling (+ Normalize) over [batch, seq, hidden]."""
    m = mask[:, :, None].astype(np.float64)
    n_tokens = np.maximum(m.sum(axis=1), 1e-9)  # the clamp sentence-transformers applies
    parts = []
    for mode in ckpt.pooling:
        if mode == "cls":
            parts.append(hidden[:, 0])
        elif mode == "max":
            # sentence-transformers sets padding to -1e9 before the max.
            parts.append(np.where(m > 0, hidden, -1e9).max(axis=1))
        elif mode == "mean":
            parts.append((hidden * m).sum(axis=1) / n_tokens)
        elif mode == "mean_sqrt_len":
            parts.append((hidden * m).sum(axis=1) / np.sqrt(n_tokens))
    out = np.concatenate(parts, axis=-1)
    if ckpt.normalize:  # torch.nn.functional.normalize: x / max(||x||, 1e-12)
        out /= np.maximum(np.linalg.norm(out, axis=-1, keepdims=True), 1e-12)
    return out


def head(ckpt, hidden):
    """A cross-encoder's logits [batch, labels] from the last hidden states [batch, seq, d]."""
    w = ckpt.w
    first = hidden[:, 0]
    if "classifier.out_proj.weight" in w:  # RobertaClassificationHead
        return linear(np.tanh(linear(first, w, "classifier.dense")), w, "classifier.out_proj")
    if "classifier.weight" in w:  # BertForSequenceClassification: pooler, then classifier
        return linear(np.tanh(linear(first, w, "pooler.dense")), w, "classifier")
    raise ValueError(f"{ckpt.folder}: no classification head (classifier.*)")


def score(ckpt, pairs, batch_size=16):
    """Logits [n, labels] of (ids, token_types) pairs of sequences, as embed() batches them."""
    out = [None] * len(pairs)
    for start in range(0, len(pairs), batch_size):
        chunk = list(range(start, min(start + batch_size, len(pairs))))
        seq = max(len(pairs[i][0]) for i in chunk)
        ids = np.zeros((len(chunk), seq), dtype=np.int64)
        types = np.zeros_like(ids)
        mask = np.zeros_like(ids)
        for row, i in enumerate(chunk):
            n = len(pairs[i][0])
            ids[row, :n], types[row, :n], mask[row, :n] = pairs[i][0], pairs[i][1], 1
        logits = head(ckpt, encoder(ckpt, ids, mask, types))
        for row, i in enumerate(chunk):
            out[i] = logits[row]
    return np.stack(out)


def embed(ckpt, id_lists, batch_size=16):
    """Embeddings [n, d] (float64) of token-id sequences (each already with [CLS]/[SEP]).

    Sequences are run in padded batches of up to batch_size, grouped by length so padding stays
    small, and so every batch with mixed lengths exercises the padding mask; the result is in the
    input order. Token types are all 0 (single sentences)."""
    if any(len(ids) == 0 for ids in id_lists):
        raise ValueError("an empty token sequence (even an empty text has [CLS] [SEP])")
    order = sorted(range(len(id_lists)), key=lambda i: len(id_lists[i]))
    out = [None] * len(id_lists)
    for start in range(0, len(order), batch_size):
        chunk = order[start:start + batch_size]
        seq = max(len(id_lists[i]) for i in chunk)
        ids = np.zeros((len(chunk), seq), dtype=np.int64)  # pad id 0 ([PAD]); masked anyway
        mask = np.zeros((len(chunk), seq), dtype=np.int64)
        for row, i in enumerate(chunk):
            ids[row, :len(id_lists[i])] = id_lists[i]
            mask[row, :len(id_lists[i])] = 1
        pooled = pool(ckpt, encoder(ckpt, ids, mask, np.zeros_like(ids)), mask)
        for row, i in enumerate(chunk):
            out[i] = pooled[row]
    return np.stack(out)


# ---------------------------------------------------------------------------------------------
# Tokenizer helper (kept apart from the model: the model takes ids)


def load_tokenizer(ckpt):
    """tokenizer.json with the file's own truncation and padding turned off (MiniLM's file sets
    truncation 128 and fixed padding 128; sentence-transformers overrides both)."""
    from tokenizers import Tokenizer
    path = ckpt.folder / "tokenizer.json"
    if not path.exists():
        raise FileNotFoundError(f"{path}: missing (the oracle's tokenizer helper needs it)")
    tok = Tokenizer.from_file(str(path))
    tok.no_truncation()
    tok.no_padding()
    return tok


def tokenize(ckpt, texts, tokenizer=None):
    """Token ids per text, as sentence-transformers makes them: the word pieces of the text,
    the first max_seq_length - 2 of them kept, then [CLS] ... [SEP]."""
    tok = tokenizer or load_tokenizer(ckpt)
    cls, sep = special_ids(ckpt, tok)
    keep = ckpt.max_seq_length - 2
    return [[cls] + e.ids[:keep] + [sep]
            for e in tok.encode_batch(list(texts), add_special_tokens=False)]


def special_ids(ckpt, tok):
    """The start and end tokens: BERT's [CLS] and [SEP], (XLM-)RoBERTa's <s> and </s>."""
    roberta = ckpt.config.get("model_type") in ("roberta", "xlm-roberta")
    names = ("<s>", "</s>") if roberta else ("[CLS]", "[SEP]")
    cls, sep = (tok.token_to_id(n) for n in names)
    if cls is None or sep is None:
        raise ValueError(f"{ckpt.folder}/tokenizer.json has no {names[0]} or {names[1]} token")
    return cls, sep


def tokenize_pairs(ckpt, query, documents, tokenizer=None):
    """(ids, token types) of each (query, document) pair as sentence-transformers' CrossEncoder
    makes them: the tokenizer's pair template, truncation "longest_first" to max_seq_length.
    XLM-RoBERTa's single token type makes every type 0."""
    tok = tokenizer or load_tokenizer(ckpt)
    tok.enable_truncation(ckpt.max_seq_length, strategy="longest_first")
    one_type = ckpt.config.get("type_vocab_size", 2) == 1
    out = []
    for e in tok.encode_batch([(query, d) for d in documents], add_special_tokens=True):
        out.append((list(e.ids), [0] * len(e.ids) if one_type else list(e.type_ids)))
    tok.no_truncation()
    return out


def cosine(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


# ---------------------------------------------------------------------------------------------
# Command line

# Published in the sentence-transformers documentation for all-MiniLM-L6-v2.
PUBLISHED = [("The cat sits outside", "The dog plays in the garden", 0.2838),
             ("A man is playing guitar", "A woman watches TV", -0.0327),
             ("The new movie is awesome", "The new movie is so great", 0.8939)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkpoint", help="Hugging Face checkpoint folder")
    ap.add_argument("-p", "--prompt", action="append", default=[], help="a text (repeatable)")
    ap.add_argument("-f", "--file", help="texts, one per line")
    ap.add_argument("--json", action="store_true",
                    help='print {"embeddings": [...], "token_counts": [...]} as kestrel embed '
                         'does, plus "token_ids" (with [CLS]/[SEP], truncated)')
    ap.add_argument("--check", action="store_true",
                    help="compare with the cosines published for all-MiniLM-L6-v2")
    args = ap.parse_args()
    try:
        ckpt = Checkpoint.load(args.checkpoint)
    except (OSError, ValueError, KeyError) as e:
        sys.exit(f"bert_oracle.py: error: {e}")

    if args.check:
        worst = 0.0
        for a, b, want in PUBLISHED:
            ea, eb = embed(ckpt, tokenize(ckpt, [a, b]))
            got = cosine(ea, eb)
            worst = max(worst, abs(got - want))
            print(f"{got:+.4f} (published {want:+.4f})  {a!r} / {b!r}")
        if worst > 6e-5:  # published values are rounded to 4 decimals
            sys.exit(f"bert_oracle.py: error: off the published values by {worst:.2e}")
        return

    texts = list(args.prompt)
    if args.file:
        with open(args.file, encoding="utf-8") as f:
            texts += f.read().split("\n")
        if texts and texts[-1] == "":  # a final newline ends the last line; it is not a text
            texts.pop()
    if not texts:
        sys.exit("bert_oracle.py: error: no texts (give -p TEXT or -f FILE)")
    ids = tokenize(ckpt, texts)
    emb = embed(ckpt, ids)
    if args.json:
        json.dump({"embeddings": emb.tolist(), "token_counts": [len(i) for i in ids],
                   "token_ids": ids}, sys.stdout)
        print()
    else:
        for text, i, e in zip(texts, ids, emb):
            head = " ".join(f"{v:+.5f}" for v in e[:6])
            print(f"{len(i):4d} tokens  [{head} ...]  {text[:50]!r}")


if __name__ == "__main__":
    main()
