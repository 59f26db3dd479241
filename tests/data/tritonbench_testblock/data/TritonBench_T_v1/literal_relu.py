import torch

def literal_relu(input):
    """max(input, 0), elementwise. Fixture written for kforge's tests (issue 38 section 2.5),
    after TritonBench-T's relu: its test block's inputs are literals, not drawn from a seed."""
    return torch.relu(input)

##################################################################################################################################################


import torch

def test_literal_relu():
    results = {}
    input1 = torch.tensor([-1.0, 0.0, 1.0, 2.5], device='cuda')
    results["test_case_1"] = literal_relu(input1)
    input2 = torch.tensor([[-1.0, 2.0], [3.0, -4.0]], device='cuda')
    results["test_case_2"] = literal_relu(input2)
    input3 = torch.tensor([[-1.0, 2.0, -3.0], [4.0, -5.0, 6.0]], device='cuda')
    results["test_case_3"] = literal_relu(input3)
    return results

test_results = test_literal_relu()
