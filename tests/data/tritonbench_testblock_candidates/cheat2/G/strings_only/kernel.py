# An adversarial candidate for the fixture task G/strings_only (issue 38 section 2.4): raises;
# its test block records the error's text.
def check_double(n, dtype_str):
    raise RuntimeError("not implemented")
