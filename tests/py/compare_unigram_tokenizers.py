#!/usr/bin/env python3
"""Kestrel's Unigram tokenizer (XLM-RoBERTa) against SentencePiece and Hugging Face `tokenizers`.

  compare_unigram_tokenizers.py --tool build/release/tests/hf_tokenizer_ids [--tmp DIR]

Trains two small SentencePiece Unigram models (make_unigram_tokenizer.py: nmt_nfkc charsmap,
XLM-R's fairseq ids) and runs Kestrel's side, hf_tokenizer_ids (the converter's ReadHfTokenizer
on tokenizer.json, packed and loaded as a model loads it), with and without <s>/</s>, over
tokenizer_corpus.py's cases, tokenizer_hostile_corpus.py's (invalid UTF-8 too), CHARSMAP
below and a code-point sweep ("x<c>y" for code points of planes 0 and 1). The second model's
tokenizer.json is rewritten into the other shapes real files have (newer transformers'
Strip + Replace "▁" normalizer, RobertaProcessing, tokenizers < 0.14's add_prefix_space).

  1. SentencePiece is the oracle: Kestrel's ids must equal SentencePiece's (+1 past its
     control tokens, fairseq's offset) for every text, the special tokens split out of the text
     first as Hugging Face does (<mask> taking the whitespace before it: lstrip). One named
     exception: "SentencePiece sums scores in float32": where two segmentations score the same
     (a run like "bbbbbbb" split as 14+15 or 15+14 characters), float32 rounding of the running
     sum picks one in SentencePiece; Kestrel sums in double as llama.cpp and Hugging Face do.
     There Kestrel's pieces must score the same as SentencePiece's (summed exactly, with as many
     unknown tokens), and Hugging Face's ids are compared as for any other text.
  2. Hugging Face must give the same ids too, except where its normalization genuinely differs
     from SentencePiece's, which is reported by name with a count and an example, never skipped
     silently:
       - "trailing whitespace": with the older normalizer (Precompiled, Replace " {2,}" -> " ")
         Hugging Face keeps a space at the end of a text (or of the text before a special
         token) as a final "▁" token, and a whitespace-only text is "▁"; SentencePiece
         (remove_extra_whitespaces) drops it;
       - "Precompiled per grapheme cluster": Hugging Face applies the charsmap to whole
         grapheme clusters (and to their characters one by one when no rule matches the whole
         cluster, or it is 6 bytes or longer), SentencePiece to the longest rule at each
         position.
     A text whose normalization agrees and whose ids differ fails.
Also RoBERTa's byte-level BPE in an encoder folder (make_tiny_bert.py --arch roberta's
tokenizer.json, trained on the tokenizer suite's texts): Kestrel's ids equal Hugging Face's on
every text above that Python can hold, with and without <s>/</s>.
Exits 1 on the first failure, printing the text and both id lists.
"""
import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import sentencepiece as spm
from tokenizers import Tokenizer

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_tiny_bert  # noqa: E402
import make_unigram_tokenizer  # noqa: E402
import tokenizer_corpus  # noqa: E402
import tokenizer_hostile_corpus  # noqa: E402

