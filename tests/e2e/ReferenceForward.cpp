// llama2.c run.c forward pass, step by step, with a minimal checkpoint reader.
#include "tests/e2e/ReferenceForward.h"

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

/// o = weight * x / rms(x), with llama2.c's epsilon placement.
void rmsnorm(float *o, const float *x, const float *weight, int size) {
  float ss = 0.0f;
  for (int j = 0; j < size; j++)
    ss += x[j] * x[j];
  ss /= size;
  ss += 1e-5f;
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

} // namespace

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
  ReferenceModel m;
  ModelConfig &c = m.config_;
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

  // Lay the weights out in file order; 128-bit sizes cannot overflow with
  // fields capped at 2^24.
  using Wide = unsigned __int128;
  const Wide dim = c.dim, hidden = c.hiddenDim, layers = c.nLayers, vocab = c.vocabSize,
             kvDim = Wide(c.kvDim());
  Wide cursor = 0;
  auto take = [&](Wide count) {
    Wide start = cursor;
    cursor += count;
    return size_t(start);
  };
  Offsets &o = m.off_;
  auto takeLayerMatrices = [&] {
    o.wq = take(layers * dim * dim);
    o.wk = take(layers * kvDim * dim);
    o.wv = take(layers * kvDim * dim);
    o.wo = take(layers * dim * dim);
  };
  if (!isV1) {
    o.tokenEmbedding = take(vocab * dim);
    o.rmsAtt = take(layers * dim);
    takeLayerMatrices();
    o.rmsFfn = take(layers * dim);
    o.w1 = take(layers * hidden * dim);
    o.w2 = take(layers * dim * hidden);
    o.w3 = take(layers * hidden * dim);
    o.rmsFinal = take(dim);
    take(Wide(c.seqLen) * (c.headDim() / 2)); // freq_cis_real (unused)
    take(Wide(c.seqLen) * (c.headDim() / 2)); // freq_cis_imag (unused)
  } else {
    o.rmsAtt = take(layers * dim);
    o.rmsFfn = take(layers * dim);
    o.rmsFinal = take(dim);
    o.tokenEmbedding = take(vocab * dim);
    takeLayerMatrices();
    o.w1 = take(layers * hidden * dim);
    o.w2 = take(layers * dim * hidden);
    o.w3 = take(layers * hidden * dim);
  }
  o.wcls = shared ? o.tokenEmbedding : take(vocab * dim);

  std::fseek(file.get(), 0, SEEK_END);
  long fileBytes = std::ftell(file.get());
  if (fileBytes < 0 || Wide(fileBytes) != Wide(headerBytes) + cursor * 4)
    return Status::error(path + ": file size does not match its header");
  m.weights_.resize(size_t(cursor));
  std::fseek(file.get(), headerBytes, SEEK_SET);
  if (std::fread(m.weights_.data(), sizeof(float), m.weights_.size(), file.get()) !=
      m.weights_.size())
    return Status::error(path + ": short read");

  size_t cacheFloats = size_t(c.nLayers) * c.seqLen * c.kvDim();
  m.keyCache_.assign(cacheFloats, 0.0f);
  m.valueCache_.assign(cacheFloats, 0.0f);
  return ErrorOr<ReferenceModel>(std::move(m));
}

