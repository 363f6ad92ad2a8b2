# Shared set-up for the scripts in this folder. Source it; do not run it.
#
# - builds go to a stable folder outside the clone (unless CARGO_TARGET_DIR is
#   already set), so fresh clones and CI reuse earlier builds;
# - build dependencies come from apt when missing;
# - everything here is idempotent and safe to re-run.

set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/agent/target}"
AGENT_BIN="$CARGO_TARGET_DIR/release/agent"
# The binary finds models/ beside the source it was built from; clones that
# share the target dir also share that binary, so name this clone's folder.
export AGENT_MODELS_DIR="${AGENT_MODELS_DIR:-$ROOT/models}"

log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

# Installs Debian packages with apt-get, as root or through sudo.
apt_install() {
    local sudo=""
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null || { echo "error: need root or sudo to run: apt-get install -y $*" >&2; return 1; }
        sudo="sudo"
    fi
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@" >/dev/null
}

# Debian packages the build needs: cmake and clang (llama.cpp, bindgen),
# libclang-dev (bindgen), protobuf-compiler (lance, for the index), git (the
# agent's own git, and its tests).
ensure_build_deps() {
    local missing=()
    command -v cmake >/dev/null || missing+=(cmake)
    command -v clang >/dev/null || missing+=(clang)
    command -v protoc >/dev/null || missing+=(protobuf-compiler)
    command -v git >/dev/null || missing+=(git)
    dpkg -s libclang-dev >/dev/null 2>&1 || missing+=(libclang-dev)
    command -v cc >/dev/null || missing+=(build-essential)
    if ((${#missing[@]})); then
        log "installing build dependencies: ${missing[*]}"
        apt_install "${missing[@]}" || exit 1
    fi
    command -v cargo >/dev/null || { echo "error: cargo not found; install Rust from rustup.rs (or your distribution) first" >&2; exit 1; }
}

ensure_models() {
    "$ROOT/scripts/fetch-models"
}

# A Python with the `mcp` package (v1 API), for the tests that run a real MCP
# server. In a venv of its own under the cache folder; exported as
# AGENT_TEST_MCP_PYTHON. Without it those tests say they were skipped.
ensure_mcp_python() {
    local venv="${XDG_CACHE_HOME:-$HOME/.cache}/agent/mcp-venv"
    if ! "$venv/bin/python" -c 'import mcp.server.fastmcp' 2>/dev/null; then
        log "installing the mcp Python package (for the MCP tests) into $venv"
        if ! { python3 -m venv "$venv" && "$venv/bin/pip" install -q 'mcp<2'; } >&2; then
            log "warning: could not install mcp; the MCP server tests will be skipped"
            return 0
        fi
    fi
    export AGENT_TEST_MCP_PYTHON="$venv/bin/python"
}

# A real Python project's source release (flask 3.0.3, from PyPI; checked by
# sha256), for the tests that run the agent on a real repository (`agent
# init`); exported as AGENT_TEST_SDIST. Without it those tests say they were skipped.
ensure_test_sdist() {
    local dir="${XDG_CACHE_HOME:-$HOME/.cache}/agent/sdists"
    local file="$dir/flask-3.0.3.tar.gz"
    local sha=ceb27b0af3823ea2737928a4d99d125a06175b8512c445cbd9a9ce200ef76842
    if ! echo "$sha  $file" | sha256sum -c --status 2>/dev/null; then
        log "fetching the flask 3.0.3 sdist (for the tests on a real repository) into $dir"
        mkdir -p "$dir"
        if ! python3 -m pip download -q --no-deps --no-binary :all: -d "$dir" 'flask==3.0.3' >&2 \
            || ! echo "$sha  $file" | sha256sum -c --status; then
            log "warning: could not fetch flask 3.0.3; the tests on a real repository will be skipped"
            return 0
        fi
    fi
    export AGENT_TEST_SDIST="$file"
}

# Checkers the agent runs after edits (ruff, tsc, go vet), for the tests
# that use them: ruff and typescript under the cache folder, exported as
# AGENT_TEST_RUFF and AGENT_TEST_NODE_MODULES; Go from apt (golang-go), on
# PATH. Without them those tests say they were skipped.
ensure_checkers() {
    local dir="${XDG_CACHE_HOME:-$HOME/.cache}/agent/checkers"
    if ! command -v go >/dev/null && command -v apt-get >/dev/null; then
        log "installing go (for the go vet test)"
        apt_install golang-go || log "warning: could not install go; its test will be skipped"
    fi
    if [ ! -x "$dir/venv/bin/ruff" ]; then
        log "installing ruff (for the diagnostics tests) into $dir/venv"
        { python3 -m venv "$dir/venv" && "$dir/venv/bin/pip" install -q 'ruff<1'; } >&2 ||
            log "warning: could not install ruff; its test will be skipped"
    fi
    if [ ! -x "$dir/node_modules/.bin/tsc" ] && command -v npm >/dev/null; then
        log "installing typescript (for the diagnostics tests) into $dir"
        npm install --prefix "$dir" --no-audit --no-fund --silent typescript@5 >&2 ||
            log "warning: could not install typescript; its test will be skipped"
    fi
    if [ -x "$dir/venv/bin/ruff" ] && [ -x "$dir/node_modules/.bin/tsc" ]; then
        export AGENT_TEST_RUFF="$dir/venv/bin/ruff" AGENT_TEST_NODE_MODULES="$dir/node_modules"
    fi
}

# The official Agent Client Protocol SDK's client (npm
# @agentclientprotocol/sdk, pinned), for the tests of `agent acp`: under the
# cache folder, exported as AGENT_TEST_ACP_CLIENT (the folder holding its
# node_modules). Without it (or without node 20+) those tests say they were skipped.
ACP_SDK_VERSION=2.4.0
ensure_acp_client() {
    local dir="${XDG_CACHE_HOME:-$HOME/.cache}/agent/acp-client"
    local package="$dir/node_modules/@agentclientprotocol/sdk/package.json"
    if ! grep -q "\"version\": \"$ACP_SDK_VERSION\"" "$package" 2>/dev/null; then
        if ! command -v npm >/dev/null; then
            log "warning: npm is missing; the ACP tests will be skipped"
            return 0
        fi
        log "installing @agentclientprotocol/sdk@$ACP_SDK_VERSION (for the ACP tests) into $dir"
        if ! npm install --prefix "$dir" --no-audit --no-fund --silent \
            "@agentclientprotocol/sdk@$ACP_SDK_VERSION" >&2; then
            log "warning: could not install the ACP SDK; the ACP tests will be skipped"
            return 0
        fi
    fi
    export AGENT_TEST_ACP_CLIENT="$dir"
}

# A real llama-server (OpenAI's /v1/embeddings), for the test of
# `agent index --embed-server`: built once, from the llama.cpp that
# llama-cpp-python's sdist on PyPI vendors (the llama-cpp-sys-2 crate leaves
# the server out), exported as AGENT_TEST_LLAMA_SERVER. About ten minutes on
# two cores the first time. Without it that test says it was skipped.
LLAMA_SERVER_SDIST=llama_cpp_python-0.3.36.tar.gz
LLAMA_SERVER_SHA256=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
ensure_llama_server() {
    local dir="${XDG_CACHE_HOME:-$HOME/.cache}/agent/llama-server"
    # Without AMX tiles: a CPU (or a VM) may list them and still fault on
    # the first one, and llama.cpp uses them wherever they are listed.
    local bin="$dir/build-noamx/bin/llama-server"
    if [ ! -x "$bin" ]; then
        log "building llama-server (for the --embed-server test) in $dir: once, about ten minutes"
        if ! (
            set -e
            mkdir -p "$dir" && cd "$dir"
            [ -f "$LLAMA_SERVER_SDIST" ] ||
                python3 -m pip download -q --no-deps --no-binary :all: llama-cpp-python==0.3.36 -d .
            echo "$LLAMA_SERVER_SHA256  $LLAMA_SERVER_SDIST" | sha256sum -c --quiet
            rm -rf src && mkdir src && tar xzf "$LLAMA_SERVER_SDIST" -C src --strip-components=1
            local no_amx="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
            cmake -S src/vendor/llama.cpp -B build-noamx -DCMAKE_BUILD_TYPE=Release -DLLAMA_BUILD_SERVER=ON \
                -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_CURL=OFF \
                -DGGML_NATIVE=ON -DCMAKE_C_FLAGS="$no_amx" -DCMAKE_CXX_FLAGS="$no_amx" >cmake.log
            cmake --build build-noamx --target llama-server -j "$(nproc)" >build.log
        ) >&2; then
            log "warning: could not build llama-server; its test will be skipped"
            return 0
        fi
    fi
    export AGENT_TEST_LLAMA_SERVER="$bin"
}

# What the offline bundle's test needs (tests/cli/bundle.rs): bubblewrap to
# run the installed agent with no network and a read-only root, zstd, and
# cargo-cyclonedx (pinned, into the cache folder) for the SBOM; exported as
# AGENT_TEST_BWRAP and AGENT_TEST_CYCLONEDX. Without them that test says it was skipped.
ensure_bundle_tools() {
    local missing=()
    command -v bwrap >/dev/null || missing+=(bubblewrap)
    command -v zstd >/dev/null || missing+=(zstd)
    if ((${#missing[@]})) && [ "$(id -u)" -eq 0 ]; then
        log "installing ${missing[*]} (for the offline bundle's test)"
        { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"; } >/dev/null 2>&1 ||
            log "warning: could not install ${missing[*]}; the bundle test will be skipped"
    fi
    ensure_cyclonedx || log "warning: could not install cargo-cyclonedx; the bundle test will be skipped"
    if command -v bwrap >/dev/null && command -v zstd >/dev/null && [ -x "$CYCLONEDX" ]; then
        export AGENT_TEST_BWRAP="$(command -v bwrap)" AGENT_TEST_CYCLONEDX="$CYCLONEDX"
    fi
}

# The portable agent and qemu-user, for the bundle's test on older
# processors (tests/cli/bundle.rs): exported as AGENT_TEST_PORTABLE_BIN.
# It is the bundle's own build, with its own flags, profile and target
# folder (cold: about 45 minutes on two cores; in a new clone with that
# folder warm: about 17, most of it the whole-program link), so it is
# made where every prerequisite is required (CI) or AGENT_TEST_PORTABLE=1
# asks for it; elsewhere that test says it was skipped, and why.
ensure_portable_agent() {
    [ "${AGENT_TEST_PORTABLE:-${AGENT_TEST_REQUIRE_ALL:-0}}" = 1 ] || return 0
    [ "$(uname -m)" = x86_64 ] || return 0
    if [ ! -x /usr/bin/qemu-x86_64 ]; then
        log "installing qemu-user (runs the portable agent as older processors)"
        apt_install qemu-user || log "warning: could not install qemu-user; the portable bundle's test will fail or skip"
    fi
    # In a subshell: build_portable points CARGO_TARGET_DIR at its own folder.
    AGENT_TEST_PORTABLE_BIN="$(build_portable >&2 && echo "$AGENT_BIN")"
    export AGENT_TEST_PORTABLE_BIN
}

# cargo-cyclonedx, pinned, installed once into the cache folder (CYCLONEDX
# names it): the CycloneDX project's own SBOM tool, reading Cargo's resolution.
CYCLONEDX_VERSION=0.5.9
ensure_cyclonedx() {
    local root="${XDG_CACHE_HOME:-$HOME/.cache}/agent/tools"
    CYCLONEDX="$root/bin/cargo-cyclonedx"
    # A cargo subcommand: run alone it wants its name first.
    if ! "$CYCLONEDX" cyclonedx --version 2>/dev/null | grep -q "$CYCLONEDX_VERSION"; then
        log "installing cargo-cyclonedx $CYCLONEDX_VERSION (the bundle's SBOM) into $root: once, a few minutes"
        cargo install --locked --quiet --root "$root" "cargo-cyclonedx@$CYCLONEDX_VERSION" >&2
    fi
}

# Always over the whole workspace, as `cargo test --workspace` resolves it:
# built alone, the `agent` binary gets agent-lang without its `default`
# feature, and the test build after it recompiles every crate of ours.
build_release() {
    log "building (release; target dir $CARGO_TARGET_DIR)"
    (cd "$ROOT" && cargo build --release --locked --workspace "$@")
    prune_stale_binaries
}

# The agent to carry to other machines (scripts/bundle): llama.cpp's CPU
# kernels as loadable backends for every level of the architecture, the Rust
# code at a baseline CPU, with Cargo.toml's `dist` profile (the whole
# program optimised as one, dependencies built for size, panics abort), in
# a target folder of its own (CARGO_TARGET_DIR-dist: its flags differ from
# every source build's, so sharing one would rebuild both each time).
# AGENT_PORTABLE_PROFILE=release builds the same code and features as a
# release build instead (CARGO_TARGET_DIR-portable), whose link is minutes
# quicker when iterating. Arguments: what to build (default: the agent,
# `--bin agent --features portable`); AGENT_BIN is the agent's path there.
build_portable() {
    local baseline=() what=("$@") profile="${AGENT_PORTABLE_PROFILE:-dist}"
    [ ${#what[@]} -gt 0 ] || what=(--bin agent --features portable)
    case "$(uname -m)" in
        x86_64) baseline=(-C target-cpu=x86-64-v2) ;;
    esac
    if [ "$profile" = release ]; then
        export CARGO_TARGET_DIR="$CARGO_TARGET_DIR-portable"
    else
        export CARGO_TARGET_DIR="$CARGO_TARGET_DIR-$profile"
    fi
    AGENT_BIN="$CARGO_TARGET_DIR/$profile/agent"
    log "building the portable agent ($profile profile, ${baseline[*]:-the baseline CPU of the target}; target dir $CARGO_TARGET_DIR)"
    (cd "$ROOT" && RUSTFLAGS="${baseline[*]}" cargo build --profile "$profile" --locked "${what[@]}")
    # llama-cpp-sys-2 links only the unversioned names beside the binary (and
    # in deps/ and examples/), and they point at libllama.so.0 and the like,
    # left in its build folder: put those there too, so the agent runs from
    # its target folder, and so a later run of that build script does not
    # fail on its own dangling links ("File exists").
    local lib dir
    lib="$(ls -td "$CARGO_TARGET_DIR/$profile"/build/llama-cpp-sys-2-*/out/lib 2>/dev/null | head -1)"
    if [ -n "$lib" ]; then
        for dir in "$CARGO_TARGET_DIR/$profile" "$CARGO_TARGET_DIR/$profile"/{deps,examples}; do
            if [ -d "$dir" ]; then cp -fL "$lib"/lib*.so.0 "$dir/"; fi
        done
    fi
}

# llama.cpp's shared libraries (those the binary links, and every backend it
# can load) into $1, for a portable agent at $AGENT_BIN.
carry_llama_libraries() {
    local dest="$1" backends
    mkdir -p "$dest"
    backends="$("$AGENT_BIN" --version --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["llama_cpp"]["backends_dir"] or "")')"
    [ -n "$backends" ] || { echo "error: $AGENT_BIN loaded no llama.cpp backends (agent doctor says why)" >&2; exit 1; }
    cp -L "$backends"/libggml-*.so "$dest/"
    # What they link beyond the C and C++ runtimes: llama.cpp's own, and
    # OpenMP's (libgomp is not on every machine).
    for f in "$AGENT_BIN" "$backends"/libggml-*.so; do ldd "$f"; done |
        awk '/lib(llama[-a-z]*|ggml[-a-z]*|gomp)\.so/ { print $3 }' | sort -u | while read -r lib; do
            if [ -f "$lib" ]; then cp -L "$lib" "$dest/"; fi
        done
    log "llama.cpp libraries: $(ls "$dest" | tr '\n' ' ')"
}

# Cargo keeps every earlier link of every test and example binary, and with
# this stack each one is about 1.3 GB: a shared target dir fills the disk
# within days. Binaries that cargo also links under their plain name (the
# `agent` binary, the examples) are current while that hard link exists; the
# others (test binaries, and the library's tests, also named `agent-HASH`)
# keep the newest of each name.
prune_stale_binaries() {
    local release="$CARGO_TARGET_DIR/release" hashed='.*/[A-Za-z0-9_]+-[0-9a-f]{16}'
    if [ -d "$release/examples" ]; then
        find "$release/examples" -maxdepth 1 -type f -perm -u+x -links 1 \
            -regextype posix-extended -regex "$hashed" -delete
    fi
    if [ -d "$release/deps" ]; then
        find "$release/deps" -maxdepth 1 -type f -perm -u+x -links 1 \
            -regextype posix-extended -regex "$hashed" -printf '%T@ %p\n' |
            sort -rn |
            awk '{ n = $2; sub(/.*\//, "", n); sub(/-[0-9a-f]+$/, "", n); if (seen[n]++) print $2 }' |
            xargs -r rm -f
    fi
}

# The agent's state folder of the workspace DIR (its index, sessions, prompt
# cache), as agent_base::paths::state_dir names it: outside the tree.
state_dir() {
    python3 - "$1" <<'PY'
import hashlib, os, re, sys
canonical = os.path.realpath(sys.argv[1])
name = re.sub(r"[^A-Za-z0-9_.-]", "_", os.path.basename(canonical) or "root")[:40]
base = os.environ.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state")
print(os.path.join(base, "agent", "workspaces", f"{name}-{hashlib.sha256(canonical.encode()).hexdigest()[:16]}"))
PY
}
