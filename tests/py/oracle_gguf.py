"""Reads a GGUF into a plain config and float64 weight arrays for the NumPy oracles.

Two families: Gemma 3 (read_config / read_weights / open_model, for gemma3_oracle.py) and the
Llama family, GGUF architectures `llama` and `qwen2` (read_llama_config / read_llama_weights /
open_llama_model, for llama_oracle.py).

Everything about the model's size comes from the file's metadata; the only built-in numbers are
Gemma 3 family defaults that llama.cpp's GGUFs do not store (local RoPE theta, layer pattern).
Weights are dequantized with gguf.quants.dequantize (tested bit-exact against ggml) and then
widened to float64, so the oracle evaluates exactly the quantized model, up to float64 rounding.
"""

from dataclasses import dataclass

import numpy as np
import gguf
import gguf.quants

# Gemma 3 family defaults (HF Gemma3TextConfig: rope_local_base_freq, sliding_window_pattern).
# llama.cpp hard-codes both for gemma3; a key in the file overrides them.
DEFAULT_LOCAL_ROPE_THETA = 10000.0
DEFAULT_SLIDING_WINDOW_PATTERN = 6

_REQUIRED = object()


@dataclass
class Gemma3Config:
    arch: str
    n_layers: int
    d_model: int
    d_ff: int
    n_heads: int
    n_kv_heads: int
    head_dim: int          # key/query width per head
    head_dim_v: int        # value width per head
    rms_eps: float
    vocab_size: int
    context_length: int
    rope_theta_global: float
    rope_theta_local: float
    global_position_divisor: float  # linear RoPE scaling factor; applies to global layers only
    sliding_window: int
    is_sliding: list        # [n_layers] bool
    final_logit_softcap: float  # 0 = none (Gemma 3 has none)


@dataclass
class _AttentionInputs:
    """The tensors every family's layer starts with (_load_attention_inputs loads them)."""
    attn_norm: np.ndarray        # (d_model,)
    wq: np.ndarray               # (n_heads*head_dim, d_model)
    wk: np.ndarray               # (n_kv_heads*head_dim, d_model)
    wv: np.ndarray               # (n_kv_heads*head_dim_v, d_model)


@dataclass
class Gemma3Layer(_AttentionInputs):
    q_norm: np.ndarray           # (head_dim,)
    k_norm: np.ndarray           # (head_dim,)
    wo: np.ndarray               # (d_model, n_heads*head_dim_v)
    post_attn_norm: np.ndarray   # (d_model,)
    ffn_norm: np.ndarray         # (d_model,)
    w_gate: np.ndarray           # (d_ff, d_model)
    w_up: np.ndarray             # (d_ff, d_model)
    w_down: np.ndarray           # (d_model, d_ff)
    post_ffw_norm: np.ndarray    # (d_model,)


@dataclass
class Gemma3Weights:
    embed: np.ndarray            # (vocab, d_model); also the tied LM head
    output_norm: np.ndarray      # (d_model,)
    layers: list                 # [n_layers] Gemma3Layer


def _meta(reader, key, default=_REQUIRED):
    field = reader.fields.get(key)
    if field is None:
        if default is _REQUIRED:
            raise ValueError(f"GGUF metadata key '{key}' is required but missing")
        return default
    return field.contents()


def _sliding_layers(reader, prefix, n_layers):
    """Which layers use sliding-window attention.

    The key may hold a period p (layer il slides iff il % p < p - 1, as llama.cpp's
    set_swa_pattern does) or one bool per layer (true = sliding).
    """
    pattern = _meta(reader, f"{prefix}.attention.sliding_window_pattern",
                    DEFAULT_SLIDING_WINDOW_PATTERN)
    if isinstance(pattern, list):
        if len(pattern) != n_layers:
            raise ValueError(f"sliding_window_pattern has {len(pattern)} entries, "
                             f"expected one per layer ({n_layers})")
        return [bool(x) for x in pattern]
    period = int(pattern)
    return [period == 0 or il % period < period - 1 for il in range(n_layers)]


def _read_sizes(reader, p):
    """(block_count, embedding_length, head_count, head_count_kv); no head_count_kv means as
    many KV heads as query heads."""
    n_layers = int(_meta(reader, f"{p}.block_count"))
    d_model = int(_meta(reader, f"{p}.embedding_length"))
    n_heads = int(_meta(reader, f"{p}.attention.head_count"))
    n_kv_heads = int(_meta(reader, f"{p}.attention.head_count_kv", n_heads))
    return n_layers, d_model, n_heads, n_kv_heads


