import torch

def no_separator(x):
    return torch.abs(x)

def test_no_separator():
    return {"test_case_1": no_separator(torch.ones(2))}
