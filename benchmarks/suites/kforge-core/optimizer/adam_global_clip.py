import torch
import torch.nn as nn

# Gradient clipping by global L2 norm (torch.nn.utils.clip_grad_norm_ semantics) followed by
# one Adam step with bias correction, on a flat parameter buffer. The threshold is half the
# expected gradient norm, so clipping is active. Returns (param, exp_avg, exp_avg_sq,
# total_norm), total_norm being the 0-d pre-clipping gradient norm that trainers log.
NUMEL = 33554432
MAX_NORM = 0.5 * NUMEL ** 0.5
LR = 1e-3
BETA1 = 0.9
BETA2 = 0.999
EPS = 1e-8
STEP = 100


class Model(nn.Module):
    def __init__(self, max_norm, lr, beta1, beta2, eps, step):
        super().__init__()
        self.max_norm = max_norm
        self.lr = lr
        self.beta1 = beta1
        self.beta2 = beta2
        self.eps = eps
        self.step = step

    def forward(self, param, grad, exp_avg, exp_avg_sq):
        total_norm = torch.linalg.vector_norm(grad, 2)
        clip_coef = torch.clamp(self.max_norm / (total_norm + 1e-6), max=1.0)
        g = grad * clip_coef
        m = self.beta1 * exp_avg + (1.0 - self.beta1) * g
        v = self.beta2 * exp_avg_sq + (1.0 - self.beta2) * g * g
        bias_correction1 = 1.0 - self.beta1 ** self.step
        bias_correction2 = 1.0 - self.beta2 ** self.step
        denom = v.sqrt() / (bias_correction2 ** 0.5) + self.eps
        p = param - (self.lr / bias_correction1) * (m / denom)
        return p, m, v, total_norm


def get_inputs():
    param = torch.randn(NUMEL) * 0.02
    grad = torch.randn(NUMEL)
    exp_avg = torch.randn(NUMEL) * 0.1
    exp_avg_sq = torch.rand(NUMEL) * 0.01
    return [param, grad, exp_avg, exp_avg_sq]


def get_init_inputs():
    return [MAX_NORM, LR, BETA1, BETA2, EPS, STEP]
