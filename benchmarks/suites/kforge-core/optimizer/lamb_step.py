import torch
import torch.nn as nn

# One LAMB step (You et al. 2020) over LAYERS parameter tensors of SIZE elements each,
# stored as the rows of one (LAYERS, SIZE) buffer: an Adam direction with bias correction
# plus decoupled weight decay, rescaled per layer by the trust ratio ||p|| / ||update||.
# Rows have different scales, so every layer gets its own ratio. Returns the updated
# (param, exp_avg, exp_avg_sq).
LAYERS = 64
SIZE = 524288
LR = 0.01
BETA1 = 0.9
BETA2 = 0.999
EPS = 1e-6
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
        m = self.beta1 * exp_avg + (1.0 - self.beta1) * grad
        v = self.beta2 * exp_avg_sq + (1.0 - self.beta2) * grad * grad
        m_hat = m / (1.0 - self.beta1 ** self.step)
        v_hat = v / (1.0 - self.beta2 ** self.step)
        update = m_hat / (v_hat.sqrt() + self.eps) + self.weight_decay * param
        p_norm = torch.linalg.vector_norm(param, 2, dim=1, keepdim=True)
        u_norm = torch.linalg.vector_norm(update, 2, dim=1, keepdim=True)
        trust = torch.where((p_norm > 0) & (u_norm > 0), p_norm / u_norm, torch.ones_like(p_norm))
        p = param - self.lr * trust * update
        return p, m, v


def get_inputs():
    param = torch.randn(LAYERS, SIZE) * (0.01 + torch.rand(LAYERS, 1))
    grad = torch.randn(LAYERS, SIZE) * (0.01 + torch.rand(LAYERS, 1))
    exp_avg = torch.randn(LAYERS, SIZE) * 0.01
    exp_avg_sq = torch.rand(LAYERS, SIZE) * 1e-4
    return [param, grad, exp_avg, exp_avg_sq]


def get_init_inputs():
    return [LR, BETA1, BETA2, EPS, WEIGHT_DECAY, STEP]
