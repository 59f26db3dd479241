import torch
import torch.nn as nn

# One AdamW step (decoupled weight decay, bias correction; torch.optim.AdamW semantics) on a
# flat parameter buffer at optimizer step STEP. Returns the updated
# (param, exp_avg, exp_avg_sq) instead of updating in place.
NUMEL = 33554432
LR = 1e-3
BETA1 = 0.9
BETA2 = 0.999
EPS = 1e-8
WEIGHT_DECAY = 0.01
STEP = 10


class Model(nn.Module):
    def __init__(self, lr, beta1, beta2, eps, weight_decay, step):
        super().__init__()
        self.lr = lr
        self.beta1 = beta1
        self.beta2 = beta2
        self.eps = eps
        self.weight_decay = weight_decay
        self.step = step

    def forward(self, param, grad, exp_avg, exp_avg_sq):
        p = param * (1.0 - self.lr * self.weight_decay)
        m = self.beta1 * exp_avg + (1.0 - self.beta1) * grad
        v = self.beta2 * exp_avg_sq + (1.0 - self.beta2) * grad * grad
        bias_correction1 = 1.0 - self.beta1 ** self.step
        bias_correction2 = 1.0 - self.beta2 ** self.step
        denom = v.sqrt() / (bias_correction2 ** 0.5) + self.eps
        p = p - (self.lr / bias_correction1) * (m / denom)
        return p, m, v


def get_inputs():
    param = torch.randn(NUMEL) * 0.02
    grad = torch.randn(NUMEL)
    exp_avg = torch.randn(NUMEL) * 0.1
    exp_avg_sq = torch.rand(NUMEL) * 0.01
    return [param, grad, exp_avg, exp_avg_sq]


def get_init_inputs():
    return [LR, BETA1, BETA2, EPS, WEIGHT_DECAY, STEP]
