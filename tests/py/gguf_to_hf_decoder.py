#!/usr/bin/env python3
"""Writes a tiny decoder GGUF (tests/py/make_tiny_llama.py: llama, qwen2, qwen3, smollm3;
make_tiny_gemma2.py, make_tiny_gemma3.py, make_tiny_phi3.py) as the Hugging Face checkpoint
folder llama.cpp's convert_hf_to_gguf.py would have made it from:
config.json, model.safetensors (or shards with their index), tokenizer.json,
tokenizer_config.json. The inverse of that converter, so that Kestrel's reading of a folder can
be checked against llama.cpp's logits for the GGUF (tests/convert_hf_decoder_test.cc):

- tensors renamed back (token_embd -> model.embed_tokens, blk.N.attn_q -> model.layers.N.
  self_attn.q_proj, ...), quantized ones dequantized by gguf-py; the Q/K rows of `llama` and
  `smollm3` files un-permuted (LlamaModel.permute undone: Hugging Face keeps rotate_half's
  layout); no lm_head.weight when the head is tied;
- config.json from the hyper-parameters (rope_freqs.weight becomes rope_scaling llama3 with
  make_tiny_llama.py's factors; smollm3 gets no_rope_layers, every 4th layer 0);
- tokenizer.json: byte-level BPE with the pre-tokenizer Hugging Face spells for llama.cpp's
  tokenizer.ggml.pre (smollm, llama-bpe, qwen2), the control tokens as special added tokens
  (also in the vocabulary when they come first, as SmolLM2's), merges as pairs or as strings;
- tokenizer_config.json: bos/eos/unk/pad tokens by content, add_bos_token, chat_template; an
  EOS the tokenizer appends (add_eos_token) written as Qwen3-Embedding has it: a template that
  appends it, and <|im_end|> as tokenizer_config.json's eos_token;
- an embedding model (<arch>.pooling_type) as a sentence-transformers folder: modules.json,
  1_Pooling/config.json;
- Gemma: norms stored without the +1 llama.cpp's converter adds, Gemma's norm names, soft-caps,
  window and layer_types in config.json, a SentencePiece vocabulary (tokenizer.ggml.model
  "llama") as tokenizer.model (protobuf written here: pieces, scores, types, BPE trainer spec)
  with the special token ids in config.json. --multimodal writes a Gemma 3 as the 4B and larger
  ship: model_type gemma3, the decoder's keys under text_config, tensors under language_model.;
- Phi-3: the fused qkv_proj and gate_up_proj, partial_rotary_factor, original context, and
  LongRoPE's factors as rope_scaling long_factor / short_factor (llama.cpp's converter computes
  the attention factor from the context ratio: a GGUF with another --attn-factor differs).

  gguf_to_hf_decoder.py IN.gguf OUT_DIR [--dtype f32|f16|bf16] [--shards N] [--string-merges]
                        [--config KEY=JSON]... [--tokenizer-model KEY=JSON]...
                        [--extra-tensor NAME] [--remove FILE] [--multimodal]
                        [--spm-model-type N] [--stop-ids ID,ID...]

--config, --tokenizer-model, --extra-tensor, --remove and --spm-model-type spoil the folder for tests of the converter's refusals: a config.json or
tokenizer.json model field set to a JSON value, one more [4] tensor, a file removed, another
SentencePiece model type (1: Unigram).
"""
import argparse
import json
import os

import numpy as np
import gguf
from safetensors.numpy import save_file

CONTROL = 3
LLAMA3_ROPE = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
               "high_freq_factor": 4.0, "original_max_position_embeddings": 64}
REGEX = {
    "llama-bpe": "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?"
                 "[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    "qwen2": "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?"
             "[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    "gpt-4o": "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*"
              "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
              "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+"
              "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\\p{N}{1,3}| ?"
              "[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
}
LAYER_NAMES = {
    "attn_norm.weight": "input_layernorm.weight",
    "ffn_norm.weight": "post_attention_layernorm.weight",
    "attn_q.weight": "self_attn.q_proj.weight", "attn_k.weight": "self_attn.k_proj.weight",
    "attn_v.weight": "self_attn.v_proj.weight", "attn_output.weight": "self_attn.o_proj.weight",
    "attn_q.bias": "self_attn.q_proj.bias", "attn_k.bias": "self_attn.k_proj.bias",
    "attn_v.bias": "self_attn.v_proj.bias",
    "attn_q_norm.weight": "self_attn.q_norm.weight",
    "attn_k_norm.weight": "self_attn.k_norm.weight",
    "ffn_gate.weight": "mlp.gate_proj.weight", "ffn_up.weight": "mlp.up_proj.weight",
    "ffn_down.weight": "mlp.down_proj.weight",
}
GEMMA_LAYER_NAMES = {
    "post_attention_norm.weight": "post_attention_layernorm.weight",
    "ffn_norm.weight": "pre_feedforward_layernorm.weight",
    "post_ffw_norm.weight": "post_feedforward_layernorm.weight",
}
PHI3_LAYER_NAMES = {"attn_qkv.weight": "self_attn.qkv_proj.weight",
                    "ffn_up.weight": "mlp.gate_up_proj.weight"}
