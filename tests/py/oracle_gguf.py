"""Reads a Gemma 3 GGUF into a plain config and float64 weight arrays for the NumPy oracle.

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
class Gemma3Layer:
    attn_norm: np.ndarray        # (d_model,)
    wq: np.ndarray               # (n_heads*head_dim, d_model)
    wk: np.ndarray               # (n_kv_heads*head_dim, d_model)
    wv: np.ndarray               # (n_kv_heads*head_dim_v, d_model)
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


def read_config(reader):
    arch = _meta(reader, "general.architecture")
    if arch != "gemma3":
        raise ValueError(f"expected general.architecture 'gemma3', found '{arch}'")
    p = arch
    n_layers = int(_meta(reader, f"{p}.block_count"))
    d_model = int(_meta(reader, f"{p}.embedding_length"))
    n_heads = int(_meta(reader, f"{p}.attention.head_count"))
    n_kv_heads = int(_meta(reader, f"{p}.attention.head_count_kv", n_heads))
    if n_heads % n_kv_heads != 0:
        raise ValueError(f"head_count {n_heads} is not a multiple of head_count_kv {n_kv_heads}")

    divisor = 1.0
    if _meta(reader, f"{p}.rope.scaling.type", "none") == "linear":
        divisor = float(_meta(reader, f"{p}.rope.scaling.factor"))

    embed_info = _tensor_map(reader)["token_embd.weight"]
    return Gemma3Config(
        arch=arch,
        n_layers=n_layers,
        d_model=d_model,
        d_ff=int(_meta(reader, f"{p}.feed_forward_length")),
        n_heads=n_heads,
        n_kv_heads=n_kv_heads,
        head_dim=int(_meta(reader, f"{p}.attention.key_length", d_model // n_heads)),
        head_dim_v=int(_meta(reader, f"{p}.attention.value_length", d_model // n_heads)),
        rms_eps=float(_meta(reader, f"{p}.attention.layer_norm_rms_epsilon")),
        vocab_size=int(embed_info.shape[1]),  # ne = [d_model, vocab]
        context_length=int(_meta(reader, f"{p}.context_length")),
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
            attn_norm=_load(tensors, b + "attn_norm.weight", (d,)),
            wq=_load(tensors, b + "attn_q.weight", (q_width, d)),
            wk=_load(tensors, b + "attn_k.weight", (kv_width, d)),
            wv=_load(tensors, b + "attn_v.weight", (v_width, d)),
            q_norm=_load(tensors, b + "attn_q_norm.weight", (cfg.head_dim,)),
            k_norm=_load(tensors, b + "attn_k_norm.weight", (cfg.head_dim,)),
            wo=_load(tensors, b + "attn_output.weight", (d, o_width)),
            post_attn_norm=_load(tensors, b + "post_attention_norm.weight", (d,)),
            ffn_norm=_load(tensors, b + "ffn_norm.weight", (d,)),
            w_gate=_load(tensors, b + "ffn_gate.weight", (cfg.d_ff, d)),
            w_up=_load(tensors, b + "ffn_up.weight", (cfg.d_ff, d)),
            w_down=_load(tensors, b + "ffn_down.weight", (d, cfg.d_ff)),
            post_ffw_norm=_load(tensors, b + "post_ffw_norm.weight", (d,)),
        ))
    return Gemma3Weights(
        embed=_load(tensors, "token_embd.weight", (cfg.vocab_size, d)),
        output_norm=_load(tensors, "output_norm.weight", (d,)),
        layers=layers,
    )


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
           "read_config", "read_weights", "describe"]
