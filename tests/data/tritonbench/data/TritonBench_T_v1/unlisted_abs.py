import torch

def unlisted_abs(input):
    return torch.abs(input)

##################################################################################################################################################

import torch

def test_unlisted_abs():
    results = {}
    results["test_case_1"] = unlisted_abs(torch.tensor([-1.0], device='cuda'))
    return results

output = test_unlisted_abs()
