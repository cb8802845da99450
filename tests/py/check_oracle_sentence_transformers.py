#!/usr/bin/env python3
"""One-off check of tests/py/bert_oracle.py against sentence-transformers itself (not run in CI:
it needs torch). Embeds the texts with both and prints the min cosine and the largest token-id
difference, per checkpoint folder.

    python3 -m venv /tmp/st-venv && /tmp/st-venv/bin/pip install sentence-transformers
    HF_HUB_OFFLINE=1 /tmp/st-venv/bin/python tests/py/check_oracle_sentence_transformers.py \\
        models/all-MiniLM-L6-v2 [TINY_DIR ...]

Texts: tests/py/embed_corpus.py for folders whose max_seq_length exceeds 64, else
compare_embeddings.tiny_texts (texts from the folder's own vocabulary).
"""
import sys
from pathlib import Path

import numpy as np
from sentence_transformers import SentenceTransformer

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bert_oracle  # noqa: E402
from compare_embeddings import tiny_texts  # noqa: E402
from embed_corpus import TEXTS  # noqa: E402

worst = 1.0
for folder in sys.argv[1:]:
    ckpt = bert_oracle.Checkpoint.load(folder)
    texts = TEXTS if ckpt.max_seq_length > 64 else tiny_texts(folder)
    st = SentenceTransformer(folder, device="cpu")
    ids = bert_oracle.tokenize(ckpt, texts)
    features = st.tokenize(texts)
    id_mismatch = 0
    for i, want in enumerate(ids):
        n = int(features["attention_mask"][i].sum())
        if features["input_ids"][i][:n].tolist() != want:
            id_mismatch += 1
    ref = st.encode(texts, batch_size=16, convert_to_numpy=True).astype(np.float64)
    got = bert_oracle.embed(ckpt, ids)
    cos = (ref * got).sum(1) / (np.linalg.norm(ref, axis=1) * np.linalg.norm(got, axis=1))
    worst = min(worst, float(cos.min()))
    i = int(cos.argmin())
    print(f"{folder}: {len(texts)} texts, st max_seq_length {st.max_seq_length}, "
          f"oracle {ckpt.max_seq_length}; token ids differ on {id_mismatch}; cosine min "
          f"{cos.min():.9f} (1 - min = {1 - cos.min():.2e}), mean {cos.mean():.9f}, "
          f"max |diff| {np.abs(ref - got).max():.2e}; worst {texts[i][:50]!r}")
print(f"overall min cosine {worst:.9f}")
