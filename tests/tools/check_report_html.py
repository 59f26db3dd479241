#!/usr/bin/env python3
"""Opens kforge's report.html and compare.html in headless Chromium and checks what the pages
say about themselves (issue 23).

    check_report_html.py --kforge BIN --synth BIN --source DIR --work DIR

Writes, under --work: a demo-like small run (3 tasks x 1 sample x 3 turns, cpu, --no-bench), a
second small run with a partly different task set, a synthetic big run (500 tasks x 4 samples
x 5 turns, cuda-like with peaks) and a one-shot run of the same tasks (8 samples x 1 turn);
`kforge report` for each, `kforge compare` for both pairs, and a report of the small run with
the charting library missing. Each page is opened with Chromium kept off the network
(--host-resolver-rules "MAP * ~NOTFOUND", --no-proxy-server; the pages' own
Content-Security-Policy forbids every fetch). Asserted, from the DOM Chromium dumps after
the page's script ran (<div id=kf-status>) and from Chromium's log:
  - no console message and no script error (data-errors=0);
  - every plot the page made was drawn (data-plots-drawn == data-plots-expected > 0): Chart.js
    placed data elements at finite positions and the canvas holds painted pixels;
  - the page's self-test followed a trajectory link of the tasks table and found that
    trajectory's turns rendered (data-selftest "ok: ...");
  - compare pages state the dropped tasks when the task sets differ;
  - without Chart.js the page has its tables, a note, and no plot expected.
A screenshot of every page is written next to it (<page>.png). Sizes and load times are printed.
Exit 77 (skipped) only where Chromium cannot start; where it is missing, scripts/install-deps is
run once (KFORGE_NO_INSTALL=1 prevents that).
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

SKIP = 77


def chromium_binary():
    for name in (os.environ.get("CHROMIUM", ""), "chromium", "chromium-browser", "google-chrome"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def chromium_args(binary, profile):
    return [binary, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
            "--disable-sync", "--disable-component-update", "--disable-default-apps",
            "--host-resolver-rules=MAP * ~NOTFOUND", "--no-proxy-server",
            "--user-data-dir=" + profile, "--hide-scrollbars", "--virtual-time-budget=15000"]


def run(cmd, **kw):
    t0 = time.monotonic()
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    print("  %.1f s: %s" % (time.monotonic() - t0, " ".join(os.path.basename(c) for c in cmd)))
    if r.returncode != 0:
        sys.exit("FAILED: %s (exit %d)\n%s\n%s" % (" ".join(cmd), r.returncode, r.stdout[-3000:], r.stderr[-3000:]))
    return r


def synth_cached(synth, out, args):
    """kforge-synth-run --out OUT ARGS, unless OUT holds the run of this binary and these args."""
    st = os.stat(synth)
    stamp = "%s %d %d %s" % (synth, st.st_mtime_ns, st.st_size, " ".join(args))
    stamp_file = out + ".stamp"
    if os.path.exists(stamp_file) and open(stamp_file).read() == stamp and os.path.exists(os.path.join(out, "attempts.jsonl")):
        print("  reusing %s (same generator and arguments)" % out)
        return
    shutil.rmtree(out, ignore_errors=True)
    if os.path.exists(stamp_file):
        os.remove(stamp_file)
    run([synth, "--out", out] + args)
    with open(stamp_file, "w") as f:
        f.write(stamp)


def status_of(dom):
    m = re.search(r'<div id="kf-status"([^>]*)>', dom)
    if not m:
        return None
    return {k: v.replace("&amp;", "&").replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">")
            for k, v in re.findall(r'data-([a-z-]+)="([^"]*)"', m.group(1))}


class Browser:
    def __init__(self, binary, work):
        self.binary = binary
        self.profile = tempfile.mkdtemp(prefix="kf-chromium-", dir=work)

    def open(self, page):
        """Dumps the DOM after the page's scripts ran: (status dict, dom, console lines, seconds)."""
        cmd = chromium_args(self.binary, self.profile) + ["--enable-logging=stderr", "--v=0", "--dump-dom",
                                                          "file://" + os.path.abspath(page)]
        t0 = time.monotonic()
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
        secs = time.monotonic() - t0
        console = [l for l in r.stderr.splitlines() if ":CONSOLE" in l]
        return status_of(r.stdout), r.stdout, console, secs, r

    def screenshot(self, page, png):
        cmd = chromium_args(self.binary, self.profile) + ["--window-size=1400,2200", "--screenshot=" + png,
                                                          "file://" + os.path.abspath(page)]
        subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
        return os.path.exists(png) and os.path.getsize(png) > 0


