"""A fused decode-attention kernel over a paged KV cache (CUDA C++, compiled by NVRTC through CuPy).

What serving engines run for decode (vLLM's paged attention, FlashInfer's decode, FlashAttention's
split-KV "flash-decoding"): one kernel streams each sequence's cached K and V once, through a block
table, with an online softmax, so the KV bytes are read once and nothing else of size L is
written. This one follows the same plan, written plainly so it compiles anywhere NVRTC does:

- cache layout [num_blocks, BLOCK_TOKENS, kv_heads, HEAD_DIM] in bf16 (vLLM's FlashAttention
  backend layout), pages found through block_table[b, t / BLOCK_TOKENS];
- grid (batch, kv_heads, splits): a CTA serves one KV head of one sequence over one slice of its
  tokens, for all GROUP query heads that share that KV head (grouped-query attention reads each
  KV byte once for the whole group);
- a token is read by HEAD_DIM / 8 lanes with one 16-byte load each for K and for V; each slot
  requests UNROLL (4) tokens' rows before using any, to keep more bytes in flight;
- per-slot online softmax (exp2 with the log2(e) scale folded into q), rescaled once per UNROLL
  tokens, slots merged in shared memory, splits merged by a second small kernel (split-KV).
Version 1 (two tokens per step, a rescale per token, splits of at least 256 tokens) reached
1.88 TB/s (39% of an H200's 4.8 TB/s) at large batch and about 40 us at any batch-1 context up to
4k on 2026-11-30: latency-bound (too few bytes in flight per SM, a serial chain per token).

No header is included (bf16 is converted by bit shifts, -inf spelt by its bits), so NVRTC needs no
CUDA include path.
The benchmark checks its output against a float64 reference before timing it.
"""

from __future__ import annotations

BLOCK_TOKENS = 16  # vLLM's default page size, in tokens
THREADS = 128

# What both versions share: the layout macros, bf16 conversion, and the kernel that merges the splits.
_PRELUDE = r"""
#ifndef GROUP
#error GROUP (query heads per KV head) must be defined
#endif
#ifndef HEAD_DIM
#error HEAD_DIM must be defined
#endif
#define VEC 8
#define LANES (HEAD_DIM / VEC)
#define THREADS 128
#define SLOTS (THREADS / LANES)
#define BLOCK_TOKENS 16
"""

# bf16 conversion and -inf, shared by the GQA kernels here and the MLA kernel (paged_mla_kernel.py).
BF16_HELPERS = r"""
// -infinity by its bits: NVRTC without headers may not define INFINITY
#define NEG_INF __int_as_float(0xff800000)

__device__ __forceinline__ void bf16x8_to_float(const uint4 w, float* f) {
    const unsigned int u[4] = {w.x, w.y, w.z, w.w};
    #pragma unroll
    for (int i = 0; i < 4; ++i) {
        f[2 * i] = __uint_as_float(u[i] << 16);
        f[2 * i + 1] = __uint_as_float(u[i] & 0xffff0000u);
    }
}

__device__ __forceinline__ unsigned short float_to_bf16(float f) {
    unsigned int b = __float_as_uint(f);
    b += 0x7fffu + ((b >> 16) & 1u);  // round to nearest even
    return (unsigned short)(b >> 16);
}

"""
_PRELUDE += BF16_HELPERS

_COMBINE = r"""
extern "C" __global__ void paged_decode_combine(const float* __restrict__ part_o, const float* __restrict__ part_ml,
                                                unsigned short* __restrict__ out, int splits)
{
    // grid (B * Hq), block HEAD_DIM threads: merge the splits of one head.
    const long long head = blockIdx.x;
    const int d = threadIdx.x;
    float mm = NEG_INF;
    for (int s = 0; s < splits; ++s) mm = fmaxf(mm, part_ml[(head * splits + s) * 2]);
    float ll = 0.f, o = 0.f;
    for (int s = 0; s < splits; ++s) {
        const float ms = part_ml[(head * splits + s) * 2];
        if (ms == NEG_INF) continue;
        const float w = exp2f(ms - mm);
        ll += part_ml[(head * splits + s) * 2 + 1] * w;
        o += part_o[(head * splits + s) * HEAD_DIM + d] * w;
    }
    out[head * HEAD_DIM + d] = float_to_bf16(ll > 0.f ? o / ll : 0.f);
}
"""

