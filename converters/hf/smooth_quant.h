// SmoothQuant (Xiao et al., 2023) for encoders converted to q8 or q4: every quantized matmul
// rounds its input activations to int8 per block of 32 channels, and a BERT's LayerNorm outputs
// carry a few channels up to 20x larger than the rest, which coarsen the int8 step of every
// block they sit in (all-MiniLM-L6-v2 q8: minimum cosine to the float64 reference 0.9979).
// Smoothing divides input channel j by s_j = sqrt(max|x_j| / max|w_.j|) as the activations are
// quantized (QuantizeRows' factor, 1 / s_j) and multiplies the weights' column j by s_j, so the
// product is unchanged and the difficulty is shared between the two roundings. max|x_j| comes
// from running the f32 model over calibration texts.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "converters/kes_model.h"
#include "runtime/status.h"

namespace kestrel {

// Weight tensor name -> the largest |x_j| seen in each channel of its matmul's input.
using ChannelMaxima = std::map<std::string, std::vector<float>>;

// The converter's own calibration texts (converters/hf/calibration_texts.inc).
const std::vector<std::string>& BuiltinCalibrationTexts();
// One text per non-empty line of a UTF-8 file; an error when it has none.
Status ReadCalibrationTexts(const std::string& path, std::vector<std::string>* texts);

// Runs f32_model, an encoder with f32 weights and its tokenizer (its arena not yet planned), over
// the texts and records the input maxima of every matmul. The model is planned and serialized
// in the process (PlanArena, KesBytes).
Status MeasureMatMulInputs(KesModel* f32_model, const std::vector<std::string>& texts,
                           ChannelMaxima* out);

// The smoothing scales s_j of one quantized input shared by several weights ([rows, k] f32 each,
// e.g. Q, K and V): sqrt(x_max_j / max over the weights of |w_ij|) rounded to a power of
// 2^(1/8) within 2^-13..2^13, and 1 where a channel was never nonzero in either.
std::vector<float> SmoothingScales(const std::vector<float>& x_max,
                                   const std::vector<const std::vector<float>*>& weights);

}  // namespace kestrel