# Texts that exercise the charsmap (nmt_nfkc) and the whitespace rules.
CHARSMAP = [
    "Ｆｕｌｌｗｉｄｔｈ　ＡＢＣ　１２３！？", "ﬁne ﬂow ﬀ ﬃ ﬄ ﬅ ﬆ", "ｶﾀｶﾅ ﾊﾞﾋﾟ ｧｨ", "① ② ⑳ ㉑ ㈱ ㍿ ㌔",
    "½ ¼ ¾ ⅓ ² ³ ¹ ₂ ™ ℃ ℉ № Ⅻ ⅻ", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝐁𝐨𝐥𝐝 𝟙𝟚𝟛", "Å Ω K ǅ ŉ ſ µ", "… ‥ ‼ ⁇ ﹖ ﹗ ︙",
    "e\u0301 a\u0308 o\u0302\u0323 n\u0303 \u0301alone x\u0301\u0302\u0303\u0304",
    "\u1100\u1161\u11a8 \u110b\u1175", "ﷺ ﷻ ﷽", "ｈｅｌｌｏ　ｗｏｒｌｄ",
    "a  b   c    d", "  leading", "trailing  ", "   ", " ", "", "\t\ttabs\tand\nnewlines\n\n",
    "\r\nCRLF\r\n", "a\u00a0b\u2002c\u3000d\u200be\u200cf\u200dg\ufeffh\u00adi",
    "中文混合English日本語のかなカナ한국어漢字", "😀 👍🏽 🇫🇷 👨‍👩‍👧‍👦 ❤️ ✨🚀",
    "ᚠᛇᚻ᛫ᛒᛦᚦ ⴰⵣⵓⵍ ꦧꦱꦗꦮ 𓀀𓀁 ܐܒܓ ཀཁག",  # scripts the model lacks: unknown runs
    "x\U0001d11ey ☃☄ ⌘⌥ ␀␁ �", "\x00a\x01b\x1fc\x7fd\x85e",
    "<s>", "</s>", "<pad><unk>", "<mask>", "a <mask> b", "a\u3000\u00a0<mask>b", "a<mask>",
    "  <mask>  ", "<s> hello </s>", "x</s>y<s>z", "<s><s>", "<mas k> <s >", "<<mask>>",
    "Paris is the <mask> of France.", "hello <unk> world", "\t<mask>\n",
]

SWEEP = [(0x20, 0xD800), (0xE000, 0x10000), (0x1D400, 0x1D800), (0x1F300, 0x1F700)]

FLOAT32 = "SentencePiece sums scores in float32 (ties between equal-scoring segmentations)"
SPECIALS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
LSTRIP = {"<mask>"}
# Rust's char::is_whitespace (Unicode White_Space), which Hugging Face's lstrip tests.
WHITE_SPACE = set("\t\n\x0b\x0c\r \x85\xa0\u1680\u2028\u2029\u202f\u205f\u3000") | {
    chr(c) for c in range(0x2000, 0x200B)}


def fairseq_id(spm_id):
    """XLM-R's ids: SentencePiece's <unk>, <s>, </s> are 3, 0, 2; other pieces one up."""
    return {0: 3, 1: 0, 2: 2}.get(spm_id, spm_id + 1)


def split_specials(text):
    """[(fragment, None) or (None, special)], as Hugging Face splits out added tokens."""
    is_bytes = isinstance(text, bytes)
    s = text.decode("latin-1") if is_bytes else text  # specials are ASCII: offsets agree
    pattern = "|".join(re.escape(t) for t in sorted(SPECIALS, key=len, reverse=True))
    out, pos = [], 0
    for m in re.finditer(pattern, s):
        end = m.start()
        if m.group() in LSTRIP:
            while end > pos and (is_bytes and s[end - 1] in " \t\n\x0b\x0c\r"
                                 or not is_bytes and s[end - 1] in WHITE_SPACE):
                end -= 1
        if end > pos:
            out.append((s[pos:end], None))
        out.append((None, m.group()))
        pos = m.end()
    if pos < len(s):
        out.append((s[pos:], None))
    return [(f.encode("latin-1") if is_bytes and f is not None else f, t) for f, t in out]


def kestrel_ids(tool, folder, texts, add_special, tmp):
    cases = Path(tmp) / "cases.jsonl"
    lines = [json.dumps({"hex": t.hex()} if isinstance(t, bytes) else t) for t in texts]
    cases.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    cmd = [tool, str(folder), str(cases)] + (["--add-special"] if add_special else [])
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"FAIL: {' '.join(cmd)} exited {run.returncode}: {run.stderr.strip()}")
    return [[int(x) for x in line.split()] for line in run.stdout.split("\n")[:len(texts)]]


