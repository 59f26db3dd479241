# kforge Triton exemplar (fusion, a GEMM with an epilogue): y = GELU(x @ W^T + b), erf GELU, fp32
# with IEEE products (no TF32: the task is fp32). Inputs: x [M, K], then fc.weight W [N, K] and
# fc.bias b [N]. W^T is read through its strides (no copy); the bias and GELU are applied to the
# accumulator tile before its one store, so y is written once and never read back.
import torch
import triton
import triton.language as tl


@triton.jit
def gemm_bias_gelu_kernel(x_ptr, w_ptr, b_ptr, y_ptr, M, N, K, sxm, sxk, swn, swk, sym, syn,
                          BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        ka = k0 + rk
        a = tl.load(x_ptr + rm[:, None] * sxm + ka[None, :] * sxk, mask=(rm[:, None] < M) & (ka[None, :] < K),
                    other=0.0)
        # W^T[k, n] = W[n, k]: a [BK, BN] tile read through W's strides.
        bt = tl.load(w_ptr + ka[:, None] * swk + rn[None, :] * swn, mask=(ka[:, None] < K) & (rn[None, :] < N),
                     other=0.0)
        acc += tl.dot(a, bt, input_precision="ieee")
    acc += tl.load(b_ptr + rn, mask=rn < N, other=0.0)[None, :]
    y = 0.5 * acc * (1.0 + tl.erf(acc * 0.7071067811865476))
    tl.store(y_ptr + rm[:, None] * sym + rn[None, :] * syn, y, mask=(rm[:, None] < M) & (rn[None, :] < N))


def kf_forward(x, weight, bias):
    K = x.shape[-1]
    x2 = x.reshape(-1, K)
    M, N = x2.shape[0], weight.shape[0]
    y = torch.empty((M, N), dtype=x.dtype, device=x.device)
    BM, BN, BK = 64, 64, 32
    gemm_bias_gelu_kernel[(triton.cdiv(M, BM), triton.cdiv(N, BN))](
        x2, weight, bias, y, M, N, K, x2.stride(0), x2.stride(1), weight.stride(0), weight.stride(1), y.stride(0),
        y.stride(1), BM=BM, BN=BN, BK=BK)
    return y.reshape(*x.shape[:-1], N)
