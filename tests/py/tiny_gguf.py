"""What the make_tiny_*.py GGUF writers share: the tiny shape, the writer with its leading
hyper-parameter keys, the random tensors, the cycled matrix types and the final write.

The tests pin these files byte for byte (a llama.cpp logits fixture records the hash of the GGUF
its make arguments give), so each helper writes its keys and draws its random numbers in the
order every writer used before they shared it. fuzz/make_seeds.py shrinks the writers by
assigning their module globals (N_LAYERS, MATRIX_TYPES, quantize, ...): the writers keep those
names as their own globals and hand them to these helpers at call time.
"""
import numpy as np
import gguf
from gguf import GGMLQuantizationType as Q

# Matrix types, cycled over (layer, matrix) so each type appears in several roles. All need rows
# that are a multiple of 32 values (or none, for the float types).
MATRIX_TYPES = [Q.F32, Q.F16, Q.Q8_0, Q.Q4_0, Q.Q5_0, Q.Q4_1, Q.Q5_1, Q.BF16]

# Rows of 64 and 160 values (whole blocks of every MATRIX_TYPES type, too short for K-quants) and
# grouped-query attention; each writer picks its own layer count and context.
D_MODEL, FFN_DIM, N_HEADS, N_KV_HEADS, HEAD_DIM = 64, 160, 4, 2, 16


def new_writer(path, arch, name, n_layers, d_model, ffn_dim, n_heads, n_kv_heads, context,
               head_dim=None):
    """A GGUFWriter to `path` holding general.name, then block_count through context_length;
    key_length and value_length only with head_dim (a real Llama GGUF leaves them out, so
    make_tiny_llama.py writes them later, and only when it must)."""
    w = gguf.GGUFWriter(path, arch)
    w.add_name(name)
    w.add_uint32(f"{arch}.block_count", n_layers)
    w.add_uint32(f"{arch}.embedding_length", d_model)
    w.add_uint32(f"{arch}.feed_forward_length", ffn_dim)
    w.add_uint32(f"{arch}.attention.head_count", n_heads)
    w.add_uint32(f"{arch}.attention.head_count_kv", n_kv_heads)
    if head_dim is not None:
        w.add_uint32(f"{arch}.attention.key_length", head_dim)
        w.add_uint32(f"{arch}.attention.value_length", head_dim)
    w.add_uint32(f"{arch}.context_length", context)
    return w


def random_tensors(rng):
    """(matrix, vector): float32 draws from rng, normal around 0 (matrices) or `mean`."""
    def matrix(out_features, in_features, std=0.08):
        return (rng.standard_normal((out_features, in_features)) * std).astype(np.float32)

    def vector(n, mean, std):
        return (mean + std * rng.standard_normal(n)).astype(np.float32)

    return matrix, vector


def layer_matrices(layer, d_model, ffn_dim, q_dim, kv_dim, types):
    """(name, out_features, in_features, type) of a layer's seven Llama-style projections, the
    types cycled over (layer, matrix)."""
    matrices = [("attn_q", q_dim, d_model), ("attn_k", kv_dim, d_model),
                ("attn_v", kv_dim, d_model), ("attn_output", d_model, q_dim),
                ("ffn_gate", ffn_dim, d_model), ("ffn_up", ffn_dim, d_model),
                ("ffn_down", d_model, ffn_dim)]
    for j, (name, out_features, in_features) in enumerate(matrices):
        yield name, out_features, in_features, types[(layer * len(matrices) + j) % len(types)]


def quantize(values, qtype):
    """values: float32 [out, in] -> (array, raw_dtype) for GGUFWriter.add_tensor."""
    if qtype == Q.F32:
        return values.astype(np.float32), None
    if qtype == Q.F16:
        return values.astype(np.float16), None
    return gguf.quants.quantize(values, qtype), qtype


def write(w):
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
