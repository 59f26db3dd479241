"""A Triton candidate host that never starts: it never says `ready` on its channel.

Test data for the judge's start-up deadline (tests/unit/test_triton_zygote.cpp, "a host that
never starts"): KFORGE_TRITON_HOST points the runner here, so every check's host hangs in its
start-up, as a spare host whose CUDA descriptors were closed once did on an H200.
"""
import time

while True:
    time.sleep(60)
