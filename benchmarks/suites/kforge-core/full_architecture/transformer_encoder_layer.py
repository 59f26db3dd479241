import torch
import torch.nn as nn
import torch.nn.functional as F

# One pre-LayerNorm transformer encoder layer (ViT/BERT-style, no mask, no dropout):
# x = x + Proj(MHA(LN1(x)));  x = x + FC2(GELU(FC1(LN2(x)))).
BATCH = 8
SEQ = 512
DIM = 512
HEADS = 8
FF = 2048


class Model(nn.Module):
    def __init__(self, dim, heads, ff):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, ff)
        self.fc2 = nn.Linear(ff, dim)
        with torch.no_grad():  # non-trivial affine parameters, as in a trained model
            for ln in (self.ln1, self.ln2):
                ln.weight.uniform_(0.5, 1.5)
                ln.bias.normal_(0.0, 0.1)

    def forward(self, x):
        b, s, d = x.shape
        hd = d // self.heads
        qkv = self.qkv(self.ln1(x)).reshape(b, s, 3, self.heads, hd).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        att = torch.softmax((q @ k.transpose(-2, -1)) * (hd ** -0.5), dim=-1)
        o = (att @ v).transpose(1, 2).reshape(b, s, d)
        x = x + self.proj(o)
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


def get_inputs():
    return [torch.randn(BATCH, SEQ, DIM)]


def get_init_inputs():
    return [DIM, HEADS, FF]
