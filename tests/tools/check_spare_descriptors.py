"""A zygote's spare host keeps exactly the descriptors its prestart opened (issue 21 §2).

On a GPU the spare host (backends/triton/zygote.py) initialises CUDA before it is handed a
host's descriptors; the driver's own descriptors must survive the layout that follows, or the
driver hangs (an H200 found every check timing out that way). Without a GPU, prestart opens
nothing, so this script plays its part: in a forked child, zygote.reserve_layout() puts
/dev/null on the layout's descriptors, "prestart" opens three files (recorded as host.py's
prestart records what it opened), descriptors are received and laid out as become_host does,
then host.close_from() runs. Checked: the recorded descriptors landed above the layout and are
still open, on the same files; every other descriptor from the layout's end up is closed,
placeholders and received copies included; and with nothing recorded (a host that was not a
spare) close_from closes everything from its first argument, as the closerange it replaced.

usage: check_spare_descriptors.py <backends/triton directory>
Prints "spare descriptors: N kept above LAYOUT, all others closed".
"""
import importlib.util
import os
import sys


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def child(host, zygote, work):
    zygote.reserve_layout()
    before = host.open_fds()
    assert all(fd in before for fd in range(zygote.LAYOUT)), "the layout's descriptors are not all taken"
    driver = [os.open(os.path.join(work, "driver%d" % i), os.O_RDWR | os.O_CREAT, 0o600) for i in range(3)]
    host.PRESTARTED.update(device=0, fds=host.open_fds() - before)
    kept = host.PRESTARTED["fds"]
    assert kept == set(driver), "recorded %s, opened %s" % (sorted(kept), driver)
    assert min(kept) >= zygote.LAYOUT, "prestart's descriptors %s fall inside the layout" % sorted(kept)
    # As become_host: received descriptors (anywhere free) and their copies laid out on 3-5
    # (0-2 are left to this script's output).
    received = [os.open("/dev/null", os.O_RDONLY) for _ in range(3)]
    high = [os.dup(fd) for fd in received]
    for target, fd in zip(range(3, 6), high):
        os.dup2(fd, target)
    host.close_from(6)
    left = host.open_fds()
    assert kept <= left, "prestart's descriptors were closed: %s" % sorted(kept - left)
    for i, fd in enumerate(driver):
        assert os.readlink("/proc/self/fd/%d" % fd).endswith("driver%d" % i), "descriptor %d moved" % fd
    extra = {fd for fd in left if fd >= 6} - kept
    assert not extra, "left open: %s" % sorted(extra)
    # A host that was not a spare: nothing recorded, everything from 6 up closed.
    host.PRESTARTED.clear()
    host.close_from(6)
    assert not {fd for fd in host.open_fds() if fd >= 6}, "a plain host kept descriptors"
    print("spare descriptors: %d kept above %d, all others closed" % (len(kept), zygote.LAYOUT))


def main():
    triton_dir = sys.argv[1]
    host = load(os.path.join(triton_dir, "host.py"), "kforge_triton_host")
    zygote = load(os.path.join(triton_dir, "zygote.py"), "kforge_triton_zygote")
    work = os.path.join(os.environ.get("TMPDIR", "/tmp"), "kforge-spare-fds-%d" % os.getpid())
    os.makedirs(work, exist_ok=True)
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            child(host, zygote, work)
        except AssertionError as e:
            print("FAIL: %s" % e)
            code = 1
        sys.stdout.flush()
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    for name in os.listdir(work):
        os.remove(os.path.join(work, name))
    os.rmdir(work)
    sys.exit(os.waitstatus_to_exitcode(status))


if __name__ == "__main__":
    main()
