#!/usr/bin/env python3
"""Questions by relation on regex-automata 0.4.19 (`scripts/bench retrieval
--relations`): what calls X, tests for X, Type::method, how does X choose Y.

Each query is searched with `agent search --json -k 5` (hybrid, one index)
by every binary given, and checked automatically: the first hit that is
right, and whether it is first (hits@1) or in the top five (hits@5).

    bench_relations.py ROOT OUT_JSON BIN [BIN ...]   (ROOT indexed beforehand)
"""
import json
import os
import subprocess
import sys


def symbol(qualified):
    return lambda h: qualified in h["symbol"].split(", ")


QUERIES = [
    ("callers", "what calls minimize",
     lambda h: ".minimize()" in h["text"] and h["path"] != "src/dfa/minimize.rs"
     and not h["symbol"].endswith("minimize")),
    ("callers", "where is search_slots called",
     lambda h: ".search_slots(" in h["text"] and not h["symbol"].endswith("search_slots")),
    ("callers", "who uses Minimizer",
     lambda h: "Minimizer" in h["text"] and not h["symbol"].startswith("Minimizer")
     and h["symbol"] != "Minimizer"),
    ("tests", "which tests cover find_iter",
     lambda h: (h["path"].startswith("tests/") or "tests" in h["symbol"]) and "find_iter(" in h["text"]),
    ("tests", "tests for is_match", lambda h: h["path"].startswith("tests/") and "is_match" in h["text"]),
    ("qualified", "what does Cache::reset do", symbol("Cache::reset")),
    ("qualified", "what does PikeVM::search_slots do", symbol("PikeVM::search_slots")),
    ("qualified", "Where is PikeVM::search_slots defined?", symbol("PikeVM::search_slots")),
    # The free function `new` in meta/strategy.rs builds the strategy.
    ("chooses", "how does meta::Regex choose a strategy",
     lambda h: h["path"] == "src/meta/strategy.rs" and "new" in h["symbol"].split(", ")),
    # `Choice::new` picks the prefilter's algorithm.
    ("chooses", "how does the prefilter choose which algorithm to use", symbol("Choice::new")),
]


def search(binary, root, query):
    env = {**os.environ}
    out = subprocess.run([binary, "search", "--json", "-k", "5", query], cwd=root,
                         capture_output=True, text=True, env=env)
    if out.returncode != 0:
        sys.exit(f"{binary} search failed: {out.stderr[-400:]}")
    hits = json.loads(out.stdout)
    return hits["results"] if isinstance(hits, dict) else hits


def main():
    root, out_path, bins = sys.argv[1], sys.argv[2], sys.argv[3:]
    results = {b: [] for b in bins}
    for kind, query, ok in QUERIES:
        for b in bins:
            hits = search(b, root, query)
            first = next((i + 1 for i, h in enumerate(hits) if ok(h)), None)
            top = f"{hits[0]['path']}:{hits[0]['start_line']} {hits[0]['symbol']}" if hits else "-"
            results[b].append({"kind": kind, "query": query, "first_right": first, "top": top})
    names = [os.path.basename(b) for b in bins]
    print(f"{'query':<55}" + "".join(f"{n:>16}" for n in names))
    for i, (_, query, _) in enumerate(QUERIES):
        cells = []
        for b in bins:
            f = results[b][i]["first_right"]
            cells.append(f"{'@' + str(f) if f else 'miss':>16}")
        print(f"{query:<55}" + "".join(cells))
    summary = {}
    for b, n in zip(bins, names):
        rows = results[b]
        at1 = sum(1 for r in rows if r["first_right"] == 1)
        at5 = sum(1 for r in rows if r["first_right"])
        summary[n] = {"queries": len(rows), "hits@1": at1, "hits@5": at5, "rows": rows}
        print(f"{n}: hits@1 {at1}/{len(rows)}, hits@5 {at5}/{len(rows)}")
    previous = json.load(open(out_path)) if os.path.exists(out_path) else {}
    previous["relations"] = summary
    json.dump(previous, open(out_path, "w"), indent=2)
    print(f"wrote {out_path} (relations)")


if __name__ == "__main__":
    main()
