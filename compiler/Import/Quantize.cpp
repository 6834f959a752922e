// fp32 -> F16 / BF16 / ggml blocks (see Quantize.h), and the Q4_K_M mix.
// Built with -ffp-contract=off (CMakeLists.txt): Q8_0 and Q4_0 must round
// each fp32 step as ggml's reference build does to write the same bytes.
#include "compiler/Import/Quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace quill {

namespace {

uint32_t floatBits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return bits;
}

void storeU16(uint8_t *p, uint16_t v) { std::memcpy(p, &v, 2); }

float loadHalf(const uint8_t *p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return halfToFloat(v);
}

/// The F16 nearest `value` not above it in magnitude (but for fp32 noise,
/// a relative 1e-6), and never zero for a nonzero `value` (then the
/// smallest subnormal, 2^-24): a K block's d or dmin, so the block's largest
/// scale keeps the top code even where F16 is coarse (subnormal), and tiny
/// blocks keep a usable step.
uint16_t superScaleHalf(float value) {
  uint16_t h = floatToHalf(value);
  if ((h & 0x7FFF) != 0 && std::fabs(halfToFloat(h)) > std::fabs(value) * (1 + 1e-6f))
    --h; // One step toward zero (the sign bit is apart).
  if ((h & 0x7FFF) == 0 && value != 0)
    h |= 1;
  return h;
}

/// `value` >> `shift`, rounded to nearest even on the bits shifted out.
uint32_t shiftRoundEven(uint32_t value, int shift) {
  if (shift > 31)
    return 0;
  const uint32_t kept = value >> shift;
  const uint32_t rest = value & ((uint32_t(1) << shift) - 1);
  const uint32_t half = uint32_t(1) << (shift - 1);
  return kept + (rest > half || (rest == half && (kept & 1)) ? 1 : 0);
}

/// Round to nearest, ties to even, as ggml's nearest_int: adding 1.5 * 2^23
/// leaves the rounded integer in the low mantissa bits (no libm call).
/// Inputs are saturated at +-2^21 (far beyond any level) and NaN gives 0,
/// so degenerate quotients stay defined.
int nearestInt(float x) {
  if (!(x == x))
    return 0;
  const float shifted = std::clamp(x, -2097152.0f, 2097152.0f) + 12582912.0f;
  return int(floatBits(shifted) & 0x007FFFFF) - 0x00400000;
}

// ---------------------------------------------------------------- Q8_0, Q4_0

/// quantize_row_q8_0_ref: d = max|x| / 127, q = roundf(x / d) (ties away
/// from zero), d stored as F16; the division is a product with 1/d.
void quantizeQ8_0Block(const float *x, uint8_t *out) {
  float amax = 0.0f;
  for (int j = 0; j < 32; ++j)
    amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  storeU16(out, floatToHalf(d));
  for (int j = 0; j < 32; ++j)
    out[2 + j] = uint8_t(int8_t(std::roundf(x[j] * id)));
}

/// quantize_row_q4_0_ref: `max` is the first value of largest magnitude
/// (with its sign), d = max / -8 so it lands on q = 0; q = min(15,
/// trunc(x / d + 8.5)).
void quantizeQ4_0Block(const float *x, uint8_t *out) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < 32; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  const float d = max / -8.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  storeU16(out, floatToHalf(d));
  for (int j = 0; j < 16; ++j) {
    const float x0 = x[j] * id, x1 = x[j + 16] * id;
    const int lo = std::min(15, int(x0 + 8.5f)), hi = std::min(15, int(x1 + 8.5f));
    out[2 + j] = uint8_t(lo | (hi << 4));
  }
}

// ---------------------------------------------------------------------- Q4_K

/// An affine fit of one sub-block: x ~ scale * L - min with L in [0, nmax].
struct AffineFit {
  float scale = 0, min = 0;
};

