# kforge Triton exemplar (full_architecture): x + W_down(silu(W_gate h) * W_up h), h = rmsnorm(x) * g.
# Inputs: x, then the parameters in named_parameters() order: norm_weight [DIM], w_gate.weight
# [HIDDEN, DIM], w_up.weight [HIDDEN, DIM], w_down.weight [DIM, HIDDEN]. eps = 1e-6 (the task's EPS).
# Three kernels: RMSNorm; both up-projections with the SiLU gate fused; down-projection with the
# residual add fused. Products in IEEE fp32 (no TF32: the task is fp32).
import torch
import triton
import triton.language as tl


@triton.jit
def rmsnorm_kernel(x_ptr, g_ptr, h_ptr, dim, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < dim
    x = tl.load(x_ptr + row * dim + cols, mask=mask, other=0.0).to(tl.float32)
    r = tl.rsqrt(tl.sum(x * x, axis=0) / dim + eps)
    tl.store(h_ptr + row * dim + cols, x * r * tl.load(g_ptr + cols, mask=mask), mask=mask)


@triton.jit
def gate_up_kernel(h_ptr, wg_ptr, wu_ptr, a_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    g = tl.zeros((BM, BN), dtype=tl.float32)
    u = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        ka = k0 + rk
        h = tl.load(h_ptr + rm[:, None] * K + ka[None, :], mask=(rm[:, None] < M) & (ka[None, :] < K), other=0.0)
        wmask = (ka[:, None] < K) & (rn[None, :] < N)
        wg = tl.load(wg_ptr + rn[None, :] * K + ka[:, None], mask=wmask, other=0.0)  # W_gate^T tile
        wu = tl.load(wu_ptr + rn[None, :] * K + ka[:, None], mask=wmask, other=0.0)
        g += tl.dot(h, wg, input_precision="ieee")
        u += tl.dot(h, wu, input_precision="ieee")
    a = g * tl.sigmoid(g) * u
    tl.store(a_ptr + rm[:, None] * N + rn[None, :], a, mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def down_residual_kernel(a_ptr, wd_ptr, x_ptr, out_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                         BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        ka = k0 + rk
        a = tl.load(a_ptr + rm[:, None] * K + ka[None, :], mask=(rm[:, None] < M) & (ka[None, :] < K), other=0.0)
        w = tl.load(wd_ptr + rn[None, :] * K + ka[:, None], mask=(ka[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, w, input_precision="ieee")
    omask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :], mask=omask, other=0.0)
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], x + acc, mask=omask)


def kf_forward(x, norm_weight, w_gate, w_up, w_down):
    x = x.contiguous()
    dim = x.shape[-1]
    hidden = w_gate.shape[0]
    rows = x.numel() // dim
    h = torch.empty_like(x)
    rmsnorm_kernel[(rows,)](x, norm_weight, h, dim, 1e-6, BLOCK=triton.next_power_of_2(dim))
    a = torch.empty((rows, hidden), dtype=x.dtype, device=x.device)
    BM, BN, BK = 32, 64, 32
    gate_up_kernel[(triton.cdiv(rows, BM), triton.cdiv(hidden, BN))](h, w_gate.contiguous(), w_up.contiguous(), a,
                                                                     rows, hidden, dim, BM=BM, BN=BN, BK=BK)
    out = torch.empty_like(x)
    down_residual_kernel[(triton.cdiv(rows, BM), triton.cdiv(dim, BN))](a, w_down.contiguous(), x, out, rows, dim,
                                                                        hidden, BM=BM, BN=BN, BK=BK)
    return out