std::vector<float> ReferenceModel::forward(int token, int pos) {
  const ModelConfig &p = config_;
  if (token < 0 || token >= p.vocabSize || pos < 0 || pos >= p.seqLen)
    return {};
  const int dim = p.dim;
  const int kvDim = p.kvDim();
  const int kvMul = p.nHeads / p.nKvHeads; // query heads per kv head (GQA)
  const int hiddenDim = p.hiddenDim;
  const int headSize = p.headDim();

  std::vector<float> x(dim), xb(dim), xb2(dim), q(dim);
  std::vector<float> hb(hiddenDim), hb2(hiddenDim), att(p.seqLen);

  // The residual stream starts as the token's embedding row.
  std::memcpy(x.data(), at(off_.tokenEmbedding) + size_t(token) * dim, dim * sizeof(float));

  for (int l = 0; l < p.nLayers; l++) {
    // Attention rmsnorm.
    rmsnorm(xb.data(), x.data(), at(off_.rmsAtt) + size_t(l) * dim, dim);

    // q, k, v for this position; k and v go straight into the cache.
    size_t loff = size_t(l) * p.seqLen * kvDim;
    float *k = keyCache_.data() + loff + size_t(pos) * kvDim;
    float *v = valueCache_.data() + loff + size_t(pos) * kvDim;
    matmul(q.data(), xb.data(), at(off_.wq) + size_t(l) * dim * dim, dim, dim);
    matmul(k, xb.data(), at(off_.wk) + size_t(l) * dim * kvDim, dim, kvDim);
    matmul(v, xb.data(), at(off_.wv) + size_t(l) * dim * kvDim, dim, kvDim);

    // RoPE: rotate each (i, i+1) pair by pos * freq; q spans dim, k kvDim.
    for (int i = 0; i < dim; i += 2) {
      int headDim = i % headSize;
      float freq = 1.0f / powf(p.ropeTheta, headDim / (float)headSize);
      float val = pos * freq;
      float fcr = cosf(val);
      float fci = sinf(val);
      int rotn = i < kvDim ? 2 : 1; // 2 = rotate q and k, 1 = q only
      for (int r = 0; r < rotn; r++) {
        float *vec = r == 0 ? q.data() : k;
        float v0 = vec[i];
        float v1 = vec[i + 1];
        vec[i] = v0 * fcr - v1 * fci;
        vec[i + 1] = v0 * fci + v1 * fcr;
      }
    }

    // Multi-head attention over positions 0..pos; head h reads kv head
    // h / kvMul.
    for (int h = 0; h < p.nHeads; h++) {
      const float *qh = q.data() + h * headSize;
      for (int t = 0; t <= pos; t++) {
        const float *kt = keyCache_.data() + loff + size_t(t) * kvDim + (h / kvMul) * headSize;
        float score = 0.0f;
        for (int i = 0; i < headSize; i++)
          score += qh[i] * kt[i];
        score /= sqrtf(headSize);
        att[t] = score;
      }
      softmax(att.data(), pos + 1);
      // Weighted sum of the values into this head's slice of xb.
      float *xbh = xb.data() + h * headSize;
      std::memset(xbh, 0, headSize * sizeof(float));
      for (int t = 0; t <= pos; t++) {
        const float *vt = valueCache_.data() + loff + size_t(t) * kvDim + (h / kvMul) * headSize;
        float a = att[t];
        for (int i = 0; i < headSize; i++)
          xbh[i] += a * vt[i];
      }
    }

    // Output projection, then the residual connection.
    matmul(xb2.data(), xb.data(), at(off_.wo) + size_t(l) * dim * dim, dim, dim);
    for (int i = 0; i < dim; i++)
      x[i] += xb2[i];

    // FFN rmsnorm.
    rmsnorm(xb.data(), x.data(), at(off_.rmsFfn) + size_t(l) * dim, dim);

    // SwiGLU: w2(silu(w1 x) * (w3 x)).
    matmul(hb.data(), xb.data(), at(off_.w1) + size_t(l) * dim * hiddenDim, dim, hiddenDim);
    matmul(hb2.data(), xb.data(), at(off_.w3) + size_t(l) * dim * hiddenDim, dim, hiddenDim);
    for (int i = 0; i < hiddenDim; i++) {
      float val = hb[i];
      val *= (1.0f / (1.0f + expf(-val))); // silu(x) = x * sigmoid(x)
      val *= hb2[i];
      hb[i] = val;
    }
    matmul(xb.data(), hb.data(), at(off_.w2) + size_t(l) * dim * hiddenDim, hiddenDim, dim);

    // Residual connection.
    for (int i = 0; i < dim; i++)
      x[i] += xb[i];
  }

  // Final rmsnorm, then the classifier into logits.
  rmsnorm(x.data(), x.data(), at(off_.rmsFinal), dim);
  std::vector<float> logits(p.vocabSize);
  matmul(logits.data(), x.data(), at(off_.wcls), dim, p.vocabSize);
  return logits;
}
