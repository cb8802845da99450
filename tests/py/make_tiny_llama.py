#!/usr/bin/env python3
"""Writes a tiny, random-weight, Llama-family GGUF (architecture `llama`, `qwen2`, `qwen3` or
`smollm3`) for tests that need a whole model quickly.

The file has the keys and tensor names llama.cpp reads for these architectures, with the real
layout (GGUF ne = [in, out]) but tiny sizes: 4 layers, d_model 64, 4 query heads and 2 KV heads
of 16, FFN 160, context 256, and a byte-level BPE vocabulary (tokenizer.ggml.model "gpt2").
Matrices use a mix of the GGML types gguf-py can quantize (F32, F16, BF16, Q8_0, Q4_0, Q4_1,
Q5_0, Q5_1), so every dequantizer a converter has for them is exercised; K-quants are left out
because their 256-value blocks do not divide rows of 64 or 160.

  --arch llama   separate output.weight, no biases, tokenizer.ggml.pre "smollm", control tokens
                 first (ids 0-2, as in SmolLM2), RoPE theta 10000 (NORM layout in llama.cpp).
  --arch qwen2   attn_q/attn_k/attn_v biases, tied LM head (no output.weight), pre "qwen2",
                 control tokens last (as in Qwen2), RoPE theta 1e6 (NEOX layout in llama.cpp).
  --arch qwen3   Qwen2's file without the biases, with QK-norm weights blk.N.attn_q_norm /
                 attn_k_norm ([head_dim], random around 1, stored as is: Qwen3's RMSNorm has no
                 +1), attention.key_length always written, tied head as Qwen3-0.6B's.
  --arch smollm3 Llama's permuted q/k (NORM RoPE) and no biases, with Llama 3's tokenizer
                 layout: pre "llama-bpe", control tokens last; RoPE theta 5e6 and a tied head
                 as SmolLM3-3B's. llama.cpp leaves q and k unrotated in every 4th layer (a fixed
                 step: the file has no key for it).
  --untied       a separate output.weight for qwen2 / qwen3 / smollm3 too (llama always has
                 one).
  --layers N     block_count (default 4); 8 gives smollm3 two unrotated layers (3 and 7).
  --context N    context_length (default 256)
  --merges N     BPE merges (default 320): a smaller vocabulary (256 bytes + merges + 3 control
                 tokens) keeps a logits fixture small (tests/convert_qwen3_test.cc).
  --rope-scaling none | linear (rope.scaling.type "linear", factor 4) | llama3 (Llama 3
                 frequency factors in rope_freqs.weight, as convert_hf_to_gguf.py writes them:
                 factor 8, low/high freq factors 1/4, original context 64; llama only).

Tokenizer: the 256 GPT-2 byte-alphabet tokens (bytes_to_unicode, in byte order), then one token
per merge, learnt by plain BPE over a fixed list of common English words (with and without the
leading-space marker 'Ġ'). Merges only join letters (and a leading 'Ġ'), so they never cross a
pre-tokenizer boundary of either the smollm or the qwen2 regex. Control tokens <|endoftext|>,
<|im_start|>, <|im_end|> (token_type 3); add_bos_token false; a ChatML chat template.

The same arguments always give the same bytes.

  --fake-quant LIST
                 each matrix named in LIST (lines "NAME TYPE") replaced by ggml's quantize ->
                 dequantize of it (tests/py/ggml_oracle.py): the F32 model a K-quant conversion
                 of the same file should behave as, up to the int8 activations.
  --ggml-quant LIST
                 each matrix named in LIST (lines "NAME TYPE") stored as ggml's blocks of TYPE
                 (tests/py/ggml_oracle.py), for types gguf-py cannot quantize (Q3_K): a GGUF as
                 llama.cpp's quantize tool would write it (tests/convert_kquant_test.cc).
  --d-model N, --ffn N, --f32
                 other widths (rows of 256 let the K-quants in: --d-model 256 --ffn 320 gives
                 rows of 256, 64 and 320), and every matrix F32, the source llama.cpp's quantize
                 tool starts from (tests/convert_kquant_test.cc).
  --pooling none | mean | cls | last
                 an embedding model: <arch>.pooling_type as llama.cpp's converter writes it
                 from sentence-transformers' Pooling module (last: Qwen3-Embedding, whose
                 tokenizer appends its eos, <|endoftext|>: add_eos_token true).
  --non-causal   <arch>.attention.causal false (an embedding model's bidirectional layers).
  --head-dim N   another head size (default 16); 32 lets an int8 KV cache in
                 (tests/session_concurrency_test.cc). With the 4 heads, any size but
                 d_model / 4 makes n_heads * head_dim differ from d_model (Qwen3-0.6B: 1024,
                 16 heads of 128): attn_q is [d_model -> 4 * head_dim], attn_output the reverse.

usage: make_tiny_llama.py OUT.gguf [--arch llama|qwen2|qwen3|smollm3]
                          [--rope-scaling none|linear|llama3] [--seed N] [--layers N]
                          [--d-model N] [--ffn N] [--head-dim N] [--f32]
                          [--untied] [--context N] [--merges N]
                          [--pooling none|mean|cls|last] [--non-causal]
                          [--fake-quant LIST] [--ggml-quant LIST]
"""
import argparse
import math
from collections import Counter