/// The weighted squared error of x ~ scale * L + offset, L = round(iscale
/// * (x - lo)) in [0, nmax]; with `solve`, scale and offset are first set
/// to the weighted least-squares fit for that L (offset kept <= 0).
double affineError(const float *x, const float *w, int n, int nmax, float lo, float iscale,
                   bool solve, double &scale, double &offset) {
  int levels[32];
  double sw = 0, sl = 0, sl2 = 0, sx = 0, slx = 0;
  for (int i = 0; i < n; ++i) {
    levels[i] = std::clamp(nearestInt(iscale * (x[i] - lo)), 0, nmax);
    const double l = levels[i];
    sw += w[i], sl += w[i] * l, sl2 += w[i] * l * l;
    sx += w[i] * x[i], slx += w[i] * l * x[i];
  }
  if (solve) {
    const double det = sw * sl2 - sl * sl;
    if (det <= 0)
      return INFINITY; // One level for all: no fit to improve on.
    scale = (sw * slx - sx * sl) / det;
    offset = (sl2 * sx - sl * slx) / det;
    if (offset > 0) {
      offset = 0;
      scale = slx / sl2;
    }
  }
  double error = 0;
  for (int i = 0; i < n; ++i) {
    const double diff = scale * levels[i] + offset - x[i];
    error += w[i] * diff * diff;
  }
  return error;
}

