#!/usr/bin/env bash
# output-compare.sh BEFORE_BIN AFTER_BIN
#
# Issue 47's "Done when": every command's output on the default corpus is
# byte-identical before and after a refactor. Runs scripts/output-snapshot.sh
# for each binary (both at once, each in its own temp folder) and compares
# the two snapshots with `diff -r`.
#
# Exit 0 when they are identical; 1 when they differ, after printing the
# first 200 lines of the difference (the snapshots are then kept, and their
# folder named, for a closer look); 2 on a usage error; anything else is the
# snapshot's own failure.
set -euo pipefail

if [ $# -ne 2 ]; then
    echo "usage: $0 BEFORE_BIN AFTER_BIN" >&2
    exit 2
fi
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
D=$(mktemp -d "${TMPDIR:-/tmp}/agy-compare.XXXXXXXX")
KEEP=
trap '[ -n "$KEEP" ] || rm -rf "$D"' EXIT

# Both at once (each has its own temp folder, HOME and daemon port): most
# of a snapshot runs on one core.
"$HERE/output-snapshot.sh" "$1" "$D/before" 2>"$D/before.log" &
before=$!
"$HERE/output-snapshot.sh" "$2" "$D/after" 2>"$D/after.log" &
after=$!
for side in before after; do
    rc=0
    wait "${!side}" || rc=$?
    if [ "$rc" -ne 0 ]; then
        echo "output-compare: the snapshot of the $side binary failed (exit $rc):" >&2
        cat "$D/$side.log" >&2
        exit "$rc"
    fi
done

rc=0
(cd "$D" && diff -ru before after) >"$D/diff" || rc=$?
if [ "$rc" -eq 0 ]; then
    echo "output-compare: identical ($(find "$D/before" -mindepth 1 -maxdepth 1 -type d | wc -l) commands): $1 and $2"
    exit 0
fi
[ "$rc" -eq 1 ] || {
    echo "output-compare: diff failed (exit $rc)" >&2
    exit "$rc"
}
KEEP=1
echo "output-compare: the outputs differ ($(wc -l <"$D/diff") lines of diff; the first 200):"
head -n 200 "$D/diff"
echo "output-compare: both snapshots and the whole diff are kept in $D" >&2
exit 1
