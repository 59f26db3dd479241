#!/usr/bin/env bash
# temporary: runner crash diagnosis on the GPU machine (not committed)
cd "$(dirname "$0")"; export KFORGE_HOME=$PWD
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
./scripts/gpu-check build > $OUT/gpucheck-build.txt 2>&1 || { tail -30 $OUT/gpucheck-build.txt; exit 1; }
cat > /tmp/wrap.sh <<EOW
#!/bin/bash
exec $PWD/build/backends/runner/kforge-runner "\$@" 2>>$OUT/runner-stderr.log
EOW
chmod +x /tmp/wrap.sh
export KFORGE_RUNNER=/tmp/wrap.sh
run1() {  # name, extra args
  rm -rf /tmp/kf-$1; local n=$1; shift
  echo "=== $n" >> $OUT/runner-stderr.log
  timeout 200 build/agent/kforge eval --suite kforge-core --backend triton --kernels prompts/exemplars/triton --out /tmp/kf-$n "$@" > $OUT/eval-$n.txt 2>&1
  echo "== $n rc=$?"; grep -E "^[a-z_]+/" $OUT/eval-$n.txt | tail -3
}
run1 film --only film_modulation --no-bench
grep "fatal signal" $OUT/runner-stderr.log | head
ldd build/backends/runner/kforge-runner | grep -iE "stdc|torch|gcc|python" 
line=$(grep -o 'top of stack [^ ]* ([^)]*)' $OUT/runner-stderr.log | head -1); echo "$line"
lib=$(echo "$line" | sed 's/.*(\(.*\)+0x.*/\1/'); off=$(echo "$line" | sed 's/.*+\(0x[0-9a-f]*\)).*/\1/')
echo "lib=$lib off=$off"; [ -f "$lib" ] && addr2line -f -C -e "$lib" $off
[ -f "$lib" ] && objdump -d --start-address=$((off-40)) --stop-address=$((off+8)) -C "$lib" | tail -20
