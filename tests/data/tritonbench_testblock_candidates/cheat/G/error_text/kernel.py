# An adversarial candidate for the fixture task G/error_text (issue 38 section 2.4): raises with
# the gold's own error text on every call.
def safe_double(x):
    raise ValueError("safe_double takes a 1-D tensor")
