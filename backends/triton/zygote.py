"""kforge's Triton zygote (issue 21 §2): warm Triton candidate hosts.

Usage (started by kforge-runner, never by hand; backends/judge/zygote.cpp):
  python3 -I -B zygote.py <host.py> <libkforge_pyconfine.so> <device>
(device: the CUDA ordinal of the hosts it forks, -1 for the cpu).

One process per runner and device, started the way the judge starts a Triton candidate host
(an allow-listed environment, an empty read-only working directory of the judge's, /dev/null on
0, a log on 1 and 2, nothing else open but descriptor 3), that imports host.py and what it
imports (torch, Triton) once, does not initialise CUDA, and forks one host per candidate.

Descriptor 3 is a SOCK_SEQPACKET socket whose other end only the judge holds. Protocol:
  zygote -> judge   ready                        after the warm-up
  judge  -> zygote  fork  + descriptors (SCM_RIGHTS): the host's log, its channel, then the
                    exchange's descriptors (numbered 1 and 2, 3, 4... in the host)
  zygote -> judge   pid <n> [spare <m>]          the host, now the judge's own child, and the
                                                 spare forked for the next request (below)
                    err <text>                   refused (the judge starts a host itself)
The zygote never reads or writes the descriptors it passes on, never runs or imports candidate
code and learns nothing of the candidate (not even its path: the host reads what it is to load
from its channel). The host is forked twice (the middle process exits at once) while the judge
is a child subreaper, so that it becomes the judge's child: the judge waits for it, freezes it
(SIGSTOP, waitpid WUNTRACED) and kills it exactly as a host it started itself, and the host's
death signal is the judge's death. The zygote dies with the judge (its own death signal) and
when the judge closes descriptor 3.

With each fork the zygote also forks a spare host, the judge's child too (forked while the judge
is a subreaper for the request), which initialises CUDA on the device and compiles Triton's
warm-up kernel (host.py prestart: nothing of a candidate's) while the judge checks the candidate
just forked, then waits on a socket that only the zygote holds. The next request hands the spare
its descriptors over that socket instead of forking afresh: the host's start then costs what
Host() has left to do (issue 21 §2, H200: a forked host's check went from 0.72 s, 0.38 s of it
the host's start, to 0.54 s, 0.13 s). Before prestart the spare puts /dev/null on every
descriptor of the host's layout (reserve_layout), so the CUDA driver's descriptors land above it
and stay open through the layout (host.close_from keeps what prestart opened; closing them left
the driver hanging). A spare that cannot take them (dead) is replaced by a fresh fork; a spare
never handed a candidate exits when the zygote does (its socket's end), or with the judge.

The host, once forked, does what a host started by the judge does: it waits until the judge is
its parent, takes its descriptors (0 /dev/null, 1 and 2 its log, 3 its channel, 4... the
exchange's; everything else closed), reads one line from its channel ({"argv", "env", "cwd"}:
the command line, environment and working directory the judge would have started it with),
moves there, replaces its environment and runs host.py's main() with that command line: the
death signal, not dumpable, Host() (on a GPU: CUDA initialised and Triton's warm-up compile),
confinement through libkforge_pyconfine.so, the native seal (libkforge_pyseal.so) and the
candidate's load, unchanged.
"""

import ctypes
import fcntl
import importlib.util
import json
import os
import socket
import sys
import time

CONTROL = 3
MAX_FDS = 64
LAYOUT = 4 + MAX_FDS  # become_host's descriptors are all below this