import numpy as np
import gguf
from gguf import GGMLQuantizationType as Q

import tiny_gguf
# Globals of this module, not looked up in tiny_gguf: fuzz/make_seeds.py replaces them here.
from tiny_gguf import D_MODEL, FFN_DIM, HEAD_DIM, MATRIX_TYPES, N_HEADS, N_KV_HEADS, quantize

N_LAYERS = 4
CONTEXT = 256
RMS_EPS = 1e-5
ROPE_BASE = {"llama": 10000.0, "qwen2": 1e6, "qwen3": 1e6, "smollm3": 5e6}
LINEAR_FACTOR = 4.0
# Llama 3 rope_scaling (HF config keys) scaled down to this model's context.
LLAMA3_FACTOR = 8.0
LLAMA3_LOW_FREQ_FACTOR = 1.0
LLAMA3_HIGH_FREQ_FACTOR = 4.0
LLAMA3_ORIGINAL_CONTEXT = 64
N_MERGES = 320

NORMAL = 1
CONTROL = 3
UNKNOWN = 2
CONTROL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]

CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")

# Common English words, most frequent first; word i gets weight ~ 1/(i+1) for merge learning.
WORDS = """
the of and to a in is it you that he was for on are with as i his they be at one have this
from or had by hot word but what some we can out other were all there when up use your how
said an each she which do their time if will way about many then them write would like so
these her long make thing see him two has look more day could go come did number sound no
most people my over know water than call first who may down side been now find any new work
part take get place made live where after back little only round man year came show every
good me give our under name very through just form sentence great think say help low line
differ turn cause much mean before move right boy old too same tell does set three want air
well also play small end put home read hand port large spell add even land here must big high
such follow act why ask men change went light kind off need house picture try us again animal
point mother world near build self earth father head stand own page should country found
answer school grow study still learn plant cover food sun four between state keep eye never
last let thought city tree cross farm hard start might story saw far sea draw left late run
while press close night real life few north open seem together next white children begin got
walk example ease paper group always music those both mark often letter until mile river car
feet care second book carry took science eat room friend began idea fish mountain stop once
base hear horse cut sure watch color face wood main enough plain girl usual young ready above
ever red list though feel talk bird soon body dog family direct pose leave song measure door
product black short numeral class wind question happen complete ship area half rock order fire
south problem piece told knew pass since top whole king space heard best hour better true
during hundred five remember step early hold west ground interest reach fast verb sing listen
six table travel less morning ten simple several vowel toward war lay against pattern slow
center love person money serve appear road map rain rule govern pull cold notice voice unit
power town fine certain fly fall lead cry dark machine note wait plan figure star box noun
field rest correct able pound done beauty drive stood contain front teach week final gave
green quick develop ocean warm free minute strong special mind behind clear tail produce fact
street inch multiply nothing course stay wheel full force blue object decide surface deep moon
island foot system busy test record boat common gold possible plane stead dry wonder laugh
thousand ago ran check game shape equate miss brought heat snow tire bring yes distant fill
east paint language among hello capital france paris
""".split()


