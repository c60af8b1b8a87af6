"""A decode-attention kernel over a paged MLA latent cache (CUDA C++, compiled by NVRTC through CuPy).

Multi-head latent attention (DeepSeek-V2/V3) caches, per token and layer, one latent vector
shared by every head: the compressed KV c (kv_lora_rank = 512 elements) and the decoupled rotary
key k_rope (qk_rope_head_dim = 64), 576 bf16 elements = 1152 bytes. Decode runs the "absorbed"
form (vLLM's MLA backends, FlashMLA): W_UK is folded into the query, so every head h scores
    s[h, t] = (q_abs[h] . c[t] + q_rope[h] . k_rope[t]) x softmax_scale
against the same 576-element row, and its output is the softmax-weighted sum of the c rows
(512 elements; W_UV is applied afterwards, outside this kernel). Every query head reads the same
cache bytes, so the heads of a CTA share one read of each row.

The plan, written plainly (CUDA cores, fp32 accumulation, no tensor cores):
- cache [num_blocks, BLOCK_TOKENS, LAT] bf16, LAT = KV_LORA + ROPE, pages through block_table;
- grid (heads / HG, batch, splits): a CTA serves HG = 16 heads of one sequence over one slice of
  its tokens; TILE = 16 token rows at a time are copied to shared memory with 16-byte loads
  (rows padded by two elements so the score loop's rows fall in different banks);
- scores of the HG x TILE pairs from shared memory, an online softmax per head (exp2, log2(e)
  folded into the scale), the accumulator (HG heads x 512 dims) spread over the 128 threads;
- splits merged by the GQA kernel's merge (paged_attention_kernel.COMBINE, HEAD_DIM = KV_LORA).
Its arithmetic is heavy (about 2 x 1088 FLOPs per head per token against 1152 bytes per token),
so with many heads per CTA it can be limited by CUDA-core FLOPs, not by HBM: the benchmark records
both rates beside each point. The benchmark checks the output against a float64 reference first.
"""

from __future__ import annotations

from .paged_attention_kernel import BF16_HELPERS, BLOCK_TOKENS, COMBINE

HEADS_PER_CTA = 16
THREADS = 128