# Both versions' split kernel: its signature and set-up, and the merge of the slots at its end;
# they differ only in the loop over the split's tokens.
_SPLIT_HEAD = r"""
extern "C" __global__ void __launch_bounds__(THREADS)
paged_decode_split(const unsigned short* __restrict__ q,        // [B, Hkv*GROUP, D] bf16
                   const unsigned short* __restrict__ k_cache,  // [blocks, BLOCK_TOKENS, Hkv, D] bf16
                   const unsigned short* __restrict__ v_cache,
                   const int* __restrict__ block_table,         // [B, max_blocks]
                   const int* __restrict__ seq_lens,            // [B]
                   float* __restrict__ part_o,                  // [B, Hq, S, D]
                   float* __restrict__ part_ml,                 // [B, Hq, S, 2]
                   int num_kv_heads, int max_blocks, int tokens_per_split, float scale_log2)
{
    const int b = blockIdx.x, h = blockIdx.y, s = blockIdx.z, S = gridDim.z;
    const int slot = threadIdx.x / LANES, lane = threadIdx.x % LANES;
    const int Hq = num_kv_heads * GROUP;
    const int len = seq_lens[b];
    const int t_begin = s * tokens_per_split;
    const int t_end = len < t_begin + tokens_per_split ? len : t_begin + tokens_per_split;
    const int* bt = block_table + (long long)b * max_blocks;

    float qf[GROUP][VEC], acc[GROUP][VEC], m[GROUP], l[GROUP];
    #pragma unroll
    for (int g = 0; g < GROUP; ++g) {
        const uint4 w = *reinterpret_cast<const uint4*>(q + ((long long)(b * Hq + h * GROUP + g)) * HEAD_DIM + lane * VEC);
        bf16x8_to_float(w, qf[g]);
        #pragma unroll
        for (int i = 0; i < VEC; ++i) { qf[g][i] *= scale_log2; acc[g][i] = 0.f; }
        m[g] = NEG_INF; l[g] = 0.f;
    }

"""

_SPLIT_TAIL = r"""    __shared__ float sm_ml[SLOTS][GROUP][2];
    __shared__ float sm_acc[SLOTS][GROUP][HEAD_DIM];
    #pragma unroll
    for (int g = 0; g < GROUP; ++g) {
        if (lane == 0) { sm_ml[slot][g][0] = m[g]; sm_ml[slot][g][1] = l[g]; }
        #pragma unroll
        for (int i = 0; i < VEC; ++i) sm_acc[slot][g][lane * VEC + i] = acc[g][i];
    }
    __syncthreads();
    for (int idx = threadIdx.x; idx < GROUP * HEAD_DIM; idx += THREADS) {
        const int g = idx / HEAD_DIM, d = idx % HEAD_DIM;
        float mm = NEG_INF;
        #pragma unroll
        for (int j = 0; j < SLOTS; ++j) mm = fmaxf(mm, sm_ml[j][g][0]);
        float ll = 0.f, o = 0.f;
        if (mm != NEG_INF) {
            #pragma unroll
            for (int j = 0; j < SLOTS; ++j) {
                const float w = exp2f(sm_ml[j][g][0] - mm);  // exp2(-inf) = 0 for empty slots
                ll += sm_ml[j][g][1] * w;
                o += sm_acc[j][g][d] * w;
            }
        }
        const long long head = (long long)b * Hq + h * GROUP + g;
        part_o[(head * S + s) * HEAD_DIM + d] = o;
        if (d == 0) { part_ml[(head * S + s) * 2] = mm; part_ml[(head * S + s) * 2 + 1] = ll; }
    }
}

"""

# Version 2: UNROLL tokens in flight per slot, one rescale per UNROLL tokens.
SOURCE = _PRELUDE + r"""
#ifndef UNROLL
#define UNROLL 4
#endif""" + _SPLIT_HEAD + r"""    // UNROLL tokens per slot per iteration: their block-table entries, then all their K and V rows
    // (UNROLL x 2 x 16 bytes per lane) are requested before any is used, and the running max and
    // the rescale of the accumulator are applied once per UNROLL tokens, not once per token.
    // The loop bounds are the same for every slot, so the lanes of a warp (two slots when
    // HEAD_DIM = 128) always reach the shuffles together; a token past the end gets weight 0.
    for (int base = t_begin; base < t_end; base += UNROLL * SLOTS) {
        int row[UNROLL];
        bool ok[UNROLL];
        #pragma unroll
        for (int j = 0; j < UNROLL; ++j) {
            const int t = base + j * SLOTS + slot;
            ok[j] = t < t_end;
            const int r = ok[j] ? t : t_begin;
            row[j] = bt[r / BLOCK_TOKENS] * BLOCK_TOKENS + r % BLOCK_TOKENS;
        }
        uint4 kw[UNROLL], vw[UNROLL];
        #pragma unroll
        for (int j = 0; j < UNROLL; ++j) {
            const long long off = ((long long)row[j] * num_kv_heads + h) * HEAD_DIM + lane * VEC;
            kw[j] = *reinterpret_cast<const uint4*>(k_cache + off);
            vw[j] = *reinterpret_cast<const uint4*>(v_cache + off);
        }
        #pragma unroll
        for (int g = 0; g < GROUP; ++g) {
            float dot[UNROLL];
            #pragma unroll
            for (int j = 0; j < UNROLL; ++j) {
                float kf[VEC];
                bf16x8_to_float(kw[j], kf);
                float d = 0.f;
                #pragma unroll
                for (int i = 0; i < VEC; ++i) d += qf[g][i] * kf[i];
                dot[j] = d;
            }
            #pragma unroll
            for (int off = LANES / 2; off > 0; off >>= 1) {
                #pragma unroll
                for (int j = 0; j < UNROLL; ++j) dot[j] += __shfl_xor_sync(0xffffffffu, dot[j], off);
            }
            float m_new = m[g];
            #pragma unroll
            for (int j = 0; j < UNROLL; ++j) if (ok[j]) m_new = fmaxf(m_new, dot[j]);
            // exp2(-inf) = 0 once the first token arrives; a slot with no token yet keeps corr = 1
            // (exp2(-inf - -inf) would be NaN)
            const float corr = m_new == NEG_INF ? 1.f : exp2f(m[g] - m_new);
            float psum = 0.f;
            #pragma unroll
            for (int i = 0; i < VEC; ++i) acc[g][i] *= corr;
            #pragma unroll
            for (int j = 0; j < UNROLL; ++j) {
                const float p = ok[j] ? exp2f(dot[j] - m_new) : 0.f;
                psum += p;
                float vf[VEC];
                bf16x8_to_float(vw[j], vf);
                #pragma unroll
                for (int i = 0; i < VEC; ++i) acc[g][i] += p * vf[i];
            }
            l[g] = l[g] * corr + psum;
            m[g] = m_new;
        }
    }

""" + _SPLIT_TAIL + _COMBINE

