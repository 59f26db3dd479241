import torch

def cmul(input, other):
    """Elementwise product of two complex tensors of one dtype (complex64 or complex128)."""
    return torch.mul(input, other)

##################################################################################################################################################


import torch

def test_cmul():
    results = {}

    # Test case 1: complex64 vectors
    a = torch.randn(37, dtype=torch.complex64, device='cuda')
    b = torch.randn(37, dtype=torch.complex64, device='cuda')
    results["test_case_1"] = cmul(a, b)

    # Test case 2: complex128 matrices
    x = torch.randn(3, 5, dtype=torch.complex128, device='cuda')
    y = torch.randn(3, 5, dtype=torch.complex128, device='cuda')
    results["test_case_2"] = cmul(x, y)

    # Test case 3: literals
    results["test_case_3"] = cmul(torch.tensor([1+2j, 3+4j], device='cuda'), torch.tensor([5+6j, 7+8j], device='cuda'))

    return results

test_results = test_cmul()
