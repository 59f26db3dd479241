#!/usr/bin/env python3
"""A newcomer's path through the README, end to end (issue 40, "Done when").

    check_newcomer_path.py --kforge BIN --scripted-llm BIN --source DIR --work DIR

1. The built-in offline model: `kforge run --llm scripted:examples/scripted-cpu.json` on two
   kforge-core tasks, --turns 3: activation/gelu_tanh turns compile_error -> output_mismatch ->
   pass, loss/huber_mean passes at turn 1; every reply is labelled "[scripted reply]".
2. The README's own-endpoint example (its ```sh endpoint block), against a local server that
   serves the OpenAI API under /v1 only, as vLLM does (kforge-scripted-llm --v1-only): the
   example's base URL is pointed at that server, `--backend cpu` replaces cuda (the script's
   replies are cpu kernels) and two tasks are selected; it must exit 0 with every attempt a pass.
3. The same example with the base URL lacking /v1: exit 75 and the hint
   "try --base-url http://127.0.0.1:PORT/v1" on stderr.
4. `kforge run --help` shows defaults (--turns 1, --samples 1, --trials 5, --reps 100).
5. The endpoint run's report.html opened in headless Chromium: the page's script ran without
   errors and drew its plots (check_report_html.py's status element). Skipped (exit 77) with the
   reason only where Chromium is missing or cannot start; steps 1-4 have run by then.
Prints "newcomer path: all checks passed".
"""
import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kforge_check import check  # noqa: E402
import check_report_html as html  # noqa: E402

SKIP = 77
TASKS = "loss/huber_mean,math/horner_polynomial"


def records(run_dir):
    with open(os.path.join(run_dir, "attempts.jsonl")) as f:
        return [json.loads(l) for l in f if l.strip()]


def endpoint_example(readme):
    """The words of the README's ```sh endpoint block (one command)."""
    text = open(readme, encoding="utf-8").read()
    m = re.search(r"^```sh endpoint\n(.*?)^```", text, re.M | re.S)
    check(m is not None, "README.md has a ```sh endpoint block")
    return shlex.split(m.group(1).replace("\\\n", " "), comments=True)


def set_option(ws, opt, value):
    """ws with opt's value replaced (opt must be present)."""
    check(opt in ws, "the endpoint example gives %s" % opt)
    i = ws.index(opt)
    return ws[:i + 1] + [value] + ws[i + 2:]


class Server:
    def __init__(self, binary, script, log):
        self.log = open(log, "w")
        self.p = subprocess.Popen([binary, "--port", "0", "--v1-only", "--script", script],
                                  stdout=subprocess.PIPE, stderr=self.log, text=True)
        line = self.p.stdout.readline()
        m = re.match(r"listening on 127\.0\.0\.1:(\d+)", line)
        if not m:
            self.p.kill()
            sys.exit("FAIL: kforge-scripted-llm did not start: %r" % line)
        self.port = int(m.group(1))

    def stop(self):
        self.p.terminate()
        self.p.wait(timeout=30)
        self.log.close()


def offline_model(kforge, source, work, env):
    out = os.path.join(work, "offline")
    p = subprocess.run([kforge, "run", "--suite", "kforge-core", "--backend", "cpu", "--profile", "ci",
                        "--llm", "scripted:" + os.path.join(source, "examples/scripted-cpu.json"),
                        "--tasks", "activation/gelu_tanh,loss/huber_mean", "--turns", "3", "--stop-on", "pass",
                        "--reps", "5", "--out", out], env=env, capture_output=True, text=True)
    print(p.stderr[-1500:])
    check(p.returncode == 0, "kforge run --llm scripted:examples/scripted-cpu.json exits 0 (got %d)" % p.returncode)
    by = {(r["task"], r["turn"]): r for r in records(out)}
    gelu = [by.get(("activation/gelu_tanh", t), {}).get("outcome") for t in (1, 2, 3)]
    check(gelu == ["compile_error", "output_mismatch", "pass"],
          "gelu_tanh is repaired over three turns: %s" % gelu)
    check(by.get(("loss/huber_mean", 1), {}).get("outcome") == "pass", "huber_mean passes at turn 1")
    check(("loss/huber_mean", 2) not in by, "--stop-on pass ends huber_mean's episode at turn 1")
    reply = open(os.path.join(out, "attempts/activation/gelu_tanh/0/1/response.txt")).read()
    check(reply.startswith("[scripted reply]"), "the offline model's replies are labelled")


