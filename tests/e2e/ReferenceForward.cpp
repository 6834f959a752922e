// llama2.c run.c forward pass, step by step, with a minimal checkpoint reader.
#include "tests/e2e/ReferenceForward.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>

using namespace quill;

namespace {

struct FileCloser {
  void operator()(std::FILE *f) const { std::fclose(f); }
};

/// `x` rounded to bfloat16 and back: round-to-nearest-even on the 16 bits
/// dropped from the f32 (NaN kept a NaN).
float roundToBf16(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return x;
  bits = (bits + 0x7fffu + ((bits >> 16) & 1u)) & 0xffff0000u;
  std::memcpy(&x, &bits, 4);
  return x;
}

/// `x` rounded to IEEE binary16 and back, to nearest even: 11 significant
/// bits for normals, a fixed step of 2^-24 below 2^-14, +-inf past 65504.
float roundToF16(float x) {
  const float magnitude = std::fabs(x);
  if (!(magnitude < 65520.0f)) // 65520 and up round to inf (NaN stays NaN).
    return std::isnan(x) ? x : std::copysign(INFINITY, x);
  int exponent;
  std::frexp(magnitude, &exponent); // magnitude = f * 2^exponent, f in [0.5, 1)
  // The step between neighbouring halves at this magnitude.
  const int stepExponent = std::max(exponent, -13) - 11;
  const float step = std::ldexp(1.0f, stepExponent);
  // nearbyint rounds half to even in the default rounding mode.
  return std::copysign(std::nearbyint(magnitude / step) * step, x);
}

/// `row` (whole blocks of 32) quantized to GGUF Q8_0 blocks and read back,
/// as a cache write and read do: d = amax / 127, q = x / d rounded half to
/// even (ggml-cpu's AVX quantize_row_q8_0 rounds with _MM_ROUND_NEAREST),
/// the stored scale d rounded to fp16, each value fp16(d) * q.
void roundToQ8_0(float *row, int size) {
  for (int block = 0; block < size; block += 32) {
    float amax = 0.0f;
    for (int i = 0; i < 32; i++)
      amax = std::max(amax, std::fabs(row[block + i]));
    const float d = amax / 127.0f;
    const float inverse = d != 0.0f ? 1.0f / d : 0.0f;
    const float stored = roundToF16(d);
    for (int i = 0; i < 32; i++)
      row[block + i] = stored * std::nearbyint(row[block + i] * inverse);
  }
}

/// o = weight * x / rms(x), with llama2.c's epsilon placement.
void rmsnorm(float *o, const float *x, const float *weight, int size, float eps) {
  float ss = 0.0f;
  for (int j = 0; j < size; j++)
    ss += x[j] * x[j];
  ss /= size;
  ss += eps;
  ss = 1.0f / sqrtf(ss);
  for (int j = 0; j < size; j++)
    o[j] = weight[j] * (ss * x[j]);
}

/// In-place softmax over size values, shifted by the max for stability.
void softmax(float *x, int size) {
  float maxVal = x[0];
  for (int i = 1; i < size; i++)
    if (x[i] > maxVal)
      maxVal = x[i];
  float sum = 0.0f;
  for (int i = 0; i < size; i++) {
    x[i] = expf(x[i] - maxVal);
    sum += x[i];
  }
  for (int i = 0; i < size; i++)
    x[i] /= sum;
}

/// xout(d) = W(d, n) @ x(n), W row-major (row = output).
void matmul(float *xout, const float *x, const float *w, int n, int d) {
  for (int i = 0; i < d; i++) {
    float val = 0.0f;
    for (int j = 0; j < n; j++)
      val += w[size_t(i) * n + j] * x[j];
    xout[i] = val;
  }
}

/// x rounded to Q8_0 blocks of 32 and back (llama.cpp's quantize_row_q8_0
/// with its SIMD paths' round-half-even).
std::vector<float> roundedToQ8_0(const float *x, int n) {
  std::vector<float> out(x, x + n);
  for (int start = 0; start < n; start += 32) {
    float amax = 0.0f;
    for (int i = start; i < start + 32 && i < n; ++i)
      amax = std::max(amax, std::fabs(x[i]));
    const float d = amax / 127.0f;
    const float inverse = d != 0.0f ? 1.0f / d : 0.0f;
    for (int i = start; i < start + 32 && i < n; ++i)
      out[i] = std::nearbyint(x[i] * inverse) * d;
  }
  return out;
}

} // namespace

