#!/usr/bin/env python3
"""Ctrl-C with nothing in flight exits within a second (issue 40, section 2).

    check_interrupt.py --kforge BIN --runner BIN --scripted-llm BIN --source DIR --work DIR

1. While a reference loads: `kforge run` on tests/data/slow_reference (loss/huber_mean, whose
   reference takes 6 s to load) with the offline model (--llm scripted:examples/scripted-cpu.json).
   SIGINT once the run handles it (its SigCgt in /proc) and the load is in flight: exit 130
   within 1 s (failing above 2 s, for a loaded machine), "finishing 0 in-flight attempts" and the
   --resume hint on stderr, a closing line "0/1 episodes finished ... interrupted after", nothing
   recorded, and no judge runner left behind (the runner is started through a link of this
   test's own, so its processes are found by their command line). `--resume` then finishes the
   run: exit 0, huber_mean passes.
2. While the LLM is waited on: two kforge-core tasks against kforge-scripted-llm, huber_mean
   answered at once, gelu_tanh after 60 s. SIGINT once huber_mean is recorded: exit 130 within
   1 s (failing above 2 s) and the closing line "1/2 episodes finished ... interrupted after".
Prints the measured times and "interrupt: all checks passed".
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kforge_check import check  # noqa: E402

LIMIT_S = 2.0  # the promise is 1 s; a loaded CI machine gets some slack


def records(run_dir):
    path = os.path.join(run_dir, "attempts.jsonl")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]


def catches_sigint(pid):
    """Whether process pid has a handler for SIGINT (the scheduler is running)."""
    try:
        with open("/proc/%d/status" % pid) as f:
            m = re.search(r"^SigCgt:\s*([0-9a-f]+)", f.read(), re.M)
    except OSError:
        return False
    return m is not None and int(m.group(1), 16) & (1 << (signal.SIGINT - 1)) != 0


def wait_for(what, cond, p, timeout=180):
    t0 = time.time()
    while not cond():
        if p.poll() is not None or time.time() - t0 > timeout:
            print(p.communicate()[1][-2000:] if p.poll() is not None else "")
            check(False, "%s (kforge run %s)" % (what, "ended" if p.poll() is not None else "timed out"))
        time.sleep(0.02)
    print("ok: %s after %.1f s" % (what, time.time() - t0))


def processes_of(path):
    """Pids whose command line starts with `path`."""
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                argv0 = f.read().split(b"\0")[0].decode(errors="replace")
        except OSError:
            continue
        if argv0 == path:
            pids.append(int(d))
    return pids


def interrupt(p):
    """SIGINT to p; returns (exit code, seconds until it exited, stderr)."""
    t0 = time.time()
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=120)
    took = time.time() - t0
    print(err[-2000:])
    return p.returncode, took, err


def check_stopped(rc, took, err, out, what):
    print("%s: exited %.2f s after SIGINT" % (what, took))
    check(rc == 130, "%s: exit 130 (got %d)" % (what, rc))
    check(took <= LIMIT_S, "%s: exits within 1 s of SIGINT (measured %.2f s, limit %.1f s)" % (what, took, LIMIT_S))
    check("finishing 0 in-flight attempts" in err, "%s: stderr says nothing is in flight" % what)
    check("interrupted; finished attempts recorded. Continue with --resume " + out in err,
          "%s: stderr gives the --resume hint" % what)


def while_loading(a, work, env):
    out = os.path.join(work, "slow-load")
    runner = os.path.join(work, "bin", "kforge-runner")
    os.makedirs(os.path.dirname(runner))
    os.symlink(os.path.abspath(a.runner), runner)
    env = dict(env, KFORGE_RUNNER=runner)
    cmd = [a.kforge, "run", "--suite", os.path.join(a.source, "tests/data/slow_reference"), "--backend", "cpu",
           "--profile", "ci", "--llm", "scripted:" + os.path.join(a.source, "examples/scripted-cpu.json"),
           "--reps", "5", "--no-print-report", "--out", out]
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wait_for("the scheduler to handle SIGINT", lambda: catches_sigint(p.pid), p)
    time.sleep(0.5)  # the load (6 s) is in flight on the judge runner
    check(len(processes_of(runner)) > 0, "a judge runner is running before the signal")
    rc, took, err = interrupt(p)
    check_stopped(rc, took, err, out, "while a reference loads")
    check("] 0/1 episodes finished  0 attempts  0 passes  interrupted after " in err,
          "the closing line says no episode finished and the run was interrupted")
    check(records(out) == [], "nothing is recorded")
    left = processes_of(runner)
    check(left == [], "no judge runner is left behind (%s)" % left)
    r = subprocess.run([a.kforge, "run", "--resume", out], env=env, capture_output=True, text=True)
    print(r.stderr[-1500:])
    check(r.returncode == 0, "--resume finishes the run (exit %d)" % r.returncode)
    recs = records(out)
    check([(x["task"], x["turn"], x["outcome"]) for x in recs] == [("loss/huber_mean", 1, "pass")],
          "after --resume huber_mean passes at turn 1: %s" % [(x["task"], x["outcome"]) for x in recs])


def while_asking(a, work, env):
    huber = open(os.path.join(a.source, "examples/scripted-cpu/huber_mean.md")).read()
    script = os.path.join(work, "slow-llm.json")
    with open(script, "w") as f:
        json.dump({"default": {"content": "no code here"},
                   "replies": [{"task": "loss/huber_mean", "content": huber},
                               {"task": "activation/gelu_tanh", "fault": "slow", "delay_ms": 60000}]}, f)
    srv = subprocess.Popen([a.scripted_llm, "--port", "0", "--script", script], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True)
    try:
        m = re.match(r"listening on 127\.0\.0\.1:(\d+)", srv.stdout.readline())
        check(m is not None, "kforge-scripted-llm started")
        out = os.path.join(work, "slow-llm")
        cmd = [a.kforge, "run", "--suite", "kforge-core", "--backend", "cpu", "--profile", "ci", "--llm",
               "openai:scripted", "--base-url", "http://127.0.0.1:%s" % m.group(1),
               "--tasks", "loss/huber_mean,activation/gelu_tanh", "--no-bench", "--no-print-report", "--out", out]
        p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)
        wait_for("huber_mean's attempt", lambda: len(records(out)) == 1, p, timeout=400)
        time.sleep(0.2)
        rc, took, err = interrupt(p)
        check_stopped(rc, took, err, out, "while the LLM is waited on")
        check("] 1/2 episodes finished  1 attempts  1 passes  interrupted after " in err,
              "the closing line counts the one finished episode and says the run was interrupted")
    finally:
        srv.terminate()
        srv.wait(timeout=30)


def main():
    ap = argparse.ArgumentParser()
    for opt in ("--kforge", "--runner", "--scripted-llm", "--source", "--work"):
        ap.add_argument(opt, required=True)
    a = ap.parse_args()
    a.work = os.path.abspath(a.work)
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    # A timed lock of this test's own: other tests' timed work on this machine cannot hold up its
    # runs (what a stop does with a load waiting for the lock is RunnerClient::hold_for_load's).
    env = dict(os.environ, KFORGE_HOME=os.path.abspath(a.source),
               KFORGE_LOCK_DIR=os.path.join(a.work, "locks"))
    while_loading(a, a.work, env)
    while_asking(a, a.work, env)
    print("interrupt: all checks passed")


if __name__ == "__main__":
    main()
