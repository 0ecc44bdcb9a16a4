#!/usr/bin/env bash
# output-snapshot.sh BIN OUTDIR
#
# Records what every command of the agy-audit binary BIN prints and writes on
# the default corpus, so that two binaries (before and after a refactor, issue
# 47) can be compared byte for byte: scripts/output-compare.sh does that.
#
# In a fresh temp folder it generates the default corpus (`corpus generate`
# with its defaults) as the CLI root of a temp HOME
# (HOME/.gemini/antigravity-cli, so that the commands reading the default
# roots find it), serves it with `daemon-sim` on 127.0.0.1 (an ephemeral port,
# announced in the root's cli.log, where the commands find it; killed at exit
# by a trap), and runs every command: each --help and -h text (the command
# tree is read from the help itself, nested commands included), usage errors,
# rules, completions, schema (info, dump, diff, extract, verify, bundle),
# corpus generate, list, doctor, audit-sweep (text, --json, two shards),
# manifest merge, audit-qualify (text, --json, --junit, the captured
# manifests/default-corpus.manifest.json), audit-diff, report (md, html),
# shapes, format-audit, export-offline, export-check, verify-capture, sync,
# watch --once and bench. Not run: `demo` (the same steps again, and its
# summary is timings) and `schema extract` of a real agy binary (none here:
# the modeled set's dump stands in for one).
#
# OUTDIR (created; must not exist) gets one folder per command run, holding:
#   command      its arguments
#   exit-code    its exit status
#   stdout, stderr
#   written.txt  every path it created, changed (new inode, size, mode or
#                mtime) or deleted under the temp folder, with type and mode
#   files/       the bytes of each regular file it wrote, at its path
#                relative to the temp folder
# A file of a bulk tree (a store's conversations/, implicit/ and .truth/, a
# sweep's corpus/ of saved answers) larger than 64 KiB, and any output larger
# than 8 MiB, is not copied: a line of large-files.sha256 (SHA-256 and byte
# count of the normalised bytes, and the name) stands for it.
#
# Everything kept passes through `normalise` (its rules below), which replaces
# only what legitimately differs from run to run, each rule saying why:
# nothing else. The commands run with an empty environment (env -i) but for
# PATH, HOME, TMPDIR and LC_ALL, from a fixed working folder, standard input
# empty. One ordering is normalised too: the sweep of the whole corpus prints
# a line per session as each completes, in an order that changes from run to
# run, so its standard error is kept sorted (the other sweeps are --quiet).
# And one input is made the same: the generated sources' mtimes are set to
# fixed times (list shows them, newest first). The captured manifest is the
# one of this script's checkout.
# AGY_SNAPSHOT_VERBOSE=1 prints each command's wall time on standard error.
set -euo pipefail

usage() {
    echo "usage: $0 BIN OUTDIR   (OUTDIR must not exist)" >&2
    exit 2
}
die() {
    echo "output-snapshot: $*" >&2
    exit 1
}

