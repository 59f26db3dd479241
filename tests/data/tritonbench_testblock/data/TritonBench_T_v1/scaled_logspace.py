import torch

def scaled_logspace(start, end, steps, base=10.0):
    """torch.logspace(start, end, steps, base) in float64; start and end are 0-dim tensors.
    Fixture written for kforge's tests (issue 38 section 3, after R1's TritonBench-T logspace:
    a Triton kernel computing in float32, the bounds read to the host with .item())."""
    return torch.logspace(float(start), float(end), steps, base=base, dtype=torch.float64, device=start.device)

##################################################################################################################################################


import torch

def test_scaled_logspace():
    results = {}
    results["test_case_1"] = scaled_logspace(torch.tensor(0.0, device='cuda'), torch.tensor(2.0, device='cuda'), 50)
    results["test_case_2"] = scaled_logspace(torch.tensor(-1.0, device='cuda'), torch.tensor(1.5, device='cuda'), 33, base=2.0)
    return results

test_results = test_scaled_logspace()
