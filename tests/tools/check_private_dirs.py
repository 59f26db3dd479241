"""Never charge the environment to the model (issue 38 section 1): `kforge eval` run as root with
--out, XDG_CACHE_HOME (the compile cache) and TMPDIR each under a directory only its owner can
enter (mode 0700, as any `mktemp -d` or any folder under /root), alone and together. The
candidate host runs as another user there, so anything it reached by path would fail: every
exemplar must still pass, and nothing may be recorded as the model's failure or as infra_error.

usage: check_private_dirs.py KFORGE SOURCE_DIR WORK_DIR [--triton]
Prints "private dirs: N configurations, every exemplar passed"; exits 77 (skipped) when not root.
"""
import json
import os
import shutil
import subprocess
import sys

CONFIGS = ["out", "xdg", "tmp", "all"]


def private_dir(path):
    os.makedirs(path, exist_ok=True)
    os.chmod(path, 0o700)
    return path


def run_eval(kforge, source, work, config, backend):
    base = os.path.join(work, "%s-%s" % (config, backend))
    shutil.rmtree(base, ignore_errors=True)
    # The run directory, cache and temporary directory each sit below a 0700 directory.
    out_parent = private_dir(os.path.join(base, "private-out")) if config in ("out", "all") else base
    os.makedirs(out_parent, exist_ok=True)
    env = dict(os.environ)
    if config in ("xdg", "all"):
        env["XDG_CACHE_HOME"] = os.path.join(private_dir(os.path.join(base, "private-xdg")), "cache")
    if config in ("tmp", "all"):
        env["TMPDIR"] = private_dir(os.path.join(base, "private-tmp"))
    out = os.path.join(out_parent, "run")
    cmd = [kforge, "eval", "--suite", "kforge-core", "--profile", "ci", "--backend", backend,
           "--kernels", os.path.join(source, "prompts/exemplars", backend), "--out", out]
    cmd += ["--device", "cpu", "--no-bench"] if backend == "triton" else ["--reps", "5", "--profiler", "none"]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1500)
    records = []
    path = os.path.join(out, "attempts.jsonl")
    if os.path.exists(path):
        with open(path) as f:
            records = [json.loads(line) for line in f if line.strip()]
    bad = ["%s: %s/%s: %s" % (r["task"], r["outcome"], r.get("sub_kind", ""), r.get("message", "")[:300])
           for r in records if r["outcome"] != "pass"]
    if p.returncode != 0:
        bad.append("exit status %d" % p.returncode)
    if len(records) < 14:
        bad.append("only %d attempt(s) recorded" % len(records))
    return bad, p.stdout[-3000:] + p.stderr[-3000:], len(records)


def main():
    kforge, source, work = sys.argv[1:4]
    triton = "--triton" in sys.argv[4:]
    if os.geteuid() != 0:
        print("SKIP: needs root (the candidate host gives up root only where kforge runs as root)")
        sys.exit(77)
    failures = []
    judged = 0
    for config in CONFIGS:
        backends = ["cpu"] + (["triton"] if triton and config == "all" else [])
        for backend in backends:
            bad, log, n = run_eval(kforge, source, work, config, backend)
            judged += n
            if bad:
                failures.append("%s (%s):\n    %s\n%s" % (config, backend, "\n    ".join(bad), log))
    if failures:
        print("FAIL:\n" + "\n".join(failures))
        sys.exit(1)
    print("private dirs: %d configurations, every exemplar passed (%d attempts)" % (len(CONFIGS), judged))


if __name__ == "__main__":
    main()
