#!/usr/bin/env python3
"""Writes a tiny random-weight Whisper as a CTranslate2 folder (faster-whisper's layout):
model.bin (WhisperSpec), vocabulary.txt and tokenizer.json (a byte-level BPE of 256 bytes, a few
merges and Whisper's special tokens), for tests that run on every target (the real
Whisper-tiny is for the host's model tests only).

  make_tiny_whisper.py FOLDER [--seed N] [--dtype f32|f16] [--positions N] [--hf]
                       [--drop NAME] [--reshape NAME]

--hf writes the same weights as a Hugging Face checkpoint instead (openai/whisper-*'s layout:
config.json, model.safetensors with WhisperForConditionalGeneration's names, tokenizer.json with
the timestamps as added tokens, no vocabulary.txt). The keys' bias is zero, as Hugging Face's
Whisper has none, so both layouts hold the same model (with --no-decoder, the encoder alone).

--multilingual: OpenAI's multilingual vocabulary layout (51865 tokens: 99 languages, 1501
timestamps, filler text tokens), for language detection and the translate task.
--positions: encoder positions (default 200, a 4-second window; Whisper's 1500 make a 30-second
one, which costs 56 times the attention under qemu); --drop leaves
variable NAME out; --no-decoder writes the encoder only; --reshape gives it one row fewer (damaged folders for tests).

Shape: 80 mels as every Whisper has and 200 encoder positions (the front end is the real one;
the window, 400 frames, shorter, so several windows decode in a few seconds of audio), width 32, 4 heads, 2 layers, feed-forward 64; the decoder likewise,
with 64 positions.
"""
import argparse
import json
from pathlib import Path

import numpy as np

import ct2_model
from make_tiny_llama import bytes_to_unicode

N_MELS, POSITIONS, WIDTH, HEADS, LAYERS, FFN = 80, 200, 32, 4, 2, 64
TEXT_POSITIONS = 64  # the decoder's context (Whisper's is 448)
SPECIALS = ["<|endoftext|>", "<|startoftranscript|>", "<|en|>", "<|de|>", "<|translate|>",
            "<|transcribe|>", "<|startoflm|>", "<|startofprev|>", "<|nospeech|>",
            "<|notimestamps|>"]
TIMESTAMPS = [f"<|{i * 0.02:.2f}|>" for i in range(16)]
MERGES = [("Ġ", "t"), ("h", "e"), ("Ġt", "he"), ("Ġ", "a"), ("i", "n")]