# Version 1, kept as the fallback the benchmark uses (and says so) if version 2 fails its check.
SOURCE_V1 = _PRELUDE + _SPLIT_HEAD + r"""    // The loop bounds are the same for every slot, so the lanes of a warp (two slots when
    // HEAD_DIM = 128) always reach the shuffles together; a slot past the end masks its update.
    for (int base = t_begin; base < t_end; base += 2 * SLOTS) {
        const int t0 = base + slot, t1 = base + SLOTS + slot;
        const bool ok0 = t0 < t_end, ok1 = t1 < t_end;
        const int r0 = ok0 ? t0 : t_begin, r1 = ok1 ? t1 : t_begin;
        const long long row0 = ((long long)bt[r0 / BLOCK_TOKENS] * BLOCK_TOKENS + r0 % BLOCK_TOKENS) * num_kv_heads + h;
        const long long row1 = ((long long)bt[r1 / BLOCK_TOKENS] * BLOCK_TOKENS + r1 % BLOCK_TOKENS) * num_kv_heads + h;
        const uint4 kw0 = *reinterpret_cast<const uint4*>(k_cache + row0 * HEAD_DIM + lane * VEC);
        const uint4 vw0 = *reinterpret_cast<const uint4*>(v_cache + row0 * HEAD_DIM + lane * VEC);
        const uint4 kw1 = *reinterpret_cast<const uint4*>(k_cache + row1 * HEAD_DIM + lane * VEC);
        const uint4 vw1 = *reinterpret_cast<const uint4*>(v_cache + row1 * HEAD_DIM + lane * VEC);
        #pragma unroll
        for (int u = 0; u < 2; ++u) {
            const bool ok = u == 0 ? ok0 : ok1;
            float kf[VEC], vf[VEC];
            bf16x8_to_float(u == 0 ? kw0 : kw1, kf);
            bf16x8_to_float(u == 0 ? vw0 : vw1, vf);
            #pragma unroll
            for (int g = 0; g < GROUP; ++g) {
                float dot = 0.f;
                #pragma unroll
                for (int i = 0; i < VEC; ++i) dot += qf[g][i] * kf[i];
                #pragma unroll
                for (int off = LANES / 2; off > 0; off >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, off);
                if (ok) {
                    const float m_new = fmaxf(m[g], dot);
                    const float corr = exp2f(m[g] - m_new);
                    const float p = exp2f(dot - m_new);
                    l[g] = l[g] * corr + p;
                    #pragma unroll
                    for (int i = 0; i < VEC; ++i) acc[g][i] = acc[g][i] * corr + p * vf[i];
                    m[g] = m_new;
                }
            }
        }
    }

""" + _SPLIT_TAIL + _COMBINE

SOURCES = {"v2": SOURCE, "v1": SOURCE_V1}

def splits_for(batch: int, kv_heads: int, max_seq_len: int, sm_count: int, min_tokens_per_split: int = 128) -> int:
    """Split-KV factor: enough CTAs to fill the GPU about eight deep, but no split shorter than
    min_tokens_per_split tokens (a short split spends more on its merge than it saves).

    Example, H200 (132 SMs), Qwen3-8B (8 KV heads): batch 1 at 4096 tokens -> 32 splits of 128;
    batch 256 -> 1 split (2048 CTAs already)."""
    want = -(-8 * sm_count // max(batch * kv_heads, 1))
    most = max(1, max_seq_len // min_tokens_per_split)
    return max(1, min(want, most))

# The split merge, reused by the MLA kernel with HEAD_DIM defined as its latent width.
COMBINE = _COMBINE