void ReferenceModel::product(float *xout, const float *x, const std::string &name, int n,
                             int d) const {
  if (q8Inputs_.count(name)) {
    std::vector<float> rounded = roundedToQ8_0(x, n);
    matmul(xout, rounded.data(), weight(name), n, d);
    return;
  }
  if (bf16Inputs_.count(name)) {
    std::vector<float> rounded(x, x + n);
    for (float &v : rounded)
      v = roundToBf16(v);
    matmul(xout, rounded.data(), weight(name), n, d);
    return;
  }
  matmul(xout, x, weight(name), n, d);
}

ErrorOr<ReferenceModel> ReferenceModel::load(const std::string &path) {
  std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "rb"));
  if (!file)
    return Status::error(path + ": cannot open");
  int32_t first[2] = {0, 0};
  if (std::fread(first, 4, 2, file.get()) != 2)
    return Status::error(path + ": too short for a llama2.c header");

  // v1 files start with the bytes "24ka" (0x616b3432 little-endian) and a
  // version; legacy files start directly with the seven parameters.
  const bool isV1 = uint32_t(first[0]) == 0x616b3432u;
  int32_t p[7];
  long headerBytes = 28;
  bool shared = true;
  if (isV1) {
    if (first[1] != 1)
      return Status::error(path + ": unsupported v1 version");
    unsigned char header[256];
    std::rewind(file.get());
    if (std::fread(header, 1, 256, file.get()) != 256)
      return Status::error(path + ": too short for a v1 header");
    std::memcpy(p, header + 8, sizeof(p));
    shared = header[8 + sizeof(p)] != 0;
    headerBytes = 256;
  } else {
    std::rewind(file.get());
    if (std::fread(p, 4, 7, file.get()) != 7)
      return Status::error(path + ": too short for a legacy header");
    // A negative vocab size means a separate classifier follows the weights.
    if (p[5] < 0 && p[5] > INT32_MIN) {
      shared = false;
      p[5] = -p[5];
    }
  }
  for (int32_t v : p)
    if (v <= 0 || v > (1 << 24))
      return Status::error(path + ": header field out of range");
  ModelConfig c;
  c.dim = p[0];
  c.hiddenDim = p[1];
  c.nLayers = p[2];
  c.nHeads = p[3];
  c.nKvHeads = p[4];
  c.vocabSize = p[5];
  c.seqLen = p[6];
  c.sharedClassifier = shared;
  if (c.dim % c.nHeads != 0 || c.nHeads % c.nKvHeads != 0 || c.headDim() % 2 != 0)
    return Status::error(path + ": inconsistent head counts");

  // The weights in file order, as (name, count) blocks; 128-bit sizes
  // cannot overflow with fields capped at 2^24.
  using Wide = unsigned __int128;
  const Wide dim = c.dim, hidden = c.hiddenDim, vocab = c.vocabSize, kvDim = Wide(c.kvDim());
  std::vector<std::pair<std::string, Wide>> blocks;
  auto perLayer = [&](const char *kind, Wide count) {
    for (int l = 0; l < c.nLayers; ++l)
      blocks.emplace_back("layers." + std::to_string(l) + "." + kind, count);
  };
  auto layerMatrices = [&] {
    perLayer("wq", dim * dim);
    perLayer("wk", kvDim * dim);
    perLayer("wv", kvDim * dim);
    perLayer("wo", dim * dim);
  };
  const Wide freqCis = Wide(c.seqLen) * (c.headDim() / 2);
  if (!isV1) {
    blocks.emplace_back("tok_embeddings", vocab * dim);
    perLayer("attention_norm", dim);
    layerMatrices();
    perLayer("ffn_norm", dim);
    perLayer("w1", hidden * dim);
    perLayer("w2", dim * hidden);
    perLayer("w3", hidden * dim);
    blocks.emplace_back("norm", dim);
    blocks.emplace_back("", 2 * freqCis); // freq_cis_real, freq_cis_imag (unused)
  } else {
    perLayer("attention_norm", dim);
    perLayer("ffn_norm", dim);
    blocks.emplace_back("norm", dim);
    blocks.emplace_back("tok_embeddings", vocab * dim);
    layerMatrices();
    perLayer("w1", hidden * dim);
    perLayer("w2", dim * hidden);
    perLayer("w3", hidden * dim);
  }
  if (!shared)
    blocks.emplace_back("output", vocab * dim);
  Wide floats = 0;
  for (const auto &block : blocks)
    floats += block.second;

  std::fseek(file.get(), 0, SEEK_END);
  long fileBytes = std::ftell(file.get());
  if (fileBytes < 0 || Wide(fileBytes) != Wide(headerBytes) + floats * 4)
    return Status::error(path + ": file size does not match its header");
  std::fseek(file.get(), headerBytes, SEEK_SET);
  ReferenceTensors tensors;
  for (const auto &[name, count] : blocks) {
    std::vector<float> values(static_cast<size_t>(count));
    if (std::fread(values.data(), sizeof(float), values.size(), file.get()) != values.size())
      return Status::error(path + ": short read");
    if (!name.empty())
      tensors[name] = std::move(values);
  }
  return fromTensors(c, std::move(tensors));
}