def sinusoids(length, channels):
    """Whisper's position encodings (whisper/model.py)."""
    increment = np.log(10000) / (channels // 2 - 1)
    inv = np.exp(-increment * np.arange(channels // 2))
    t = np.arange(length)[:, None] * inv[None, :]
    return np.concatenate([np.sin(t), np.cos(t)], axis=1)


def write_hf_checkpoint(folder, arrays, vocab, a):
    """The CTranslate2 arrays under Hugging Face's names (WhisperForConditionalGeneration)."""
    from safetensors.numpy import save_file
    tensors = {}

    def put(hf_name, values):
        tensors["model." + hf_name] = np.ascontiguousarray(values)

    attention_names = {"layer_norm/gamma": "_layer_norm.weight", "layer_norm/beta":
                       "_layer_norm.bias", "linear_1/weight": ".out_proj.weight",
                       "linear_1/bias": ".out_proj.bias"}
    cross_names = {"layer_norm/gamma": "encoder_attn_layer_norm.weight",
                   "layer_norm/beta": "encoder_attn_layer_norm.bias",
                   "linear_0/weight": "encoder_attn.q_proj.weight",
                   "linear_0/bias": "encoder_attn.q_proj.bias",
                   "linear_2/weight": "encoder_attn.out_proj.weight",
                   "linear_2/bias": "encoder_attn.out_proj.bias"}
    ffn_names = {"layer_norm/gamma": "final_layer_norm.weight",
                 "layer_norm/beta": "final_layer_norm.bias", "linear_0/weight": "fc1.weight",
                 "linear_0/bias": "fc1.bias", "linear_1/weight": "fc2.weight",
                 "linear_1/bias": "fc2.bias"}
    for name, values in arrays.items():
        parts = name.split("/")
        stack = parts[0]  # encoder or decoder
        if parts[1].startswith("layer_") and parts[1][len("layer_"):].isdigit():
            p = f"{stack}.layers.{parts[1][len('layer_'):]}."
            block, rest = parts[2], "/".join(parts[3:])
            if block == "self_attention" and rest == "linear_0/weight":
                for i, proj in enumerate("qkv"):
                    put(p + f"self_attn.{proj}_proj.weight", values[i * WIDTH:(i + 1) * WIDTH])
            elif block == "self_attention" and rest == "linear_0/bias":
                put(p + "self_attn.q_proj.bias", values[:WIDTH])
                put(p + "self_attn.v_proj.bias", values[2 * WIDTH:])
            elif block == "self_attention":
                put(p + "self_attn" + attention_names[rest], values)
            elif block == "attention" and rest == "linear_1/weight":
                put(p + "encoder_attn.k_proj.weight", values[:WIDTH])
                put(p + "encoder_attn.v_proj.weight", values[WIDTH:])
            elif block == "attention" and rest == "linear_1/bias":
                put(p + "encoder_attn.v_proj.bias", values[WIDTH:])
            elif block == "attention":
                put(p + cross_names[rest], values)
            else:
                put(p + ffn_names[rest], values)
            continue
        hf = {"encoder/conv1/weight": "encoder.conv1.weight", "encoder/conv1/bias":
              "encoder.conv1.bias", "encoder/conv2/weight": "encoder.conv2.weight",
              "encoder/conv2/bias": "encoder.conv2.bias",
              "encoder/position_encodings/encodings": "encoder.embed_positions.weight",
              "encoder/layer_norm/gamma": "encoder.layer_norm.weight",
              "encoder/layer_norm/beta": "encoder.layer_norm.bias",
              "decoder/embeddings/weight": "decoder.embed_tokens.weight",
              "decoder/position_encodings/encodings": "decoder.embed_positions.weight",
              "decoder/layer_norm/gamma": "decoder.layer_norm.weight",
              "decoder/layer_norm/beta": "decoder.layer_norm.bias"}.get(name)
        if hf and (name.startswith("encoder/") or not a.no_decoder):
            put(hf, values)
    save_file(tensors, str(folder / "model.safetensors"))
    config = {"model_type": "whisper", "architectures": ["WhisperForConditionalGeneration"],
              "activation_function": "gelu", "d_model": WIDTH, "encoder_layers": LAYERS,
              "encoder_attention_heads": HEADS, "encoder_ffn_dim": FFN, "decoder_layers": LAYERS,
              "decoder_attention_heads": HEADS, "decoder_ffn_dim": FFN,
              "num_mel_bins": N_MELS, "max_source_positions": a.positions,
              "max_target_positions": TEXT_POSITIONS, "vocab_size": vocab}
    (folder / "config.json").write_text(json.dumps(config, indent=1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("folder")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--dtype", choices=["f32", "f16"], default="f32")
    ap.add_argument("--positions", type=int, default=POSITIONS)
    ap.add_argument("--hf", action="store_true")
    ap.add_argument("--no-decoder", action="store_true")
    ap.add_argument("--drop", default="")
    ap.add_argument("--reshape", default="")
    ap.add_argument("--multilingual", action="store_true")
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    folder = Path(a.folder)
    folder.mkdir(parents=True, exist_ok=True)

    table = bytes_to_unicode()
    specials, timestamps = SPECIALS, TIMESTAMPS
    pieces = [table[b] for b in range(256)] + ["".join(m) for m in MERGES]
    if a.multilingual:
        # OpenAI's multilingual layout, 51865 tokens: text up to 50257 (fillers past the BPE),
        # <|endoftext|>, <|startoftranscript|>, 99 languages (en, de, then made-up codes), the
        # task and other specials, 1501 timestamps.
        pieces += [f"{table[ord('w')]}{i}" for i in range(50257 - len(pieces))]
        codes = ["en", "de"] + [x + y for x in "abcfg" for y in "abcdefghijklmnopqrstuvwxyz"
                                if x + y not in ("de", "en")][:97]
        specials = SPECIALS[:2] + [f"<|{c}|>" for c in codes] + SPECIALS[4:]
        timestamps = [f"<|{i * 0.02:.2f}|>" for i in range(1501)]
    pieces += specials + timestamps
    variables = []
    arrays = {}  # name -> values as stored, for the Hugging Face layout
    matrix_dtype = 4 if a.dtype == "f16" else 0

    def add(name, values, dtype=0):
        values = np.asarray(values, dtype=np.float16 if dtype == 4 else np.float32)
        if name == a.drop:
            return
        if name == a.reshape:
            values = values[1:]
        variables.append((name, list(values.shape), dtype, values.tobytes()))
        arrays[name] = values

    def scalar_i16(name, v):
        variables.append((name, [], 2, int(v).to_bytes(2, "little")))

    def weight(*shape, fan_in):  # unit-variance outputs for unit-variance inputs
        return rng.standard_normal(shape) / np.sqrt(fan_in)

    def norm(name):
        add(name + "/gamma", 1 + 0.1 * rng.standard_normal(WIDTH))
        add(name + "/beta", 0.1 * rng.standard_normal(WIDTH))

    def self_attention(p):
        norm(p + "self_attention/layer_norm")
        # q and k a little larger than unit scale, so attention is not uniform.
        qkv = weight(3 * WIDTH, WIDTH, fan_in=WIDTH)
        qkv[:2 * WIDTH] *= 2.0
        add(p + "self_attention/linear_0/weight", qkv, matrix_dtype)
        qkv_bias = 0.1 * rng.standard_normal(3 * WIDTH)
        qkv_bias[WIDTH:2 * WIDTH] = 0.0
        add(p + "self_attention/linear_0/bias", qkv_bias)
        add(p + "self_attention/linear_1/weight", weight(WIDTH, WIDTH, fan_in=WIDTH), matrix_dtype)
        add(p + "self_attention/linear_1/bias", 0.1 * rng.standard_normal(WIDTH))

    def feed_forward(p):
        norm(p + "ffn/layer_norm")
        add(p + "ffn/linear_0/weight", weight(FFN, WIDTH, fan_in=WIDTH), matrix_dtype)
        add(p + "ffn/linear_0/bias", 0.1 * rng.standard_normal(FFN))
        add(p + "ffn/linear_1/weight", weight(WIDTH, FFN, fan_in=FFN), matrix_dtype)
        add(p + "ffn/linear_1/bias", 0.1 * rng.standard_normal(WIDTH))

    def final_norm(name):
        add(name + "/gamma", 1 + 0.1 * rng.standard_normal(WIDTH))
        add(name + "/beta", 0.1 * rng.standard_normal(WIDTH))

    scalar_i16("encoder/num_heads", HEADS)
    add("encoder/conv1/weight", weight(WIDTH, N_MELS, 3, fan_in=3 * N_MELS), matrix_dtype)
    add("encoder/conv1/bias", 0.1 * rng.standard_normal(WIDTH))
    add("encoder/conv2/weight", weight(WIDTH, WIDTH, 3, fan_in=3 * WIDTH), matrix_dtype)
    add("encoder/conv2/bias", 0.1 * rng.standard_normal(WIDTH))
    add("encoder/position_encodings/encodings", sinusoids(a.positions, WIDTH))
    for layer in range(LAYERS):
        self_attention(f"encoder/layer_{layer}/")
        feed_forward(f"encoder/layer_{layer}/")
    final_norm("encoder/layer_norm")
    add("decoder/embeddings/weight", weight(len(pieces), WIDTH, fan_in=1), matrix_dtype)
    if not a.no_decoder:
        scalar_i16("decoder/num_heads", HEADS)
        add("decoder/position_encodings/encodings",
            0.5 * rng.standard_normal((TEXT_POSITIONS, WIDTH)))
        for layer in range(LAYERS):
            p = f"decoder/layer_{layer}/"
            self_attention(p)
            norm(p + "attention/layer_norm")
            add(p + "attention/linear_0/weight", 2.0 * weight(WIDTH, WIDTH, fan_in=WIDTH),
                matrix_dtype)
            add(p + "attention/linear_0/bias", 0.1 * rng.standard_normal(WIDTH))
            kv = weight(2 * WIDTH, WIDTH, fan_in=WIDTH)
            kv[:WIDTH] *= 2.0
            add(p + "attention/linear_1/weight", kv, matrix_dtype)
            kv_bias = 0.1 * rng.standard_normal(2 * WIDTH)
            kv_bias[:WIDTH] = 0.0  # keys have no bias in Whisper
            add(p + "attention/linear_1/bias", kv_bias)
            add(p + "attention/linear_2/weight", weight(WIDTH, WIDTH, fan_in=WIDTH), matrix_dtype)
            add(p + "attention/linear_2/bias", 0.1 * rng.standard_normal(WIDTH))
            feed_forward(p)
        final_norm("decoder/layer_norm")
    if a.hf:
        write_hf_checkpoint(folder, arrays, len(pieces), a)
    else:
        (folder / "model.bin").write_bytes(ct2_model.model_bin(
            "WhisperSpec", variables,
            [("decoder/projection/weight", "decoder/embeddings/weight")]))
        (folder / "vocabulary.txt").write_text("".join(p + "\n" for p in pieces),
                                               encoding="utf-8")
    first_special = len(pieces) - len(specials) - len(timestamps)
    tokenizer = {
        "version": "1.0", "truncation": None, "padding": None, "normalizer": None,
        "added_tokens": [{"id": first_special + i, "content": s, "single_word": False,
                          "lstrip": False, "rstrip": False, "normalized": False,
                          "special": True} for i, s in enumerate(specials)] +
                        # Hugging Face's Whisper tokenizer.json lists the timestamps too, as
                        # added tokens that are not "special"; CTranslate2's leaves them out.
                        ([{"id": first_special + len(specials) + i, "content": t,
                           "single_word": False, "lstrip": False, "rstrip": False,
                           "normalized": False, "special": False}
                          for i, t in enumerate(timestamps)] if a.hf else []),
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                          "use_regex": True},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                    "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": "", "end_of_word_suffix": "", "fuse_unk": False,
                  "vocab": {p: i for i, p in enumerate(pieces[:first_special])},
                  "merges": [f"{x} {y}" for x, y in MERGES]},
    }
    (folder / "tokenizer.json").write_text(json.dumps(tokenizer, ensure_ascii=False),
                                           encoding="utf-8")


if __name__ == "__main__":
    main()