/// Weighted least squares over candidate grids: the plain grid of nmax
/// steps across [min(x, 0), max(x)], then grids of nmax + delta steps
/// (|delta| <= 1, steps of 0.1) and of nmax / 2 ... nmax - 2 whole steps
/// (so values already on a grid that leaves levels unused are fitted
/// exactly), each with the best (scale, offset) for its rounding; the fit
/// of least weighted squared error is kept. The offset is kept <= 0 (Q4_K
/// stores it as a non-negative min).
AffineFit fitAffine(const float *x, const float *w, int n, int nmax) {
  float lo = 0.0f, hi = x[0];
  for (int i = 0; i < n; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  if (hi <= lo)
    return {0.0f, -lo}; // Constant (<= 0): the min alone.
  double scale = double(hi - lo) / nmax, offset = lo;
  double bestError = affineError(x, w, n, nmax, lo, float(nmax) / (hi - lo), false, scale, offset);
  AffineFit best{float(scale), float(-offset)};
  auto consider = [&](float steps) {
    const double error = affineError(x, w, n, nmax, lo, steps / (hi - lo), true, scale, offset);
    if (error < bestError) {
      bestError = error;
      best = {float(std::max(scale, 0.0)), float(-offset)};
    }
  };
  for (int step = -10; step <= 10; ++step)
    consider(float(nmax) + 0.1f * float(step));
  for (int steps = nmax / 2; steps < nmax - 1; ++steps)
    consider(float(steps));
  return best;
}

/// Packs sub-block j's 6-bit scale and min as q4KScaleMin unpacks them.
void packQ4KScaleMin(int j, uint8_t scale, uint8_t min, uint8_t *packed) {
  if (j < 4) {
    packed[j] = uint8_t((packed[j] & 0xC0) | scale);
    packed[j + 4] = uint8_t((packed[j + 4] & 0xC0) | min);
  } else {
    packed[j + 4] = uint8_t((scale & 0x0F) | ((min & 0x0F) << 4));
    packed[j - 4] = uint8_t(packed[j - 4] | ((scale >> 4) << 6));
    packed[j] = uint8_t(packed[j] | ((min >> 4) << 6));
  }
}

/// Rounds 32 weights onto step * level - offset, levels 0-15; returns the
/// squared error.
double roundQ4KSubBlock(const float *x, float step, float offset, uint8_t *levels) {
  const float inverse = step != 0 ? 1 / step : 0;
  double error = 0;
  for (int l = 0; l < 32; ++l) {
    levels[l] = uint8_t(std::clamp(nearestInt((x[l] + offset) * inverse), 0, 15));
    const double diff = double(step) * levels[l] - offset - x[l];
    error += diff * diff;
  }
  return error;
}

/// The codes to try around `nearest` (a 6-bit code): it and its neighbours,
/// except that 63, the code of the block's largest, stays (d and dmin are
/// that one's value / 63, so values on a Q4_K grid come back exactly).
std::pair<int, int> codeRange(int nearest) {
  if (nearest >= 63)
    return {63, 63};
  return {std::max(0, nearest - 1), nearest + 1};
}

/// Stores sub-block j's 6-bit scale and min codes: those nearest its fit
/// under d and dmin, or neighbours when they round the weights better (a
/// sub-block far below the block's largest has coarse codes). The fit's
/// min may also rise by up to 3 of its steps (the same fit with every level
/// 1-3 higher, where the top levels are unused), so values on a Q4_K grid
/// that leave level 0 unused come back exactly.
void encodeQ4KSubBlock(const float *x, const AffineFit &fit, float d, float dmin, int j,
                       uint8_t *out) {
  const auto [scaleLo, scaleHi] = codeRange(d > 0 ? nearestInt(fit.scale / d) : 0);
  double bestError = INFINITY;
  uint8_t levels[32], best[32], bestScale = 0, bestMin = 0;
  for (int shift = 0; shift <= 3; ++shift) {
    const float min = fit.min + float(shift) * fit.scale;
    const auto [minLo, minHi] = codeRange(dmin > 0 ? nearestInt(min / dmin) : 0);
    for (int sc = scaleLo; sc <= scaleHi; ++sc) {
      for (int m = minLo; m <= minHi; ++m) {
        const double error = roundQ4KSubBlock(x, d * float(sc), dmin * float(m), levels);
        if (error < bestError) {
          bestError = error, bestScale = uint8_t(sc), bestMin = uint8_t(m);
          std::memcpy(best, levels, 32);
        }
      }
    }
  }
  packQ4KScaleMin(j, bestScale, bestMin, out + 4);
  uint8_t *qs = out + 16 + 32 * (j / 2); // Sub-block 2c low nibbles, 2c + 1 high.
  for (int l = 0; l < 32; ++l)
    qs[l] = uint8_t(j % 2 == 0 ? best[l] : qs[l] | best[l] << 4);
}

/// One Q4_K super-block: fit each 32-weight sub-block (weights av + |x|
/// as ggml's reference uses), put the scales and mins on 6-bit grids under
/// F16 d = max scale / 63 and dmin = max min / 63, then round every weight
/// with the codes as stored.
void quantizeQ4_KBlock(const float *x, uint8_t *out) {
  AffineFit fits[8];
  float maxScale = 0, maxMin = 0;
  for (int j = 0; j < 8; ++j) {
    const float *sub = x + 32 * j;
    float sum2 = 0, w[32];
    for (int l = 0; l < 32; ++l)
      sum2 += sub[l] * sub[l];
    const float av = std::sqrt(sum2 / 32);
    for (int l = 0; l < 32; ++l)
      w[l] = av + std::fabs(sub[l]);
    fits[j] = fitAffine(sub, w, 32, 15);
    maxScale = std::max(maxScale, fits[j].scale);
    maxMin = std::max(maxMin, fits[j].min);
  }
  std::memset(out, 0, size_t(kQ4_KBlockBytes));
  storeU16(out, superScaleHalf(maxScale / 63));
  storeU16(out + 2, superScaleHalf(maxMin / 63));
  const float d = loadHalf(out), dmin = loadHalf(out + 2);
  for (int j = 0; j < 8; ++j)
    encodeQ4KSubBlock(x + 32 * j, fits[j], d, dmin, j, out);
}

// ---------------------------------------------------------------------- Q6_K

/// The least-squares scale of x onto the levels round(iscale * x) in
/// [-nmax, nmax - 1], and its gain sum(w l x)^2 / sum(w l^2): the weighted
/// squared error at that scale is sum(w x^2) minus the gain.
struct SymmetricCandidate {
  double scale = 0, gain = -1;
};
SymmetricCandidate trySymmetric(const float *x, const float *w, int n, int nmax, float iscale) {
  double slx = 0, sl2 = 0;
  for (int i = 0; i < n; ++i) {
    const double l = std::clamp(nearestInt(iscale * x[i]), -nmax, nmax - 1);
    slx += w[i] * l * x[i];
    sl2 += w[i] * l * l;
  }
  if (sl2 <= 0)
    return {};
  return {slx / sl2, slx * slx / sl2};
}

/// A symmetric fit of one sub-block: x ~ scale * L with L in [-nmax,
/// nmax - 1]. The candidate grids put the value of largest magnitude, `max`,
/// at level -(nmax + delta) or nmax - 1 + delta (|delta| <= 1, steps of
/// 0.1), or at any integer level from nmax / 2 out (so values already on a
/// grid are fitted exactly); the least-squares scale of the best is kept.
float fitSymmetric(const float *x, const float *w, int n, int nmax) {
  float amax = 0, max = 0;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  }
  if (amax < 1e-30f)
    return 0;
  SymmetricCandidate best;
  auto consider = [&](float level) {
    SymmetricCandidate c = trySymmetric(x, w, n, nmax, level / max);
    if (c.gain > best.gain)
      best = c;
  };
  for (int step = -10; step <= 10; ++step) {
    consider(-(float(nmax) + 0.1f * float(step)));
    consider(float(nmax - 1) + 0.1f * float(step));
  }
  for (int level = nmax / 2; level <= nmax; ++level) {
    consider(-float(level));
    consider(float(std::min(level, nmax - 1)));
  }
  return float(best.scale);
}

