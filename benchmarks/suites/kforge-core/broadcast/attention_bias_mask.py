import torch
import torch.nn as nn

# Attention logits before softmax: scaled scores plus a per-head relative position
# bias (broadcast over the batch) plus a key-padding bias (broadcast over heads and
# queries); padded keys (key_mask == 0) get -10000.
BATCH = 16
HEADS = 16
SEQ = 512
HEAD_DIM = 64


class Model(nn.Module):
    def __init__(self, head_dim):
        super().__init__()
        self.scale = head_dim ** -0.5

    def forward(self, scores, pos_bias, key_mask):
        pad_bias = (1 - key_mask).to(scores.dtype) * -10000.0
        return scores * self.scale + pos_bias.unsqueeze(0) + pad_bias[:, None, None, :]


def get_inputs():
    scores = torch.randn(BATCH, HEADS, SEQ, SEQ) * 8.0
    pos_bias = torch.randn(HEADS, SEQ, SEQ)
    key_mask = torch.randint(0, 2, (BATCH, SEQ))
    return [scores, pos_bias, key_mask]


def get_init_inputs():
    return [HEAD_DIM]