def own_endpoint(kforge, source, work, env, server_bin):
    srv = Server(server_bin, os.path.join(source, "examples/scripted-cpu.json"), os.path.join(work, "server.log"))
    try:
        ws = endpoint_example(os.path.join(source, "README.md"))
        check(ws[0] == "build/agent/kforge" and ws[1] == "run", "the endpoint example is a kforge run")
        check(ws[ws.index("--base-url") + 1].endswith("/v1"), "the example's base URL ends in /v1")
        base = "http://127.0.0.1:%d" % srv.port
        ws = set_option(ws, "--base-url", base + "/v1")
        ws = set_option(ws, "--backend", "cpu")
        out = os.path.join(work, "endpoint")
        ws = set_option(ws, "--out", out)
        cmd = [kforge] + ws[1:] + ["--tasks", TASKS, "--reps", "5"]
        print("$ " + " ".join(cmd))
        p = subprocess.run(cmd, env=env, capture_output=True, text=True)
        print(p.stderr[-1500:])
        check(p.returncode == 0, "the README's endpoint example against a /v1 server exits 0 (got %d)" % p.returncode)
        recs = records(out)
        check(len(recs) > 0 and all(r["outcome"] == "pass" for r in recs),
              "every attempt passes: %s" % [r["outcome"] for r in recs])
        check(os.path.isfile(os.path.join(out, "report.html")), "the run wrote report.html")

        bad = set_option(ws, "--base-url", base)
        bad = set_option(bad, "--out", os.path.join(work, "no-v1"))
        bad = set_option(bad, "--samples", "1")
        cmd = [kforge] + bad[1:] + ["--tasks", "loss/huber_mean", "--max-llm-failures", "1"]
        p = subprocess.run(cmd, env=env, capture_output=True, text=True)
        print(p.stderr[-1500:])
        check(p.returncode == 75, "a base URL without /v1 ends the run with exit 75 (got %d)" % p.returncode)
        check("try --base-url %s/v1" % base in p.stderr, "stderr says: try --base-url %s/v1" % base)
        return out
    finally:
        srv.stop()


def help_defaults(kforge, env):
    p = subprocess.run([kforge, "run", "--help"], env=env, capture_output=True, text=True)
    check(p.returncode == 0, "kforge run --help exits 0")
    lines = {l.split()[0]: l for l in p.stdout.splitlines() if l.strip().startswith("--")}
    for opt, value in (("--turns", "1"), ("--samples", "1"), ("--trials", "5"), ("--reps", "100")):
        line = lines.get(opt, "")
        check(re.search(r"=%s\b" % value, line) is not None, "--help shows %s's default %s: %r" % (opt, value, line))


def report_in_browser(run_dir, work):
    binary = html.chromium_binary()
    if not binary:
        print("SKIP: chromium is not installed (scripts/install-deps installs it)")
        sys.exit(SKIP)
    why = html.probe(binary, work)
    if why:
        print("SKIP: " + why)
        sys.exit(SKIP)
    status, dom, console, secs, _ = html.Browser(binary, work).open(os.path.join(run_dir, "report.html"))
    check(status is not None, "report.html rendered its status element in Chromium (%.1f s)" % secs)
    check(status.get("errors") == "0" and not console, "no script error or console message: %s" % console[:3])
    drawn, expected = int(status.get("plots-drawn", "0")), int(status.get("plots-expected", "0"))
    check(expected > 0 and drawn == expected, "every plot drawn (%d of %d)" % (drawn, expected))
    check("huber_mean" in dom, "the page lists the run's tasks")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kforge", required=True)
    ap.add_argument("--scripted-llm", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    work = os.path.abspath(a.work)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    env = dict(os.environ, KFORGE_HOME=os.path.abspath(a.source))
    offline_model(a.kforge, a.source, work, env)
    run_dir = own_endpoint(a.kforge, a.source, work, env, a.scripted_llm)
    help_defaults(a.kforge, env)
    report_in_browser(run_dir, work)
    print("newcomer path: all checks passed")


if __name__ == "__main__":
    main()
