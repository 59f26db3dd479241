CONFIGS = {"small": 128}


def kf_forward(x, y):
    return CONFIGS["large"]