ErrorOr<ReferenceModel> ReferenceModel::fromTensors(const ModelConfig &config,
                                                    ReferenceTensors tensors,
                                                    std::vector<float> ropeFrequencies,
                                                    float attentionFactor) {
  ReferenceModel m;
  m.config_ = config;
  const ModelConfig &c = m.config_;
  const size_t dim = size_t(c.dim), hidden = size_t(c.hiddenDim), qDim = size_t(c.qDim()),
               kvDim = size_t(c.kvDim()), vocab = size_t(c.vocabSize),
               headDim = size_t(c.headDim());
  std::vector<std::pair<std::string, size_t>> expected = {{"tok_embeddings", vocab * dim},
                                                          {"norm", dim}};
  if (!c.sharedClassifier)
    expected.emplace_back("output", vocab * dim);
  for (int l = 0; l < c.nLayers; ++l) {
    std::string p = "layers." + std::to_string(l) + ".";
    for (auto [kind, count] : {std::pair{"attention_norm", dim},
                               {"wq", qDim * dim},
                               {"wk", kvDim * dim},
                               {"wv", kvDim * dim},
                               {"wo", dim * qDim},
                               {"ffn_norm", dim},
                               {"w1", hidden * dim},
                               {"w2", dim * hidden},
                               {"w3", hidden * dim}})
      expected.emplace_back(p + kind, count);
    if (c.qkvBias)
      for (auto [kind, count] : {std::pair{"bq", qDim}, {"bk", kvDim}, {"bv", kvDim}})
        expected.emplace_back(p + kind, count);
    if (c.qkNorm)
      for (const char *kind : {"q_norm", "k_norm"})
        expected.emplace_back(p + kind, headDim);
  }
  for (const auto &[name, count] : expected) {
    auto it = tensors.find(name);
    if (it == tensors.end() || it->second.size() != count)
      return Status::error("reference model: tensor " + name + " is missing or of the wrong size");
  }
  if (!ropeFrequencies.empty() && ropeFrequencies.size() * 2 != headDim)
    return Status::error("reference model: the RoPE table needs head_dim / 2 entries");
  m.tensors_ = std::move(tensors);
  m.ropeFrequencies_ = std::move(ropeFrequencies);
  m.attentionFactor_ = attentionFactor;
  size_t cacheFloats = size_t(c.nLayers) * c.seqLen * kvDim;
  m.keyCache_.assign(cacheFloats, 0.0f);
  m.valueCache_.assign(cacheFloats, 0.0f);
  return ErrorOr<ReferenceModel>(std::move(m));
}