TOP_NAMES = {"token_embd.weight": "model.embed_tokens.weight",
             "output_norm.weight": "model.norm.weight", "output.weight": "lm_head.weight"}


def field(reader, key, default=None):
    f = reader.fields.get(key)
    if f is None:
        return default
    if f.types[0] == gguf.GGUFValueType.ARRAY:
        if f.types[-1] == gguf.GGUFValueType.STRING:
            return [bytes(f.parts[i]).decode("utf-8") for i in f.data]
        return [f.parts[i][0].item() for i in f.data]
    if f.types[0] == gguf.GGUFValueType.STRING:
        return bytes(f.parts[f.data[0]]).decode("utf-8")
    return f.parts[f.data[0]][0].item()


def unpermute(w, n_head):
    """Undoes convert_hf_to_gguf.py's LlamaModel.permute of Q/K rows (or bias entries)."""
    shape = w.shape
    return w.reshape(n_head, shape[0] // n_head // 2, 2, *shape[1:]).swapaxes(1, 2).reshape(shape)


def hf_tensors(reader, arch, n_head, n_kv_head, dtype):
    out = {}
    for t in reader.tensors:
        values = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32)
        values = values.reshape([int(n) for n in reversed(t.shape.tolist())])
        name = t.name
        if name in ("rope_freqs.weight", "rope_factors_long.weight",
                    "rope_factors_short.weight"):
            continue  # config.json's rope_scaling says it
        if name in TOP_NAMES:
            hf = TOP_NAMES[name]
        else:
            _, layer, rest = name.split(".", 2)
            names = {**LAYER_NAMES, **GEMMA_LAYER_NAMES} if arch.startswith("gemma") \
                else {**LAYER_NAMES, **PHI3_LAYER_NAMES} if arch == "phi3" else LAYER_NAMES
            hf = f"model.layers.{layer}.{names[rest]}"
        if arch.startswith("gemma") and name.endswith("norm.weight"):
            values = values - np.float32(1.0)  # Gemma's RMSNorm adds the 1 back
        if arch in ("llama", "smollm3") and rest_is(name, ("attn_q.weight", "attn_q.bias")):
            values = unpermute(values, n_head)
        if arch in ("llama", "smollm3") and rest_is(name, ("attn_k.weight", "attn_k.bias")):
            values = unpermute(values, n_kv_head)
        if values.ndim == 2 and dtype != "f32":
            values = values.astype(np.float16) if dtype == "f16" else to_bf16(values)
        out[hf] = np.ascontiguousarray(values)
    return out


def rest_is(name, suffixes):
    return name.startswith("blk.") and name.split(".", 2)[2] in suffixes


def to_bf16(values):
    """Round-to-nearest-even bfloat16, as torch's .to(torch.bfloat16); stored by safetensors
    through its uint16 view with the header dtype patched (write_shards)."""
    bits = values.astype(np.float32).view(np.uint32)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return rounded.astype(np.uint16)


def write_shards(tensors, out_dir, shards):
    names = sorted(tensors)
    groups = [names[i::shards] for i in range(shards)]
    files = []
    for i, group in enumerate(groups):
        fname = "model.safetensors" if shards == 1 else \
            f"model-{i + 1:05d}-of-{shards:05d}.safetensors"
        path = os.path.join(out_dir, fname)
        save_file({n: tensors[n] for n in group}, path)
        patch_bf16(path)
        files.append((fname, group))
    if shards > 1:
        index = {"metadata": {}, "weight_map": {n: f for f, g in files for n in g}}
        with open(os.path.join(out_dir, "model.safetensors.index.json"), "w") as f:
            json.dump(index, f, indent=1)