def load_host(path):
    """host.py as a module that is not in sys.modules (its main() takes __main__, this module,
    out of sys.modules in the host before the candidate exists)."""
    spec = importlib.util.spec_from_file_location("kforge_triton_host", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def threads():
    return len(os.listdir("/proc/self/task"))


def cuda_initialised():
    """Whether CUDA's driver was initialised in this process (a fork would break it): torch's
    own flag, and the driver itself where it is loaded (every call before cuInit answers
    CUDA_ERROR_NOT_INITIALIZED, 3)."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        return True
    with open("/proc/self/maps") as maps:
        loaded = any("libcuda.so" in line for line in maps)
    if not loaded:
        return False
    ctx = ctypes.c_void_p(0)
    return ctypes.CDLL("libcuda.so.1").cuCtxGetCurrent(ctypes.byref(ctx)) != 3


def shared_mappings():
    """Mappings a child would share with this process (and so with the next child): none may be
    writable. Read-only ones of files opened read-only (the system's locale cache) cannot be
    made writable by mprotect."""
    found = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            f = line.split()
            if f[1][3] == "s" and (f[1][1] == "w" or (len(f) < 6 or not f[5].startswith("/usr/"))):
                found.append(line.strip())
    return found


def unsafe_to_fork(warm_threads):
    """Why a fork now could hand a host something of this process it must not have, or a broken
    runtime; "" when it is safe."""
    if cuda_initialised():
        return "CUDA is initialised in the zygote"
    n = threads()
    if n > warm_threads:
        return "the zygote runs %d threads (%d after its warm-up)" % (n, warm_threads)
    shared = shared_mappings()
    if shared:
        return "the zygote has shared mappings: " + "; ".join(shared[:3])
    return ""


def read_spec(fd):
    """The host's first line on its channel (byte by byte: nothing after it is consumed)."""
    data = b""
    while not data.endswith(b"\n"):
        c = os.read(fd, 1)
        if not c:
            raise EOFError("the judge closed the channel before the host's command line")
        data += c
        if len(data) > (1 << 20):
            raise ValueError("the host's command line is too long")
    return json.loads(data)


def adopted_by(judge, pyconfine):
    """Waits until the judge is this process's parent (the middle process is exiting), then sets
    the judge's death as this process's death signal and makes it not dumpable; exits if not."""
    deadline = time.monotonic() + 30
    while os.getppid() != judge:
        if time.monotonic() > deadline:
            os._exit(4)
        time.sleep(0.0002)
    lib = ctypes.CDLL(pyconfine)
    if lib.kf_py_prepare() != 0 or os.getppid() != judge:
        os._exit(4)


def become_host(host_module, fds, judge, pyconfine, adopted=False):
    """The forked host (never returns). Until host.main() loads the candidate, only this code
    and host.py's run here."""
    if not adopted:
        adopted_by(judge, pyconfine)
    # Descriptors as the judge's posix_spawn lays them out: sources far above the targets first.
    high = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 512) for fd in fds]
    null = os.open("/dev/null", os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(high[0], 1)
    os.dup2(high[0], 2)
    os.dup2(high[1], 3)
    for i, fd in enumerate(high[2:]):
        os.dup2(fd, 4 + i)
    # The zygote's socket, the passed copies, /dev/null, a spare's placeholders (reserve_layout);
    # not what a spare's prestart opened.
    host_module.close_from(4 + len(high) - 2)
    spec = read_spec(3)
    os.chdir(spec["cwd"])
    os.environ.clear()
    for entry in spec["env"]:
        name, _, value = entry.partition("=")
        os.environ[name] = value
    argv = list(spec["argv"][3:])  # python3 -I -B <host.py> <artifact> ...: host.py's sys.argv
    if not argv or os.path.abspath(argv[0]) != os.path.abspath(host_module.__file__):
        os._exit(4)
    sys.argv = argv
    numpy = sys.modules.get("numpy")
    if numpy is not None:  # the zygote's draw is every host's otherwise
        numpy.random.seed()
    code = host_module.main(argv)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code if isinstance(code, int) else 3)


def fork_host(host_module, control, fds, judge, pyconfine):
    """Forks the host through a middle process that exits at once; returns its pid, or raises."""
    return fork_adopted(control, lambda: become_host(host_module, fds, judge, pyconfine))


def be_spare(host_module, sock, judge, pyconfine, device):
    """The spare host (never returns): adopted, CUDA and Triton warmed on `device`, then waits for
    its descriptors; exits when the zygote closes the socket first."""
    adopted_by(judge, pyconfine)
    set_name(b"kforge-spare")  # its comm until it is handed a host: ps and the tests tell it apart
    reserve_layout()
    try:
        host_module.prestart(device)
    except Exception as e:  # noqa: BLE001 - Host() then does it itself
        sys.stderr.write("kforge: spare host not prestarted: %s: %s\n" % (type(e).__name__, e))
        sys.stderr.flush()
    if any(fd < LAYOUT for fd in host_module.PRESTARTED.get("fds", ())):
        os._exit(0)  # the layout would clobber them: the next request forks afresh
    try:
        msg, fds, _, _ = socket.recv_fds(sock, 16, MAX_FDS)
    except OSError:
        os._exit(0)
    if msg != b"go" or len(fds) < 2:
        os._exit(0)
    sock.close()
    set_name(os.path.basename(sys.executable).encode())
    become_host(host_module, fds, judge, pyconfine, adopted=True)