/// Writes 256 6-bit levels (0-63) in Q6_K's ql / qh order.
void packQ6KLevels(const uint8_t *levels, uint8_t *ql, uint8_t *qh) {
  for (int half = 0; half < 2; ++half, levels += 128, ql += 64, qh += 32) {
    for (int l = 0; l < 32; ++l) {
      const uint8_t a = levels[l], b = levels[l + 32], c = levels[l + 64], e = levels[l + 96];
      ql[l] = uint8_t((a & 0xF) | ((c & 0xF) << 4));
      ql[l + 32] = uint8_t((b & 0xF) | ((e & 0xF) << 4));
      qh[l] = uint8_t((a >> 4) | ((b >> 4) << 2) | ((c >> 4) << 4) | ((e >> 4) << 6));
    }
  }
}

/// Rounds 16 weights onto `step` * (level - 32), levels 0-63; returns the
/// squared error.
double roundQ6KSubBlock(const float *x, float step, uint8_t *levels) {
  const float inverse = step != 0 ? 1 / step : 0;
  double error = 0;
  for (int l = 0; l < 16; ++l) {
    levels[l] = uint8_t(std::clamp(nearestInt(x[l] * inverse), -32, 31) + 32);
    const double diff = double(step) * (levels[l] - 32) - x[l];
    error += diff * diff;
  }
  return error;
}

/// The int8 codes to try for a sub-block whose scale is nearest `nearest`
/// on the grid: it, its neighbours, and their negations (the levels negated:
/// the grid [-32, 31] is not symmetric). At the grid's end (|code| >= 127,
/// the block's largest) only it, its negation and 127 for +128, so d stays
/// that one's and values on a Q6_K grid come back exactly.
struct Q6KCodes {
  int code[6], count = 0;
};
Q6KCodes q6KCodes(int nearest) {
  const bool end = std::abs(nearest) >= 127;
  const int all[6] = {nearest,
                      -nearest,
                      end ? std::min(nearest, 127) : nearest - 1,
                      end ? nearest : nearest + 1,
                      1 - nearest,
                      -1 - nearest};
  Q6KCodes codes;
  for (int i = 0; i < (end ? 3 : 6); ++i)
    if (all[i] >= -128 && all[i] <= 127)
      codes.code[codes.count++] = all[i];
  return codes;
}

/// Writes a Q6_K block of `x` with the sub-block scales `scales` as int8
/// codes of F16 d ~ `target`, each weight rounded with the codes as stored;
/// returns the squared error. Each sub-block takes the q6KCodes code that
/// rounds its weights best.
double writeQ6KBlock(const float *x, const float *scales, float target, uint8_t *out) {
  std::memset(out, 0, size_t(kQ6_KBlockBytes));
  auto *stored = reinterpret_cast<int8_t *>(out + 192);
  storeU16(out + 208, superScaleHalf(target));
  const float d = loadHalf(out + 208);
  uint8_t levels[256], candidate[16];
  double total = 0;
  for (int s = 0; s < 16; ++s) {
    const int nearest = std::clamp(nearestInt(scales[s] / d), -128, 128);
    double bestError = INFINITY;
    const Q6KCodes codes = q6KCodes(nearest);
    for (int i = 0; i < codes.count; ++i) {
      const int code = codes.code[i];
      const double error = roundQ6KSubBlock(x + 16 * s, d * float(code), candidate);
      if (error < bestError) {
        bestError = error, stored[s] = int8_t(code);
        std::memcpy(levels + 16 * s, candidate, 16);
      }
    }
    total += bestError;
  }
  packQ6KLevels(levels, out, out + 128);
  return total;
}

