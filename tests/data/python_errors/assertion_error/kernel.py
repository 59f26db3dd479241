def kf_forward(x, y):
    assert x is not None, "inputs must be tensors"
    return x
