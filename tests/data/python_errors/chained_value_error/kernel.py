def parse_block(s):
    try:
        return int(s)
    except ValueError as e:
        raise RuntimeError("bad BLOCK setting") from e


def kf_forward(x, y):
    return parse_block("big")
