import torch

def crotate(input, angle):
    """Rotates each complex element by its angle in radians: input * exp(i * angle). `angle` is
    real, of input's component dtype (float32 for complex64, float64 for complex128)."""
    return input * torch.polar(torch.ones_like(angle), angle)

##################################################################################################################################################


import torch

def test_crotate():
    results = {}

    # Test case 1: complex64
    x = torch.randn(4, 6, dtype=torch.complex64, device='cuda')
    theta = torch.rand(4, 6, device='cuda') * 6.2832
    results["test_case_1"] = crotate(x, theta)

    # Test case 2: complex128
    x = torch.randn(50, dtype=torch.complex128, device='cuda')
    theta = torch.randn(50, dtype=torch.float64, device='cuda')
    results["test_case_2"] = crotate(x, theta)

    return results

test_results = test_crotate()
