#!/usr/bin/env python3
"""Kestrel's WordPiece tokenizer (BERT) against Hugging Face `tokenizers`, id for id.

  compare_wordpiece_tokenizers.py --tool build/release/tests/hf_tokenizer_ids \\
      --model models/all-MiniLM-L6-v2 [--tmp DIR]

Kestrel's side is hf_tokenizer_ids: the converter's ReadHfTokenizer, packed into a FlatBuffer and
loaded as a model loads it. Compared, each with and without [CLS]/[SEP]:
  1. the checkpoint's tokenizer.json on tokenizer_corpus.bert_cases() (mixed text, special
     tokens typed in text, control characters, accents, CJK, long words ...) and the cases of
     tokenizer_hostile_corpus.py that are valid UTF-8 (Python strings cannot hold the others);
  2. the same checkpoint without tokenizer.json (vocab.txt, tokenizer_config.json,
     special_tokens_map.json), against tokenizers' BertWordPieceTokenizer built from vocab.txt;
  3. synthetic tokenizer.json files whose vocabulary is every code point alone and after "##",
     one per normalizer setting, on "x<c>y" for every code point c of planes 0-3 and 14: there
     the ids spell out the normalized, pre-tokenized text character by character, so any
     difference in control/whitespace/punctuation/CJK classes, NFD or case mapping shows.
Exits 1 at the first set with a difference, printing the first differing text and, word by
word, the words that differ. A missing checkpoint is an error, not a skip.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tokenizers import Tokenizer
from tokenizers.implementations import BertWordPieceTokenizer

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tokenizer_corpus  # noqa: E402
import tokenizer_hostile_corpus  # noqa: E402

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
SWEEP_RANGES = [(0, 0xD800), (0xE000, 0x32400), (0xE0000, 0xE01F0)]


def kestrel_ids(tool, folder, texts, add_special, tmp):
    cases = Path(tmp) / "cases.jsonl"
    cases.write_text("".join(json.dumps(t) + "\n" for t in texts), encoding="utf-8")
    cmd = [tool, str(folder), str(cases)] + (["--add-special"] if add_special else [])
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"FAIL: {' '.join(cmd)} exited {run.returncode}: {run.stderr.strip()}")
    lines = run.stdout.split("\n")[:len(texts)]
    return [[int(x) for x in line.split()] for line in lines]


def hf_ids(tok, texts, add_special):
    return [e.ids for e in tok.encode_batch(texts, add_special_tokens=add_special)]


def describe(text):
    shown = repr(text if len(text) <= 300 else text[:300] + "...")
    odd = sorted({f"U+{ord(c):04X}" for c in text if ord(c) > 0x7E or ord(c) < 0x20})
    return shown + (f" (non-ASCII: {' '.join(odd[:20])})" if odd else "")


def compare(name, tool, folder, tok, texts, tmp):
    """Compares all texts with and without special tokens; returns the number of texts."""
    for add_special in (False, True):
        got = kestrel_ids(tool, folder, texts, add_special, tmp)
        want = hf_ids(tok, texts, add_special)
        bad = [i for i in range(len(texts)) if got[i] != want[i]]
        if not bad:
            continue
        i = bad[0]
        print(f"FAIL {name} (add_special={add_special}): {len(bad)} of {len(texts)} texts differ;"
              f" the first:\n  text:    {describe(texts[i])}\n  kestrel: {got[i][:60]}\n"
              f"  hf:      {want[i][:60]}")
        words = texts[i].split(" ")
        got_w = kestrel_ids(tool, folder, words, False, tmp)
        want_w = hf_ids(tok, words, False)
        for w, g, h in [(w, g, h) for w, g, h in zip(words, got_w, want_w) if g != h][:10]:
            print(f"  word {describe(w)}: kestrel {g} hf {h}")
        sys.exit(1)
    print(f"ok {name}: {len(texts)} texts, {sum(len(t) for t in texts)} characters, identical "
          f"ids with and without [CLS]/[SEP]")
    return len(texts)


def load_hf(path):
    tok = Tokenizer.from_file(str(path))
    tok.no_truncation()  # the checkpoint's own truncation and padding would hide differences
    tok.no_padding()
    return tok


def sweep_tokenizer_json(normalizer):
    vocab = {s: i for i, s in enumerate(SPECIALS)}
    for lo, hi in SWEEP_RANGES:
        for cp in range(lo, hi):
            vocab.setdefault(chr(cp), len(vocab))
            vocab.setdefault("##" + chr(cp), len(vocab))
    added = [{"id": vocab[s], "content": s, "single_word": False, "lstrip": False,
              "rstrip": False, "normalized": False, "special": True} for s in SPECIALS]
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": dict(type="BertNormalizer", **normalizer),
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {"type": "BertProcessing", "sep": ["[SEP]", 3], "cls": ["[CLS]", 2]},
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100, "vocab": vocab},
    }


def sweep_texts():
    words = [f"x{chr(cp)}y" for lo, hi in SWEEP_RANGES for cp in range(lo, hi)]
    return [" ".join(words[i:i + 256]) for i in range(0, len(words), 256)]


NORMALIZERS = [  # BertNormalizer settings: (clean_text, handle_chinese_chars, strip_accents, lowercase)
    (True, True, None, True),  # uncased BERT, all-MiniLM-L6-v2
    (True, True, False, True),
    (True, True, None, False),  # cased BERT
    (True, True, True, False),
    (False, False, False, False),  # only the pre-tokenizer and WordPiece
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True)
    ap.add_argument("--model", required=True, help="Hugging Face folder (all-MiniLM-L6-v2)")
    ap.add_argument("--tmp", default=None)
    args = ap.parse_args()
    model = Path(args.model)
    if not (model / "tokenizer.json").is_file() or not (model / "vocab.txt").is_file():
        sys.exit(f"FAIL: {model} has no tokenizer.json and vocab.txt: fetch the checkpoint "
                 f"first (scripts/fetch-model.sh)")
    tmp = tempfile.mkdtemp(prefix="wordpiece-", dir=args.tmp)
    try:
        texts = tokenizer_corpus.bert_cases() + tokenizer_hostile_corpus.texts()
        total = compare("all-MiniLM-L6-v2 tokenizer.json", args.tool, model,
                        load_hf(model / "tokenizer.json"), texts, tmp)

        legacy = Path(tmp) / "vocab-only"
        legacy.mkdir()
        for name in ("vocab.txt", "tokenizer_config.json", "special_tokens_map.json"):
            shutil.copy(model / name, legacy / name)
        config = json.loads((model / "tokenizer_config.json").read_text())
        bert = BertWordPieceTokenizer(str(model / "vocab.txt"), clean_text=True,
                                      handle_chinese_chars=config["tokenize_chinese_chars"],
                                      strip_accents=config["strip_accents"],
                                      lowercase=config["do_lower_case"])
        total += compare("all-MiniLM-L6-v2 vocab.txt", args.tool, legacy, bert, texts, tmp)

        sweep = sweep_texts()
        for clean, chinese, strip, lower in NORMALIZERS:
            normalizer = dict(clean_text=clean, handle_chinese_chars=chinese,
                              strip_accents=strip, lowercase=lower)
            folder = Path(tmp) / "sweep"
            folder.mkdir(exist_ok=True)
            (folder / "tokenizer.json").write_text(
                json.dumps(sweep_tokenizer_json(normalizer), ensure_ascii=False), encoding="utf-8")
            total += compare(f"code-point sweep {normalizer}", args.tool, folder,
                             load_hf(folder / "tokenizer.json"), sweep + texts, tmp)
        print(f"all {total} texts identical")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
