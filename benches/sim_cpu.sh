#!/usr/bin/env bash
# The simulated daemon's CPU per answer: a sweep of a generated store against
# `agy-audit daemon-sim`, reading the sim process's utime+stime from
# /proc/PID/stat (Linux) before and after, divided by the RPC answers it served
# (each fetched conversation costs 3: LoadTrajectory and the two
# GetCascadeTrajectory calls). Usage: benches/sim_cpu.sh [BIN] [N] [WORKDIR]
set -euo pipefail
BIN=${1:-target/release/agy-audit}
N=${2:-400}
W=${3:-$(mktemp -d)}
STORE="$W/store"
"$BIN" corpus generate --out "$STORE" --conversations "$N" --seed 7 --near-miss-rate 0 --scale 0.5 --force >/dev/null
rm -f "$STORE/cli.log"
"$BIN" daemon-sim --store "$STORE" --no-fault-file >/dev/null 2>&1 &
SIM=$!
trap 'kill $SIM 2>/dev/null || true' EXIT
for _ in $(seq 200); do
  PORT=$(sed -n 's/.*listening on random port at \([0-9]*\) for HTTP$/\1/p' "$STORE/cli.log" 2>/dev/null | tail -1)
  [ -n "${PORT:-}" ] && break
  sleep 0.05
done
ticks() { awk '{print $14 + $15}' "/proc/$SIM/stat"; }
HZ=$(getconf CLK_TCK)
T0=$(ticks)
START=$(date +%s.%N)
"$BIN" audit-sweep --quiet --root "$STORE" --out "$W/out" --daemon-url "http://127.0.0.1:$PORT" >/dev/null 2>&1 || true
END=$(date +%s.%N)
T1=$(ticks)
FETCHED=$(ls "$STORE/.truth/daemon/" | grep -c '\.full\.json$')
ANSWERS=$((FETCHED * 3))
awk -v t="$((T1 - T0))" -v hz="$HZ" -v a="$ANSWERS" -v s="$START" -v e="$END" 'BEGIN {
  printf "sim cpu %.3f s over %d answers: %.1f us/answer (sweep wall %.2f s)\n", t/hz, a, t/hz/a*1e6, e-s }'