std::vector<float> ReferenceModel::forward(int token, int pos) {
  const ModelConfig &p = config_;
  if (token < 0 || token >= p.vocabSize || pos < 0 || pos >= p.seqLen)
    return {};
  const int dim = p.dim;
  const int qDim = p.qDim(); // nHeads * headSize: dim unless the heads are wider
  const int kvDim = p.kvDim();
  const int kvMul = p.nHeads / p.nKvHeads; // query heads per kv head (GQA)
  const int hiddenDim = p.hiddenDim;
  const int headSize = p.headDim();
  const float eps = p.normEps;

  std::vector<float> x(dim), xb(std::max(dim, qDim)), xb2(dim), q(qDim);
  std::vector<float> hb(hiddenDim), hb2(hiddenDim), att(p.seqLen);

  // The residual stream starts as the token's embedding row.
  std::memcpy(x.data(), weight("tok_embeddings") + size_t(token) * dim, dim * sizeof(float));

  for (int l = 0; l < p.nLayers; l++) {
    // Attention rmsnorm.
    rmsnorm(xb.data(), x.data(), layerWeight(l, "attention_norm"), dim, eps);

    // q, k, v for this position; k and v go straight into the cache.
    size_t loff = size_t(l) * p.seqLen * kvDim;
    float *k = keyCache_.data() + loff + size_t(pos) * kvDim;
    float *v = valueCache_.data() + loff + size_t(pos) * kvDim;
    layerProduct(q.data(), xb.data(), l, "wq", dim, qDim);
    layerProduct(k, xb.data(), l, "wk", dim, kvDim);
    layerProduct(v, xb.data(), l, "wv", dim, kvDim);

    // Qwen2: biases on q, k and v.
    if (p.qkvBias) {
      for (int i = 0; i < qDim; i++)
        q[i] += layerWeight(l, "bq")[i];
      for (int i = 0; i < kvDim; i++) {
        k[i] += layerWeight(l, "bk")[i];
        v[i] += layerWeight(l, "bv")[i];
      }
    }

    // Qwen3: each head of q and of k RMS-normalized by its own weight.
    if (p.qkNorm) {
      for (int h = 0; h < p.nHeads; h++)
        rmsnorm(q.data() + h * headSize, q.data() + h * headSize, layerWeight(l, "q_norm"),
                headSize, eps);
      for (int h = 0; h < p.nKvHeads; h++)
        rmsnorm(k + h * headSize, k + h * headSize, layerWeight(l, "k_norm"), headSize, eps);
    }

    // RoPE: rotate each (i, i+1) pair by pos * freq; q spans qDim, k kvDim.
    for (int i = 0; i < qDim; i += 2) {
      int headDim = i % headSize;
      float freq = ropeFrequencies_.empty() ? 1.0f / powf(p.ropeTheta, headDim / (float)headSize)
                                            : ropeFrequencies_[headDim / 2];
      float val = pos * freq;
      float fcr = cosf(val) * attentionFactor_;
      float fci = sinf(val) * attentionFactor_;
      int rotn = i < kvDim ? 2 : 1; // 2 = rotate q and k, 1 = q only
      for (int r = 0; r < rotn; r++) {
        float *vec = r == 0 ? q.data() : k;
        float v0 = vec[i];
        float v1 = vec[i + 1];
        vec[i] = v0 * fcr - v1 * fci;
        vec[i + 1] = v0 * fci + v1 * fcr;
      }
    }

    // The cache keeps k and v in its element type; attention reads them back.
    if (cacheType_ == KVType::Q8_0) {
      roundToQ8_0(k, kvDim);
      roundToQ8_0(v, kvDim);
    } else if (cacheType_ != KVType::F32) {
      float (*round)(float) = cacheType_ == KVType::F16 ? roundToF16 : roundToBf16;
      for (int i = 0; i < kvDim; i++) {
        k[i] = round(k[i]);
        v[i] = round(v[i]);
      }
    }

    // Multi-head attention over positions 0..pos (Mistral: the last
    // slidingWindow of them); head h reads kv head h / kvMul.
    const int from = p.slidingWindow > 0 ? std::max(0, pos - p.slidingWindow + 1) : 0;
    for (int h = 0; h < p.nHeads; h++) {
      const float *qh = q.data() + h * headSize;
      for (int t = from; t <= pos; t++) {
        const float *kt = keyCache_.data() + loff + size_t(t) * kvDim + (h / kvMul) * headSize;
        float score = 0.0f;
        for (int i = 0; i < headSize; i++)
          score += qh[i] * kt[i];
        score /= sqrtf(headSize);
        att[t] = score;
      }
      softmax(att.data() + from, pos + 1 - from);
      // Weighted sum of the values into this head's slice of xb.
      float *xbh = xb.data() + h * headSize;
      std::memset(xbh, 0, headSize * sizeof(float));
      for (int t = from; t <= pos; t++) {
        const float *vt = valueCache_.data() + loff + size_t(t) * kvDim + (h / kvMul) * headSize;
        float a = att[t];
        for (int i = 0; i < headSize; i++)
          xbh[i] += a * vt[i];
      }
    }

    // Output projection, then the residual connection.
    layerProduct(xb2.data(), xb.data(), l, "wo", qDim, dim);
    for (int i = 0; i < dim; i++)
      x[i] += xb2[i];

    // FFN rmsnorm.
    rmsnorm(xb.data(), x.data(), layerWeight(l, "ffn_norm"), dim, eps);

    // SwiGLU: w2(silu(w1 x) * (w3 x)).
    layerProduct(hb.data(), xb.data(), l, "w1", dim, hiddenDim);
    layerProduct(hb2.data(), xb.data(), l, "w3", dim, hiddenDim);
    for (int i = 0; i < hiddenDim; i++) {
      float val = hb[i];
      val *= (1.0f / (1.0f + expf(-val))); // silu(x) = x * sigmoid(x)
      val *= hb2[i];
      hb[i] = val;
    }
    layerProduct(xb.data(), hb.data(), l, "w2", hiddenDim, dim);

    // Residual connection.
    for (int i = 0; i < dim; i++)
      x[i] += xb[i];
  }

  // Final rmsnorm, then the classifier into logits.
  rmsnorm(x.data(), x.data(), weight("norm"), dim, eps);
  std::vector<float> logits(p.vocabSize);
  product(logits.data(), x.data(), p.sharedClassifier ? "tok_embeddings" : "output", dim,
          p.vocabSize);
  return logits;
}
