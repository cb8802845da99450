#!/usr/bin/env python3
"""Writes a small XLM-RoBERTa-style tokenizer folder: a SentencePiece Unigram model trained here
and its tokenizer.json as transformers' XLMRobertaConverter lays it out.

  make_unigram_tokenizer.py OUT_DIR [--vocab-size N] [--seed N] [--rule-tsv FILE]

OUT_DIR gets:
  sentencepiece.bpe.model  the SentencePiece model (XLM-R's name for it, though it is Unigram),
                           trained with normalization_rule_name nmt_nfkc on a multilingual
                           corpus built from tests/py/tokenizer_corpus.py (English, code, CJK,
                           Cyrillic, Arabic, emoji ...) and shuffled by --seed; character
                           coverage below 1, so rare characters stay out of the vocabulary and
                           become the unknown token;
  tokenizer.json           built with `tokenizers` as XLMRobertaConverter does (the layout of
                           bge-m3's and multilingual-e5's files): fairseq ids <s>=0, <pad>=1,
                           </s>=2, <unk>=3, then SentencePiece's pieces from its id 3 on (so
                           SentencePiece id k >= 3 is id k + 1 here), "<mask>" last (lstrip);
                           normalizer Sequence[Precompiled(the model's charsmap), Replace
                           " {2,}" -> " "], Metaspace pre-tokenizer and decoder (prepend
                           "always"), TemplateProcessing "<s> $A </s>" / "<s> $A </s> </s> $B </s>";
  tokenizer_config.json    XLMRobertaTokenizer's special tokens.
--rule-tsv trains with the normalization rules of FILE (SentencePiece's normalization_rule_tsv:
"source code points<TAB>target code points", hex) instead of nmt_nfkc: a charsmap of a few
kilobytes instead of 240 (the tokenizer fuzzer's, fuzz/unigram_tokenizer/).
Running it twice with the same arguments writes the same bytes: training runs on one thread
with a fixed seed and a corpus in a fixed order (the script checks nothing else varies).
"""
import argparse
import json
import random
import sys
import tempfile
from pathlib import Path

import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2 as spm_pb2
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers
from tokenizers import pre_tokenizers, processors

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tokenizer_corpus  # noqa: E402

# Text for the trainer beyond tokenizer_corpus: more words in the corpus's scripts, so the
# vocabulary holds multi-character pieces in each.
EXTRA = [
    "The quick brown fox jumps over the lazy dog while the kestrel hovers above the field.",
    "Multilingual models read text in many languages and scripts with one vocabulary.",
    "Le renard brun rapide saute par-dessus le chien paresseux près de la rivière.",
    "Der schnelle braune Fuchs springt über den faulen Hund am großen Fluss.",
    "El rápido zorro marrón salta sobre el perro perezoso junto al río.",
    "Быстрая коричневая лиса прыгает через ленивую собаку у реки.",
    "素早い茶色の狐が怠け者の犬を飛び越える。東京と大阪と京都。",
    "敏捷的棕色狐狸跳过了懒惰的狗。北京和上海是大城市。",
    "빠른 갈색 여우가 게으른 개를 뛰어넘습니다. 서울과 부산.",
    "الثعلب البني السريع يقفز فوق الكلب الكسول بجانب النهر.",
    "Η γρήγορη καφέ αλεπού πηδά πάνω από τον τεμπέλη σκύλο.",
    "तेज़ भूरी लोमड़ी आलसी कुत्ते के ऊपर कूदती है।",
]


def corpus_lines(seed):
    rng = random.Random(seed)
    lines = []
    for text in tokenizer_corpus.cases(seed=seed) + tokenizer_corpus.bert_cases(seed=seed):
        lines += [line.strip() for line in text.splitlines() if line.strip()]
    for group in tokenizer_corpus.GROUPS:
        lines += [s.strip() for s in group if s.strip() and "\n" not in s]
    lines += EXTRA * 20
    rng.shuffle(lines)
    return lines


