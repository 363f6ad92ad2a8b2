#!/usr/bin/env python3
"""`scripts/bench deps`: questions about a project's dependencies answered
from them (issue 54).

Takes some of this repository's direct dependencies (crates of 20-300 KB of
Rust, from Cargo.lock and ~/.cargo/registry/src, offline), copies them into
a private registry, and makes a question of the first sentence of each
public item's doc comment, as `scripts/bench retrieval --doccomments` does:
the comment is blanked from the copy that is indexed, so the question must
be answered from the code. A project locking those crates is then indexed
with `agent index --deps` (a private cache) and each question asked:

- `agent search --deps`: hit when the item's file is among the first 5 files;
- grep: files ranked by how many of the question's words they contain (then
  by occurrences), as an agent grepping for the words would;
- project-only search: the project's own index holds none of these files,
  so it answers none (0 by construction; counted, not run).

Usage: bench_deps.py AGENT_BIN REPO OUT.json [--crates N] [--per-crate N]
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

AUX = {"tests", "test", "examples", "example", "benches", "bench", "testdata", "fixtures"}
ITEM = re.compile(r"^\s*pub(\([^)]*\))?\s+(unsafe\s+)?(async\s+)?(const\s+)?(fn|struct|enum|trait|type|const|static|mod)\s+(\w+)")
STOP = set("the a an of to in and or for is are be by with as on at this that it its from into when which".split())


def direct_crates(repo: Path) -> list:
    lock = tomllib.loads((repo / "Cargo.lock").read_text())
    members = {p["name"] for p in lock["package"] if "source" not in p}
    registry = sorted((Path.home() / ".cargo/registry/src").glob("*"))
    direct = set()
    for p in lock["package"]:
        if p["name"] in members and not (repo / "vendor" / p["name"]).exists():
            for dep in p.get("dependencies", []):
                words = dep.split()
                for q in lock["package"]:
                    if q["name"] == words[0] and (len(words) == 1 or q["version"] == words[1]) and "source" in q:
                        direct.add((q["name"], q["version"]))
    found = []
    for name, version in sorted(direct):
        for reg in registry:
            d = reg / f"{name}-{version}"
            if d.is_dir():
                found.append((name, version, d))
                break
    return found


def rust_files(root: Path):
    for path in sorted(root.rglob("*.rs")):
        rel = path.relative_to(root)
        if not AUX.intersection(rel.parts[:-1]):
            yield rel


def size(root: Path) -> int:
    return sum((root / rel).stat().st_size for rel in rust_files(root))


def first_sentence(doc: list) -> str:
    text = " ".join(l.strip() for l in doc).strip()
    text = text.split("# ")[0]
    m = re.match(r"(.+?[.!?])(\s|$)", text)
    sentence = (m.group(1) if m else text).strip()
    return re.sub(r"`|\[|\]|\(\S*\)", "", sentence)


def blank_and_pair(src: Path, dest: Path, id_: str, per_crate: int) -> list:
    """Copies the crate's Rust files with the doc blocks of public items
    removed; returns (question, NAME@VERSION/path) pairs."""
    pairs, seen = [], set()
    for rel in rust_files(src):
        lines = (src / rel).read_text(errors="replace").splitlines(keepends=True)
        out, doc, i = [], [], 0
        while i < len(lines):
            line = lines[i]
            if line.strip().startswith("///"):
                doc.append(line)
                i += 1
                continue
            if doc:
                j = i
                while j < len(lines) and lines[j].strip().startswith("#["):
                    j += 1
                m = ITEM.match(lines[j]) if j < len(lines) else None
                text = [d.strip()[3:] for d in doc]
                para = []
                for t in text:
                    if not t.strip():
                        break
                    para.append(t)
                q = first_sentence(para)
                if m and len(q) >= 20 and len(q.split()) >= 4 and q not in seen:
                    seen.add(q)
                    pairs.append({"query": q, "target": f"{id_}/{rel.as_posix()}", "item": m.group(6)})
                    doc = []  # blanked
                out.extend(doc)
                doc = []
            out.append(line)
            i += 1
        out.extend(doc)
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("".join(out))
    shutil.copy(src / "Cargo.toml", dest / "Cargo.toml")
    # Spread over the crate's files, not its first ones.
    step = max(1, len(pairs) / max(per_crate, 1))
    return [pairs[int(i * step)] for i in range(min(per_crate, len(pairs)))]


def grep_rank(files: dict, query: str) -> list:
    words = {w for w in re.findall(r"[a-z0-9_]{3,}", query.lower()) if w not in STOP}
    scored = []
    for path, text in files.items():
        hits = [w for w in words if w in text]
        if hits:
            scored.append((-len(hits), -sum(text.count(w) for w in hits), path))
    return [p for _, _, p in sorted(scored)]


def main() -> None:
    agent, repo, out = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    args = sys.argv[4:]
    n_crates = int(args[args.index("--crates") + 1]) if "--crates" in args else 6
    per_crate = int(args[args.index("--per-crate") + 1]) if "--per-crate" in args else 15
    tmp = Path(tempfile.mkdtemp(prefix="bench-deps-"))
    reg = tmp / "cargo/registry/src/bench"
    pairs, files, crates = [], {}, []
    for name, version, src in direct_crates(repo):
        if len(crates) == n_crates or not 20_000 <= size(src) <= 300_000:
            continue
        dest = reg / f"{name}-{version}"
        found = blank_and_pair(src, dest, f"{name}@{version}", per_crate)
        if len(found) < 5:  # a facade of re-exports: nothing to ask
            shutil.rmtree(dest)
            continue
        crates.append((name, version, src))
        pairs.extend(found)
        for rel in rust_files(dest):
            files[f"{name}@{version}/{rel.as_posix()}"] = (dest / rel).read_text(errors="replace").lower()
    proj = tmp / "proj"
    (proj / "src").mkdir(parents=True)
    (proj / "src/main.rs").write_text("fn main() {}\n")
    (proj / "Cargo.toml").write_text('[package]\nname = "app"\nversion = "0.1.0"\n')
    lock = 'version = 4\n\n[[package]]\nname = "app"\nversion = "0.1.0"\ndependencies = [%s]\n' % ", ".join(
        f'"{n} {v}"' for n, v, _ in crates)
    for n, v, _ in crates:
        lock += f'\n[[package]]\nname = "{n}"\nversion = "{v}"\nsource = "registry+https://github.com/rust-lang/crates.io-index"\n'
    (proj / "Cargo.lock").write_text(lock)
    env = dict(os.environ, CARGO_HOME=str(tmp / "cargo"), XDG_CACHE_HOME=str(tmp / "cache"),
               XDG_STATE_HOME=str(tmp / "state"))
    started = time.time()
    report = json.loads(subprocess.run([agent, "index", "--deps", "--json", str(proj)], env=env, check=True,
                                       capture_output=True, text=True).stdout)
    index_seconds = time.time() - started
    chunks = sum(b["chunks"] for b in report["built"])
    acc = {"deps": [0, 0], "grep": [0, 0]}
    latencies = []
    for p in pairs:
        t0 = time.time()
        res = subprocess.run([agent, "search", "--deps", "--json", "-k", "10", "--root", str(proj), "--", p["query"]],
                             env=env, capture_output=True, text=True)
        latencies.append(time.time() - t0)
        found = []
        for r in json.loads(res.stdout or "[]"):
            if r["path"] not in found:
                found.append(r["path"])
        for name, ranked in (("deps", found), ("grep", grep_rank(files, p["query"]))):
            acc[name][0] += p["target"] in ranked[:1]
            acc[name][1] += p["target"] in ranked[:5]
    n = len(pairs)
    latencies.sort()
    result = {
        "crates": [f"{n_}@{v}" for n_, v, _ in crates],
        "questions": n,
        "index_seconds": round(index_seconds, 1),
        "chunks": chunks,
        "acc1": {k: round(v[0] / max(n, 1), 3) for k, v in acc.items()},
        "acc5": {k: round(v[1] / max(n, 1), 3) for k, v in acc.items()},
        "project_only_acc5": 0.0,
        "search_seconds_p50": round(latencies[len(latencies) // 2], 2) if latencies else None,
    }
    result["acc1"]["project_only"] = 0.0
    out.write_text(json.dumps(result, indent=2))
    print(f"{len(crates)} crates ({', '.join(result['crates'])}): {chunks} chunks indexed in {index_seconds:.1f}s")
    print(f"{n} questions (first sentences of public items' doc comments, blanked from the indexed text)")
    print(f"{'':24}{'Acc@1':>8}{'Acc@5':>8}")
    print(f"{'agent search --deps':24}{result['acc1']['deps']:>8.3f}{result['acc5']['deps']:>8.3f}")
    print(f"{'grep (words, ranked)':24}{result['acc1']['grep']:>8.3f}{result['acc5']['grep']:>8.3f}")
    print(f"{'project-only search':24}{0.0:>8.3f}{0.0:>8.3f}   (the project's index holds no dependency file)")
    print(f"search process p50 {result['search_seconds_p50']} s; wrote {out}")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
