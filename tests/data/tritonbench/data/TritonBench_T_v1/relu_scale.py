import torch

def relu_scale(input, scale=2.0, out=None):
    return torch.mul(torch.relu(input), scale, out=out)

##################################################################################################################################################


import torch

def test_relu_scale():
    results = {}
    # Test case 1: a vector  # relu_scale(...) in a comment is not a use
    results["test_case_1"] = relu_scale(torch.tensor([-1.0, 2.0], device='cuda'))
    # def relu_scale(input, scale=2.0): return input  (commented out by the leakage fix)
    results["test_case_2"] = relu_scale(torch.tensor([3.0], device='cuda'), scale=0.5)
    return results

test_results = test_relu_scale()
