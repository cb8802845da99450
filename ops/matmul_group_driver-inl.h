// The row and token loop both grouped integer matmul families share: Q8_0 / Q4_0
// (ops/matmul_quant.cc) and the kept GGUF types (ops/matmul_blocks.cc). Rows come in groups of
// kQuantGroupRows; a full group goes to the CPU's group tile, its tokens cut into the tile's
// sizes, and any other row (a last partial group, a CPU without the tile) to the family's
// portable code. Included by both files inside their HWY_NAMESPACE (no include guard: each is
// compiled once per target).
//
// A family is a class with members layout (its rows in layout.rows), x_row_bytes and n_out, and
//   x86 (AVX2 and later): template <size_t kTokens> TileX86(r, x, y): the full group at row r
//       against kTokens (1 .. kX86TokenTile) tokens;
//   aarch64: TileI8mm(tokens, r, x, y) (1 .. kI8mmTokenTile tokens) and TileDotProd(tokens, r,
//       x, y) (1 .. kDotProdTokenTile);
//   every target: Rest(n_tokens, r, row_end, x, y): rows from r on that no tile takes, returning
//       how many it did (at least one),
// where x is the first token's Q8_ACT row and y the first token's output row (its row 0).
// MatMulTokenBlocks below (and MatMulPanelTokenBlocks of ops/matmul_panel_vnni-inl.h on AVX-512
// VNNI) is the token loop both run their tiles in.

// The portable code's vectors in both families: 16 int16 lanes (half a sub-block's quants,
// widened), their pair sums as int32, and those as float.
using D16 = hn::CappedTag<int16_t, 16>;
using D32 = hn::Repartition<int32_t, D16>;
using DF = hn::Rebind<float, D32>;
using VF = hn::Vec<DF>;
using V16 = hn::Vec<D16>;

// Tokens per x86 tile: AVX-512's 32 vector registers hold the accumulators of 8 tokens, which
// halves the weight loads and decoding per token against AVX2's 4.
#if HWY_TARGET <= HWY_AVX3
inline constexpr size_t kX86TokenTile = 8;
#else
inline constexpr size_t kX86TokenTile = 4;
#endif
inline constexpr size_t kDotProdTokenTile = 4;

// Rows [row_begin, row_end) of the family's weight against n_tokens tokens.
template <class Family>
void MatMulGroupTiles(const Family& family, const uint8_t* HWY_RESTRICT x, float* HWY_RESTRICT y,
                      size_t n_tokens, size_t row_begin, size_t row_end) {
  [[maybe_unused]] const size_t x_row_bytes = family.x_row_bytes, n_out = family.n_out;
  const size_t n_rows = family.layout.rows;
  // Rows outer, tokens inner: a group's weights stay in L1 while every token passes over them.
  for (size_t r = row_begin; r < row_end;) {
    [[maybe_unused]] const bool full_group =
        r % kQuantGroupRows == 0 && r + kQuantGroupRows <= HWY_MIN(row_end, n_rows);
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
    if (full_group) {
      for (size_t t = 0; t < n_tokens; t += kX86TokenTile) {
        size_t tokens = HWY_MIN(kX86TokenTile, n_tokens - t);
        const uint8_t* xt = x + t * x_row_bytes;
        float* yt = y + t * n_out;
        if (tokens == kX86TokenTile) {
          family.template TileX86<kX86TokenTile>(r, xt, yt);
          continue;
        }
        // Tiles of 4, then one of 1 .. 3: each its own compiled size.
        for (; tokens >= 4; tokens -= 4, xt += 4 * x_row_bytes, yt += 4 * n_out) {
          family.template TileX86<4>(r, xt, yt);
        }
        switch (tokens) {
          case 1: family.template TileX86<1>(r, xt, yt); break;
          case 2: family.template TileX86<2>(r, xt, yt); break;
          case 3: family.template TileX86<3>(r, xt, yt); break;
          default: break;
        }
      }
      r += kQuantGroupRows;
      continue;
    }
#endif
#if HWY_ARCH_ARM_A64
    // Two tokens or more: smmla's 2x2 tiles (2x sdot's multiply-adds); a decode step: sdot.
    if (full_group && n_tokens >= 2 && CpuHasI8mm()) {
      for (size_t t = 0; t < n_tokens; t += kI8mmTokenTile) {
        family.TileI8mm(HWY_MIN(kI8mmTokenTile, n_tokens - t), r, x + t * x_row_bytes,
                        y + t * n_out);
      }
      r += kQuantGroupRows;
      continue;
    }
    if (full_group && CpuHasDotProd()) {
      for (size_t t = 0; t < n_tokens; t += kDotProdTokenTile) {
        family.TileDotProd(HWY_MIN(kDotProdTokenTile, n_tokens - t), r, x + t * x_row_bytes,
                           y + t * n_out);
      }
      r += kQuantGroupRows;
      continue;
    }
#endif
    r += family.Rest(n_tokens, r, row_end, x, y);
  }
}

// The token loop around the tiles: n_tokens tokens in token blocks (ForEachTokenBlock, of
// min_block tokens at least), each to tiles(x, y, n_tokens, row_begin, row_end) at its first
// token's activations and outputs.
template <class Tiles>
void MatMulTokenBlocks(const Tiles& tiles, const uint8_t* HWY_RESTRICT x, float* HWY_RESTRICT y,
                       size_t n_tokens, size_t k, size_t n_out, size_t row_begin, size_t row_end,
                       size_t min_block = 0) {
  ForEachTokenBlock(
      n_tokens, k,
      [&](size_t first, size_t count) {
        tiles(x + first * Q8ActRowBytes(k), y + first * n_out, count, row_begin, row_end);
      },
      min_block);
}
