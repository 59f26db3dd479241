# An adversarial candidate for the fixture task G/strings_only (issue 38 section 2.4): does
# nothing and returns None; its test block records only "passed" or the error's text.
def check_double(n, dtype_str):
    return None
