#!/bin/sh
# `agy-audit list` over N conversations (issue 34: the budget for 10,000).
# Usage: benches/list_10k.sh [BIN] [N] [WORKDIR]
# Generates a home of 100 conversations per root (seed 1, no near-misses),
# then a root of N conversations by hard-linking the CLI store's .db files
# (and their -wal) under fresh ids (no disk space, no source changed), and
# times `list` (text and --json) on it with /usr/bin/time: wall seconds and
# peak RSS. Warm page cache: the files are read once before timing.
set -eu
BIN=${1:-target/release/agy-audit}
N=${2:-10000}
WORK=${3:-$(mktemp -d)}
rm -rf "$WORK/home" "$WORK/big"
"$BIN" corpus generate --home "$WORK/home" --conversations 100 --near-miss-rate 0 >/dev/null
src="$WORK/home/.gemini/antigravity-cli/conversations"
mkdir -p "$WORK/big/conversations"
i=0
while [ "$i" -lt "$N" ]; do
  for f in "$src"/*.db; do
    [ "$i" -lt "$N" ] || break
    id=$(cat /proc/sys/kernel/random/uuid)
    ln "$f" "$WORK/big/conversations/$id.db"
    [ -f "$f-wal" ] && ln "$f-wal" "$WORK/big/conversations/$id.db-wal"
    i=$((i + 1))
  done
done
"$BIN" list --root "$WORK/big" >/dev/null
for run in 1 2 3; do
  /usr/bin/time -f "list: %e s wall, %M KB peak RSS" "$BIN" list --root "$WORK/big" >/dev/null
done
/usr/bin/time -f "list --json: %e s wall, %M KB peak RSS" "$BIN" list --json --root "$WORK/big" >/dev/null
echo "conversations: $(ls "$WORK/big/conversations" | grep -c '\.db$'), with a -wal: $(ls "$WORK/big/conversations" | grep -c -- '-wal$')"
