import torch
import torch.nn as nn

# Token-embedding lookup: a (BATCH, SEQ) tensor of int64 token ids selects rows of a
# (VOCAB, DIM) embedding table (a learned parameter).
BATCH = 8
SEQ = 4096
VOCAB = 32000
DIM = 2048


class Model(nn.Module):
    def __init__(self, vocab, dim):
        super().__init__()
        self.embedding = nn.Embedding(vocab, dim)

    def forward(self, ids):
        return self.embedding(ids)


def get_inputs():
    return [torch.randint(0, VOCAB, (BATCH, SEQ))]


def get_init_inputs():
    return [VOCAB, DIM]
