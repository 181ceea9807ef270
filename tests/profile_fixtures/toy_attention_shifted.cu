// A toy of SageAttention's fused main loop, written for sagetui's profile tests: int8 Q.K^T,
// dequantization, an online-softmax update, a P.V accumulation and a normalize/store, each an
// inlined __device__ function named like SageAttention's, so that nvdisasm -gi records the
// same kind of inline chains and rules.py's names apply. record.sh profiles it with ncu.
#include <cuda_fp16.h>
#include <nvtx3/nvToolsExt.h>
#include <cstdint>
#include <cstdio>
#include <vector>

constexpr int D = 64;          // head dim (int8 values; D / 4 packed words per row)
constexpr int W = D / 4;
constexpr int CTA_K = 32;      // keys per tile
constexpr int THREADS = 128;   // one query row per thread

__device__ __forceinline__ void load_global_to_share(const int *K, const half *V, int *sK,



                                                     half *sV, int tile) {
  for (int i = threadIdx.x; i < CTA_K * W; i += blockDim.x) sK[i] = K[tile * CTA_K * W + i];
  for (int i = threadIdx.x; i < CTA_K * D; i += blockDim.x) sV[i] = V[tile * CTA_K * D + i];
}

__device__ __forceinline__ void compute_int_qk(const int *q, const int *sK, int *s) {



#pragma unroll
  for (int j = 0; j < CTA_K; j++) {
    int acc = 0;
#pragma unroll
    for (int w = 0; w < W; w++) acc = __dp4a(q[w], sK[j * W + w], acc);
    s[j] = acc;
  }
}

__device__ __forceinline__ void update_mdo(float *s, float *o, float &m, float &d) {



  float m_new = m;
#pragma unroll
  for (int j = 0; j < CTA_K; j++) m_new = fmaxf(m_new, s[j]);
  const float rescale = exp2f(m - m_new);
  d *= rescale;
#pragma unroll
  for (int c = 0; c < D; c++) o[c] *= rescale;
#pragma unroll
  for (int j = 0; j < CTA_K; j++) {
    s[j] = exp2f(s[j] - m_new);
    d += s[j];
  }
  m = m_new;
}

__device__ __forceinline__ void compute_fp16_sv(const float *p, const half *sV, float *o) {



#pragma unroll 4
  for (int j = 0; j < CTA_K; j++) {
#pragma unroll
    for (int c = 0; c < D; c++) o[c] += p[j] * __half2float(sV[j * D + c]);
  }
}

__device__ __forceinline__ void normalize_d(float *o, float d) {



#pragma unroll
  for (int c = 0; c < D; c++) o[c] /= d;
}

__global__ void toy_attention_kernel(const int *Q, const int *K, const half *V, half *O,
                                     const float *Q_scale, const float *K_scale, int kv_tiles) {
  __shared__ int sK[CTA_K * W];
  __shared__ half sV[CTA_K * D];
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  int q[W];
#pragma unroll
  for (int w = 0; w < W; w++) q[w] = Q[row * W + w];
  const float q_scale = Q_scale[row];
  float o[D];
#pragma unroll
  for (int c = 0; c < D; c++) o[c] = 0.0f;
  float m = -5000000.0f, d = 1.0f;
  for (int iter = 0; iter < kv_tiles; iter++) {
    __syncthreads();
    load_global_to_share(K, V, sK, sV, iter);
    __syncthreads();
    int s[CTA_K];
    compute_int_qk(q, sK, s);
    const float dequant_scale = q_scale * K_scale[iter];
    float s_f32[CTA_K];
#pragma unroll
    for (int j = 0; j < CTA_K; j++) s_f32[j] = __int2float_rz(s[j]) * dequant_scale;
    update_mdo(s_f32, o, m, d);
    compute_fp16_sv(s_f32, sV, o);
  }
  normalize_d(o, d);
#pragma unroll
  for (int c = 0; c < D; c++) O[row * D + c] = __float2half(o[c]);
}

int main() {
  const int rows = 132 * 4 * THREADS, kv_tiles = 256;
  std::vector<int> hq(rows * W, 0x01020304), hk(kv_tiles * CTA_K * W, 0x01010101);
  std::vector<half> hv(kv_tiles * CTA_K * D, __float2half(0.5f));
  std::vector<float> hs(rows > kv_tiles ? rows : kv_tiles, 0.01f);
  int *q, *k;
  half *v, *o;
  float *qs, *ks;
  cudaMalloc(&q, hq.size() * 4);
  cudaMalloc(&k, hk.size() * 4);
  cudaMalloc(&v, hv.size() * 2);
  cudaMalloc(&o, size_t(rows) * D * 2);
  cudaMalloc(&qs, hs.size() * 4);
  cudaMalloc(&ks, hs.size() * 4);
  cudaMemcpy(q, hq.data(), hq.size() * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(k, hk.data(), hk.size() * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(v, hv.data(), hv.size() * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(qs, hs.data(), hs.size() * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(ks, hs.data(), hs.size() * 4, cudaMemcpyHostToDevice);
  toy_attention_kernel<<<rows / THREADS, THREADS>>>(q, k, v, o, qs, ks, kv_tiles);  // warm-up
  nvtxRangePushA("toy");
  toy_attention_kernel<<<rows / THREADS, THREADS>>>(q, k, v, o, qs, ks, kv_tiles);
  nvtxRangePop();
  cudaError_t err = cudaDeviceSynchronize();
  half out;
  cudaMemcpy(&out, o, 2, cudaMemcpyDeviceToHost);
  printf("toy_attention: %s, O[0] = %f\n", cudaGetErrorString(err), __half2float(out));
  return err == cudaSuccess ? 0 : 1;
}
