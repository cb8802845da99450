#!/usr/bin/env python3
"""Writes a tiny, random-weight BERT checkpoint folder in the Hugging Face + sentence-transformers
layout, for tests that need a whole encoder quickly (CI on every target, qemu included).

OUT_DIR gets:
  config.json                 BertModel: hidden 32, 2 layers, 4 heads, intermediate 64,
                              max_position_embeddings 64, type_vocab_size 2, eps 1e-12, gelu
  model.safetensors           F32 tensors under Hugging Face's names, plus
                              embeddings.position_ids (I64 [1, 64]) as real checkpoints carry it,
                              and pooler.dense.* unless --no-pooler (sentence-transformers
                              ignores the pooler; a converter must skip it)
  vocab.txt, tokenizer.json   WordPiece over a small vocabulary (specials, punctuation, digits,
  tokenizer_config.json       single letters and '##' letters so any ASCII word is covered,
                              some English words and suffixes, a few accented and CJK
                              characters); BertNormalizer (lowercase, accents stripped unless
                              --keep-accents), BertPreTokenizer, "[CLS] $A [SEP]"
  modules.json                Transformer, Pooling (+ Normalize unless --no-normalize)
  1_Pooling/config.json       --pooling mean (default) | cls | max
  sentence_bert_config.json   max_seq_length (--max-seq-length, default 48: shorter than the 64
                              positions, so truncation is the sentence-transformers one)

Weights are scaled so activations stay O(1) and attention is neither uniform nor one-hot
(q.k / sqrt(head_dim) has a standard deviation of about 1.2-1.5, near all-MiniLM-L6-v2's).
The same arguments always give the same bytes.

--arch xlm-roberta makes an XLM-RoBERTa checkpoint instead (bge-m3, multilingual-e5): model_type
"xlm-roberta", positions numbered from pad_token_id + 1 = 2 (max_position_embeddings 66 for the
same 64 usable positions), one token type, LayerNorm eps 1e-5, and the SentencePiece Unigram
tokenizer of tests/py/make_unigram_tokenizer.py (tokenizer.json, sentencepiece.bpe.model).

--arch roberta makes an English RoBERTa checkpoint (all-distilroberta-v1's layout): the same
positions and token type as XLM-R, and a byte-level BPE tokenizer (GPT-2's pre-tokenizer,
RobertaProcessing "<s> $A </s>", "<mask>" with lstrip) trained here with `tokenizers` on the
tokenizer suite's texts, 600 tokens.

--reranker makes a cross-encoder (BertForSequenceClassification / XLMRobertaForSequenceClassification
with one label, as ms-marco-MiniLM and bge-reranker): the encoder under "bert." or "roberta.",
its head (BERT: pooler.dense + "classifier"; RoBERTa: "classifier.dense" + "classifier.out_proj"),
and no sentence-transformers modules.

usage: make_tiny_bert.py OUT_DIR [--pooling mean|cls|max] [--no-normalize] [--keep-accents]
                         [--max-seq-length N] [--no-pooler] [--seed N]
                         [--arch bert|roberta|xlm-roberta] [--reranker]
"""
import argparse
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

HIDDEN = 32
LAYERS = 2
HEADS = 4
INTERMEDIATE = 64
MAX_POSITIONS = 64
TYPE_VOCAB = 2

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]  # ids 0-4
PUNCT = list(".,!?;:'\"()-/")
DIGITS = [str(d) for d in range(10)]
LETTERS = [chr(c) for c in range(ord("a"), ord("z") + 1)]
WORDS = ["the", "an", "cat", "dog", "bird", "kestrel", "falcon", "sits", "plays", "hovers",
         "hunts", "in", "on", "over", "garden", "wind", "field", "is", "was", "and", "of", "to",
         "small", "fast", "new", "movie", "great", "man", "woman", "watches", "guitar", "run",
         "play", "hunt", "fly", "un", "believ", "cafe", "café", "naive", "2024", "42"]
