"""The confined mode of a kforge backend package (enable(confined=True); docs/library.md).

Every call of a shared-object kernel (cpu backend) runs in a kforge-host child under the judge's
confinement: no capabilities, seccomp, Landlock (no file written, only the system's directories
and the kernel file read), rlimits, no process started, no socket, the judge's environment
(HOME=/nonexistent, LANG=C, the same few variables), the user `nobody` where it starts as root.
The child holds the kernel, this process never loads it: inputs are copied into a shared memfd
arena, the host calls `<op>_kernel_impl` on them (kforge-host's `call`), and the outputs are
copied back. So a kernel that behaves only under the judge behaves the same here, and whatever
it does cannot touch this process's memory or files. The cost is two copies and a round trip per
call (microseconds to milliseconds: for correctness-first use, not for speed).

Where kforge-host is found: enable(host=...), else $KFORGE_HOST, else `kforge-host` on PATH,
else $KFORGE_HOME/build/backends/host/kforge-host. CPU only: a cuda kernel is refused here.
"""
import errno
import fcntl
import mmap
import os
import shutil
import socket
import threading

import torch

_ALIGN = 64


def find_host(explicit=None):
    for p in (explicit, os.environ.get("KFORGE_HOST"), shutil.which("kforge-host"),
              os.path.join(os.environ.get("KFORGE_HOME", ""), "build", "backends", "host", "kforge-host")
              if os.environ.get("KFORGE_HOME") else None):
        if p and os.access(p, os.X_OK):
            return p
    raise RuntimeError("kforge_backend confined mode: kforge-host not found (enable(host=PATH), $KFORGE_HOST, PATH "
                       "or $KFORGE_HOME/build/backends/host/kforge-host)")


def _host_env():
    """The judge's host environment (backends/judge/candidate_host.cpp host_environment)."""
    env = {"CUDA_CACHE_DISABLE": "1", "HOME": "/nonexistent", "LANG": "C"}
    for k in ("PATH", "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "CUDA_MODULE_LOADING", "OMP_NUM_THREADS"):
        if k in os.environ:
            env[k] = os.environ[k]
    return env



# MFD_EXEC (Linux 6.3), so that vm.memfd_noexec cannot refuse the host's executable mapping;
# older kernels reject the flag (EINVAL) and map any memfd executable.
_MFD_EXEC = getattr(os, "MFD_EXEC", 0x0010)


def _sealed(data):
    """`data` in a memfd sealed against every change, as the C++ side's sealed_copy
    (sandbox/confine/include/kforge/sandbox/sealed_copy.hpp): the same flags and seals, partial
    writes completed (os.write retries EINTR itself, PEP 475)."""
    flags = os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING
    try:
        fd = os.memfd_create("kforge-artifact", flags | _MFD_EXEC)
    except OSError as e:
        if e.errno != errno.EINVAL:
            raise
        fd = os.memfd_create("kforge-artifact", flags)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS,
                    fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE | fcntl.F_SEAL_SEAL)
    except BaseException:
        os.close(fd)
        raise
    return fd