def probe(binary, work):
    """True when Chromium starts and runs a page's script."""
    page = os.path.join(work, "probe.html")
    with open(page, "w") as f:
        f.write("<html><body><div id=p></div><script>document.getElementById('p').dataset.ok='yes'</script></body></html>")
    try:
        _, dom, _, _, r = Browser(binary, work).open(page)
    except (OSError, subprocess.TimeoutExpired) as e:
        return "Chromium did not start: %s" % e
    if 'data-ok="yes"' not in dom:
        return "Chromium did not run a page (exit %d): %s" % (r.returncode, r.stderr[-500:])
    return ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kforge", required=True)
    ap.add_argument("--synth", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--big-tasks", type=int, default=500)
    a = ap.parse_args()

    os.makedirs(a.work, exist_ok=True)
    # Deleting 50,000 small files costs minutes on some file systems: a synthetic run is kept
    # between test runs while the generator binary and its arguments are unchanged (the
    # generator is deterministic); everything else is written afresh.
    for entry in os.listdir(a.work):
        if entry not in ("big", "big-oneshot", "big.stamp", "big-oneshot.stamp"):
            p = os.path.join(a.work, entry)
            shutil.rmtree(p) if os.path.isdir(p) else os.remove(p)
    binary = chromium_binary()
    if not binary and os.environ.get("KFORGE_NO_INSTALL") != "1":
        print("chromium not found: running scripts/install-deps")
        subprocess.run([os.path.join(a.source, "scripts", "install-deps")])
        binary = chromium_binary()
    if not binary:
        print("skipped: Chromium is not installed and scripts/install-deps did not install it")
        return SKIP
    why = probe(binary, a.work)
    if why:
        print("skipped: " + why)
        return SKIP

    env = dict(os.environ, KFORGE_HOME=a.source)
    w = lambda *p: os.path.join(a.work, *p)
    run([a.synth, "--out", w("small"), "--tasks", "3", "--samples", "1", "--turns", "3", "--no-bench", "--cpu",
         "--stop-on-pass"])
    run([a.synth, "--out", w("small-b"), "--tasks", "3", "--samples", "1", "--turns", "3", "--no-bench", "--cpu",
         "--stop-on-pass", "--task-offset", "1", "--seed", "2"])
    t0 = time.monotonic()
    synth_cached(a.synth, w("big"), ["--tasks", str(a.big_tasks), "--samples", "4", "--turns", "5"])
    gen_s = time.monotonic() - t0
    synth_cached(a.synth, w("big-oneshot"), ["--tasks", str(a.big_tasks), "--samples", "8", "--turns", "1",
                                             "--seed", "3"])
    report_s = {}
    for run_name in ("small", "small-b", "big", "big-oneshot"):
        t0 = time.monotonic()
        run([a.kforge, "-q", "report", w(run_name)], env=env)
        report_s[run_name] = time.monotonic() - t0
    cmp_small = run([a.kforge, "-q", "compare", w("small"), w("small-b"), "--html", w("compare-small.html")], env=env)
    if "Dropped" not in cmp_small.stderr:
        sys.exit("FAILED: compare of different task sets did not warn on stderr:\n" + cmp_small.stderr)
    run([a.kforge, "-q", "compare", w("big"), w("big-oneshot"), "--html", w("compare-big.html")], env=env)
    # The charting library missing: tables and a note, no plots.
    shutil.copytree(w("small"), w("small-nocharts"))
    run([a.kforge, "-q", "report", w("small-nocharts")], env=dict(env, KFORGE_CHARTJS=w("no-such-chart.js")))

    browser = Browser(binary, a.work)
    failures = []
    pages = [("small/report.html", "report", 5), ("big/report.html", "report", 10),
             ("compare-small.html", "compare", 2), ("compare-big.html", "compare", 3),
             ("small-nocharts/report.html", "nocharts", 0)]
    print("%-28s %9s %9s %9s %7s  %s" % ("page", "MB", "load ms", "chrome s", "plots", "self-test"))
    for rel, kind, min_plots in pages:
        page = w(rel)
        st, dom, console, secs, r = browser.open(page)
        name = rel
        if st is None:
            failures.append("%s: no kf-status element in the DOM (chromium exit %d)" % (name, r.returncode))
            continue
        print("%-28s %9.2f %9s %9.1f %3s/%-3s  %s" % (name, os.path.getsize(page) / 1e6, st.get("load-ms"), secs,
                                                    st.get("plots-drawn"), st.get("plots-expected"),
                                                    st.get("selftest")))
        if console:
            failures.append("%s: console messages: %s" % (name, console[:5]))
        if st.get("errors") != "0":
            failures.append("%s: %s script error(s): %s" % (name, st.get("errors"), st.get("error-text")))
        if st.get("state") != "ready":
            failures.append("%s: page state %s, not ready" % (name, st.get("state")))
        drawn, expected = int(st.get("plots-drawn", "0")), int(st.get("plots-expected", "0"))
        if drawn != expected:
            failures.append("%s: %d of %d plots drawn; not drawn: %s" % (name, drawn, expected, st.get("plots-bad")))
        if expected < min_plots:
            failures.append("%s: %d plots, expected at least %d (skipped: %s)" % (name, expected, min_plots,
                                                                                   st.get("plots-skipped")))
        if kind == "report" and not st.get("selftest", "").startswith("ok:"):
            failures.append("%s: trajectory link self-test: %s" % (name, st.get("selftest")))
        if kind == "nocharts":
            if st.get("charts") != "missing" or "kf-charts-note" not in dom or "libjs-chart.js" not in dom:
                failures.append("%s: no note about the missing charting library" % name)
            if "<table" not in dom:
                failures.append("%s: no tables without the charting library" % name)
        if rel == "compare-small.html" and ('id="kf-dropped"' not in dom or "Dropped 1 task(s)" not in dom):
            failures.append("%s: the dropped tasks are not stated" % name)
        png = page[:-5] + ".png"
        if not browser.screenshot(page, png):
            failures.append("%s: no screenshot written" % name)
        else:
            print("  screenshot %s" % png)
    print("big run: %d tasks x 4 samples x 5 turns; generated (or reused; an earlier copy removed) in %.1f s; `kforge report` %.1f s; report.html %.2f MB"
          % (a.big_tasks, gen_s, report_s["big"], os.path.getsize(w("big", "report.html")) / 1e6))
    shutil.rmtree(browser.profile, ignore_errors=True)
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures))
        return 1
    print("report_html_browser: all pages passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
