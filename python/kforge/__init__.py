"""kforge's runs as tables (docs/tables.md).

    import kforge
    df = kforge.load_run("runs/r1")        # pandas.DataFrame, one row per attempt
    df[df.outcome == "pass"].speedup.mean()  # null (not measured) speedups are skipped
    s = kforge.load_summary("runs/r1")     # summary.json as a dict (pass@k, fast_p, ...)

The columns are the ones of `kforge export RUN --format csv|parquet` (runs/attempt_table.hpp),
in the same order and with the same nulls: a value not measured (the speedup of a failure, a
phase that did not run, an error figure with no trial) is null, never 0. Reads attempts.jsonl
of any kforge version: older files write "not measured" as 0.0, read here as null too.
"""
import json
import math
import os

__all__ = ["COLUMNS", "load_run", "load_summary", "records", "rows"]

# (name, type): text -> pandas "string", integer -> "Int64", real -> "float64", boolean -> "boolean".
COLUMNS = [
    ("task", "text"), ("category", "text"), ("difficulty", "integer"), ("sample", "integer"),
    ("turn", "integer"), ("backend", "text"), ("model", "text"), ("outcome", "text"), ("sub_kind", "text"),
    ("message", "text"), ("error_group", "text"), ("correct", "boolean"), ("trials_passed", "integer"),
    ("trials", "integer"), ("max_abs_err", "real"), ("max_rel_err", "real"), ("mismatch_fraction", "real"),
    ("tolerance_ratio", "real"), ("precision", "text"), ("precision_disallowed", "boolean"),
    ("t_candidate_ms", "real"), ("t_reference_ms", "real"), ("t_candidate_p10_ms", "real"),
    ("t_candidate_p90_ms", "real"), ("t_reference_p10_ms", "real"), ("t_reference_p90_ms", "real"),
    ("cv", "real"), ("speedup", "real"), ("speedup_credited", "boolean"), ("speedup_ci_low", "real"),
    ("speedup_ci_high", "real"), ("timing_anomaly", "text"), ("achieved_gbps", "real"),
    ("achieved_tflops", "real"), ("peak_gbps", "real"), ("peak_tflops", "real"), ("dram_fraction", "real"),
    ("flops_fraction", "real"), ("bottleneck", "text"), ("profiler", "text"), ("llm_ms", "real"),
    ("compile_ms", "real"), ("check_ms", "real"), ("bench_ms", "real"), ("total_ms", "real"),
    ("compile_cached", "boolean"), ("prompt_tokens", "integer"), ("completion_tokens", "integer"),
    ("cost_usd", "real"), ("exemplar", "text"), ("temperature", "real"), ("seed", "integer"),
    ("source_sha", "text"), ("artifact_sha256", "text"), ("started_at", "text"), ("finished_at", "text"),
    ("attempt_dir", "text"),
]
_DTYPES = {"text": "string", "integer": "Int64", "real": "float64", "boolean": "boolean"}
# Measurements whose 0 (older files) or null means "not measured" (runs/attempt.hpp).
_MEASURED = {"tolerance_ratio", "t_candidate_ms", "t_reference_ms", "t_candidate_p10_ms", "t_candidate_p90_ms",
             "cv", "speedup", "speedup_ci_low", "speedup_ci_high", "achieved_gbps", "achieved_tflops",
             "llm_ms", "compile_ms", "check_ms", "bench_ms", "total_ms"}
_PROFILE_MEASURED = {"t_reference_p10_ms", "t_reference_p90_ms", "peak_gbps", "peak_tflops", "dram_fraction",
                     "flops_fraction"}
_AFTER_TRIALS = {"max_abs_err", "max_rel_err", "mismatch_fraction"}
_NULL_IF_EMPTY = {"category", "model", "sub_kind", "message", "error_group", "precision", "timing_anomaly",
                  "exemplar", "source_sha", "artifact_sha256", "started_at", "finished_at", "attempt_dir"}


def _real(v):
    if v is None:
        return None
    if isinstance(v, str):
        return {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}[v]
    return float(v)


def _measured(v):
    v = _real(v)
    return None if v is None or v == 0 else v


def records(run_dir):
    """attempts.jsonl's records as dicts, in file order (a torn last line is skipped)."""
    path = os.path.join(run_dir, "attempts.jsonl")
    out = []
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = f.read().split("\n")
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except ValueError:
            if i == len(lines) - 1:
                continue  # a torn write (no final newline), as kforge's own reader
            raise ValueError("%s: line %d is not JSON" % (path, i + 1)) from None
    return out


def _row(r):
    """One record as the table's row (the same rules as runs/src/attempt_table.cpp)."""
    p = r.get("profile") or {}
    trials = int(r.get("trials") or 0)
    row = {}
    for name, kind in COLUMNS:
        if name in _MEASURED:
            v = _measured(r.get(name))
        elif name in _PROFILE_MEASURED:
            v = _measured(p.get(name))
        elif name in _AFTER_TRIALS:
            v = _real(r.get(name, 0)) if trials > 0 else None
        elif name == "difficulty":
            v = r.get(name) or None
        elif name in ("bottleneck", "profiler"):
            v = p.get(name) or None
        elif name == "speedup_credited":
            s = _measured(r.get("speedup"))
            v = (r.get("outcome") == "pass" and s is not None and math.isfinite(s) and s > 0
                 and not r.get("precision_disallowed", False) and not r.get("timing_anomaly"))
        elif name == "correct":
            v = bool(r.get("correct", r.get("outcome") == "pass"))
        elif kind == "real":
            v = _real(r.get(name, 0))
        elif kind == "integer":
            v = int(r.get(name) or (1 if name == "turn" else 0))
        elif kind == "boolean":
            v = bool(r.get(name, False))
        else:
            v = r.get(name, "")
            if name in _NULL_IF_EMPTY and v == "":
                v = None
        row[name] = v
    return row


def rows(run_dir):
    """The table as a list of dicts (no pandas needed): one per attempt, COLUMNS' keys."""
    return [_row(r) for r in records(run_dir)]


def load_run(run_dir):
    """The run's attempts as a pandas.DataFrame: one row per attempt, COLUMNS in order, nullable
    dtypes (string, Int64, float64 with NaN for null, boolean)."""
    import pandas as pd
    data = rows(run_dir)
    return pd.DataFrame({name: pd.Series([r[name] for r in data], dtype=_DTYPES[kind]) for name, kind in COLUMNS})


def load_summary(run_dir):
    """The run's summary.json (written by kforge run, eval's report and `kforge report RUN`) as a dict."""
    path = os.path.join(run_dir, "summary.json")
    if not os.path.isfile(path):
        raise FileNotFoundError("%s: no summary.json; `kforge report %s` writes it" % (path, run_dir))
    with open(path, encoding="utf-8") as f:
        return json.load(f)
