def kf_forward(x, y):
    shapes = []
    return shapes[0]
