// Whisper from a CTranslate2 folder (faster-whisper's format: model.bin with a WhisperSpec,
// config.json, vocabulary.txt / tokenizer.json) to a .kes model. So far the audio encoder: the
// "encode_audio" plan (two-convolution stem with GELU, sinusoidal positions, pre-LayerNorm
// blocks with bidirectional attention, final LayerNorm) and the tokenizer; the decoder with
// cross-attention comes next (issue 13).
#pragma once

#include <string>

#include "converters/ct2/ct2_file.h"
#include "converters/convert_options.h"
#include "converters/kes_model.h"

namespace kestrel::ct2 {

// file: the folder's model.bin, opened. Matrices follow options (keep: the file's own float
// type); the convolutions stay f16 (f32 with --weights f32): their rows are not whole blocks
// (80 mels x 3) and they are 1% of the weights. Norms, biases and positions stay f32.
Status ConvertWhisper(const std::string& folder, const File& file, const ConvertOptions& options,
                      KesModel* out);

}  // namespace kestrel::ct2
