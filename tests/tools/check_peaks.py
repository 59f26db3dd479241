#!/usr/bin/env python3
"""The prompt's stated peaks hold (issue 39): for every timed pass of a `kforge eval` run (its
attempts.jsonl), the achieved FLOP rate and DRAM bandwidth are at most the peaks the same record
states (profile.peak_tflops, profile.peak_gbps: what the prompt quotes). Prints one line per
pass, fraction of each peak, and the best fractions; exit 1 when a pass exceeds a stated peak,
2 when no pass states both a peak and an achieved figure (nothing checked).

Usage: check_peaks.py ATTEMPTS.jsonl
"""
import json
import sys


def main(path):
    best = {"tflops": (0.0, ""), "gbps": (0.0, "")}
    over, checked = [], 0
    print("%-36s %10s %10s %8s %10s %10s %8s" % ("task", "TFLOP/s", "peak", "frac", "GB/s", "peak", "frac"))
    for line in open(path):
        r = json.loads(line)
        p = r.get("profile") or {}
        if r.get("outcome") != "pass":
            continue
        row = [r["task"][:36]]
        for what, peak in (("tflops", p.get("peak_tflops")), ("gbps", p.get("peak_gbps"))):
            got = r.get("achieved_" + what)
            if not got or not peak:
                row += ["-", "-", "-"]
                continue
            frac = got / peak
            checked += 1
            row += ["%.3f" % got, "%.3f" % peak, "%.2f" % frac]
            if frac > best[what][0]:
                best[what] = (frac, r["task"])
            if frac > 1.0:
                over.append("%s: %s %.3f above the stated peak %.3f" % (r["task"], what, got, peak))
        print("%-36s %10s %10s %8s %10s %10s %8s" % tuple(row))
    for what, (frac, task) in best.items():
        print("best fraction of the stated %s peak: %.2f (%s)" % (what, frac, task or "-"))
    for o in over:
        print("ABOVE PEAK: " + o)
    if not checked:
        print("nothing checked: no pass states a peak and an achieved figure")
        return 2
    return 1 if over else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
