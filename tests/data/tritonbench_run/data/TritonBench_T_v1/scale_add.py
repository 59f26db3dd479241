import torch

def scale_add(input, other, alpha=1.0):
    return torch.add(input, other, alpha=alpha)

##################################################################################################################################################


import torch

def test_scale_add():
    results = {}
    x = torch.arange(6, dtype=torch.float32, device='cuda')
    y = torch.ones(6, device='cuda')
    results["test_case_1"] = scale_add(x, y)
    results["test_case_2"] = scale_add(x, y, alpha=-2.5)
    return results

test_results = test_scale_add()