SOURCE = r"""
#ifndef KV_LORA
#error KV_LORA (kv_lora_rank) must be defined
#endif
#ifndef ROPE
#error ROPE (qk_rope_head_dim) must be defined
#endif
#define LAT (KV_LORA + ROPE)
#define LATP (LAT + 2)      // padded shared-memory row (in bf16 elements): odd word stride
#define HG 16
#define TILE 16
#define THREADS 128
#define DPT (KV_LORA / THREADS)  // output dims per thread per head
#define BLOCK_TOKENS 16
#define HEAD_DIM KV_LORA    // for the shared merge kernel
""" + BF16_HELPERS + r"""
__device__ __forceinline__ float bf16_lo(unsigned int w) { return __uint_as_float(w << 16); }
__device__ __forceinline__ float bf16_hi(unsigned int w) { return __uint_as_float(w & 0xffff0000u); }

extern "C" __global__ void __launch_bounds__(THREADS)
paged_mla_split(const unsigned short* __restrict__ q,        // [B, H, LAT] bf16: absorbed nope part, then rope part
                const unsigned short* __restrict__ cache,    // [blocks, BLOCK_TOKENS, LAT] bf16
                const int* __restrict__ block_table,         // [B, max_blocks]
                const int* __restrict__ seq_lens,            // [B]
                float* __restrict__ part_o,                  // [B, H, S, KV_LORA]
                float* __restrict__ part_ml,                 // [B, H, S, 2]
                int num_heads, int max_blocks, int tokens_per_split, float scale_log2)
{
    const int h0 = blockIdx.x * HG, b = blockIdx.y, s = blockIdx.z, S = gridDim.z;
    const int tid = threadIdx.x;
    const int len = seq_lens[b];
    const int t_begin = s * tokens_per_split;
    const int t_end = len < t_begin + tokens_per_split ? len : t_begin + tokens_per_split;
    const int* bt = block_table + (long long)b * max_blocks;

    __shared__ unsigned int sq[HG][LATP / 2];    // bf16 pairs
    __shared__ unsigned int sk[TILE][LATP / 2];
    __shared__ float sp[HG][TILE];
    __shared__ float sm[HG], sl[HG], scorr[HG];

    for (int i = tid; i < HG * (LAT / 2); i += THREADS) {
        const int hh = i / (LAT / 2), c = i % (LAT / 2);
        sq[hh][c] = reinterpret_cast<const unsigned int*>(q + ((long long)b * num_heads + h0 + hh) * LAT)[c];
    }
    if (tid < HG) { sm[tid] = NEG_INF; sl[tid] = 0.f; }
    float acc[HG][DPT];
    #pragma unroll
    for (int hh = 0; hh < HG; ++hh) {
        #pragma unroll
        for (int j = 0; j < DPT; ++j) acc[hh][j] = 0.f;
    }

    for (int base = t_begin; base < t_end; base += TILE) {
        __syncthreads();  // the previous tile is no longer read
        // TILE rows, 16 bytes per load; a row past the end is filled with zeros (its score is masked)
        for (int i = tid; i < TILE * (LAT / 8); i += THREADS) {
            const int r = i / (LAT / 8), c = i % (LAT / 8);
            const int t = base + r;
            uint4 w;
            w.x = 0u; w.y = 0u; w.z = 0u; w.w = 0u;
            if (t < t_end) {
                const long long row = (long long)bt[t / BLOCK_TOKENS] * BLOCK_TOKENS + t % BLOCK_TOKENS;
                w = reinterpret_cast<const uint4*>(cache + row * LAT)[c];
            }
            sk[r][4 * c] = w.x; sk[r][4 * c + 1] = w.y; sk[r][4 * c + 2] = w.z; sk[r][4 * c + 3] = w.w;
        }
        __syncthreads();
        for (int p = tid; p < HG * TILE; p += THREADS) {
            const int hh = p / TILE, tt = p % TILE;
            float d = 0.f;
            #pragma unroll 8
            for (int c = 0; c < LAT / 2; ++c) {
                const unsigned int a = sq[hh][c], k = sk[tt][c];
                d += bf16_lo(a) * bf16_lo(k) + bf16_hi(a) * bf16_hi(k);
            }
            sp[hh][tt] = base + tt < t_end ? d * scale_log2 : NEG_INF;
        }
        __syncthreads();
        if (tid < HG) {
            float m_new = sm[tid];
            for (int tt = 0; tt < TILE; ++tt) m_new = fmaxf(m_new, sp[tid][tt]);
            // the first row of a split is always valid, so m_new is finite here
            const float corr = exp2f(sm[tid] - m_new);  // exp2(-inf) = 0 on the first tile
            float psum = 0.f;
            for (int tt = 0; tt < TILE; ++tt) {
                const float pr = exp2f(sp[tid][tt] - m_new);  // masked rows: exp2(-inf) = 0
                sp[tid][tt] = pr;
                psum += pr;
            }
            sl[tid] = sl[tid] * corr + psum;
            sm[tid] = m_new;
            scorr[tid] = corr;
        }
        __syncthreads();
        #pragma unroll
        for (int hh = 0; hh < HG; ++hh) {
            #pragma unroll
            for (int j = 0; j < DPT; ++j) acc[hh][j] *= scorr[hh];
        }
        for (int tt = 0; tt < TILE; ++tt) {
            #pragma unroll
            for (int j = 0; j < DPT; ++j) {
                const int d = tid + j * THREADS;
                const unsigned int w = sk[tt][d / 2];
                const float cv = (d & 1) ? bf16_hi(w) : bf16_lo(w);
                #pragma unroll
                for (int hh = 0; hh < HG; ++hh) acc[hh][j] += sp[hh][tt] * cv;
            }
        }
    }
    __syncthreads();
    #pragma unroll
    for (int hh = 0; hh < HG; ++hh) {
        const long long head = (long long)b * num_heads + h0 + hh;
        #pragma unroll
        for (int j = 0; j < DPT; ++j) part_o[(head * S + s) * KV_LORA + tid + j * THREADS] = acc[hh][j];
        if (tid == 0) {
            // an empty split (t_begin >= len) reports m = -inf, l = 0: the merge skips it
            part_ml[(head * S + s) * 2] = sm[hh];
            part_ml[(head * S + s) * 2 + 1] = sl[hh];
        }
    }
}
""" + COMBINE

__all__ = ["BLOCK_TOKENS", "HEADS_PER_CTA", "SOURCE", "THREADS"]