class _Host:
    """One kforge-host child holding one kernel, with one shared arena of `capacity` bytes."""

    def __init__(self, host, data, name, capacity):
        self.capacity = capacity
        # The verified bytes, not the package's file: a sealed memfd, the host's last descriptor
        # (kforge-host reads no path, as under the judge).
        self.art = _sealed(data)
        self.arena = os.memfd_create("kforge-arena", os.MFD_CLOEXEC)
        os.ftruncate(self.arena, capacity)
        self.mm = mmap.mmap(self.arena, capacity)
        self.log = os.memfd_create("kforge-host-log", os.MFD_CLOEXEC)
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        # Sources far above the targets: a dup2 onto itself would keep close-on-exec.
        src = [os.dup2(fd, 600 + k, inheritable=False)
               for k, fd in enumerate((theirs.fileno(), self.arena, self.log, self.art))]
        actions = [(os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0), (os.POSIX_SPAWN_DUP2, src[2], 1),
                   (os.POSIX_SPAWN_DUP2, src[2], 2), (os.POSIX_SPAWN_DUP2, src[0], 3),
                   (os.POSIX_SPAWN_DUP2, src[1], 4), (os.POSIX_SPAWN_DUP2, src[3], 5)]
        try:
            self.pid = os.posix_spawn(host, [host, name, "-1", "6"], _host_env(), file_actions=actions)
        finally:
            for fd in src:
                os.close(fd)
            theirs.close()
        self.sock = mine
        self.rfile = mine.makefile("rb")
        self.seq = 0
        self._expect("ready", "start")
        self._expect("ok", "arena", "arena 0 %d host 4 rw" % capacity)
        self._expect("ok", "load", "load")

    def _line(self):
        line = self.rfile.readline()
        if not line:
            raise RuntimeError("kforge-host ended (%s)%s" % (self._status(), self._log_tail()))
        return line.decode("utf-8", "replace").rstrip("\n")

    def _expect(self, want, what, send=None):
        if send is not None:
            self.sock.sendall((send + "\n").encode())
        got = self._line()
        if got != want:
            raise RuntimeError("kforge-host %s: %s%s" % (what, got, self._log_tail()))

    def _status(self):
        try:
            pid, st = os.waitpid(self.pid, os.WNOHANG)
            return "running" if pid == 0 else "exit status %d" % os.waitstatus_to_exitcode(st)
        except ChildProcessError:
            return "gone"

    def _log_tail(self):
        try:
            os.lseek(self.log, 0, os.SEEK_SET)
            text = os.read(self.log, 1 << 16).decode("utf-8", "replace")
            return ("; its log: " + text[-2000:]) if text else ""
        except OSError:
            return ""

    def call(self, entry, tensors, outs, args, kf_dtypes):
        """Copies `tensors` in, runs `entry` on them with `args` (kf_arg tokens), copies `outs` back."""
        lines, off, ids = [], 0, []
        placed = []
        for k, t in enumerate(list(tensors) + list(outs)):
            t_c = t.detach().contiguous()
            nbytes = t_c.numel() * t_c.element_size()
            lines.append("tensor %d 0 %d %d %d %s" % (k, off, kf_dtypes[t.dtype], t.dim(),
                                                      " ".join(str(s) for s in t.shape)))
            if k < len(tensors) and nbytes:
                self.mm[off:off + nbytes] = t_c.reshape(-1).view(torch.uint8).numpy().tobytes()
            placed.append((off, nbytes))
            ids.append(k)
            off += (nbytes + _ALIGN - 1) // _ALIGN * _ALIGN
        for line in lines:
            self._expect("ok", "tensor", line)
        self.seq += 1
        n = len(tensors)
        msg = "call %d %s %d %s %d %s %d %s" % (self.seq, entry, n, " ".join(map(str, ids[:n])), len(outs),
                                               " ".join(map(str, ids[n:])), len(args), " ".join(args))
        self.sock.sendall((msg + "\n").encode())
        got = self._line().split()
        if got[:2] != ["done", str(self.seq)]:
            raise RuntimeError("kforge-host call %s: %s%s" % (entry, " ".join(got), self._log_tail()))
        for o, (start, nbytes) in zip(outs, placed[n:]):
            if nbytes:
                raw = torch.frombuffer(bytearray(self.mm[start:start + nbytes]), dtype=torch.uint8)
                o.view(-1).view(torch.uint8).copy_(raw)
        return int(got[2])

    @staticmethod
    def needed(tensors):
        return sum((t.numel() * t.element_size() + _ALIGN - 1) // _ALIGN * _ALIGN for t in tensors)

    def close(self):
        try:
            self.sock.sendall(b"quit\n")
        except OSError:
            pass
        try:
            os.kill(self.pid, 9)
            os.waitpid(self.pid, 0)
        except (OSError, ChildProcessError):
            pass
        self.rfile.close()
        self.sock.close()
        self.mm.close()
        os.close(self.arena)
        os.close(self.log)
        os.close(self.art)


def _token(kind, name, payload=""):
    return "%s:%s:%s" % (kind, name.encode().hex(), payload)


def _arg_token(name, a, tensors):
    """One argument as kforge-host's `call` token (kernel_abi.h's kf_arg kinds)."""
    if isinstance(a, torch.Tensor):
        tensors.append(a)
        return _token("t", name, len(tensors) - 1)
    if isinstance(a, bool):
        return _token("b", name, int(a))
    if isinstance(a, int):
        return _token("i", name, a)
    if isinstance(a, float):
        return _token("f", name, a.hex() if a == a and abs(a) != float("inf") else repr(a))
    if a is None:
        return _token("n", name)
    if isinstance(a, (list, tuple)) and all(isinstance(x, int) and not isinstance(x, bool) for x in a):
        return _token("l", name, ",".join(str(x) for x in a))
    if isinstance(a, (list, tuple)) and a and all(isinstance(x, torch.Tensor) for x in a):
        first = len(tensors)
        tensors.extend(a)
        return _token("L", name, ",".join(str(first + k) for k in range(len(a))))
    return _token("o", name, repr(a).encode().hex())


def load(entry, path, verified, records, check_record, host=None):
    """The operator's callable in confined mode: the kernel's bytes read once, checked against the
    verify record (unless verified is False), held by a kforge-host child."""
    import hashlib

    from . import _KF_DTYPES, _meta, _overload
    with open(path, "rb") as f:
        data = f.read()
    if verified:
        check_record(entry, path, hashlib.sha256(data).hexdigest(), records)
    device = entry.get("device_type") or ("cuda" if os.path.splitext(entry.get("source_file", ""))[1] == ".cu"
                                          else "cpu")  # packages written before device_type
    if entry.get("kind") != "shared_object" or device != "cpu":
        raise RuntimeError("%s: the confined mode runs cpu shared objects only" % entry["operator"])
    exe = find_host(host)
    op = _overload(entry["operator"])[1]
    state = {"host": None}
    lock = threading.Lock()

    def run(*args, **kwargs):
        ref = op(*[_meta(a) for a in args], **{k: _meta(x) for k, x in kwargs.items()})
        refs = list(ref) if isinstance(ref, (tuple, list)) else [ref]
        outs = [torch.empty(r.shape, dtype=r.dtype) for r in refs]
        tensors = []
        tokens = [_arg_token("", a, tensors) for a in args] + [_arg_token(k, a, tensors) for k, a in kwargs.items()]
        with lock:
            h = state["host"]
            need = _Host.needed(tensors + outs)
            if h is None or need > h.capacity:
                if h is not None:
                    h.close()
                h = state["host"] = _Host(exe, data, entry["operator"], max(64 << 20, 2 * need))
            try:
                rc = h.call(entry["entry"], tensors, outs, tokens, _KF_DTYPES)
            except RuntimeError:
                h.close()
                state["host"] = None
                raise
        if rc != 0:
            raise RuntimeError("%s: the kernel returned %d" % (entry["operator"], rc))
        return tuple(outs) if isinstance(ref, (tuple, list)) else outs[0]

    run.close = lambda: state["host"] and state["host"].close()
    return run
