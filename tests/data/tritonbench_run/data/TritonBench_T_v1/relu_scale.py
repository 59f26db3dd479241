import torch

def relu_scale(input, scale=2.0, out=None):
    return torch.mul(torch.relu(input), scale, out=out)

##################################################################################################################################################


import torch

def test_relu_scale():
    results = {}
    results["test_case_1"] = relu_scale(torch.tensor([-1.0, 2.0, -3.0, 4.0], device='cuda'))
    results["test_case_2"] = relu_scale(torch.tensor([3.0, -0.5], device='cuda'), scale=0.5)
    return results

test_results = test_relu_scale()