def bytes_to_unicode():
    """GPT-2's byte -> printable character map (the byte-level BPE alphabet)."""
    printable = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) +
                 list(range(ord("®"), ord("ÿ") + 1)))
    table, extra = {}, 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


def learn_merges(n_merges):
    """Plain BPE over WORDS (weighted 1/rank), 'Ġword' and 'word' forms. Ties: smallest pair."""
    space = bytes_to_unicode()[ord(" ")]  # 'Ġ'
    words = Counter()
    for rank, word in enumerate(WORDS):
        weight = 10000 // (rank + 1)
        words[(space,) + tuple(word)] += weight
        words[tuple(word)] += max(weight // 4, 1)
    merges = []
    for _ in range(n_merges):
        pairs = Counter()
        for symbols, weight in words.items():
            for pair in zip(symbols, symbols[1:]):
                pairs[pair] += weight
        if not pairs:
            break
        best = min(pairs, key=lambda pair: (-pairs[pair], pair))
        merges.append(best)
        joined = best[0] + best[1]
        updated = Counter()
        for symbols, weight in words.items():
            out, i = [], 0
            while i < len(symbols):
                if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == best:
                    out.append(joined)
                    i += 2
                else:
                    out.append(symbols[i])
                    i += 1
            updated[tuple(out)] += weight
        words = updated
    return merges


def build_vocab(arch, n_merges=N_MERGES):
    """Returns (tokens, token_types, merges as 'a b' strings, special ids)."""
    alphabet = bytes_to_unicode()
    tokens = [alphabet[b] for b in range(256)]
    merges = learn_merges(n_merges)
    for a, b in merges:
        if a + b not in tokens:  # a different split can rebuild an existing token
            tokens.append(a + b)
    types = [NORMAL] * len(tokens)
    if arch == "llama":   # SmolLM2: <|endoftext|> 0, <|im_start|> 1, <|im_end|> 2
        tokens = CONTROL_TOKENS + tokens
        types = [CONTROL] * len(CONTROL_TOKENS) + types
    else:                 # Qwen2 and Qwen3: the control tokens follow the BPE vocabulary
        tokens = tokens + CONTROL_TOKENS
        types = types + [CONTROL] * len(CONTROL_TOKENS)
    assert len(set(tokens)) == len(tokens), "duplicate tokens"
    index = {t: i for i, t in enumerate(tokens)}
    for a, b in merges:
        assert a in index and b in index and a + b in index, (a, b)
    if arch == "llama":   # as SmolLM2's GGUF: bos <|im_start|>, eos <|im_end|>, unk/pad
        special = {"bos": index["<|im_start|>"], "eos": index["<|im_end|>"],
                   "unk": index["<|endoftext|>"], "pad": index["<|im_end|>"]}
    else:                 # as Qwen2's (and Qwen3's) GGUF: bos/pad <|endoftext|>, eos <|im_end|>
        special = {"bos": index["<|endoftext|>"], "eos": index["<|im_end|>"],
                   "pad": index["<|endoftext|>"]}
    return tokens, types, [f"{a} {b}" for a, b in merges], special


def add_qwen2_bpe_tokenizer(w, arch, n_merges, extra_control=(), unknown=None):
    """Writes build_vocab's qwen2 layout as a byte-level BPE tokenizer (pre "qwen2", ChatML
    template, no BOS) under `arch`, for the other architectures' tiny models; returns its size.
    extra_control: more control tokens after the vocabulary's own; unknown: one more token, of
    type UNKNOWN."""
    tokens, types, merges, special = build_vocab("qwen2", n_merges)
    tokens, types = tokens + list(extra_control), types + [CONTROL] * len(extra_control)
    if unknown is not None:
        tokens, types = tokens + [unknown], types + [UNKNOWN]
    w.add_uint32(f"{arch}.vocab_size", len(tokens))
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("qwen2")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(special["bos"])
    w.add_eos_token_id(special["eos"])
    w.add_pad_token_id(special["pad"])
    w.add_add_bos_token(False)
    w.add_add_space_prefix(False)
    w.add_chat_template(CHAT_TEMPLATE)
    return len(tokens)


def llama3_freq_factors(base, n_rot):
    """convert_hf_to_gguf.py's LlamaModel rope_freqs for rope_type 'llama3' (ggml divides by them)."""
    freqs = 1.0 / (base ** (np.arange(0, n_rot, 2, dtype=np.float64) / n_rot))
    low_freq_wavelen = LLAMA3_ORIGINAL_CONTEXT / LLAMA3_LOW_FREQ_FACTOR
    high_freq_wavelen = LLAMA3_ORIGINAL_CONTEXT / LLAMA3_HIGH_FREQ_FACTOR
    factors = []
    for freq in freqs:
        wavelen = 2 * math.pi / freq
        if wavelen < high_freq_wavelen:
            factors.append(1.0)
        elif wavelen > low_freq_wavelen:
            factors.append(LLAMA3_FACTOR)
        else:
            smooth = ((LLAMA3_ORIGINAL_CONTEXT / wavelen - LLAMA3_LOW_FREQ_FACTOR) /
                      (LLAMA3_HIGH_FREQ_FACTOR - LLAMA3_LOW_FREQ_FACTOR))
            factors.append(1.0 / ((1.0 - smooth) / LLAMA3_FACTOR + smooth))
    return np.asarray(factors, dtype=np.float32)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--arch", choices=["llama", "qwen2", "qwen3", "smollm3"],
                        default="llama")
    parser.add_argument("--rope-scaling", choices=["none", "linear", "llama3"], default="none")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--layers", type=int, default=N_LAYERS)
    parser.add_argument("--d-model", type=int, default=D_MODEL)
    parser.add_argument("--ffn", type=int, default=FFN_DIM)
    parser.add_argument("--head-dim", type=int, default=HEAD_DIM)
    parser.add_argument("--f32", action="store_true", help="every matrix F32")
    parser.add_argument("--untied", action="store_true",
                        help="output.weight for qwen2/qwen3/smollm3")
    parser.add_argument("--merges", type=int, default=N_MERGES)
    parser.add_argument("--context", type=int, default=CONTEXT)
    parser.add_argument("--pooling", choices=["none", "mean", "cls", "last"], default="none")
    parser.add_argument("--non-causal", action="store_true")
    parser.add_argument("--fake-quant", help="lines NAME TYPE: matrices to quantize-dequantize")
    parser.add_argument("--ggml-quant", help="lines NAME TYPE: matrices stored as ggml's blocks")
    args = parser.parse_args()

    def read_list(path):
        if not path:
            return {}
        with open(path) as listing:
            return dict(line.split() for line in listing if line.strip())
    fake_quant, ggml_quant = read_list(args.fake_quant), read_list(args.ggml_quant)
    if fake_quant or ggml_quant:
        import ggml_oracle  # noqa: E402 (only these options need ggml)
        oracle = ggml_oracle.load_library()

    def add_matrix(name, values, qtype):
        if name in ggml_quant:
            blocks = ggml_oracle.quantize_rows(oracle, ggml_quant[name], values)
            w.add_tensor(name, blocks, raw_dtype=Q[ggml_quant[name]])
            return
        if name in fake_quant:
            blocks = ggml_oracle.quantize_rows(oracle, fake_quant[name], values)
            values = gguf.quants.dequantize(blocks, Q[fake_quant[name]]).astype(np.float32)
        data, raw = quantize(values, qtype)
        w.add_tensor(name, data, raw_dtype=raw)
    d_model, ffn_dim, head_dim = args.d_model, args.ffn, args.head_dim
    arch = args.arch
    if args.rope_scaling == "llama3" and arch != "llama":
        parser.error("--rope-scaling llama3 (rope_freqs.weight) exists only for --arch llama "
                     "in llama.cpp")
    rng = np.random.default_rng(args.seed)

    w = tiny_gguf.new_writer(args.out, arch, f"tiny-{arch}-random", args.layers, d_model,
                             ffn_dim, N_HEADS, N_KV_HEADS, args.context)
    w.add_float32(f"{arch}.attention.layer_norm_rms_epsilon", RMS_EPS)
    w.add_float32(f"{arch}.rope.freq_base", ROPE_BASE[arch])
    w.add_uint32(f"{arch}.rope.dimension_count", head_dim)
    # Real Llama GGUFs leave key_length out (= d_model / heads); test both. Other widths need it.
    if arch != "llama" or d_model != N_HEADS * head_dim:
        w.add_uint32(f"{arch}.attention.key_length", head_dim)
        w.add_uint32(f"{arch}.attention.value_length", head_dim)
    if args.rope_scaling == "linear":
        w.add_string(f"{arch}.rope.scaling.type", "linear")
        w.add_float32(f"{arch}.rope.scaling.factor", LINEAR_FACTOR)

    tokens, types, merges, special = build_vocab(arch, args.merges)
    if args.pooling == "last" and arch != "llama":  # Qwen3-Embedding's eos is <|endoftext|>
        special["eos"] = special["bos"]
    vocab_size = len(tokens)
    w.add_uint32(f"{arch}.vocab_size", vocab_size)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre({"llama": "smollm", "smollm3": "llama-bpe"}.get(arch, "qwen2"))
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(special["bos"])
    w.add_eos_token_id(special["eos"])
    if "unk" in special:
        w.add_unk_token_id(special["unk"])
    w.add_pad_token_id(special["pad"])
    w.add_add_bos_token(False)
    if args.pooling != "none":
        w.add_pooling_type(gguf.PoolingType[args.pooling.upper()])
        if args.pooling == "last":
            w.add_add_eos_token(True)
    if args.non_causal:
        w.add_causal_attention(False)
    w.add_add_space_prefix(False)
    w.add_chat_template(CHAT_TEMPLATE)

    matrix, vector = tiny_gguf.random_tensors(rng)

    # token_embd: [vocab, d_model] rows (Q8_0, like SmolLM2's); a tied LM head reads it too.
    add_matrix("token_embd.weight", matrix(vocab_size, d_model, std=0.1),
               Q.F32 if args.f32 else Q.Q8_0)
    w.add_tensor("output_norm.weight", vector(d_model, 1.0, 0.1))
    if arch == "llama" or args.untied:
        add_matrix("output.weight", matrix(vocab_size, d_model, std=0.1),
                   Q.F32 if args.f32 else Q.Q4_1)
        if args.rope_scaling == "llama3":
            w.add_tensor("rope_freqs.weight", llama3_freq_factors(ROPE_BASE[arch], head_dim))

    q_dim, kv_dim = N_HEADS * head_dim, N_KV_HEADS * head_dim
    types = [Q.F32] if args.f32 else MATRIX_TYPES
    for layer in range(args.layers):
        p = f"blk.{layer}."
        w.add_tensor(p + "attn_norm.weight", vector(d_model, 1.0, 0.1))
        w.add_tensor(p + "ffn_norm.weight", vector(d_model, 1.0, 0.1))
        for name, out_features, in_features, qtype in tiny_gguf.layer_matrices(
                layer, d_model, ffn_dim, q_dim, kv_dim, types):
            add_matrix(p + name + ".weight", matrix(out_features, in_features), qtype)
        if arch == "qwen2":
            for name, width in [("attn_q", q_dim), ("attn_k", kv_dim), ("attn_v", kv_dim)]:
                w.add_tensor(p + name + ".bias", vector(width, 0.0, 0.1))
        if arch == "qwen3":  # wide enough a spread that a skipped or misplaced norm shows
            w.add_tensor(p + "attn_q_norm.weight", vector(head_dim, 1.0, 0.3))
            w.add_tensor(p + "attn_k_norm.weight", vector(head_dim, 1.0, 0.3))

    tiny_gguf.write(w)


if __name__ == "__main__":
    main()
