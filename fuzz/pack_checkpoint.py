#!/usr/bin/env python3
"""Packs a Hugging Face checkpoint folder into the input format of fuzz/hf_checkpoint_fuzz.cc:
records of [u8 file index][u32 little-endian size][bytes], file index into FILES (the same list,
in the same order, as kFiles there). A folder's other files are left out.

usage: pack_checkpoint.py FOLDER OUT.bin   (or import pack())
"""
import struct
import sys
from pathlib import Path

FILES = ["config.json", "model.safetensors", "model.safetensors.index.json",
         "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors", "tokenizer.json",
         "vocab.txt", "tokenizer_config.json", "special_tokens_map.json", "modules.json",
         "sentence_bert_config.json", "1_Pooling/config.json", "2_Normalize/config.json",
         "tokenizer.model", "added_tokens.json", "chat_template.jinja"]


def pack(folder, only=None):
    folder = Path(folder)
    out = bytearray()
    for index, name in enumerate(FILES):
        path = folder / name
        if path.is_file() and (only is None or name in only):
            data = path.read_bytes()
            out += struct.pack("<BI", index, len(data)) + data
    return bytes(out)


if __name__ == "__main__":
    Path(sys.argv[2]).write_bytes(pack(sys.argv[1]))