def _shared_fields(reader, p, n_layers, d_model, n_heads, n_kv_heads):
    """The fields both families' configs read alike, as keyword arguments (d_ff, rms_eps and
    context_length read in that order, each family's other required keys after them, so that of
    several missing keys the same one is reported first)."""
    return dict(arch=p, n_layers=n_layers, d_model=d_model,
                d_ff=int(_meta(reader, f"{p}.feed_forward_length")),
                n_heads=n_heads, n_kv_heads=n_kv_heads,
                rms_eps=float(_meta(reader, f"{p}.attention.layer_norm_rms_epsilon")),
                context_length=int(_meta(reader, f"{p}.context_length")))


def read_config(reader):
    arch = _meta(reader, "general.architecture")
    if arch != "gemma3":
        raise ValueError(f"expected general.architecture 'gemma3', found '{arch}'")
    p = arch
    n_layers, d_model, n_heads, n_kv_heads = _read_sizes(reader, p)
    if n_heads % n_kv_heads != 0:
        raise ValueError(f"head_count {n_heads} is not a multiple of head_count_kv {n_kv_heads}")

    divisor = 1.0
    if _meta(reader, f"{p}.rope.scaling.type", "none") == "linear":
        divisor = float(_meta(reader, f"{p}.rope.scaling.factor"))

    embed_info = _tensor_map(reader)["token_embd.weight"]
    return Gemma3Config(
        **_shared_fields(reader, p, n_layers, d_model, n_heads, n_kv_heads),
        head_dim=int(_meta(reader, f"{p}.attention.key_length", d_model // n_heads)),
        head_dim_v=int(_meta(reader, f"{p}.attention.value_length", d_model // n_heads)),
        vocab_size=int(embed_info.shape[1]),  # ne = [d_model, vocab]
        rope_theta_global=float(_meta(reader, f"{p}.rope.freq_base")),
        rope_theta_local=float(_meta(reader, f"{p}.rope.freq_base_swa",
                                     DEFAULT_LOCAL_ROPE_THETA)),
        global_position_divisor=divisor,
        sliding_window=int(_meta(reader, f"{p}.attention.sliding_window")),
        is_sliding=_sliding_layers(reader, p, n_layers),
        final_logit_softcap=float(_meta(reader, f"{p}.final_logit_softcapping", 0.0) or 0.0),
    )


def _tensor_map(reader):
    return {t.name: t for t in reader.tensors}


def _load(tensors, name, shape):
    """Dequantizes one tensor to float64 and checks it has `shape` (rows, cols) or (n,).

    GGUF lists ne innermost first, so a weight with ne = [in, out] holds `out` rows of `in`
    values; gguf-py returns it as a (out, in) array, the layout W in y = x W^T wants.
    """
    t = tensors.get(name)
    if t is None:
        raise ValueError(f"tensor '{name}' is missing")
    expected_ne = list(reversed(shape))
    if [int(x) for x in t.shape] != expected_ne:
        raise ValueError(f"tensor '{name}': expected ne {expected_ne}, found {list(t.shape)}")
    values = gguf.quants.dequantize(t.data, t.tensor_type)
    values = np.asarray(values, dtype=np.float64).reshape(shape)
    if not np.all(np.isfinite(values)):
        raise ValueError(f"tensor '{name}' holds non-finite values")
    return values


# The tensors every decoder layer has, as keyword arguments of a layer dataclass. Two helpers, not
# one: with a family's own tensors between them, each reader still loads a layer's tensors in its
# field order, so of several missing tensors the same one is reported first.
def _load_attention_inputs(tensors, b, d, q_width, kv_width, v_width):
    return dict(attn_norm=_load(tensors, b + "attn_norm.weight", (d,)),
                wq=_load(tensors, b + "attn_q.weight", (q_width, d)),
                wk=_load(tensors, b + "attn_k.weight", (kv_width, d)),
                wv=_load(tensors, b + "attn_v.weight", (v_width, d)))


def _load_ffn(tensors, b, d, d_ff):
    return dict(ffn_norm=_load(tensors, b + "ffn_norm.weight", (d,)),
                w_gate=_load(tensors, b + "ffn_gate.weight", (d_ff, d)),
                w_up=_load(tensors, b + "ffn_up.weight", (d_ff, d)),
                w_down=_load(tensors, b + "ffn_down.weight", (d, d_ff)))


def read_weights(reader, cfg):
    tensors = _tensor_map(reader)
    if "output.weight" in tensors:
        # Gemma ties the LM head to the embedding; a separate head would mean another model.
        raise ValueError("unexpected 'output.weight': Gemma 3 ties the LM head to token_embd")
    d, q_width, kv_width = cfg.d_model, cfg.n_heads * cfg.head_dim, cfg.n_kv_heads * cfg.head_dim
    v_width, o_width = cfg.n_kv_heads * cfg.head_dim_v, cfg.n_heads * cfg.head_dim_v
    layers = []
    for il in range(cfg.n_layers):
        b = f"blk.{il}."
        layers.append(Gemma3Layer(
            **_load_attention_inputs(tensors, b, d, q_width, kv_width, v_width),
            q_norm=_load(tensors, b + "attn_q_norm.weight", (cfg.head_dim,)),
            k_norm=_load(tensors, b + "attn_k_norm.weight", (cfg.head_dim,)),
            wo=_load(tensors, b + "attn_output.weight", (d, o_width)),
            post_attn_norm=_load(tensors, b + "post_attention_norm.weight", (d,)),
            **_load_ffn(tensors, b, d, cfg.d_ff),
            post_ffw_norm=_load(tensors, b + "post_ffw_norm.weight", (d,)),
        ))
    return Gemma3Weights(
        embed=_load(tensors, "token_embd.weight", (cfg.vocab_size, d)),
        output_norm=_load(tensors, "output_norm.weight", (d,)),
        layers=layers,
    )


# ---------------------------------------------------------------------------------------------
# Llama family: GGUF architectures `llama` and `qwen2`.

LLAMA_FAMILY_ARCHS = ("llama", "qwen2")

# llama.cpp's llama_model_rope_type (src/llama-model.cpp) puts LLM_ARCH_LLAMA in the
# LLAMA_ROPE_TYPE_NORM group ("use what we call a normal RoPE, operating on pairs of consecutive
# head values") and LLM_ARCH_QWEN2 in the LLAMA_ROPE_TYPE_NEOX group ("the pairs of head values
# are offset by n_rot/2"). convert_hf_to_gguf.py permutes the rows of a Llama's attn_q/attn_k
# so that the adjacent-pair rotation reproduces Hugging Face's rotate_half; Qwen2 is written
# unpermuted and keeps the half-split rotation.
ROPE_TYPE_OF_ARCH = {"llama": "norm", "qwen2": "neox"}


@dataclass
class LlamaConfig:
    arch: str                  # "llama" or "qwen2"
    n_layers: int
    d_model: int
    d_ff: int
    n_heads: int
    n_kv_heads: int
    head_dim: int              # key/query/value width per head
    n_rot: int                 # leading dims of each head that RoPE rotates (rope.dimension_count)
    rms_eps: float
    vocab_size: int
    context_length: int
    rope_theta: float
    rope_type: str             # "norm" (adjacent pairs) or "neox" (pairs i, i + n_rot/2)
    rope_scaling: str          # "none" or "linear" (rope_freqs.weight is separate: freq factors)
    rope_position_divisor: float  # linear RoPE scaling factor (1 = none)
    tied_head: bool            # True when there is no output.weight: the LM head is token_embd

    @property
    def head_dim_v(self):      # read_llama_config refuses a value width other than the key's
        return self.head_dim


@dataclass
class LlamaLayer(_AttentionInputs):
    bq: object                 # (n_heads*head_dim,) or None (qwen2 has Q/K/V biases)
    bk: object                 # (n_kv_heads*head_dim,) or None
    bv: object                 # (n_kv_heads*head_dim,) or None
    wo: np.ndarray             # (d_model, n_heads*head_dim)
    bo: object                 # (d_model,) or None
    ffn_norm: np.ndarray       # (d_model,)
    w_gate: np.ndarray         # (d_ff, d_model)
    w_up: np.ndarray           # (d_ff, d_model)
    w_down: np.ndarray         # (d_model, d_ff)


@dataclass
class LlamaWeights:
    embed: np.ndarray          # (vocab, d_model)
    output: np.ndarray         # (vocab, d_model): output.weight, or `embed` itself when tied
    output_norm: np.ndarray    # (d_model,)
    rope_freq_factors: object  # (n_rot/2,) or None: Llama 3 rope_freqs.weight, theta_i / ff[i]
    layers: list               # [n_layers] LlamaLayer


def _llama_rope_scaling(reader, p):
    """(type, divisor) from {arch}.rope.scaling.type/factor; raises on what the oracle lacks.

    llama.cpp reads the factor from rope.scaling.factor or the older rope.scale_linear and uses
    1/factor as ggml's freq_scale (theta_interp = freq_scale * pos * theta_i); without YaRN
    (ext_factor 0) that is exactly positions divided by the factor. A missing type with a factor
    present is linear, as llama.cpp's default scaling type is.
    """
    factor = _meta(reader, f"{p}.rope.scaling.factor", None)
    if factor is None:
        factor = _meta(reader, f"{p}.rope.scale_linear", None)
    kind = _meta(reader, f"{p}.rope.scaling.type", None)
    if kind is None:
        kind = "none" if factor is None or float(factor) in (0.0, 1.0) else "linear"
    if kind == "none":
        if factor is not None and float(factor) not in (0.0, 1.0):
            raise ValueError(f"{p}.rope.scaling.type is 'none' but the scaling factor is {factor}")
        return "none", 1.0
    if kind == "linear":
        if factor is None or not float(factor) > 0.0:
            raise ValueError(f"linear RoPE scaling needs a positive {p}.rope.scaling.factor, "
                             f"found {factor}")
        return "linear", float(factor)
    raise ValueError(f"RoPE scaling type '{kind}' is not supported by the oracle "
                     f"(supported: none, linear, and Llama 3 frequency factors in rope_freqs.weight)")


def read_llama_config(reader):
    arch = _meta(reader, "general.architecture")
    if arch not in LLAMA_FAMILY_ARCHS:
        raise ValueError(f"expected general.architecture in {LLAMA_FAMILY_ARCHS}, found '{arch}'")
    p = arch
    n_layers, d_model, n_heads, n_kv_heads = _read_sizes(reader, p)
    if n_heads <= 0 or n_kv_heads <= 0 or n_heads % n_kv_heads != 0:
        raise ValueError(f"head_count {n_heads} is not a multiple of head_count_kv {n_kv_heads}")
    head_dim = int(_meta(reader, f"{p}.attention.key_length", d_model // n_heads))
    head_dim_v = int(_meta(reader, f"{p}.attention.value_length", head_dim))
    if head_dim_v != head_dim:
        raise ValueError(f"key_length {head_dim} != value_length {head_dim_v}: not a "
                         f"{arch} model the oracle knows")
    n_rot = int(_meta(reader, f"{p}.rope.dimension_count", head_dim))
    if n_rot <= 0 or n_rot % 2 or n_rot > head_dim:
        raise ValueError(f"rope.dimension_count {n_rot} must be even and in (0, {head_dim}]")
    scaling, divisor = _llama_rope_scaling(reader, p)

    tensors = _tensor_map(reader)
    if "token_embd.weight" not in tensors:
        raise ValueError("tensor 'token_embd.weight' is missing")
    vocab_size = int(tensors["token_embd.weight"].shape[1])  # ne = [d_model, vocab]
    meta_vocab = _meta(reader, f"{p}.vocab_size", None)
    if meta_vocab is not None and int(meta_vocab) != vocab_size:
        raise ValueError(f"{p}.vocab_size {meta_vocab} != token_embd rows {vocab_size}")
    return LlamaConfig(
        **_shared_fields(reader, p, n_layers, d_model, n_heads, n_kv_heads),
        head_dim=head_dim,
        n_rot=n_rot,
        vocab_size=vocab_size,
        rope_theta=float(_meta(reader, f"{p}.rope.freq_base", 10000.0)),  # llama.cpp's default
        rope_type=ROPE_TYPE_OF_ARCH[arch],
        rope_scaling=scaling,
        rope_position_divisor=divisor,
        tied_head="output.weight" not in tensors,
    )


def _load_optional(tensors, name, shape):
    return _load(tensors, name, shape) if name in tensors else None


def read_llama_weights(reader, cfg):
    tensors = _tensor_map(reader)
    d, q_width, kv_width = cfg.d_model, cfg.n_heads * cfg.head_dim, cfg.n_kv_heads * cfg.head_dim
    layers = []
    for il in range(cfg.n_layers):
        b = f"blk.{il}."
        layers.append(LlamaLayer(
            **_load_attention_inputs(tensors, b, d, q_width, kv_width, kv_width),
            bq=_load_optional(tensors, b + "attn_q.bias", (q_width,)),
            bk=_load_optional(tensors, b + "attn_k.bias", (kv_width,)),
            bv=_load_optional(tensors, b + "attn_v.bias", (kv_width,)),
            wo=_load(tensors, b + "attn_output.weight", (d, q_width)),
            bo=_load_optional(tensors, b + "attn_output.bias", (d,)),
            **_load_ffn(tensors, b, d, cfg.d_ff),
        ))
    freq_factors = _load_optional(tensors, "rope_freqs.weight", (cfg.n_rot // 2,))
    if freq_factors is not None:
        if cfg.arch != "llama":
            # llama.cpp loads rope_freqs for `llama` only; elsewhere the file would not load.
            raise ValueError(f"'rope_freqs.weight' is unexpected for architecture '{cfg.arch}'")
        if not np.all(freq_factors > 0):
            raise ValueError("'rope_freqs.weight' holds non-positive frequency factors")
    embed = _load(tensors, "token_embd.weight", (cfg.vocab_size, d))
    return LlamaWeights(
        embed=embed,
        output=embed if cfg.tied_head else _load(tensors, "output.weight", (cfg.vocab_size, d)),
        output_norm=_load(tensors, "output_norm.weight", (d,)),
        rope_freq_factors=freq_factors,
        layers=layers,
    )


def open_llama_model(path):
    reader = open_reader(path)
    cfg = read_llama_config(reader)
    return reader, cfg, read_llama_weights(reader, cfg)


def describe_llama(cfg, w=None):
    scaling = "" if cfg.rope_scaling == "none" else \
        f", rope scaling {cfg.rope_scaling} x{cfg.rope_position_divisor:g}"
    if w is not None and w.rope_freq_factors is not None:
        scaling += ", rope_freqs factors"
    return (f"{cfg.arch}: {cfg.n_layers} layers, d_model {cfg.d_model}, d_ff {cfg.d_ff}, "
            f"heads {cfg.n_heads}/{cfg.n_kv_heads} x {cfg.head_dim} (rot {cfg.n_rot}), "
            f"vocab {cfg.vocab_size}, theta {cfg.rope_theta:g}, rope {cfg.rope_type}{scaling}, "
            f"{'tied' if cfg.tied_head else 'separate'} LM head")


class _PlainArrayReader(gguf.GGUFReader):
    """GGUFReader that slices a plain ndarray view of its memory map instead of np.memmap.

    gguf-py parses every vocabulary string with a few slices of `self.data`; on np.memmap each
    slice pays for memmap.__array_finalize__, which made opening a 262k-token vocabulary take
    tens of seconds. The view shares the same mapping, so tensor data is still read lazily.
    """

    def _get(self, offset, dtype, count=1, override_order=None):
        if type(self.data) is np.memmap:
            self.data = self.data.view(np.ndarray)
        return super()._get(offset, dtype, count, override_order)


def open_reader(path):
    return _PlainArrayReader(path)


def open_model(path):
    reader = open_reader(path)
    cfg = read_config(reader)
    return reader, cfg, read_weights(reader, cfg)


def describe(cfg):
    n_global = cfg.n_layers - sum(cfg.is_sliding)
    return (f"{cfg.arch}: {cfg.n_layers} layers ({n_global} global), d_model {cfg.d_model}, "
            f"d_ff {cfg.d_ff}, heads {cfg.n_heads}/{cfg.n_kv_heads} x {cfg.head_dim}, "
            f"vocab {cfg.vocab_size}, window {cfg.sliding_window}, "
            f"theta {cfg.rope_theta_local:g}/{cfg.rope_theta_global:g}")


__all__ = ["Gemma3Config", "Gemma3Layer", "Gemma3Weights", "open_model", "open_reader",
           "read_config", "read_weights", "describe",
           "LLAMA_FAMILY_ARCHS", "ROPE_TYPE_OF_ARCH", "LlamaConfig", "LlamaLayer", "LlamaWeights",
           "read_llama_config", "read_llama_weights", "open_llama_model", "describe_llama"]