class Oracles:
    def __init__(self, folder):
        self.sp = spm.SentencePieceProcessor(model_file=str(folder / "sentencepiece.bpe.model"))
        self.hf = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.hf.no_truncation()
        self.hf.no_padding()
        self.special_ids = {t: self.hf.token_to_id(t) for t in SPECIALS}
        model = json.loads(self.hf.to_str())["model"]
        self.scores = [score for _, score in model["vocab"]]
        self.unk_id = model["unk_id"]

    def score(self, ids):
        """The summed piece scores of ids (unknown tokens aside, which fuse), exactly."""
        return sum(self.scores[i] for i in ids if i != self.unk_id), ids.count(self.unk_id)

    def float32_tie(self, ids, want):
        """True when ids and want (SentencePiece's) are different segmentations with the same
        score: SentencePiece sums scores in float32, whose rounding then picks one of them,
        where Kestrel, Hugging Face and llama.cpp sum in double."""
        (a, unk_a), (b, unk_b) = self.score(ids), self.score(want)
        return unk_a == unk_b and abs(a - b) <= 1e-6 * max(1.0, abs(a))

    def spm_ids(self, text, add_special):
        ids = [0] if add_special else []
        for fragment, special in split_specials(text):
            if special is not None:
                ids.append(self.special_ids[special])
            else:
                ids += [fairseq_id(i) for i in self.sp.encode(fragment)]
        return ids + ([2] if add_special else [])

    def hf_difference(self, text):
        """The named difference of Hugging Face's normalization on `text`, or None."""
        names = set()
        for fragment, special in split_specials(text):
            if special is not None:
                continue
            hf = self.hf.normalizer.normalize_str(fragment).replace(" ", "▁")
            if hf and not hf.startswith("▁"):
                hf = "▁" + hf
            ours = self.sp.normalize(fragment)
            if hf.rstrip("▁") != ours:
                names.add("Precompiled per grapheme cluster")
            elif hf != ours:
                names.add("trailing whitespace")
        return sorted(names)


def first_difference(a, b):
    """a and b (id lists) around their first difference."""
    i = next((k for k in range(min(len(a), len(b))) if a[k] != b[k]), min(len(a), len(b)))
    lo = max(0, i - 8)
    return f"from index {lo} (first difference at {i}): {a[lo:i + 16]} vs {b[lo:i + 16]}"


def describe(text):
    if isinstance(text, bytes):
        return "bytes " + text[:200].hex()
    shown = repr(text if len(text) <= 200 else text[:200] + "...")
    odd = sorted({f"U+{ord(c):04X}" for c in text if ord(c) > 0x7E or ord(c) < 0x20})
    return shown + (f" (non-ASCII: {' '.join(odd[:12])})" if odd else "")


def compare(name, tool, folder, texts, tmp):
    oracles = Oracles(folder)
    known = {}
    for add_special in (False, True):
        got = kestrel_ids(tool, folder, texts, add_special, tmp)
        for text, ids in zip(texts, got):
            want = oracles.spm_ids(text, add_special)
            hf = None if isinstance(text, bytes) else oracles.hf.encode(
                text, add_special_tokens=add_special).ids
            if ids != want and oracles.float32_tie(ids, want):
                known.setdefault(FLOAT32, []).append((text, ids, want))
            elif ids != want:
                sys.exit(f"FAIL {name} (add_special={add_special}): Kestrel differs from "
                         f"SentencePiece on\n  text: {describe(text)}\n"
                         f"  kestrel vs sentencepiece {first_difference(ids, want)}")
            if hf is None or hf == ids:  # None: bytes Python strings cannot hold
                continue
            names = oracles.hf_difference(text)
            if not names:
                sys.exit(f"FAIL {name} (add_special={add_special}): Kestrel differs from Hugging "
                         f"Face where both normalize alike:\n  text:    {describe(text)}\n"
                         f"  kestrel vs hf {first_difference(ids, hf)}")
            for n in names:
                known.setdefault(n, []).append((text, ids, hf))
    n_bytes = sum(isinstance(t, bytes) for t in texts)
    print(f"ok {name}: {len(texts)} texts ({n_bytes} of them invalid UTF-8, SentencePiece only), "
          f"ids identical to SentencePiece's and Hugging Face's with and without <s>/</s> "
          f"except:")
    for n, cases in sorted(known.items()):
        text, ids, other = cases[0]
        print(f"  known difference \"{n}\": {len(cases)} encodings, e.g. {describe(text)}:\n"
              f"    {'kestrel vs sentencepiece' if n == FLOAT32 else 'kestrel = sentencepiece vs hf'} "
              f"{first_difference(ids, other)}")
    if not known:
        print("  (none)")