SUFFIXES = ["##ing", "##ed", "##er", "##ly", "##able", "##ness", "##tion"]
# Kept by --keep-accents; with the default normalizer accents are stripped first, so "é" then
# reaches the model as "e". CJK characters are split into single-character words either way.
ACCENTED_CJK = ["é", "##é", "ñ", "ü", "中", "文", "日", "本", "語"]


def vocabulary():
    tokens = (SPECIALS + PUNCT + DIGITS + ["##" + d for d in DIGITS] + LETTERS
              + ["##" + c for c in LETTERS] + WORDS + SUFFIXES + ACCENTED_CJK)
    assert len(tokens) == len(set(tokens)), "duplicate vocabulary entry"
    return tokens


def tokenizer(tokens, keep_accents):
    vocab = {t: i for i, t in enumerate(tokens)}
    tok = Tokenizer(models.WordPiece(vocab=vocab, unk_token="[UNK]", max_input_chars_per_word=100))
    # strip_accents None follows lowercase (strips), as in all-MiniLM-L6-v2's tokenizer.json.
    tok.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True,
                                                strip_accents=False if keep_accents else None,
                                                lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])])
    tok.decoder = decoders.WordPiece(prefix="##")
    tok.add_special_tokens(SPECIALS)
    return tok


def unigram_tokenizer(out):
    """Writes the XLM-R tokenizer files into `out`; returns the vocabulary size."""
    script = Path(__file__).resolve().parent / "make_unigram_tokenizer.py"
    subprocess.run([sys.executable, str(script), str(out)], check=True, stdout=subprocess.DEVNULL)
    with open(out / "tokenizer.json", encoding="utf-8") as f:
        return len(json.load(f)["model"]["vocab"])


