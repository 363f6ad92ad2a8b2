#!/bin/sh
# Installs the agent from this bundle, with no network.
#
#   ./install.sh                   for you: ~/.local/bin/agent and
#                                  ~/.local/share/agent/models
#   ./install.sh --system          for everyone (as root): /opt/agent/bin/agent,
#                                  /opt/agent/models, /usr/local/bin/agent -> it
#   ./install.sh --prefix DIR      DIR/bin/agent and DIR/share/agent/models
#
# A portable bundle's llama.cpp libraries go to BIN/../lib/agent.
# Every file is checked against SHA256SUMS first; `agent doctor` runs last.
# The binary finds the models installed beside it (BIN/../share/agent/models
# or BIN/../models), so nothing else needs setting. Safe to run again.
set -eu

here="$(cd "$(dirname "$0")" && pwd)"
mode=user
prefix=""
while [ $# -gt 0 ]; do
    case "$1" in
        --system) mode=system; shift ;;
        --prefix) prefix="$2"; shift 2 ;;
        -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "error: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done

echo "checking the bundle's files against SHA256SUMS" >&2
(cd "$here" && sha256sum -c --quiet --strict SHA256SUMS) || {
    echo "error: the bundle is damaged or was changed: a file does not match SHA256SUMS" >&2
    exit 1
}

if [ -n "$prefix" ]; then
    bin="$prefix/bin"; models="$prefix/share/agent/models"; link=""
elif [ "$mode" = system ]; then
    bin=/opt/agent/bin; models=/opt/agent/models; link=/usr/local/bin/agent
else
    [ -n "${HOME:-}" ] || { echo "error: HOME is not set; use --prefix DIR" >&2; exit 2; }
    bin="$HOME/.local/bin"; models="$HOME/.local/share/agent/models"; link=""
fi

mkdir -p "$bin" "$models"
cp -R "$here/models/." "$models/"
# A portable bundle's llama.cpp (its CPU kernels for every processor level):
# where the binary's run path looks, BIN/../lib/agent; first, so the new
# binary never starts beside old libraries.
if [ -d "$here/lib/agent" ]; then
    mkdir -p "$bin/../lib/agent"
    cp "$here/lib/agent/"* "$bin/../lib/agent/"
fi
# Through a temporary name, so a running agent keeps its file.
cp "$here/bin/agent" "$bin/agent.new"
chmod 755 "$bin/agent.new"
mv -f "$bin/agent.new" "$bin/agent"
if [ -n "$link" ]; then
    mkdir -p "$(dirname "$link")"
    ln -sfn "$bin/agent" "$link"
fi
echo "installed $bin/agent; models in $models" >&2

# Prebuilt dependency indices (scripts/bundle --deps): into this user's
# cache, each package version through a temporary name, one already there
# kept.
if [ -d "$here/deps" ]; then
    if [ "$mode" = system ]; then
        echo "note: dependency indices are per user: each user copies $here/deps/* into ~/.cache/agent/deps" >&2
    else
        cache="${XDG_CACHE_HOME:-${HOME:-}/.cache}/agent/deps"
        added=0
        for package in "$here"/deps/*/*; do
            [ -f "$package/indexed.json" ] || continue
            dest="$cache/$(basename "$(dirname "$package")")/$(basename "$package")"
            [ -e "$dest" ] && continue
            mkdir -p "$(dirname "$dest")"
            rm -rf "$dest.new"
            cp -R "$package" "$dest.new"
            mv "$dest.new" "$dest"
            added=$((added + 1))
        done
        echo "dependency indices: $added package versions added to $cache" >&2
    fi
fi

# The models verify (sha256 of each file against their manifest), then the
# agent checks itself.
"$bin/agent" models >/dev/null || {
    echo "error: the installed models do not verify: $bin/agent models" >&2
    exit 1
}
# From the bundle's folder: no repository there for doctor to look at.
(cd "$here" && "$bin/agent" doctor) || {
    echo "error: agent doctor found a problem (above)" >&2
    exit 1
}
case ":${PATH:-}:" in
    *":$bin:"*) ;;
    *) [ -n "$link" ] || echo "note: $bin is not on PATH; add it: export PATH=\"$bin:\$PATH\"" >&2 ;;
esac