/// One Q6_K super-block: fit each 16-weight sub-block (weights sigma^2 +
/// x^2, sigma^2 the block's mean square), then store the scales on an int8
/// grid where the largest lands on -128, 128 (stored negated), 127 or -127,
/// keeping the grid that rounds the block best. (A sub-block's sign is free
/// unless it uses level -32; trying each lets values already on a Q6_K
/// grid come back exactly.)
void quantizeQ6_KBlock(const float *x, uint8_t *out) {
  float sum2 = 0;
  for (int i = 0; i < 256; ++i)
    sum2 += x[i] * x[i];
  const float sigma2 = sum2 / 256;
  float scales[16], maxScale = 0;
  for (int s = 0; s < 16; ++s) {
    float w[16];
    for (int l = 0; l < 16; ++l)
      w[l] = sigma2 + x[16 * s + l] * x[16 * s + l];
    scales[s] = fitSymmetric(x + 16 * s, w, 16, 32);
    if (std::fabs(scales[s]) > std::fabs(maxScale))
      maxScale = scales[s];
  }
  if (maxScale == 0) {
    uint8_t levels[256];
    std::memset(levels, 32, sizeof levels); // All zero: d = 0, q = 0.
    std::memset(out, 0, size_t(kQ6_KBlockBytes));
    packQ6KLevels(levels, out, out + 128);
    return;
  }
  double bestError = INFINITY;
  for (float pivot : {-128.0f, 128.0f, 127.0f, -127.0f}) {
    uint8_t candidate[kQ6_KBlockBytes];
    const double error = writeQ6KBlock(x, scales, maxScale / pivot, candidate);
    if (error < bestError) {
      bestError = error;
      std::memcpy(out, candidate, sizeof candidate);
    }
  }
}

/// Applies `block` to each block of `count` values.
void eachBlock(const float *src, int64_t count, uint8_t *dst, SourceDType type,
               void (*block)(const float *, uint8_t *)) {
  const int64_t elements = blockElements(type), bytes = blockBytes(type);
  for (int64_t b = 0; b < count / elements; ++b)
    block(src + b * elements, dst + b * bytes);
}

} // namespace

uint16_t floatToHalf(float value) {
  const uint32_t bits = floatBits(value);
  const uint16_t sign = uint16_t((bits >> 16) & 0x8000);
  const uint32_t magnitude = bits & 0x7FFFFFFF;
  if (magnitude > 0x7F800000)
    return sign | 0x7E00; // NaN.
  if (magnitude >= 0x477FF000)
    return sign | 0x7C00; // 65520 and up round to infinity.
  if (magnitude < 0x38800000) {
    // Below 2^-14: a multiple of 2^-24 (F16 subnormals); zero for float
    // subnormals, which are far below 2^-25.
    const uint32_t exponent = magnitude >> 23;
    if (exponent == 0)
      return sign;
    const uint32_t mantissa = (magnitude & 0x7FFFFF) | 0x800000;
    return uint16_t(sign | shiftRoundEven(mantissa, int(126 - exponent)));
  }
  // Normal: rebias the exponent, round the mantissa to 10 bits (a carry
  // into the exponent is the right result).
  const uint32_t rebiased = magnitude - (uint32_t(127 - 15) << 23);
  return uint16_t(sign | shiftRoundEven(rebiased, 13));
}

uint16_t floatToBfloat16(float value) {
  const uint32_t bits = floatBits(value);
  if ((bits & 0x7FFFFFFF) > 0x7F800000)
    return uint16_t((bits >> 16) | 0x40); // NaN: made quiet, sign kept.
  return uint16_t(shiftRoundEven(bits, 16));
}

void quantizeRow(SourceDType type, const float *src, int64_t count, uint8_t *dst) {
  switch (type) {
  case SourceDType::F32:
    std::memcpy(dst, src, size_t(count) * 4);
    return;
  case SourceDType::F16:
    for (int64_t i = 0; i < count; ++i)
      storeU16(dst + 2 * i, floatToHalf(src[i]));
    return;
  case SourceDType::BF16:
    for (int64_t i = 0; i < count; ++i)
      storeU16(dst + 2 * i, floatToBfloat16(src[i]));
    return;
  case SourceDType::Q8_0:
    return eachBlock(src, count, dst, type, quantizeQ8_0Block);
  case SourceDType::Q4_0:
    return eachBlock(src, count, dst, type, quantizeQ4_0Block);
  case SourceDType::Q4_K:
    return eachBlock(src, count, dst, type, quantizeQ4_KBlock);
  case SourceDType::Q6_K:
    return eachBlock(src, count, dst, type, quantizeQ6_KBlock);
  }
}

} // namespace quill