def bpe_tokenizer(out):
    """Writes RoBERTa's tokenizer files into `out`; returns the vocabulary size."""
    from tokenizers import AddedToken, pre_tokenizers, trainers
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import tokenizer_corpus

    corpus = []
    for text in tokenizer_corpus.cases(seed=7) + tokenizer_corpus.bert_cases(seed=7):
        corpus += [line for line in text.splitlines() if line.strip()]
    corpus += [" ".join(WORDS)] * 20
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=600, min_frequency=2, show_progress=False,
                                  special_tokens=["<s>", "<pad>", "</s>", "<unk>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(corpus, trainer=trainer)
    tok.add_special_tokens([AddedToken("<mask>", lstrip=True, special=True)])
    tok.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
    tok.save(str(out / "tokenizer.json"))
    write_json(out / "tokenizer_config.json", {
        "tokenizer_class": "RobertaTokenizer", "bos_token": "<s>", "eos_token": "</s>",
        "sep_token": "</s>", "cls_token": "<s>", "unk_token": "<unk>", "pad_token": "<pad>",
        "mask_token": "<mask>", "model_max_length": MAX_POSITIONS,
    })
    return tok.get_vocab_size()


def weights(rng, with_pooler, n_vocab, roberta=False, reranker=False):
    def normal(shape, std):
        return (rng.standard_normal(shape) * std).astype(np.float32)

    def linear(prefix, n_out, n_in, gain=1.0):
        # std gain/sqrt(n_in): unit-variance inputs give outputs of variance gain^2.
        w[prefix + ".weight"] = normal((n_out, n_in), gain / math.sqrt(n_in))
        w[prefix + ".bias"] = normal((n_out,), 0.1)

    def norm(prefix):
        w[prefix + ".weight"] = (1.0 + normal((HIDDEN,), 0.1)).astype(np.float32)
        w[prefix + ".bias"] = normal((HIDDEN,), 0.1)

    # RoBERTa skips positions 0 and 1 (pad_token_id + 1 is its first): 2 more rows, 1 type.
    positions = MAX_POSITIONS + (2 if roberta else 0)
    w = {}
    w["embeddings.word_embeddings.weight"] = normal((n_vocab, HIDDEN), 1.0)
    w["embeddings.position_embeddings.weight"] = normal((positions, HIDDEN), 0.5)
    w["embeddings.token_type_embeddings.weight"] = normal((1 if roberta else TYPE_VOCAB, HIDDEN),
                                                          0.3)
    norm("embeddings.LayerNorm")
    w["embeddings.position_ids"] = np.arange(positions, dtype=np.int64)[None, :]
    head_dim = HIDDEN // HEADS
    for il in range(LAYERS):
        p = f"encoder.layer.{il}."
        # q.k sums head_dim products of ~unit-variance terms, then / sqrt(head_dim): gains of
        # 1.2 on q and k give scores of std ~1.2-1.5: peaked but not one-hot attention.
        linear(p + "attention.self.query", HIDDEN, HIDDEN, 1.2)
        linear(p + "attention.self.key", HIDDEN, HIDDEN, 1.2)
        linear(p + "attention.self.value", HIDDEN, HIDDEN)
        linear(p + "attention.output.dense", HIDDEN, HIDDEN)
        norm(p + "attention.output.LayerNorm")
        linear(p + "intermediate.dense", INTERMEDIATE, HIDDEN)  # unit variance: GELU's bend
        linear(p + "output.dense", HIDDEN, INTERMEDIATE)
        norm(p + "output.LayerNorm")
    assert head_dim * HEADS == HIDDEN
    if reranker and roberta:
        linear("classifier.dense", HIDDEN, HIDDEN)
        linear("classifier.out_proj", 1, HIDDEN, 3.0)  # scores of a few units: sigmoid's bend
    elif reranker:
        linear("pooler.dense", HIDDEN, HIDDEN)
        linear("classifier", 1, HIDDEN, 3.0)
    elif with_pooler:
        linear("pooler.dense", HIDDEN, HIDDEN)
    if reranker:  # *ForSequenceClassification keeps the encoder under its base model's name
        base = "roberta." if roberta else "bert."
        w = {(k if k.startswith("classifier") else base + k): v for k, v in w.items()}
    return w


def write_json(path, obj):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=2, ensure_ascii=False)
        f.write("\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--pooling", choices=["mean", "cls", "max"], default="mean")
    ap.add_argument("--no-normalize", action="store_true", help="leave 2_Normalize out")
    ap.add_argument("--keep-accents", action="store_true",
                    help="tokenizer strip_accents false (default: stripped, as MiniLM)")
    ap.add_argument("--max-seq-length", type=int, default=48)
    ap.add_argument("--no-pooler", action="store_true", help="no pooler.dense tensors")
    ap.add_argument("--seed", type=int, default=10)
    ap.add_argument("--arch", choices=["bert", "roberta", "xlm-roberta"], default="bert")
    ap.add_argument("--reranker", action="store_true",
                    help="a one-label sequence-classification checkpoint (cross-encoder)")
    ap.add_argument("--shards", type=int, default=1,
                    help="split the weights over N files with a model.safetensors.index.json, "
                         "as large checkpoints ship (same tensors, same values)")
    args = ap.parse_args()
    if not 2 < args.max_seq_length <= MAX_POSITIONS:
        ap.error(f"--max-seq-length must be in 3..{MAX_POSITIONS}")

    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    roberta = args.arch != "bert"
    tokens = vocabulary()
    n_vocab = (unigram_tokenizer(out) if args.arch == "xlm-roberta"
               else bpe_tokenizer(out) if args.arch == "roberta" else len(tokens))
    rng = np.random.default_rng(args.seed)

    config = {
        "architectures": ["BertModel"], "model_type": "bert",
        "hidden_size": HIDDEN, "num_hidden_layers": LAYERS, "num_attention_heads": HEADS,
        "intermediate_size": INTERMEDIATE, "hidden_act": "gelu",
        "max_position_embeddings": MAX_POSITIONS, "type_vocab_size": TYPE_VOCAB,
        "vocab_size": n_vocab, "layer_norm_eps": 1e-12, "pad_token_id": 0,
        "position_embedding_type": "absolute", "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.1, "initializer_range": 0.02,
    }
    if roberta:
        config.update({"architectures": ["XLMRobertaModel" if args.arch == "xlm-roberta"
                                          else "RobertaModel"], "model_type": args.arch,
                       "max_position_embeddings": MAX_POSITIONS + 2, "type_vocab_size": 1,
                       "layer_norm_eps": 1e-5, "pad_token_id": 1, "bos_token_id": 0,
                       "eos_token_id": 2})
    if args.reranker:
        config["architectures"] = [{"bert": "Bert", "roberta": "Roberta",
                                    "xlm-roberta": "XLMRoberta"}[args.arch]
                                   + "ForSequenceClassification"]
        config.update({"id2label": {"0": "LABEL_0"}, "label2id": {"LABEL_0": 0}})
    write_json(out / "config.json", config)
    tensors = weights(rng, not args.no_pooler, n_vocab, roberta, args.reranker)
    if args.shards <= 1:
        save_file(tensors, str(out / "model.safetensors"), metadata={"format": "pt"})
    else:
        names = sorted(tensors)
        files = [f"model-{i + 1:05d}-of-{args.shards:05d}.safetensors" for i in range(args.shards)]
        weight_map = {n: files[i * args.shards // len(names)] for i, n in enumerate(names)}
        for f in files:
            save_file({n: tensors[n] for n in names if weight_map[n] == f}, str(out / f),
                      metadata={"format": "pt"})
        write_json(out / "model.safetensors.index.json",
                   {"metadata": {"total_size": sum(t.nbytes for t in tensors.values())},
                    "weight_map": weight_map})

    if not roberta:
        with open(out / "vocab.txt", "w", encoding="utf-8") as f:
            f.write("".join(t + "\n" for t in tokens))
        tokenizer(tokens, args.keep_accents).save(str(out / "tokenizer.json"))
        write_json(out / "tokenizer_config.json", {
            "do_lower_case": True, "strip_accents": False if args.keep_accents else None,
            "tokenize_chinese_chars": True, "unk_token": "[UNK]", "sep_token": "[SEP]",
            "pad_token": "[PAD]", "cls_token": "[CLS]", "mask_token": "[MASK]",
            "tokenizer_class": "BertTokenizer", "model_max_length": MAX_POSITIONS,
        })
    if args.reranker:  # a cross-encoder has no sentence-transformers modules
        print(f"tiny {args.arch} reranker: {out} (vocab {n_vocab})")
        return

    modules = [{"idx": 0, "name": "0", "path": "",
                "type": "sentence_transformers.models.Transformer"},
               {"idx": 1, "name": "1", "path": "1_Pooling",
                "type": "sentence_transformers.models.Pooling"}]
    if not args.no_normalize:
        modules.append({"idx": 2, "name": "2", "path": "2_Normalize",
                        "type": "sentence_transformers.models.Normalize"})
    elif (out / "2_Normalize").exists():
        os.rmdir(out / "2_Normalize")  # a re-run without normalize must not leave it listed
    if not args.no_normalize:
        (out / "2_Normalize").mkdir(exist_ok=True)  # sentence-transformers saves it empty
    write_json(out / "modules.json", modules)
    write_json(out / "1_Pooling" / "config.json", {
        "word_embedding_dimension": HIDDEN,
        "pooling_mode_cls_token": args.pooling == "cls",
        "pooling_mode_mean_tokens": args.pooling == "mean",
        "pooling_mode_max_tokens": args.pooling == "max",
        "pooling_mode_mean_sqrt_len_tokens": False,
    })
    write_json(out / "sentence_bert_config.json",
               {"max_seq_length": args.max_seq_length, "do_lower_case": False})
    print(f"tiny {args.arch}: {out} (vocab {n_vocab}, pooling {args.pooling}, "
          f"normalize {not args.no_normalize})")


if __name__ == "__main__":
    main()
