#!/usr/bin/env bash
# Builds the fuzz targets' seed corpora from the default corpus, reproducibly
# (same generator, same seeds, same bytes): fuzz/seeds/<target>/, plus the
# dictionary fuzz/dicts/compare_json.dict. Usage, from the repository root:
#
#   fuzz/seed.sh [STORE]      # STORE: a default-corpus store (default: a
#                             # fresh `corpus generate` under $TMPDIR)
#
# Needs ./target/release/agy-audit (`cargo build --release --locked`) and
# python3; legacy plaintexts (the scan and legacy seeds) also need python3's
# `cryptography` package, and are skipped with a note without it.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=./target/release/agy-audit
[ -x "$bin" ] || { echo "seed.sh: build first: cargo build --release --locked" >&2; exit 1; }
work="$(mktemp -d "${TMPDIR:-/tmp}/agy-fuzz-seed.XXXXXX")"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
store="${1:-}"
if [ -z "$store" ]; then
  store="$work/store"
  "$bin" corpus generate --out "$store" >/dev/null
fi
out="${FUZZ_SEEDS:-fuzz/seeds}"  # where the seeds go
rm -rf "$out"
mkdir -p "$out" fuzz/dicts

# The compare target's fixed expected trajectory, and its answers re-encoded
# by each --json-style of the simulated daemon (swept, so enveloped as the
# daemon sends them).
id=f7cb245c-5845-485a-b742-99cb2d064317
mkdir -p "$out/compare_json" "$out/manifest"
cmp "$store/conversations/$id.pb" "fuzz/fixtures/compare/$id.pb"
cp "$store/.truth/daemon/$id.full.json" "$out/compare_json/bare.full.json"
cp "$store/.truth/daemon/$id.ordinary.json" "$out/compare_json/bare.ordinary.json"
for style in canonical nine-digit-times proto-names enum-numbers int64-numbers spaced mixed; do
  root="$work/root-$style"
  mkdir -p "$root/conversations" "$root/.truth/daemon"
  cp "$store/conversations/$id.pb" "$root/conversations/"
  cp "$store/.truth/daemon/$id".*.json "$root/.truth/daemon/"
  "$bin" daemon-sim --store "$root" --no-fault-file --json-style "$style" --duration 60 >/dev/null 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do grep -q "for HTTP" "$root/cli.log" 2>/dev/null && break; sleep 0.1; done
  "$bin" audit-sweep --root "$root" --out "$work/sweep-$style" --quiet >/dev/null 2>&1
  kill "${pids[-1]}" 2>/dev/null || true
  cp "$work/sweep-$style/corpus/$id.full.json" "$out/compare_json/$style.full.json"
  cp "$work/sweep-$style/corpus/$id.ordinary.json" "$out/compare_json/$style.ordinary.json"
  cp "$work/sweep-$style/manifest.json" "$out/manifest/sweep-$style.json"
done
cp manifests/default-corpus.manifest.json "$out/manifest/default-corpus.json"

"$bin" schema dump --out "$work/modeled.pb" >/dev/null

python3 - "$store" "$out" "$work/modeled.pb" <<'PY'
import glob, gzip, hashlib, json, os, re, sqlite3, struct, sys

store, out, modeled = sys.argv[1:]
conv = os.path.join(store, "conversations")

def put(target, name, data):
    d = os.path.join(out, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)

def join2(a, b):
    return struct.pack("<I", len(a)) + a + b

def by_size(pattern):
    return sorted(glob.glob(os.path.join(conv, pattern)), key=lambda p: (os.path.getsize(p), p))

def read(p):
    with open(p, "rb") as f:
        return f.read()

# SQLite: the smallest databases alone, and with their -wal.
for p in by_size("*.db")[:8]:
    put("sqlite_snapshot", os.path.basename(p), read(p))
walled = [p for p in by_size("*.db") if os.path.exists(p + "-wal")][:8]
for p in walled:
    put("wal_replay", os.path.basename(p) + "+wal", join2(read(p), read(p + "-wal")))

# Protobuf wire walking, for the source-only payloads.
def varint(b, i):
    v = s = 0
    while True:
        c = b[i]; i += 1
        v |= (c & 0x7F) << s; s += 7
        if c < 0x80:
            return v, i

