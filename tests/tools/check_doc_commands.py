#!/usr/bin/env python3
"""Runs the commands of README.md and docs/*.md, so that a command the docs show cannot stop
working unnoticed (issue 40).

    check_doc_commands.py --source DIR --build DIR --work DIR

Every fenced block whose language is sh must say what the test does with it, in its info string:
  ```sh runnable          run as it is, each block as one `bash -e -o pipefail` script, in order,
                          per file, in --work (a directory holding a link to every top-level entry
                          of the source, and `build` linked to --build), with KFORGE_HOME set to
                          the source; it must exit 0. Commands meant for this test need no GPU, no
                          checkout outside the repository and no network.
  ```sh endpoint          the README's own-endpoint example: run against a local /v1 server by the
                          ctest newcomer_path; checked here as a check block is.
  ```sh check: REASON     not run (REASON is printed as the skip reason); each of its commands is
                          checked instead: `build/agent/kforge SUB...` against `kforge SUB... --help`
                          (the subcommand exists and knows every --option the line uses), a
                          script of the repository (scripts/..., tests/...) exists and names every
                          --option the line uses; other programs (git, vllm, sbatch, ...) are named.
An sh block without one of these markers fails the test. Prints one line per block and
"docs commands: all checks passed" at the end; exits 1 on the first failure.
"""
import argparse
import glob
import os
import re
import shlex
import shutil
import subprocess
import sys
import time

FENCE = re.compile(r"^(\s*)```+\s*(\S*)\s*(.*)$")


def blocks_of(path):
    """(line number, language, marker, text) of every fenced block of a Markdown file."""
    out, inside, start, lang, marker, body = [], False, 0, "", "", []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            m = FENCE.match(line.rstrip("\n"))
            if not inside and m:
                inside, start, lang, marker, body = True, n, m.group(2), m.group(3).strip(), []
            elif inside and line.strip().startswith("```"):
                out.append((start, lang, marker, "".join(body)))
                inside = False
            elif inside:
                body.append(line)
    if inside:
        sys.exit("FAIL: %s:%d: fenced block never closed" % (path, start))
    return out


def commands_of(text):
    """The block's commands: continuation lines joined, comment-only lines dropped."""
    cmds, cur = [], ""
    for line in text.splitlines():
        if line.rstrip().endswith("\\"):
            cur += line.rstrip()[:-1] + " "
            continue
        cur += line
        if cur.strip() and not cur.strip().startswith("#"):
            cmds.append(cur.strip())
        cur = ""
    return cmds


def words(cmd):
    try:
        return shlex.split(cmd, comments=True)
    except ValueError as e:
        sys.exit("FAIL: cannot split %r: %s" % (cmd, e))


def options_in(ws):
    """The --options of a command line, up to a bare `--` (what follows is another program's)."""
    if "--" in ws:
        ws = ws[:ws.index("--")]
    return [w.split("=", 1)[0] for w in ws if w.startswith("--") and len(w) > 2]


def check_command(cmd, work, env, where):
    """Checks one command of a check block; returns a short note."""
    ws = words(cmd)
    if not ws:
        return "empty"
    while ws and re.match(r"^[A-Z_]+=", ws[0]):  # VAR=value prefixes
        ws = ws[1:]
    prog = ws[0]
    if prog == "build/agent/kforge":
        head = []
        for w in ws[1:]:
            if w.startswith("-"):
                break
            head.append(w)
        p = subprocess.run([os.path.join(work, "build/agent/kforge")] + head + ["--help"], cwd=work, env=env,
                           capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit("FAIL: %s: `kforge %s --help` exited %d:\n%s" % (where, " ".join(head), p.returncode,
                                                                        p.stderr[-2000:]))
        for opt in options_in(ws):
            if not re.search(re.escape(opt) + r"(?![\w-])", p.stdout):
                sys.exit("FAIL: %s: `kforge %s --help` does not list %s" % (where, " ".join(head), opt))
        return "kforge %s: --help lists its options" % " ".join(head[:2])
    if prog.endswith("python") or prog.endswith("python3"):
        ws = ws[1:]
        prog = ws[0] if ws else ""
    if prog.startswith("./"):
        prog = prog[2:]
    if prog.startswith(("scripts/", "tests/")):
        path = os.path.join(work, prog)
        if not os.path.isfile(path):
            sys.exit("FAIL: %s: %s does not exist" % (where, prog))
        text = open(path, encoding="utf-8", errors="replace").read()
        for opt in options_in(ws[1:]):
            if opt not in text:
                sys.exit("FAIL: %s: %s does not know %s" % (where, prog, opt))
        return "%s exists" % prog
    return "%s: outside kforge, not checked" % prog


def make_work(source, build, work):
    if os.path.lexists(work):
        shutil.rmtree(work)
    os.makedirs(work)
    for name in os.listdir(source):
        if name in ("build", "runs", "runs-out") or name.startswith("."):
            continue
        os.symlink(os.path.join(source, name), os.path.join(work, name))
    os.symlink(os.path.abspath(build), os.path.join(work, "build"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    source = os.path.abspath(a.source)
    work = os.path.abspath(a.work)
    make_work(source, a.build, work)
    env = dict(os.environ, KFORGE_HOME=source)
    files = [os.path.join(source, "README.md")] + sorted(glob.glob(os.path.join(source, "docs", "*.md")))
    ran = checked = 0
    t_all = time.monotonic()
    for path in files:
        rel = os.path.relpath(path, source)
        for line, lang, marker, text in blocks_of(path):
            if lang not in ("sh", "bash", "shell", "console"):
                continue
            where = "%s:%d" % (rel, line)
            if marker == "runnable":
                t0 = time.monotonic()
                p = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", text], cwd=work, env=env,
                                   capture_output=True, text=True)
                if p.returncode != 0:
                    sys.exit("FAIL: %s: exit %d\n%s\n--- stdout (tail)\n%s\n--- stderr (tail)\n%s" %
                             (where, p.returncode, text, p.stdout[-3000:], p.stderr[-3000:]))
                print("ok: %s: ran %d commands (%.1f s)" % (where, len(commands_of(text)), time.monotonic() - t0))
                ran += 1
            elif marker == "endpoint" or marker.startswith("check:"):
                reason = "run by the ctest newcomer_path" if marker == "endpoint" else marker[6:].strip()
                if not reason:
                    sys.exit("FAIL: %s: `check:` without a reason" % where)
                notes = [check_command(c, work, env, where) for c in commands_of(text)]
                print("SKIP %s: %s; checked: %s" % (where, reason, "; ".join(notes)))
                checked += 1
            else:
                sys.exit("FAIL: %s: sh block without a marker (```sh runnable, ```sh check: REASON or "
                         "```sh endpoint)" % where)
    if ran == 0:
        sys.exit("FAIL: no runnable block found")
    print("docs commands: %d runnable blocks ran, %d checked against --help (%.0f s); all checks passed"
          % (ran, checked, time.monotonic() - t_all))


if __name__ == "__main__":
    main()
