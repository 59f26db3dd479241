#!/usr/bin/env bash
# ctest slurm_sweep (issue 20 §4): a kforge sweep through a real Slurm, on this machine.
#
#   tests/slurm/slurm_sweep.sh KFORGE SCRIPTED_LLM WORK_DIR
#
# Starts a single-node cluster (scripts/slurm/local-cluster: munged, slurmctld, slurmd as root,
# CPUs=2, no GPU gres), starts the scripted model (tests/tools/kforge-scripted-llm), submits
# scripts/slurm/kforge-sweep: a 3-shard array of cpu-backend `kforge run`s on kforge-core's ci
# profile (3 tasks, 2 samples, 2 turns; --gres=none) and the dependent merge+report job; runs
# the same configuration unsharded; waits; checks every job ended with exit 0 and that the
# merged run equals the unsharded one attempt for attempt (outcome, sub-kind, source and prompt
# hashes, trials per (task, sample, turn); unusable.json; pass@k in summary.json). Then it
# drops the last record of shards 0 and 1 (as if their array tasks had been killed before
# appending it), resubmits array task 0 alone, has Slurm requeue array task 1 (`scontrol
# requeue`, as preemption does), checks that each resumed its shard, reruns the merge job, and
# checks the same equality again.
# Exit 77 (skipped, with the reason) only where the cluster's daemons cannot start. The cluster
# is torn down (daemons killed, its directory removed) on every exit; WORK_DIR is removed when
# the test passes and kept for inspection when it fails.
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: $0 KFORGE SCRIPTED_LLM WORK_DIR" >&2; exit 2; }
kforge=$(realpath "$1") scripted=$(realpath "$2") work=$3
src=$(cd "$(dirname "$0")/../.." && pwd)
export KFORGE_HOME=${KFORGE_HOME:-$src} KFORGE_BIN=$kforge PATH=$PATH:/usr/sbin
rm -rf "$work"
mkdir -p "$work"
work=$(cd "$work" && pwd)
cluster=$(mktemp -d /tmp/kforge-slurm.XXXXXX)  # short: the munge socket path must fit sun_path
rmdir "$cluster"
unset SLURM_CONF  # only the cluster started here is ever talked to
server=""
cluster_up=0
passed=0
cleanup() {
  [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null || true
  if [ $cluster_up = 1 ]; then  # no job outlives the test (slurmstepd survives slurmd)
    scancel --user=root 2>/dev/null || true
    for _ in $(seq 100); do [ -z "$(squeue -h 2>/dev/null)" ] && break; sleep 0.1; done
  fi
  "$src/scripts/slurm/local-cluster" stop "$cluster" || true
  if [ $passed = 1 ]; then rm -rf "$work"; else echo "slurm_sweep: kept $work for inspection" >&2; fi
}
trap cleanup EXIT
fail() {
  echo "slurm_sweep: FAILED: $*" >&2
  for f in "$work"/sweep/logs/*.out; do [ -f "$f" ] && { echo "--- $f"; tail -n 20 "$f"; } >&2; done
  exit 1
}

t0=$SECONDS
set +e
start_out=$("$src/scripts/slurm/local-cluster" start "$cluster" --cpus 2)
rc=$?
set -e
if [ $rc = 77 ]; then
  echo "skipped: a single-node Slurm cluster cannot start on this machine (reason above)"
  exit 77
fi
[ $rc = 0 ] || fail "scripts/slurm/local-cluster start exited $rc"
eval "$start_out"
cluster_up=1
echo "slurm_sweep: cluster up in $((SECONDS - t0)) s ($SLURM_CONF)"

# The scripted model: scripts/demo's replies (gelu_tanh: compile error, then mismatch; huber_mean
# and horner_polynomial pass at turn 1), except that huber_mean's sample 1 gets no code, so the
# two samples of a task differ and a merge that mixed them up would show.
python3 - "$src/tests/data/scripted" "$work/script.json" <<'PY'
import json, os, sys
d, out = sys.argv[1], sys.argv[2]
s = json.load(open(os.path.join(d, "demo.json")))
for r in s["replies"]:
    if "content_file" in r:
        r["content_file"] = os.path.join(d, r["content_file"])
s["replies"].insert(0, {"task": "loss/huber_mean", "sample": 1, "content": "scripted reply: no kernel"})
json.dump(s, open(out, "w"), indent=1)
PY
"$scripted" --port 0 --script "$work/script.json" >"$work/server.log" 2>&1 &
server=$!
for _ in $(seq 100); do grep -q '^listening on' "$work/server.log" && break; sleep 0.1; done
port=$(sed -n 's/^listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$work/server.log")
[ -n "$port" ] || fail "the scripted model did not start: $(cat "$work/server.log")"

opts=(--suite kforge-core --backend cpu --profile ci --llm openai:scripted
  --base-url "http://127.0.0.1:$port" --tasks activation/gelu_tanh,loss/huber_mean,math/horner_polynomial
  --samples 2 --turns 2 --stop-on pass --no-bench --profiler none --trials 2)
shards=3
sub=$("$src/scripts/slurm/kforge-sweep" --shards $shards --dir "$work/sweep" --gres none --cpus 1 -- "${opts[@]}")
echo "$sub"
array=$(sed -n 's/^array //p' <<<"$sub")
merge=$(sed -n 's/^merge //p' <<<"$sub")
[ -n "$array" ] && [ -n "$merge" ] || fail "kforge-sweep did not print the job ids"

# The same configuration, unsharded, outside Slurm (while the array runs).
"$kforge" run --out "$work/unsharded" "${opts[@]}" --no-print-report >"$work/unsharded.log" 2>&1 ||
  fail "the unsharded kforge run exited $?: $(tail -n 20 "$work/unsharded.log")"

wait_jobs() {  # job ids...; up to 240 s
  local ids
  ids=$(IFS=,; echo "$*")
  for _ in $(seq 2400); do
    [ -z "$(squeue -h -j "$ids" 2>/dev/null)" ] && return 0
    sleep 0.1
  done
  squeue >&2
  fail "jobs $ids still queued or running after 240 s"
}
# Every job (each array task, the merge) ended with exit code 0:0.
check_exit() {
  local job=$1 codes
  codes=$(scontrol -o show job "$job" | sed -n 's/^JobId=\([0-9]*\) .*JobState=\([A-Z]*\) .* ExitCode=\([0-9:]*\) .*/\1 \2 \3/p')
  echo "$codes" | while read -r id state code; do echo "slurm_sweep: job $id $state exit $code"; done
  [ -n "$codes" ] || fail "scontrol knows no job $job"
  if echo "$codes" | grep -qv ' COMPLETED 0:0$'; then fail "job $job: a task did not complete with exit 0"; fi
}
wait_jobs "$array" "$merge"
check_exit "$array"
check_exit "$merge"
[ "$(scontrol -o show job "$array" | grep -c 'ArrayTaskId=')" = $shards ] || fail "the array did not have $shards tasks"

compare() {  # MERGED UNSHARDED SHARDS_DIR
  python3 - "$@" <<'PY'
import json, os, sys
merged, unsharded, sweep = sys.argv[1:4]
def records(run):
    out = {}
    for line in open(os.path.join(run, "attempts.jsonl")):
        if line.strip():
            r = json.loads(line)
            out[(r["task"], r["sample"], r["turn"])] = r   # the later record of a key wins
    return out
fields = ["outcome", "sub_kind", "source_sha", "prompt_sha", "trials_passed", "trials"]
m, u = records(merged), records(unsharded)
assert set(m) == set(u), "keys differ: merged only %s, unsharded only %s" % (sorted(set(m) - set(u)), sorted(set(u) - set(m)))
for k in sorted(u):
    for f in fields:
        assert m[k].get(f) == u[k].get(f), "%s: %s is %r merged, %r unsharded" % (k, f, m[k].get(f), u[k].get(f))
outcomes = sorted({r["outcome"] for r in u.values()})
assert {"pass", "compile_error", "output_mismatch", "format_error"} <= set(outcomes), outcomes
assert len(u) == 9, "expected 9 attempts (gelu_tanh 2 turns x 2 samples, huber_mean 1 + 2, horner_polynomial 1 x 2), got %d" % len(u)
def unusable(run):
    p = os.path.join(run, "unusable.json")
    return json.load(open(p)) if os.path.exists(p) else None
assert unusable(merged) == unusable(unsharded), (unusable(merged), unusable(unsharded))
def passk(run):
    return json.load(open(os.path.join(run, "summary.json")))["overall"]["best"]["pass_at_k"]
assert passk(merged) == passk(unsharded), (passk(merged), passk(unsharded))
# Each shard ran only its own episodes, and more than one shard ran some.
owners = {}
for d in sorted(os.listdir(sweep)):
    if d.startswith("shard-"):
        for (t, s, _) in records(os.path.join(sweep, d)):
            assert owners.setdefault((t, s), d) == d, "episode %s %d in %s and %s" % (t, s, owners[(t, s)], d)
assert len(set(owners.values())) >= 2, owners
print("slurm_sweep: merged == unsharded: %d attempts, outcomes %s, pass@k %s, %d shards with episodes"
      % (len(u), outcomes, passk(merged), len(set(owners.values()))))
PY
}
[ -f "$work/sweep/merged/report.md" ] || fail "the merge job wrote no report"
compare "$work/sweep/merged" "$work/unsharded" "$work/sweep" || fail "the merged run differs from the unsharded one"

# A resubmitted or requeued array task resumes its shard. Drop the last record of shards 0 and 1
# (as if each task had been killed before appending it); resubmit array task 0 alone (what a user
# does after a failure) and have Slurm requeue array task 1 (what preemption does: the same job
# runs again, SLURM_RESTART_COUNT=1); then rerun the merge job.
drop_last() {  # SHARD_DIR -> prints the record count before
  local n
  n=$(grep -c . "$1/attempts.jsonl")
  [ "$n" -ge 1 ] || fail "$1 has no attempts"
  head -n $((n - 1)) "$1/attempts.jsonl" >"$1/attempts.tmp" && mv "$1/attempts.tmp" "$1/attempts.jsonl"
  echo "$n"
}
resumed_once() {  # SHARD_DIR RECORDS_BEFORE WHAT
  [ "$(grep -c . "$1/attempts.jsonl")" = "$2" ] || fail "$3: $1 has $(grep -c . "$1/attempts.jsonl") records, not $2"
  python3 -c "import json, sys; assert len(json.load(open(sys.argv[1])).get('resumes', [])) == 1" "$1/manifest.json" ||
    fail "$3: $1/manifest.json does not record one resume"
}
s0=$work/sweep/shard-0-of-$shards s1=$work/sweep/shard-1-of-$shards
n0=$(drop_last "$s0")
n1=$(drop_last "$s1")
sbatch --wait --quiet --array=0 --gres=none --output="$work/sweep/logs/shard-%a.out" \
  --export="ALL,KFORGE_HOME=$KFORGE_HOME,KFORGE_SHARDS=$shards" \
  "$src/scripts/slurm/kforge-array.sbatch" "$work/sweep" "${opts[@]}" || fail "the resubmitted array task failed"
resumed_once "$s0" "$n0" "the resubmitted array task 0"
job1=$(scontrol -o show job "$array" | sed -n 's/^JobId=\([0-9]*\) .*ArrayTaskId=1 .*/\1/p')
[ -n "$job1" ] || fail "no job id for array task 1"
scontrol requeue "$job1" || fail "scontrol requeue $job1 failed"
scontrol update JobId="$job1" StartTime=now  # a requeued job is otherwise held back ~2 minutes
for _ in $(seq 600); do
  grep -q "restart 1" "$work/sweep/logs/shard-1.out" && [ -z "$(squeue -h -j "$job1")" ] && break
  sleep 0.1
done
grep -q "restart 1" "$work/sweep/logs/shard-1.out" || fail "array task 1 did not run again after its requeue"
wait_jobs "$job1"
check_exit "$array"
scontrol -o show job "$array" | grep 'ArrayTaskId=1 ' | grep -q ' Restarts=1 ' || fail "array task 1 was not restarted once"
resumed_once "$s1" "$n1" "the requeued array task 1"
sbatch --wait --quiet --output="$work/sweep/logs/merge.out" --export="ALL,KFORGE_HOME=$KFORGE_HOME" \
  "$src/scripts/slurm/kforge-merge.sbatch" "$work/sweep" $shards || fail "the second merge job failed"
compare "$work/sweep/merged" "$work/unsharded" "$work/sweep" || fail "after the resubmission and the requeue, the merged run differs"
echo "slurm_sweep: passed in $((SECONDS - t0)) s"
passed=1