[ $# -eq 2 ] || usage
[ -f "$1" ] && [ -x "$1" ] || die "$1: not an executable file"
BIN=$(realpath -e "$1")
[ -e "$2" ] && die "$2: exists (OUTDIR must not exist)"
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CAPTURED=$REPO/manifests/default-corpus.manifest.json
[ -f "$CAPTURED" ] || die "$CAPTURED: missing"
mkdir -p "$2"
OUTDIR=$(realpath -e "$2")

SMALL=65536       # a bulk tree's file up to this size is kept whole
LARGE=$((8 << 20)) # any other file up to this size is kept whole

# The temp folder: its name has a fixed length, so that a path's length (and
# any column laid out after one) is the same in every run.
WORK=$(realpath -e "$(mktemp -d "${TMPDIR:-/tmp}/agy-snap.XXXXXXXX")")
SNAP=$WORK/.snap # the script's own scratch, never listed as a command's write
H=$WORK/home
STORE=$H/.gemini/antigravity-cli
mkdir -p "$SNAP" "$H" "$WORK/tmp" "$WORK/cwd" "$WORK/out"

SIM_PID=
stop_sim() {
    if [ -n "$SIM_PID" ]; then
        kill "$SIM_PID" 2>/dev/null || true
        wait "$SIM_PID" 2>/dev/null || true
        SIM_PID=
    fi
}
cleanup() {
    stop_sim
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- normalisation -----------------------------------------------------------
# `rule TRIGGER EXPRESSION` adds a sed -E expression, with a fixed string that
# every text it can change holds: a file holding no trigger is kept as it is,
# without a sed pass (that keeps the hashing of a store and of a sweep's
# answers fast). Each rule says why what it replaces varies from run to run.
SED_RULES=()
TRIGGERS=$SNAP/triggers
: >"$TRIGGERS"
rule() {
    printf '%s\n' "$1" >>"$TRIGGERS"
    SED_RULES+=(-e "$2")
}
WORK_RE=$(printf '%s' "$WORK" | sed 's/[][\.*^$|+?(){}]/\\&/g')
# The temp folder's name is random (mktemp).
rule "$WORK" "s|$WORK_RE|<TMP>|g"
# daemon-sim listens on an ephemeral port, a new one each run: in URLs ...
rule '127.0.0.1:' 's|127\.0\.0\.1:[0-9]{1,5}|127.0.0.1:<PORT>|g'
# ... and in the cli.log lines that announce it (its HTTP port and the HTTPS
# decoy beside it).
rule 'port at ' 's|listening on random port at [0-9]{1,5}|listening on random port at <PORT>|g'
# Wall-clock times of this run (daemon-sim's cli.log lines, a sweep's started
# and finished, an attestation's verifiedAt): an RFC 3339 UTC time of today or
# tomorrow (a run across midnight). The corpus's own times are fixed by its
# seed and the captured manifest's are older, so neither is touched.
for day in "$(date -u +%F)" "$(date -u -d tomorrow +%F)"; do
    rule "${day}T" "s/${day}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?Z/<TIME>/g"
done
# A sweep's wall time: its summary line (wall=3.75s), its manifest's
# timing.wallSeconds, the report's "wall time 3.75 s".
rule 'wall=' 's/wall=[0-9]+(\.[0-9]+)?s/wall=<DURATION>s/g'
rule 'wallSeconds' 's/"wallSeconds": ?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?/"wallSeconds": <DURATION>/g'
rule 'wall time ' 's/wall time [0-9]+(\.[0-9]+)? s/wall time <DURATION> s/g'
# Throughputs measured in this run (report, bench, schema extract).
for unit in sessions conversations steps MB; do
    rule " $unit/s" "s#[0-9]+(\\.[0-9]+)? $unit/s#<RATE> $unit/s#g"
done
# corpus generate's own time ("...; total 512.7 MB; 7.3s").
rule 'MB; ' 's/MB; [0-9]+(\.[0-9]+)?s$/MB; <DURATION>s/'
# schema extract's timings ("time: read 0.00 s, extract 0.02 s").
rule 'time: read ' 's/time: read [0-9]+(\.[0-9]+)? s, extract [0-9]+(\.[0-9]+)? s/time: read <DURATION> s, extract <DURATION> s/g'
# bench: the time of its one pass, the ratios of two timings, and whether
# such a ratio met its target (which moves with the machine's load).
rule 'MB in ' 's/MB in [0-9]+(\.[0-9]+)? s;/MB in <DURATION> s;/g'
rule 'verify / sha-256 = ' 's#verify / sha-256 = [0-9.]+ \(by CPU time: [0-9.]+; verify CPU [0-9.]+ s\)#verify / sha-256 = <RATIO> (by CPU time: <RATIO>; verify CPU <DURATION> s)#g'
# doctor's and list --check's zombie-step age: seconds since the source last
# changed, which is how long ago the corpus was generated.
rule 'unchanged for ' 's/unchanged for [0-9]+ s/unchanged for <AGE> s/g'
rule 'quietSeconds' 's/"quietSeconds": ?[0-9]+/"quietSeconds": <AGE>/g'
rule 'by wall time)' 's#[0-9.]+ by CPU time \([0-9.]+ by wall time\) \(target ([^)]*)\): (met|missed)#<RATIO> by CPU time (<RATIO> by wall time) (target \1): <MET-OR-MISSED>#g'

normalise() {
    LC_ALL=C sed -E "${SED_RULES[@]}"
}

# --- capture -----------------------------------------------------------------
# Keeps the file $1 as $2/$3, normalised, or as a line of
# $2/large-files.sha256 when larger than $4 bytes.
keep() {
    local src=$1 dir=$2 name=$3 limit=$4
    if [ "$(stat -c %s "$src")" -le "$limit" ]; then
        mkdir -p "$(dirname "$dir/$name")"
        normalise <"$src" >"$dir/$name"
    else
        normalise <"$src" >"$SNAP/normalised"
        printf '%s %s %s\n' "$(sha256sum <"$SNAP/normalised" | cut -d' ' -f1)" \
            "$(stat -c %s "$SNAP/normalised")" "$name" >>"$dir/large-files.sha256"
    fi
}

# Every path under the temp folder but the script's scratch: path, type,
# mode, size, mtime, inode (tab-separated, sorted by path).
listing() {
    find "$WORK" -path "$SNAP" -prune -o -mindepth 1 \
        -printf '%P\t%y\t%m\t%s\t%T@\t%i\n' | LC_ALL=C sort
}

# Records in folder $1 what changed from listing $SNAP/before to
# $SNAP/after: written.txt, and the regular files written (files/ and
# large-files.sha256).
capture_writes() {
    local dir=$1 path
    LC_ALL=C comm -13 "$SNAP/before" "$SNAP/after" >"$SNAP/changed"
    cut -f1 "$SNAP/before" >"$SNAP/before.paths"
    cut -f1 "$SNAP/after" >"$SNAP/after.paths"
    {
        awk -F'\t' 'NR == FNR { was[$1] = 1; next }
            { print (($1 in was) ? "changed" : "new"), $2, $3, $1 }' \
            "$SNAP/before.paths" "$SNAP/changed"
        LC_ALL=C comm -23 "$SNAP/before.paths" "$SNAP/after.paths" | sed 's/^/deleted /'
    } | normalise >"$dir/written.txt"
    # The regular files written: kept whole ($SNAP/whole) or hashed
    # ($SNAP/hashed), by size and by tree.
    awk -F'\t' -v small="$SMALL" -v large="$LARGE" -v whole="$SNAP/whole" -v hashed="$SNAP/hashed" '
        $2 != "f" { next }
        { bulk = ("/" $1) ~ /\/(conversations|implicit|\.truth|corpus)\// }
        { print $1 > (($4 <= (bulk ? small : large)) ? whole : hashed) }' "$SNAP/changed"
    touch "$SNAP/whole" "$SNAP/hashed"
    # Those a rule may apply to (holding a trigger) pass through normalise.
    (cd "$WORK" && cat "$SNAP/whole" "$SNAP/hashed" | tr '\n' '\0' |
        LC_ALL=C xargs -0 -r grep -lF -f "$TRIGGERS" --) | LC_ALL=C sort >"$SNAP/triggered" || true
    LC_ALL=C sort -o "$SNAP/whole" "$SNAP/whole"
    LC_ALL=C sort -o "$SNAP/hashed" "$SNAP/hashed"
    mkdir -p "$dir/files"
    LC_ALL=C comm -23 "$SNAP/whole" "$SNAP/triggered" | tr '\n' '\0' |
        (cd "$WORK" && xargs -0 -r cp --parents -t "$dir/files" --)
    LC_ALL=C comm -23 "$SNAP/hashed" "$SNAP/triggered" | tr '\n' '\0' |
        (cd "$WORK" && xargs -0 -r sha256sum --) |
        awk -F'\t' 'NR == FNR { size[$1] = $4; next }
            { p = substr($0, 67); print substr($0, 1, 64), size[p], "files/" p }' \
            "$SNAP/changed" - >>"$dir/large-files.sha256"
    while IFS= read -r path; do
        if grep -qxF -- "$path" "$SNAP/whole"; then
            keep "$WORK/$path" "$dir" "files/$path" "$LARGE"
        else
            keep "$WORK/$path" "$dir" "files/$path" 0
        fi
    done <"$SNAP/triggered"
    rmdir --ignore-fail-on-non-empty "$dir/files"
    if [ -s "$dir/large-files.sha256" ]; then
        LC_ALL=C sort -k3 -o "$dir/large-files.sha256" "$dir/large-files.sha256"
    else
        rm -f "$dir/large-files.sha256"
    fi
    rm -f "$SNAP/whole" "$SNAP/hashed"
}

# --- running -----------------------------------------------------------------
# The binary, with an empty environment but for these.
agy() {
    (cd "$WORK/cwd" && exec env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$H" \
        TMPDIR="$WORK/tmp" LC_ALL=C "$BIN" "$@")
}

# run NAME [--stdin FILE] [--sort-stderr] -- ARGS...: runs the binary with
# ARGS, recorded under OUTDIR/NAME. --sort-stderr keeps its standard error's
# lines sorted: audit-sweep prints its per-session lines in the order the
# sessions complete, which changes from run to run (even at --concurrency 1
# --jobs 1, where a session refused from its source alone can overtake one
# being fetched), while its manifest and sessions.csv are in file id order.
run() {
    local name=$1 stdin=/dev/null sort_stderr= rc=0 began=$SECONDS
    shift
    if [ "$1" = --stdin ]; then
        stdin=$2
        shift 2
    fi
    if [ "$1" = --sort-stderr ]; then
        sort_stderr=1
        shift
    fi
    [ "$1" = -- ] && shift
    local dir=$OUTDIR/$name
    [ -e "$dir" ] && die "two runs named $name"
    mkdir -p "$dir"
    listing >"$SNAP/before"
    agy "$@" <"$stdin" >"$SNAP/stdout" 2>"$SNAP/stderr" || rc=$?
    listing >"$SNAP/after"
    { printf '%q ' agy-audit "$@" | sed 's/ $//' && echo; } | normalise >"$dir/command"
    echo "$rc" >"$dir/exit-code"
    if [ -n "$sort_stderr" ]; then
        LC_ALL=C sort -o "$SNAP/stderr" "$SNAP/stderr"
    fi
    keep "$SNAP/stdout" "$dir" stdout "$LARGE"
    keep "$SNAP/stderr" "$dir" stderr "$LARGE"
    capture_writes "$dir"
    if [ "${AGY_SNAPSHOT_VERBOSE:-}" = 1 ]; then
        echo "output-snapshot: $name: exit $rc, $((SECONDS - began)) s" >&2
    fi
}

# A folder for a command's outputs ($WORK/out/NAME), made before it runs.
out() {
    mkdir -p "$WORK/out/$1"
    printf '%s' "$WORK/out/$1"
}

# The subcommands a --help text lists (its `Commands:` section), but `help`.
subcommands() {
    awk '/^Commands:/ { f = 1; next } /^$/ { f = 0 } f && $1 != "help" { print $1 }'
}

# Every --help and -h text of the command tree under ARGS, recursively.
help_tree() {
    local name=help${*:+-}$(printf '%s' "$*" | tr ' ' '-') sub
    run "$name" -- "$@" --help
    run "$name-h" -- "$@" -h
    for sub in $(agy "$@" --help | subcommands); do
        help_tree "$@" "$sub"
    done
}

# --- help, version, usage errors --------------------------------------------
help_tree
run help-subcommand -- help
run help-subcommand-audit-sweep -- help audit-sweep
run version -- --version
run usage-no-arguments --
run usage-unknown-subcommand -- no-such-command
run usage-sweep-without-out -- audit-sweep
run usage-completions-unknown-shell -- completions tcsh

# --- rules, completions ------------------------------------------------------
run rules -- rules
run rules--markdown -- rules --markdown
for shell in bash zsh fish; do
    run "completions-$shell" -- completions "$shell"
done

# --- schema ------------------------------------------------------------------
S=$(out schema)
run schema-info -- schema info
run schema-dump -- schema dump
run schema-dump--out -- schema dump --out "$S/modeled.pb"
run schema-info--schema -- schema info --schema "$S/modeled.pb"
run schema-diff -- schema diff modeled "$S/modeled.pb"
run schema-diff--json -- schema diff --json modeled "$S/modeled.pb"
# A FileDescriptorSet is a run of raw FileDescriptorProto records, so the
# dump stands in for a Go binary that embeds them.
run schema-extract -- schema extract "$S/modeled.pb" --out "$S/extracted.pb" --release 0.0.0
run schema-verify -- schema verify --manifest "$S/extracted.pb.manifest.json" "$S/modeled.pb"
run schema-bundle -- schema bundle --base modeled --from "$S/extracted.pb" \
    --add gemini_coder.Step --out "$S/bundle.pb"

# --- the default corpus, served ----------------------------------------------
run corpus-generate -- corpus generate --out "$STORE"
# The generator leaves each file's mtime at the moment it wrote it, so list's
# `modified` and its newest-first order would follow the speed of the run:
# the sources get fixed, distinct times instead (a minute apart from
# 2026-11-01T00:00:00Z, in path order). An input made the same, not an
# output normalised.
t=$(date -u -d 2026-11-01T00:00:00Z +%s)
find "$STORE/conversations" "$STORE/implicit" -type f | LC_ALL=C sort >"$SNAP/sources"
while IFS= read -r f; do
    t=$((t + 60))
    touch -h -d "@$t" "$f"
done <"$SNAP/sources"

mkdir -p "$OUTDIR/daemon-sim"
printf 'agy-audit daemon-sim --store <TMP>/home/.gemini/antigravity-cli\n' >"$OUTDIR/daemon-sim/command"
listing >"$SNAP/before"
(cd "$WORK/cwd" && exec env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$H" \
    TMPDIR="$WORK/tmp" LC_ALL=C "$BIN" daemon-sim --store "$STORE") \
    >"$SNAP/sim.stdout" 2>"$SNAP/sim.stderr" &
SIM_PID=$!
for _ in $(seq 600); do
    grep -q 'http://127\.0\.0\.1:' "$SNAP/sim.stdout" && break
    kill -0 "$SIM_PID" 2>/dev/null || die "daemon-sim exited: $(cat "$SNAP/sim.stderr")"
    sleep 0.1
done
grep -q 'http://127\.0\.0\.1:' "$SNAP/sim.stdout" || die "daemon-sim did not announce itself in 60 s"
listing >"$SNAP/after"
capture_writes "$OUTDIR/daemon-sim"

# --- the store through the default roots (HOME) ------------------------------
run list -- list
run list--json -- list --json
run list--check -- list --check
run list--include-implicit -- list --include-implicit
run doctor -- doctor
run doctor--json -- doctor --json

# --- sweeps ------------------------------------------------------------------
SW=$(out audit-sweep)/sweep
run audit-sweep--json --sort-stderr -- audit-sweep --json --root "$STORE" --out "$SW"
M=$SW/manifest.json
S1=$(out audit-sweep--shard-1)/sweep
S2=$(out audit-sweep--shard-2)/sweep
run audit-sweep--shard-1 -- audit-sweep --quiet --shard 1/2 --root "$STORE" --out "$S1"
run audit-sweep--shard-2--json -- audit-sweep --quiet --json --shard 2/2 --root "$STORE" --out "$S2"
run manifest-merge -- manifest merge --out "$(out manifest-merge)/manifest.json" "$S1" "$S2/manifest.json"
run manifest-merge-one-shard -- manifest merge --out "$(out manifest-merge-one-shard)/merged.json" "$S1"

# The conversations the later commands look at, from sessions.csv (fileId
# first, format third, verdict seventh, bytes before the last `redaction`
# column, counted from the end since a reason may hold commas; the default
# corpus plants no secret, so no redaction cell does): the smallest verified
# SQLite one, the smallest refused as unknown, and the next three verified
# ones (left for watch to verify).
by_size() {
    awk -F, -v want="$1" 'NR > 1 && $3 == "sqlite" && $7 == want { print $(NF - 1), $1 }' "$SW/sessions.csv" |
        LC_ALL=C sort -n | cut -d' ' -f2
}
OK_ID=$(by_size verified | sed -n 1p)
REFUSED_ID=$(by_size unknown | sed -n 1p)
WATCHED_IDS=$(by_size verified | sed -n 2,4p)
FOREIGN_ID=$(by_size verified | sed -n 5p)
[ -n "$OK_ID" ] && [ -n "$REFUSED_ID" ] && [ -n "$FOREIGN_ID" ] ||
    die "too few verified or unknown sessions in $SW/sessions.csv"

# --- offline rechecks and reports --------------------------------------------
Q=$(out audit-qualify)
run audit-qualify -- audit-qualify "$M"
run audit-qualify--json -- audit-qualify --json "$M"
run audit-qualify--junit -- audit-qualify --junit "$Q/junit.xml" "$M"
CAP=$(out captured)/default-corpus.manifest.json
cp "$CAPTURED" "$CAP"
run audit-qualify-captured -- audit-qualify --root "$STORE" "$CAP"

D=$(out audit-diff)
run audit-diff-itself -- audit-diff "$M" "$M"
run audit-diff-itself--json -- audit-diff --json "$M" "$M"
run audit-diff-itself--html -- audit-diff --format html --out "$D/itself.html" "$SW" "$M"
run audit-diff-itself--junit -- audit-diff --junit "$D/itself.junit.xml" "$M" "$M"
run audit-diff-captured -- audit-diff "$CAP" "$M"
run audit-diff-captured--json -- audit-diff --json "$CAP" "$M"
run audit-diff-shards -- audit-diff "$S1" "$S2"

R=$(out report)
run report -- report "$M"
run report--out -- report --out "$R/report.md" "$M"
run report--html -- report --format html --out "$R/report.html" "$M"

run shapes-digest -- shapes digest "$SW/shapes-ordinary.tsv"
run shapes-digest-stdin --stdin "$SW/shapes-full.tsv" -- shapes digest -
run shapes-diff -- shapes diff "$SW/shapes-ordinary.tsv" "$SW/shapes-full.tsv"
run shapes-diff--json -- shapes diff --json "$SW/shapes-ordinary.tsv" "$SW/shapes-full.tsv"

F=$(out format-audit)
run format-audit -- format-audit "$M"
run format-audit--out -- format-audit --out "$F/format-audit.md" "$SW"
run format-audit--against -- format-audit --against "$SW/shapes-full.tsv" "$M"
run shapes-diff-record -- shapes diff "$SW/shapes-full.tsv" "$F/format-audit.json"

E=$(out export-offline)
run export-offline -- export-offline "$OK_ID"
run export-offline--md -- export-offline --format md "$OK_ID"
run export-offline--json -- export-offline --json --out "$E/$OK_ID.json" "$OK_ID"
run export-offline-path--md -- export-offline --format md --out "$E/$OK_ID.md" "$STORE/conversations/$OK_ID.db"
run export-offline-refused -- export-offline "$REFUSED_ID"
run export-offline-refused--allow-unknown -- export-offline --allow-unknown --format md "$REFUSED_ID"
run export-check -- export-check "$M"

V=$(out verify-capture)
run verify-capture -- verify-capture --db "$STORE/conversations/$OK_ID.db" \
    --full "$SW/corpus/$OK_ID.full.json" --ordinary "$SW/corpus/$OK_ID.ordinary.json" \
    --out "$V/$OK_ID.trajectory.json"
# A refused session has no saved answers (it is refused from its source
# before any fetch): its source with a verified one's answers; and a verified
# source with another conversation's answers.
OTHER_ID=$(by_size verified | sed -n 2p)
run verify-capture-refused -- verify-capture --db "$STORE/conversations/$REFUSED_ID.db" \
    --full "$SW/corpus/$OK_ID.full.json" --ordinary "$SW/corpus/$OK_ID.ordinary.json"
run verify-capture-other-answers -- verify-capture --db "$STORE/conversations/$OK_ID.db" \
    --full "$SW/corpus/$OTHER_ID.full.json" --ordinary "$SW/corpus/$OTHER_ID.ordinary.json"

# --- sidecars beside the store (last: they change what list shows) -----------
run sync -- sync "$OK_ID"
run sync--recheck -- sync --recheck "$OK_ID"
run sync--recheck-missing -- sync --recheck "$REFUSED_ID"
run list-after-sync -- list --check
# watch verifies one conversation at a time (about 400 would take minutes):
# the store gets the sidecars the sweep attested, but for three conversations
# that watch then verifies, and a file that is no sidecar at a fifth's path.
for side in "$SW"/corpus/*.trajectory.json; do
    cp -n "$side" "$STORE/conversations/"
done
for id in $WATCHED_IDS; do
    rm "$STORE/conversations/$id.trajectory.json"
done
printf '{"note": "not a trajectory sidecar"}\n' >"$STORE/conversations/$FOREIGN_ID.trajectory.json"
run watch--once -- watch --once
run list-after-watch -- list --json --check
run doctor-after-watch -- doctor --json

# --- bench (its figures are timings: see the bench rules) --------------------
run bench -- bench --corpus "$STORE" --no-peer --no-rss --no-sweep --no-comparison --passes 1

stop_sim
keep "$SNAP/sim.stdout" "$OUTDIR/daemon-sim" stdout "$LARGE"
keep "$SNAP/sim.stderr" "$OUTDIR/daemon-sim" stderr "$LARGE"
echo "output-snapshot: $(find "$OUTDIR" -mindepth 1 -maxdepth 1 -type d | wc -l) commands recorded in $OUTDIR" >&2
