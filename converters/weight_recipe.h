// Which GGUF type each weight gets for --weights q4_k_m, q4_k, q5_k and q6_k: the choices of
// llama.cpp 0.3.36's quantize tool (llama_tensor_get_type and tensor_type_fallback in
// src/llama-quant.cpp), so that a model converted from F32/F16/BF16 holds the tensors llama.cpp
// would have written, type by type (and, with the quantizers of converters/quantize.h, bit by
// bit).
//
// Q4_K_M (LLAMA_FTYPE_MOSTLY_Q4_K_M), for every tensor llama.cpp quantizes (2-D or more, name
// ending in "weight", not a norm, nor one of its other exceptions), in llama.cpp's tensor order
// (by layer, then by name):
//   output.weight, and token_embd.weight when the head is tied to it: Q6_K, or Q8_0 when its
//     rows are not a multiple of 256;
//   attn_v (and fused attn_qkv / attn_kv_b) of the i-th such tensor: Q6_K when
//     UseMoreBits(i, count), else Q4_K (Q5_K on 70B Llama/Qwen2);
//   ffn_down of layer i: Q6_K when UseMoreBits(i, n_layers), else Q4_K;
//   attn_qkv: Q5_K; everything else (embedding, attn_q/k/output, ffn_gate/up): Q4_K;
// then, for a row length that is not a multiple of 256, the 32-value fallback: Q4_K -> Q5_0,
// Q5_K -> Q5_1, Q6_K -> Q8_0, and F16 when rows are not a multiple of 32 either.
// The rules llama.cpp keeps for mixture-of-experts (8 experts) and Falcon are left out: Kestrel
// converts neither.
//
// q4_k / q5_k / q6_k (llama-quantize --pure): every such tensor, the embedding and output
// included, in that type, with the same 32-value fallback; rows that fit neither are an error
// (asked for a K-quant, we do not silently write F16).
#pragma once

#include <map>
#include <string>

#include "converters/gguf/gguf_file.h"
#include "runtime/status.h"

namespace kestrel {

enum class WeightRecipe : uint8_t { kQ4_K_M, kQ4_K, kQ5_K, kQ6_K };

// llama.cpp's use_more_bits: the first and last eighth of the layers and every third between.
bool UseMoreBits(int layer, int n_layers);

// The type of every tensor of `file` that llama.cpp would quantize, by name. Tensors absent from
// *types keep their GGUF type, as llama.cpp keeps them.
Status ChooseWeightTypes(const gguf::File& file, WeightRecipe recipe,
                         std::map<std::string, gguf::GgmlType>* types);

}  // namespace kestrel
