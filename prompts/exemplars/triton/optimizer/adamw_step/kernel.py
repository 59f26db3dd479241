# kforge Triton exemplar (optimizer): one AdamW step, returning (param, exp_avg, exp_avg_sq).
# The hyperparameters are the task's constants (LR, BETA1, BETA2, EPS, WEIGHT_DECAY, STEP).
import torch
import triton
import triton.language as tl

LR, BETA1, BETA2, EPS, WEIGHT_DECAY, STEP = 1e-3, 0.9, 0.999, 1e-8, 0.01, 10


@triton.jit
def adamw_kernel(p_ptr, g_ptr, m_ptr, v_ptr, po_ptr, mo_ptr, vo_ptr, n, lr, beta1, beta2, eps, wd, bc1, bc2_sqrt,
                 BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    p = tl.load(p_ptr + offs, mask=mask)
    g = tl.load(g_ptr + offs, mask=mask)
    m = beta1 * tl.load(m_ptr + offs, mask=mask) + (1.0 - beta1) * g
    v = beta2 * tl.load(v_ptr + offs, mask=mask) + (1.0 - beta2) * g * g
    p = p * (1.0 - lr * wd)
    denom = tl.sqrt(v) / bc2_sqrt + eps
    tl.store(po_ptr + offs, p - (lr / bc1) * (m / denom), mask=mask)
    tl.store(mo_ptr + offs, m, mask=mask)
    tl.store(vo_ptr + offs, v, mask=mask)


def kf_forward(param, grad, exp_avg, exp_avg_sq):
    n = param.numel()
    p_out = torch.empty_like(param)
    m_out = torch.empty_like(param)
    v_out = torch.empty_like(param)
    bc1 = 1.0 - BETA1**STEP
    bc2_sqrt = (1.0 - BETA2**STEP) ** 0.5
    BLOCK = 1024
    adamw_kernel[(triton.cdiv(n, BLOCK),)](param, grad, exp_avg, exp_avg_sq, p_out, m_out, v_out, n, LR, BETA1, BETA2,
                                           EPS, WEIGHT_DECAY, bc1, bc2_sqrt, BLOCK=BLOCK)
    return p_out, m_out, v_out
