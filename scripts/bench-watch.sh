#!/usr/bin/env bash
# `scripts/bench watch [--updates N]`: a long-running watcher under a burst of
# saves. Indexes flask 3.0.3, starts `agent index --watch`, appends a line to
# one file every 0.7 s, and prints the watcher's open descriptors and the
# index's size on disk every 20 updates. Both must level off: a leak shows as
# steady growth (it was 2 descriptors and 0.5 MB per update).
source "$(dirname "$0")/common.sh"
UPDATES=100
while [ $# -gt 0 ]; do
    case "$1" in
        --updates) UPDATES="$2"; shift 2 ;;
        *) sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
    esac
done
ensure_build_deps
ensure_models
build_release --bin agent
data="$(mktemp -d)"
trap 'kill "$watcher" 2>/dev/null; rm -rf "$data"' EXIT
python3 "$ROOT/scripts/bench_corpus.py" code "$data/code" >/dev/null
repo="$data/code/flask"
(cd "$repo" && git init -q . 2>/dev/null || true)
"$AGENT_BIN" index "$repo" >/dev/null 2>&1
index_dir="$(state_dir "$repo")/index"
size() { du -sm "$index_dir" | cut -f1; }
"$AGENT_BIN" index "$repo" --watch --json >"$data/updates.jsonl" 2>/dev/null &
watcher=$!
sleep 5
printf '%8s %8s %10s\n' updates fds "index MB"
printf '%8s %8s %10s\n' 0 "$(ls /proc/$watcher/fd | wc -l)" "$(size)"
for i in $(seq 1 "$UPDATES"); do
    echo "# change $i" >>"$repo/src/flask/helpers.py"
    sleep 0.7
    if ((i % 20 == 0)); then
        printf '%8s %8s %10s\n' "$i" "$(ls /proc/$watcher/fd | wc -l)" "$(size)"
    fi
done
echo "watcher reported $(wc -l <"$data/updates.jsonl") updates (the first is the initial one)"