def patch_bf16(path):
    """safetensors.numpy has no bfloat16: the bf16 matrices were saved as U16; say BF16."""
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
        data = f.read()
    for name, info in header.items():
        if name != "__metadata__" and info["dtype"] == "U16":
            info["dtype"] = "BF16"
    encoded = json.dumps(header, separators=(",", ":")).encode("utf-8")
    encoded += b" " * (-len(encoded) % 8)
    with open(path, "wb") as f:
        f.write(len(encoded).to_bytes(8, "little") + encoded + data)


def pre_tokenizer(pre):
    if pre == "smollm":
        return {"type": "Sequence", "pretokenizers": [
            {"type": "Digits", "individual_digits": True},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
             "use_regex": True}]}
    return {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": REGEX[pre]}, "behavior": "Isolated",
         "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
         "use_regex": False}]}


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def proto_field(number, wire, payload):
    return varint(number << 3 | wire) + payload


def proto_bytes(number, data):
    return proto_field(number, 2, varint(len(data)) + data)


def write_sentencepiece(reader, out_dir, model_type=2):
    """tokenizer.model: ModelProto {pieces = 1 {piece = 1, score = 2, type = 3},
    trainer_spec = 2 {model_type = 3: 2, BPE, unless told otherwise}}."""
    tokens = field(reader, "tokenizer.ggml.tokens")
    scores = field(reader, "tokenizer.ggml.scores")
    types = field(reader, "tokenizer.ggml.token_type")
    model = bytearray()
    for piece, score, ty in zip(tokens, scores, types):
        body = proto_bytes(1, piece.encode("utf-8")) + \
            proto_field(2, 5, np.float32(score).tobytes()) + proto_field(3, 0, varint(ty))
        model += proto_bytes(1, body)
    model += proto_bytes(2, proto_field(3, 0, varint(model_type)))
    with open(os.path.join(out_dir, "tokenizer.model"), "wb") as f:
        f.write(bytes(model))
    config = {"add_bos_token": bool(field(reader, "tokenizer.ggml.add_bos_token", False)),
              "add_eos_token": bool(field(reader, "tokenizer.ggml.add_eos_token", False)),
              "tokenizer_class": "GemmaTokenizer"}
    with open(os.path.join(out_dir, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, ensure_ascii=False, indent=1)
    return len(tokens)


def write_tokenizer(reader, out_dir, string_merges, model_edits):
    tokens = field(reader, "tokenizer.ggml.tokens")
    types = field(reader, "tokenizer.ggml.token_type")
    merges = field(reader, "tokenizer.ggml.merges")
    pre = field(reader, "tokenizer.ggml.pre")
    controls_first = types[0] == CONTROL
    vocab = {t: i for i, (t, ty) in enumerate(zip(tokens, types))
             if ty != CONTROL or controls_first}
    added = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True}
             for i, (t, ty) in enumerate(zip(tokens, types)) if ty == CONTROL]
    tokenizer = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": {"type": "NFC"} if pre == "qwen2" else None,
        "pre_tokenizer": pre_tokenizer(pre),
        "post_processor": {"type": "ByteLevel", "add_prefix_space": False,
                           "trim_offsets": False, "use_regex": False},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                    "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": "", "end_of_word_suffix": "", "fuse_unk": False,
                  "byte_fallback": False, "ignore_merges": pre == "llama-bpe", "vocab": vocab,
                  "merges": merges if string_merges else [m.split(" ") for m in merges]},
    }
    tokenizer["model"].update(model_edits)
    eos_id = field(reader, "tokenizer.ggml.eos_token_id")
    appends_eos = bool(field(reader, "tokenizer.ggml.add_eos_token", False))
    if appends_eos:  # as Qwen3-Embedding's: the template appends the EOS the GGUF names
        eos = tokens[eos_id]
        tokenizer["post_processor"] = {"type": "Sequence", "processors": [
            tokenizer["post_processor"],
            {"type": "TemplateProcessing",
             "single": [{"Sequence": {"id": "A", "type_id": 0}},
                        {"SpecialToken": {"id": eos, "type_id": 0}}],
             "pair": [{"Sequence": {"id": "A", "type_id": 0}},
                      {"Sequence": {"id": "B", "type_id": 1}},
                      {"SpecialToken": {"id": eos, "type_id": 1}}],
             "special_tokens": {eos: {"id": eos, "ids": [eos_id], "tokens": [eos]}}}]}
    with open(os.path.join(out_dir, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tokenizer, f, ensure_ascii=False, indent=1)
    config = {"add_bos_token": bool(field(reader, "tokenizer.ggml.add_bos_token", False)),
              "add_eos_token": bool(field(reader, "tokenizer.ggml.add_eos_token", False)),
              "chat_template": field(reader, "tokenizer.chat_template"),
              "model_max_length": 131072, "tokenizer_class": "PreTrainedTokenizerFast"}
    for kind, key in (("bos", "bos"), ("eos", "eos"), ("unk", "unknown"), ("pad", "padding")):
        token_id = field(reader, f"tokenizer.ggml.{key}_token_id")
        config[f"{kind}_token"] = None if token_id is None else tokens[token_id]
    if appends_eos and "<|im_end|>" in tokens:
        # Qwen3-Embedding's tokenizer_config.json names <|im_end|>; the template's token wins.
        config["eos_token"] = "<|im_end|>"
        del config["add_eos_token"]
    with open(os.path.join(out_dir, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, ensure_ascii=False, indent=1)
    return len(tokens)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("gguf")
    ap.add_argument("out_dir")
    ap.add_argument("--dtype", choices=["f32", "f16", "bf16"], default="f32")
    ap.add_argument("--shards", type=int, default=1)
    ap.add_argument("--string-merges", action="store_true")
    ap.add_argument("--config", action="append", default=[])
    ap.add_argument("--tokenizer-model", action="append", default=[])
    ap.add_argument("--extra-tensor")
    ap.add_argument("--remove")
    ap.add_argument("--multimodal", action="store_true")
    ap.add_argument("--spm-model-type", type=int, default=2)
    ap.add_argument("--stop-ids", help="generation_config.json's eos_token_id: ids, ','-separated")
    args = ap.parse_args()

    def edits(pairs):
        return {k: json.loads(v) for k, v in (p.split("=", 1) for p in pairs)}
    reader = gguf.GGUFReader(args.gguf)
    arch = field(reader, "general.architecture")
    a = arch
    n_head = field(reader, f"{a}.attention.head_count")
    n_kv_head = field(reader, f"{a}.attention.head_count_kv", n_head)
    os.makedirs(args.out_dir, exist_ok=True)
    tensors = hf_tensors(reader, arch, n_head, n_kv_head, args.dtype)
    if args.extra_tensor:
        tensors[args.extra_tensor] = np.zeros(4, dtype=np.float32)
    if args.multimodal:
        tensors = {"language_model." + n: t for n, t in tensors.items()}
        tensors["vision_tower.vision_model.post_layernorm.weight"] = np.ones(8, np.float32)
    write_shards(tensors, args.out_dir, args.shards)
    spm = field(reader, "tokenizer.ggml.model") == "llama"
    vocab_size = write_sentencepiece(reader, args.out_dir, args.spm_model_type) if spm else \
        write_tokenizer(reader, args.out_dir, args.string_merges, edits(args.tokenizer_model))
    n_layers = field(reader, f"{a}.block_count")
    config = {
        "architectures": [{"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM",
                           "qwen3": "Qwen3ForCausalLM", "smollm3": "SmolLM3ForCausalLM",
                           "gemma2": "Gemma2ForCausalLM", "gemma3": "Gemma3ForCausalLM",
                           "phi3": "Phi3ForCausalLM"}[arch]],
        "model_type": "gemma3_text" if arch == "gemma3" else arch,
        "vocab_size": vocab_size,
        "hidden_size": field(reader, f"{a}.embedding_length"),
        "intermediate_size": field(reader, f"{a}.feed_forward_length"),
        "num_hidden_layers": n_layers,
        "num_attention_heads": n_head,
        "num_key_value_heads": n_kv_head,
        "max_position_embeddings": field(reader, f"{a}.context_length"),
        "rms_norm_eps": field(reader, f"{a}.attention.layer_norm_rms_epsilon"),
        "rope_theta": field(reader, f"{a}.rope.freq_base", 10000.0),
        "tie_word_embeddings": "lm_head.weight" not in tensors,
        "hidden_act": "silu", "attention_bias": arch == "qwen2", "mlp_bias": False,
        "torch_dtype": {"f32": "float32", "f16": "float16", "bf16": "bfloat16"}[args.dtype],
        "bos_token_id": field(reader, "tokenizer.ggml.bos_token_id"),
        "eos_token_id": field(reader, "tokenizer.ggml.eos_token_id"),
        "pad_token_id": field(reader, "tokenizer.ggml.padding_token_id"),
    }
    if spm:
        config["unk_token_id"] = field(reader, "tokenizer.ggml.unknown_token_id")
    if arch.startswith("gemma"):
        period = 2 if arch == "gemma2" else 6
        config["head_dim"] = n_embd_head = \
            field(reader, f"{a}.attention.key_length", config["hidden_size"] // n_head)
        config["query_pre_attn_scalar"] = n_embd_head
        config["sliding_window"] = field(reader, f"{a}.attention.sliding_window")
        config["layer_types"] = ["full_attention" if (l + 1) % period == 0
                                 else "sliding_attention" for l in range(n_layers)]
        config["final_logit_softcapping"] = field(reader, f"{a}.final_logit_softcapping")
        config["attn_logit_softcapping"] = field(reader, f"{a}.attn_logit_softcapping")
        config["hidden_activation"] = "gelu_pytorch_tanh"
        config["tie_word_embeddings"] = True
        if field(reader, f"{a}.rope.freq_base_swa") is not None:
            config["rope_local_base_freq"] = field(reader, f"{a}.rope.freq_base_swa")
        del config["hidden_act"], config["attention_bias"], config["mlp_bias"]
    if field(reader, f"{a}.attention.key_length") is not None:
        config["head_dim"] = field(reader, f"{a}.attention.key_length")
    if any(t.name == "rope_freqs.weight" for t in reader.tensors):
        config["rope_scaling"] = LLAMA3_ROPE
    elif field(reader, f"{a}.rope.scaling.type") == "linear":
        config["rope_scaling"] = {"rope_type": "linear",
                                  "factor": field(reader, f"{a}.rope.scaling.factor")}
    if arch == "smollm3":
        config["no_rope_layers"] = [0 if (l + 1) % 4 == 0 else 1 for l in range(n_layers)]
        config["no_rope_layer_interval"] = 4
    if arch == "phi3":
        rot = field(reader, f"{a}.rope.dimension_count", config["hidden_size"] // n_head)
        config["partial_rotary_factor"] = rot * n_head / config["hidden_size"]
        config["sliding_window"] = field(reader, f"{a}.attention.sliding_window") or None
        original = field(reader, f"{a}.rope.scaling.original_context_length")
        config["original_max_position_embeddings"] = original or config["max_position_embeddings"]
        factors = {t.name: t.data.tolist() for t in reader.tensors
                   if t.name.startswith("rope_factors_")}
        if factors:
            config["rope_scaling"] = {"type": "longrope",
                                      "long_factor": factors["rope_factors_long.weight"],
                                      "short_factor": factors["rope_factors_short.weight"]}
        del config["attention_bias"], config["mlp_bias"]
    config.update(edits(args.config))
    if args.multimodal:
        text = dict(config, model_type="gemma3_text")
        config = {"architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3",
                  "text_config": text, "vision_config": {"model_type": "siglip_vision_model"}}
    with open(os.path.join(args.out_dir, "config.json"), "w") as f:
        json.dump(config, f, indent=1)
    pooling = field(reader, f"{a}.pooling_type")
    if pooling:  # a sentence-transformers folder: Transformer, Pooling, Normalize
        modes = {1: "pooling_mode_mean_tokens", 2: "pooling_mode_cls_token",
                 3: "pooling_mode_lasttoken"}
        os.makedirs(os.path.join(args.out_dir, "1_Pooling"), exist_ok=True)
        with open(os.path.join(args.out_dir, "1_Pooling", "config.json"), "w") as f:
            json.dump({"word_embedding_dimension": config.get("hidden_size") or
                       config["text_config"]["hidden_size"], modes[pooling]: True}, f)
        with open(os.path.join(args.out_dir, "modules.json"), "w") as f:
            json.dump([{"idx": 0, "name": "0", "path": "",
                        "type": "sentence_transformers.models.Transformer"},
                       {"idx": 1, "name": "1", "path": "1_Pooling",
                        "type": "sentence_transformers.models.Pooling"},
                       {"idx": 2, "name": "2", "path": "2_Normalize",
                        "type": "sentence_transformers.models.Normalize"}], f)
    if args.stop_ids:
        ids = [int(i) for i in args.stop_ids.split(",")]
        with open(os.path.join(args.out_dir, "generation_config.json"), "w") as f:
            json.dump({"eos_token_id": ids if len(ids) > 1 else ids[0]}, f)
    if args.remove:
        os.remove(os.path.join(args.out_dir, args.remove))


if __name__ == "__main__":
    main()
