#!/usr/bin/env python3
"""Reference tokenizer for Whisper's CTranslate2 folders, the oracle for Kestrel's: Hugging Face
`tokenizers` on the folder's own tokenizer.json, exactly as faster-whisper loads it
(tokenizers.Tokenizer.from_file). Tokenizes the cases of tests/py/tokenizer_corpus.py plus
Whisper's special tokens in text (added tokens are matched in text, as faster-whisper's prompts
rely on) and writes the cases, the ids and the decoded texts for a C++ test:

  whisper_tokenize_ref.py --folder DIR --cases CASES.bin --out IDS.txt --decoded DECODED.bin

CASES.bin: records "1 <n_bytes>\\n" + UTF-8 text + "\\n" (tokenize_ref.py's format, special
parsing always on); IDS.txt: one line of space-separated ids per case; DECODED.bin: records
"<n_bytes>\\n" + decode(ids, skip_special_tokens=True) + "\\n" (faster-whisper decodes
text tokens only: it drops every id from end-of-text on before decoding).
"""
import argparse
import sys
from pathlib import Path

from tokenizers import Tokenizer

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tokenizer_corpus  # noqa: E402

WHISPER_TEXTS = [
    "<|startoftranscript|><|en|><|transcribe|><|notimestamps|> Hello there.<|endoftext|>",
    " And so my fellow Americans, ask not what your country can do for you.",
    "<|startofprev|> previous text<|startoftranscript|>",
    "Ça va? Très bien. 日本語のテキスト。 Привет, мир!",
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--folder", required=True)
    ap.add_argument("--cases", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--decoded", required=True)
    args = ap.parse_args()
    tok = Tokenizer.from_file(str(Path(args.folder) / "tokenizer.json"))
    with open(args.cases, "wb") as cases, open(args.out, "w") as out, \
            open(args.decoded, "wb") as decoded:
        for text in list(tokenizer_corpus.cases()) + WHISPER_TEXTS:
            data = text.encode("utf-8", "surrogatepass")
            cases.write(f"1 {len(data)}\n".encode() + data + b"\n")
            ids = tok.encode(text, add_special_tokens=False).ids
            out.write(" ".join(map(str, ids)) + "\n")
            back = tok.decode(ids, skip_special_tokens=True).encode("utf-8", "surrogatepass")
            decoded.write(f"{len(back)}\n".encode() + back + b"\n")


if __name__ == "__main__":
    main()
