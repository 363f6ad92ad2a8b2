#!/usr/bin/env bash
# Repo map benchmark (`scripts/bench map`): cold and warm map times on real
# code, against `universal-ctags -R` over the same trees in the same run.
#
#   scripts/bench-map.sh [--reps N]
#
# Corpora: the regex, ignore and tokio crate sources from the cargo registry,
# the requests and flask sdists from PyPI, and one corpus per language the
# table adds (src/lang.rs): rxjs's TypeScript sources (npm), cobra's Go
# (Debian), react-native-maps' Android Java (npm) and zstandard's C (PyPI),
# each copied to a scratch folder. For each: cold = no cache (walk, read, tag, write the cache, rank,
# render a 1024-token map); warm = a new map on that cache with nothing
# changed; ctags = `ctags -R -f /dev/null`. Times are medians of the reps.
# Writes bench-results/map.json and prints a summary.
#
# BENCH_MAP_BIN=path uses an already built examples/bench_map binary.
source "$(dirname "$0")/common.sh"

REPS=15
while [ $# -gt 0 ]; do
    case "$1" in
        --reps) REPS="$2"; shift 2 ;;
        *) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
    esac
done
mkdir -p "$ROOT/bench-results"
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/agent/bench-map"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

ensure_ctags() {
    if ! ctags --version 2>/dev/null | grep -q "Universal Ctags"; then
        log "installing universal-ctags"
        local sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
        $sudo apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq universal-ctags >/dev/null
    fi
}

# The newest registry copy of crate $1 (e.g. "tokio-1."), fetching the
# project's dependencies once if it is missing.
crate_src() {
    local found
    found="$(ls -d "$HOME"/.cargo/registry/src/*/"$1"* 2>/dev/null | sort -V | tail -1 || true)"
    if [ -z "$found" ]; then
        (cd "$ROOT" && cargo fetch --locked >/dev/null 2>&1) || true
        found="$(ls -d "$HOME"/.cargo/registry/src/*/"$1"* 2>/dev/null | sort -V | tail -1 || true)"
    fi
    [ -n "$found" ] || { echo "error: no $1* crate source in ~/.cargo/registry" >&2; exit 1; }
    echo "$found"
}

prepare_corpora() {
    local name src
    for name in regex-1. ignore-0.4. tokio-1.; do
        src="$(crate_src "$name")"
        cp -a "$src" "$WORK/"
    done
    mkdir -p "$CACHE/pypi"
    if ! ls "$CACHE"/pypi/requests-*.tar.gz "$CACHE"/pypi/flask-*.tar.gz >/dev/null 2>&1; then
        log "downloading the requests and flask sdists"
        python3 -m pip download --quiet --no-deps --no-binary :all: requests flask -d "$CACHE/pypi"
    fi
    for name in requests flask; do
        tar -xzf "$(ls "$CACHE"/pypi/"$name"-*.tar.gz | sort -V | tail -1)" -C "$WORK"
    done
    prepare_multilang
}

# Real code in TypeScript, Go, Java and C, fetched once into the cache.
prepare_multilang() {
    python3 "$ROOT/scripts/bench_corpus.py" map-corpora "$WORK"
}

# Median wall time of `ctags -R` over $1, in ms.
time_ctags() {
    local i start end times=()
    for ((i = 0; i < REPS; i++)); do
        start=$(date +%s%N)
        (cd "$1" && ctags -R -f /dev/null . 2>/dev/null)
        end=$(date +%s%N)
        times+=($(((end - start) / 1000)))
    done
    printf '%s\n' "${times[@]}" | sort -n | sed -n "$(((REPS + 1) / 2))p" | awk '{ printf "%.1f", $1 / 1000 }'
}

ensure_ctags
if [ -n "${BENCH_MAP_BIN:-}" ]; then
    BIN="$BENCH_MAP_BIN"
else
    build_release --example bench_map
    BIN="$CARGO_TARGET_DIR/release/examples/bench_map"
fi
log "preparing corpora in $WORK"
prepare_corpora

: >"$WORK/results.jsonl"
for dir in "$WORK"/*/; do
    dir="${dir%/}"; name="$(basename "$dir")"
    # Same warm page cache for both tools.
    find "$dir" -type f -exec cat {} + >/dev/null
    log "$name"
    ctags_ms="$(time_ctags "$dir")"
    "$BIN" "$dir" --reps "$REPS" --cache "$WORK/$name.sqlite" >"$WORK/ours.json"
    python3 - "$name" "$ctags_ms" "$WORK/ours.json" >>"$WORK/results.jsonl" <<'PY'
import json, sys
name, ctags_ms, ours = sys.argv[1], float(sys.argv[2]), json.load(open(sys.argv[3]))
print(json.dumps({"name": name, "files": ours["files"], "cold_ms": ours["cold_ms"], "warm_ms": ours["warm_ms"],
                  "ctags_ms": ctags_ms, "ratio": round(ours["cold_ms"] / ctags_ms, 3),
                  "defs": ours["defs_total"], "map_tokens": ours["map_tokens"]}))
PY
done

python3 - "$WORK/results.jsonl" "$ROOT/bench-results/map.json" "$REPS" "$(ctags --version | head -1)" "$(nproc)" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
order = ["regex", "ignore", "tokio", "requests", "flask", "ts-rxjs", "go-cobra", "java-rn-maps", "c-zstandard"]
rows.sort(key=lambda r: next((i for i, p in enumerate(order) if r["name"].startswith(p)), 99))
total = {k: round(sum(r[k] for r in rows), 1) for k in ("files", "cold_ms", "warm_ms", "ctags_ms")}
total["files"] = int(total["files"])
total["ratio"] = round(total["cold_ms"] / total["ctags_ms"], 3)
out = {"corpora": rows, "total": total, "reps": int(sys.argv[3]), "ctags": sys.argv[4], "cores": int(sys.argv[5]),
       "token_budget": 1024, "token_counter": "chars/4"}
json.dump(out, open(sys.argv[2], "w"), indent=2)
print(f"{'corpus':<18}{'files':>6}{'cold ms':>10}{'warm ms':>10}{'ctags ms':>10}{'ratio':>8}")
for r in rows + [dict(total, name="total")]:
    print(f"{r['name']:<18}{r['files']:>6}{r['cold_ms']:>10.1f}{r['warm_ms']:>10.1f}{r['ctags_ms']:>10.1f}{r['ratio']:>8.2f}")
print("targets: warm <= 50 ms; ratio (cold / ctags) <= 1.0")
print(f"wrote {sys.argv[2]}")
PY