def fields(b):
    i = 0
    while i < len(b):
        start = i
        key, i = varint(b, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            _, i = varint(b, i); val = None
        elif wt == 1:
            val = None; i += 8
        elif wt == 5:
            val = None; i += 4
        elif wt == 2:
            n, i = varint(b, i); val = b[i:i + n]; i += n
        else:
            return
        yield num, val

# Field numbers (proto/): Trajectory.generator_metadata = 3;
# CortexStepGeneratorMetadata.chat_model = 1, .planner_config = 3;
# ChatModelMetadata.message_prompts = 2; ChatMessagePrompt field 23 and
# CascadePlannerConfig field 50 are the declared source-only fields.
def gen_sites(gen):
    for n, v in fields(gen):
        if n == 1 and v is not None:
            for m, prompt in fields(v):
                if m == 2 and prompt is not None:
                    for k, payload in fields(prompt):
                        if k == 23 and payload is not None:
                            yield "prompt23", prompt, payload
        if n == 3 and v is not None:
            for k, payload in fields(v):
                if k == 50 and payload is not None:
                    yield "planner50", b"", payload

seen = set()
with_trajectory = []
def source_only(gen, trajectory, label):
    try:
        sites = list(gen_sites(gen))
    except IndexError:
        return
    for kind, prompt, payload in sites:
        if kind == "prompt23" and trajectory and len(with_trajectory) < 1:
            with_trajectory.append(label)  # one carries its whole trajectory
        else:
            trajectory = b""
        seed = join2(prompt, join2(payload, trajectory))
        h = hashlib.sha256(seed).hexdigest()[:16]
        if (kind, h) not in seen and len([s for s in seen if s[0] == kind]) < 12:
            seen.add((kind, h))
            put("source_only", f"{kind}-{label}-{h}", seed)

# Legacy sources: the envelopes, and their plaintexts (the canonical
# encoding: what the strict scanner reads).
pbs = by_size("*.pb")
for p in pbs[:6]:
    put("legacy_envelope", os.path.basename(p), read(p))
try:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM
except ImportError:
    AESGCM = None
    print("seed.sh: no python3 cryptography package: no plaintext seeds for scan", file=sys.stderr)
if AESGCM:
    key = AESGCM(b"safeCodeiumworldKeYsecretBalloon")  # agy's published format key
    for p in pbs:
        b = read(p)
        try:
            plain = key.decrypt(b[:12], b[12:], None)
        except Exception:
            continue  # a near miss of the corpus (damaged on purpose)
        name = os.path.basename(p)[:-3]
        if len(plain) <= 256 * 1024:
            put("scan", name, plain)
        if len(plain) <= 64 * 1024:
            put("legacy_envelope", name + ".plain", plain)
        try:
            for n, gen in fields(plain):
                if n == 3 and gen is not None:
                    source_only(gen, plain, name[:8])
        except IndexError:
            pass

# The SQLite sources' generator metadata rows (after the legacy sources,
# whose sites come with their whole trajectory for the derivation check).
for p in by_size("*.db"):
    c = sqlite3.connect("file:" + p + "?mode=ro&immutable=1", uri=True)
    try:
        for (data,) in c.execute("select data from gen_metadata order by idx"):
            if data:
                source_only(bytes(data), b"", os.path.basename(p)[:8])
    finally:
        c.close()

# Descriptor sets: the modeled set, gzipped, an editions set; the extractor
# reads them embedded in binary-like noise.
s = read(modeled)
put("schema_load", "modeled.pb", s)
put("schema_load", "modeled.pb.gz", gzip.compress(s, mtime=0))
put("schema_load", "editions-set.pb", read("tests/fixtures/schema/editions-set.pb"))
noise = b"".join(hashlib.sha256(bytes([i])).digest() for i in range(64))
put("descriptor_extract", "modeled.pb", s)
put("descriptor_extract", "in-noise.bin", noise + b"\x00see google/protobuf/any.proto\x00" + s[: len(s) // 2] + noise + s + noise)

# The compare target's dictionary: every member name of the canonical views
# in its JSON and proto spelling, every enum name, the JSON literals.
words = set()
def walk(v):
    if isinstance(v, dict):
        for k, c in v.items():
            words.add(k)
            words.add(re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), k))
            walk(c)
    elif isinstance(v, list):
        for c in v:
            walk(c)
    elif isinstance(v, str) and re.fullmatch(r"[A-Z][A-Z0-9_]+", v):
        words.add(v)
for view in ("full", "ordinary"):
    with open(os.path.join(out, "compare_json", f"bare.{view}.json")) as f:
        walk(json.load(f))
with open("fuzz/dicts/compare_json.dict", "w") as f:
    f.write("# Generated by fuzz/seed.sh from the default corpus's f7cb245c views.\n")
    for w in ["true", "false", "null", "{", "}", "[", "]", ":", ",", "Z", ".000Z", "+00:00", "e0", ".0", "\\u0000"]:
        f.write(json.dumps(w) + "\n")
    for w in sorted(words):
        f.write(json.dumps(w) + "\n")
        f.write(json.dumps('"' + w + '"') + "\n")
PY
for d in "$out"/*/; do printf '%-20s %3d seeds, %7d KB\n' "$(basename "$d")" "$(ls "$d" | wc -l)" "$(du -sk "$d" | cut -f1)"; done
