import torch
import torch.nn as nn
import torch.nn.functional as F

# Top-1 mixture-of-experts feed-forward: every token goes through the two-layer GELU MLP of
# the expert a router picked for it, and the result is scaled by the router's gate value.
# Expert ids and gates are inputs (computed upstream), so the work is two grouped GEMMs
# over variable-sized token groups with a GELU and a per-row scale in between.
TOKENS = 4096
DIM = 1024
HIDDEN = 2048
EXPERTS = 8


class Model(nn.Module):
    def __init__(self, experts, dim, hidden):
        super().__init__()
        self.w_in = nn.Parameter(torch.randn(experts, dim, hidden) * dim ** -0.5)
        self.w_out = nn.Parameter(torch.randn(experts, hidden, dim) * hidden ** -0.5)

    def forward(self, x, expert_ids, gates):
        out = torch.zeros_like(x)
        for e in range(self.w_in.shape[0]):
            rows = (expert_ids == e).nonzero(as_tuple=True)[0]
            if rows.numel() == 0:
                continue
            h = F.gelu(x.index_select(0, rows) @ self.w_in[e])
            y = (h @ self.w_out[e]) * gates.index_select(0, rows).unsqueeze(1)
            out.index_copy_(0, rows, y)
        return out


def get_inputs():
    x = torch.randn(TOKENS, DIM)
    expert_ids = torch.randint(0, EXPERTS, (TOKENS,))
    gates = torch.rand(TOKENS)
    return [x, expert_ids, gates]


def get_init_inputs():
    return [EXPERTS, DIM, HIDDEN]