def sweep_texts():
    words = [f"x{chr(cp)}y" for lo, hi in SWEEP for cp in range(lo, hi)]
    return [" ".join(words[i:i + 128]) for i in range(0, len(words), 128)]


def rewrite_other_shapes(path):
    """Newer transformers' normalizer, RobertaProcessing and the older Metaspace fields."""
    data = json.loads(path.read_text(encoding="utf-8"))
    precompiled = data["normalizer"]["normalizers"][0]
    data["normalizer"]["normalizers"] = [
        precompiled, {"type": "Strip", "strip_left": False, "strip_right": True},
        {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": "▁"}]
    data["post_processor"] = {"type": "RobertaProcessing", "sep": ["</s>", 2], "cls": ["<s>", 0],
                              "trim_offsets": True, "add_prefix_space": True}
    for key in ("pre_tokenizer", "decoder"):
        data[key] = {"type": "Metaspace", "replacement": "▁", "add_prefix_space": True}
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")


def compare_byte_level_bpe(tool, folder, texts, tmp):
    """RoBERTa's byte-level BPE (make_tiny_bert.py --arch roberta's tokenizer.json): Kestrel's
    ids equal Hugging Face's for every text Python can hold, with and without <s>/</s>."""
    hf = Tokenizer.from_file(str(folder / "tokenizer.json"))
    hf.no_truncation()
    hf.no_padding()
    valid = [t for t in texts if isinstance(t, str)]
    for add_special in (False, True):
        got = kestrel_ids(tool, folder, valid, add_special, tmp)
        for text, ids in zip(valid, got):
            want = hf.encode(text, add_special_tokens=add_special).ids
            if ids != want:
                sys.exit(f"FAIL RoBERTa byte-level BPE (add_special={add_special}): Kestrel "
                         f"differs from Hugging Face on\n  text: {describe(text)}\n"
                         f"  kestrel vs hf {first_difference(ids, want)}")
    print(f"ok RoBERTa byte-level BPE: {len(valid)} texts, ids identical to Hugging Face's with "
          f"and without <s>/</s>")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True)
    ap.add_argument("--tmp", default=None)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="unigram-", dir=args.tmp)
    try:
        texts = (tokenizer_corpus.cases() + tokenizer_corpus.bert_cases() + CHARSMAP +
                 tokenizer_hostile_corpus.texts(keep_invalid=True) + sweep_texts())
        base = Path(tmp) / "xlmr-1000"
        make_unigram_tokenizer.write_folder(base, vocab_size=1000, seed=1)
        compare("XLM-R layout, 1000 pieces", args.tool, base, texts, tmp)
        small = Path(tmp) / "xlmr-400"
        make_unigram_tokenizer.write_folder(small, vocab_size=400, seed=2)
        rewrite_other_shapes(small / "tokenizer.json")
        compare("newer layout (Strip, RobertaProcessing), 400 pieces", args.tool, small, texts,
                tmp)
        bpe = Path(tmp) / "roberta-bpe"
        bpe.mkdir()
        make_tiny_bert.bpe_tokenizer(bpe)
        compare_byte_level_bpe(args.tool, bpe, texts, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