def train(out_dir, vocab_size, seed, rule_tsv=None):
    with tempfile.TemporaryDirectory(prefix="unigram-train-") as tmp:
        corpus = Path(tmp) / "corpus.txt"
        corpus.write_text("\n".join(corpus_lines(seed)) + "\n", encoding="utf-8")
        prefix = Path(tmp) / "spm"
        spm.set_random_generator_seed(seed)
        spm.SentencePieceTrainer.train(
            input=str(corpus), model_prefix=str(prefix), model_type="unigram",
            vocab_size=vocab_size, hard_vocab_limit=False,
            **({"normalization_rule_tsv": str(rule_tsv)} if rule_tsv else
               {"normalization_rule_name": "nmt_nfkc"}),
            character_coverage=0.995, num_threads=1, seed_sentencepiece_size=100000,
            shuffle_input_sentence=False, input_sentence_size=0, minloglevel=2)
        proto = spm_pb2.ModelProto()
        proto.ParseFromString(prefix.with_suffix(".model").read_bytes())
    # The trainer records where its input, output and rules were (paths that vary).
    proto.trainer_spec.ClearField("input")
    proto.trainer_spec.ClearField("model_prefix")
    proto.normalizer_spec.ClearField("normalization_rule_tsv")
    (out_dir / "sentencepiece.bpe.model").write_bytes(proto.SerializeToString())
    return proto


def tokenizer_json(proto):
    """XLMRobertaConverter's tokenizer: SpmConverter with fairseq's ids and template."""
    vocab = [("<s>", 0.0), ("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0)]
    vocab += [(p.piece, p.score) for p in proto.pieces[3:]]
    vocab += [("<mask>", 0.0)]
    tok = Tokenizer(models.Unigram(vocab, unk_id=3, byte_fallback=False))
    tok.normalizer = normalizers.Sequence([
        normalizers.Precompiled(proto.normalizer_spec.precompiled_charsmap),
        normalizers.Replace(Regex(" {2,}"), " "),
    ])
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>",
        special_tokens=[("<s>", 0), ("</s>", 2)])
    tok.add_special_tokens([
        AddedToken("<s>", normalized=False, special=True),
        AddedToken("<pad>", normalized=False, special=True),
        AddedToken("</s>", normalized=False, special=True),
        AddedToken("<unk>", normalized=False, special=True),
        AddedToken("<mask>", lstrip=True, normalized=False, special=True),
    ])
    return tok


def write_folder(out, vocab_size, seed, rule_tsv=None):
    """Writes the three files into `out` (made if missing); returns the SentencePiece model."""
    out.mkdir(parents=True, exist_ok=True)
    proto = train(out, vocab_size, seed, rule_tsv)
    tokenizer_json(proto).save(str(out / "tokenizer.json"))
    config = {
        "tokenizer_class": "XLMRobertaTokenizer", "model_max_length": 512,
        "bos_token": "<s>", "eos_token": "</s>", "sep_token": "</s>", "cls_token": "<s>",
        "unk_token": "<unk>", "pad_token": "<pad>",
        "mask_token": {"content": "<mask>", "lstrip": True, "normalized": False,
                       "rstrip": False, "single_word": False, "special": True},
    }
    (out / "tokenizer_config.json").write_text(json.dumps(config, indent=2) + "\n",
                                               encoding="utf-8")
    return proto


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--vocab-size", type=int, default=1000,
                    help="at most this many SentencePiece pieces (fewer if the corpus is small)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rule-tsv", default=None, help="normalization rules instead of nmt_nfkc")
    args = ap.parse_args()
    proto = write_folder(Path(args.out_dir), args.vocab_size, args.seed, args.rule_tsv)
    print(f"{args.out_dir}: {len(proto.pieces)} SentencePiece pieces, {len(proto.pieces) + 2} ids")


if __name__ == "__main__":
    main()