def reserve_layout():
    """Puts /dev/null on every free descriptor below LAYOUT, so that what prestart opens (the
    CUDA driver's descriptors, which stay open in the host: host.close_from) lands above the
    descriptors become_host lays out (0 to 3 + the exchange's)."""
    null = os.open("/dev/null", os.O_RDONLY)
    for fd in range(LAYOUT):
        try:
            os.fstat(fd)
        except OSError:
            os.dup2(null, fd)


def set_name(name):
    """This process's comm (prctl PR_SET_NAME, at most 15 bytes)."""
    ctypes.CDLL(None).prctl(15, ctypes.c_char_p(name[:15]), 0, 0, 0)


def fork_spare(host_module, control, judge, pyconfine, device):
    """Forks a spare host (be_spare); returns (pid, the zygote's end of its socket), or raises."""
    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        def spare():
            mine.close()
            be_spare(host_module, theirs, judge, pyconfine, device)
        pid = fork_adopted(control, spare)
    except BaseException:
        mine.close()
        raise
    finally:
        theirs.close()
    return pid, mine


def hand_over(spare, fds):
    """Gives the spare host the judge's descriptors; its pid, or None when it cannot take them."""
    pid, sock = spare
    try:
        socket.send_fds(sock, [b"go"], fds)
        return pid
    except OSError:
        return None
    finally:
        sock.close()


def fork_adopted(control, child):
    """Runs child() in a process forked through a middle process that exits at once, so that the
    judge (a subreaper while it waits for the reply) adopts it; returns its pid, or raises."""
    r, w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    middle = os.fork()
    if middle == 0:
        try:
            os.close(r)
            pid = os.fork()
            if pid == 0:
                try:
                    os.close(w)
                    fd = control.detach()
                    os.close(fd)
                    child()
                except BaseException:  # noqa: B902 - into the host's log, when it is laid out
                    import traceback
                    traceback.print_exc()
                    sys.stderr.flush()
                finally:
                    os._exit(5)
            os.write(w, str(pid).encode())
        finally:
            os._exit(0)
    os.close(w)
    os.waitpid(middle, 0)
    with os.fdopen(r, "rb") as f:
        data = f.read()
    if not data:
        raise RuntimeError("the middle process did not report the host")
    return int(data)


def serve(host_module, control, judge, pyconfine, warm_threads, device):
    spare = None  # (pid, socket): the host forked and warmed for the next request
    while True:
        try:
            msg, fds, _, _ = socket.recv_fds(control, 64, MAX_FDS)
        except OSError:
            return 0
        if not msg:
            return 0  # the judge is gone
        try:
            if msg != b"fork" or len(fds) < 2:
                reply = "err bad request"
            else:
                why = unsafe_to_fork(warm_threads)
                if why:
                    reply = "err " + why
                else:
                    pid = hand_over(spare, fds) if spare else None
                    spare = None
                    if pid is None:
                        pid = fork_host(host_module, control, fds, judge, pyconfine)
                    reply = "pid %d" % pid
                    for fd in fds:  # the spare must not hold this host's descriptors
                        os.close(fd)
                    fds = []
                    try:
                        spare = fork_spare(host_module, control, judge, pyconfine, device)
                        reply += " spare %d" % spare[0]
                    except Exception as e:  # noqa: BLE001 - the next request forks afresh
                        sys.stderr.write("kforge: no spare host: %s: %s\n" % (type(e).__name__, e))
        except Exception as e:  # noqa: BLE001 - the judge starts the host itself
            reply = "err %s: %s" % (type(e).__name__, e)
        finally:
            for fd in fds:
                os.close(fd)
        control.send(reply.encode())


def main(argv):
    if len(argv) != 4:
        return 2
    os.closerange(CONTROL + 1, 1 << 16)  # nothing but what the judge gave
    import faulthandler
    faulthandler.enable(all_threads=True)
    lib = ctypes.CDLL(argv[2])
    if lib.kf_py_prepare() != 0:  # death signal with the judge, not dumpable
        return 2
    judge = os.getppid()
    control = socket.socket(fileno=CONTROL)
    try:
        host_module = load_host(argv[1])
        host_module.warm_up()
        why = unsafe_to_fork(threads())
        if why:
            raise RuntimeError(why)
    except BaseException as e:  # noqa: B902
        control.send(("err warm-up: %s: %s" % (type(e).__name__, e)).replace("\n", " ").encode())
        return 3
    control.send(b"ready")
    return serve(host_module, control, judge, argv[2], threads(), int(argv[3]))


if __name__ == "__main__":
    code = main(sys.argv)
    sys.stdout.flush()
    os._exit(code)
