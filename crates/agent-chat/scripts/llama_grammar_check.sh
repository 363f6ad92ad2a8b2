#!/usr/bin/env bash
# Checks the call grammars and trigger patterns against llama.cpp itself:
# its GBNF parser and grammar engine (src/llama-grammar.cpp, compiled from
# the llama-cpp-sys-2 sources cargo already has, with stubs for the model
# parts a grammar without a vocabulary never calls) and std::regex. Needs g++.
# Usage: scripts/llama_grammar_check.sh   (from the crate folder)
set -euo pipefail
cd "$(dirname "$0")/.."
sys=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/llama-cpp-sys-2-0.1.160/llama.cpp 2>/dev/null | head -1)
[ -n "$sys" ] || { echo "llama-cpp-sys-2 0.1.160 sources not found: cargo fetch the agent workspace first" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cargo run --quiet --example dump_grammars -- "$work/cases"
g++ -std=c++17 -O1 -I"$sys/include" -I"$sys/src" -I"$sys/ggml/include" \
    scripts/llama_grammar_check/check.cpp scripts/llama_grammar_check/stubs.cpp \
    "$sys/src/llama-grammar.cpp" "$sys/src/llama-impl.cpp" -o "$work/check"
"$work/check" "$work/cases"
