"""The helpers the end-to-end check scripts share (check_operator_backend.py,
check_operator_native.py): run the kforge CLI and print what it said, and stop on the first
failed expectation. Imported from the scripts' own folder."""
import subprocess
import sys


def runner(binary, env, stdout_tail=None, stderr_tail=None):
    """A function that runs `binary` with `env` and prints the command and its output (the last
    stdout_tail / stderr_tail characters when given), returning the CompletedProcess."""
    def kforge(*args):
        p = subprocess.run([binary, *args], env=env, capture_output=True, text=True)
        out = p.stdout if stdout_tail is None else p.stdout[-stdout_tail:]
        err = p.stderr if stderr_tail is None else p.stderr[-stderr_tail:]
        print("$ kforge " + " ".join(args) + "\n" + out + err)
        return p
    return kforge


def check(cond, what):
    """Prints "ok: what", or "FAIL: what" and exits with 1."""
    if not cond:
        print("FAIL: " + what)
        sys.exit(1)
    print("ok: " + what)
