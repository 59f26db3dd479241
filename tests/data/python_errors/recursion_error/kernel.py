def helper(n):
    return helper(n + 1)


def kf_forward(x, y):
    return helper(0)
