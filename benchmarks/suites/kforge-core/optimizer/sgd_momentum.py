import torch
import torch.nn as nn

# One step of SGD with Nesterov momentum and L2 weight decay on a flat parameter buffer
# (torch.optim.SGD semantics, momentum buffer already initialised). Returns the updated
# (param, momentum_buffer) instead of updating in place.
NUMEL = 33554432
LR = 0.05
MOMENTUM = 0.9
WEIGHT_DECAY = 1e-4


class Model(nn.Module):
    def __init__(self, lr, momentum, weight_decay):
        super().__init__()
        self.lr = lr
        self.momentum = momentum
        self.weight_decay = weight_decay

    def forward(self, param, grad, momentum_buffer):
        d_p = grad + self.weight_decay * param
        buf = self.momentum * momentum_buffer + d_p
        d_p = d_p + self.momentum * buf
        new_param = param - self.lr * d_p
        return new_param, buf


def get_inputs():
    return [torch.randn(NUMEL), torch.randn(NUMEL), torch.randn(NUMEL) * 0.5]


def get_init_inputs():
    return [LR, MOMENTUM, WEIGHT_DECAY]
