import torch

def allowed_relu(input):
    """max(input, 0), elementwise. Fixture written for kforge's tests (issue 38 section 2.4): its
    test block computes torch.relu itself, on the line that calls the candidate."""
    return torch.relu(input)

##################################################################################################################################################


import torch

def test_allowed_relu():
    results = {}
    x = torch.randn(64, device='cuda')
    results["test_case_1"] = (allowed_relu(x), torch.relu(x))
    y = torch.randn(8, 16, device='cuda')
    results["test_case_2"] = (allowed_relu(y), torch.relu(y))
    return results

test_results = test_allowed_relu()
