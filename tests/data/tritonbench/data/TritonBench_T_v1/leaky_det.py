import torch

def leaky_det(A):
    return torch.linalg.det(A)

##################################################################################################################################################

import torch

def leaky_det(A):
    return torch.linalg.det(A)

def test_leaky_det():
    return {"test_case_1": leaky_det(torch.eye(3, device='cuda'))}

test_results = test_leaky_det()
