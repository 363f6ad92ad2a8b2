#!/usr/bin/env python3
"""`scripts/bench deps`: questions about a project's dependencies answered
from them (issue 54), on two real projects that are neither this
repository nor one of ../shared/eval:

- Rust: fd-find 10.2.0 (its crate from crates.io, with its Cargo.lock;
  `cargo fetch --locked` downloads the locked dependencies into
  ~/.cargo/registry, as a developer's build would);
- Python: black 24.8.0 (its sdist from PyPI) with a `.venv` holding its
  dependencies at pinned versions (click, packaging, pathspec, platformdirs,
  mypy_extensions), installed by pip.

Setup needs the package registries once (cached under
~/.cache/agent/bench/deps); the agent itself runs offline. For each
project, up to N direct dependencies are taken and the first sentence of
each public item's documentation (Rust `///` comments, Python docstrings)
becomes a question, the documentation removed from the indexed copy, as
`scripts/bench retrieval --doccomments` does: the question must be answered
from the code. The project is indexed with `agent index` and `agent index
--deps` (a private cache) and each question asked of:

- `agent search --deps`: hit when the item's file (or, for a sentence that
  documents items in several files, one of them) is among the first 5 files
  (files ranked by their best chunk among the first 10);
- grep over the same dependency sources: files ranked by how many of the
  question's words they contain (then by occurrences);
- the project-only search (`agent search`, the project's own index): run,
  though the project holds none of these files.

Usage: bench_deps.py AGENT_BIN OUT.json [--only rust|python] [--crates N] [--per-crate N] [--keep DIR]

--keep DIR keeps the projects and indices in DIR; a later run with the same
DIR only asks the questions again (another binary's search, same index).
For experiments: BENCH_K (chunks asked for, default 10), BENCH_SEARCH (more
`agent search` arguments, e.g. "--mode vector"), BENCH_NO_PROJECT=1 (skip
the project-only searches).
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
    sentence = re.sub(r":\w+:|~", "", sentence)  # reST roles (:class:`~a.B`)
    return re.sub(r"`|\[|\]|\(\S*\)", "", sentence)


def blank_and_pair(src: Path, dest: Path, id_: str, per_crate: int) -> list:
    """Copies the crate's Rust files with the doc blocks of public items
    removed; returns (question, NAME@VERSION/paths) pairs. A sentence that
    documents items in several files is one question with each of those
    files as an answer, and is blanked everywhere: left in one file, it
    would hand that file the question word for word."""
    pairs, seen = [], {}
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
                target = f"{id_}/{rel.as_posix()}"
                if m and len(q) >= 20 and len(q.split()) >= 4:
                    if q not in seen:
                        seen[q] = {"query": q, "targets": [], "item": m.group(6)}
                        pairs.append(seen[q])
                    if target not in seen[q]["targets"]:
                        seen[q]["targets"].append(target)
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


CACHE = Path.home() / ".cache/agent/bench/deps"
FD = ("fd-find", "10.2.0")
BLACK = ("black", "24.8.0")
BLACK_DEPS = ["click==8.1.7", "mypy_extensions==1.0.0", "packaging==24.1", "pathspec==0.12.1", "platformdirs==4.2.2"]


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def fd_project(tmp: Path) -> Path:
    """fd-find's crate unpacked, its locked dependencies fetched."""
    name, version = FD
    crate = CACHE / f"{name}-{version}.crate"
    if not crate.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        run(["curl", "-sSfL", "-o", str(crate), f"https://static.crates.io/crates/{name}/{name}-{version}.crate"])
    run(["tar", "xzf", str(crate), "-C", str(tmp)])
    proj = tmp / f"{name}-{version}"
    run(["cargo", "fetch", "--locked", "-q"], cwd=proj)
    return proj


def black_project(tmp: Path) -> Path:
    """black's sdist unpacked, with a .venv holding its pinned dependencies."""
    name, version = BLACK
    sdist = CACHE / f"{name}-{version}.tar.gz"
    wheels = CACHE / "wheels"
    if not sdist.exists() or not wheels.is_dir():
        run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
             "-d", str(CACHE), f"{name}=={version}"])
        run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", str(wheels), *BLACK_DEPS])
    run(["tar", "xzf", str(sdist), "-C", str(tmp)])
    proj = tmp / f"{name}-{version}"
    run([sys.executable, "-m", "venv", str(proj / ".venv")])
    run([str(proj / ".venv/bin/pip"), "install", "-q", "--no-index", "--no-deps", "-f", str(wheels), *BLACK_DEPS])
    return proj


def rust_questions(proj: Path, tmp: Path, n_crates: int, per_crate: int):
    """The project's direct crates of 20-300 KB copied, blanked, into a
    private registry; returns (pairs, files, ids, env additions)."""
    reg = tmp / "cargo/registry/src/bench"
    pairs, files, ids = [], {}, []
    for name, version, src in direct_crates(proj):
        if len(ids) == n_crates or not 20_000 <= size(src) <= 300_000:
            continue
        dest = reg / f"{name}-{version}"
        found = blank_and_pair(src, dest, f"{name}@{version}", per_crate)
        if len(found) < 5:  # a facade of re-exports: nothing to ask
            shutil.rmtree(dest)
            continue
        ids.append(f"{name}@{version}")
        pairs.extend(found)
        for rel in rust_files(dest):
            files[f"{name}@{version}/{rel.as_posix()}"] = (dest / rel).read_text(errors="replace").lower()
    return pairs, files, ids, {"CARGO_HOME": str(tmp / "cargo")}


def docstring_sentence(node) -> str:
    import ast
    doc = ast.get_docstring(node) or ""
    para = doc.strip().split("\n\n")[0].replace("\n", " ")
    return first_sentence([para])


def blank_python(path: Path, target: str) -> list:
    """Removes the docstrings of a module's public classes and functions
    (top level and in public classes), leaving `...` so the code stays
    valid; returns their (question, target) pairs."""
    import ast
    text = path.read_text(errors="replace")
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    lines = text.splitlines(keepends=True)
    found = []

    def visit(body):
        for node in body:
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) or node.name.startswith("_"):
                continue
            q = docstring_sentence(node)
            first = node.body[0]
            if len(q) >= 20 and len(q.split()) >= 4:
                found.append((first.lineno, first.end_lineno, first.col_offset, q, node.name))
            if isinstance(node, ast.ClassDef):
                visit(node.body)

    visit(tree.body)
    pairs = []
    for start, end, col, q, item in sorted(found, reverse=True):
        lines[start - 1:end] = [" " * col + "...\n"]
        pairs.append({"query": q, "targets": [target], "item": item})
    path.write_text("".join(lines))
    return list(reversed(pairs))


def merged(pairs: list) -> list:
    """One question per sentence, answered by any file it documents."""
    by_query = {}
    for p in pairs:
        if p["query"] in by_query:
            targets = by_query[p["query"]]["targets"]
            targets.extend(t for t in p["targets"] if t not in targets)
        else:
            by_query[p["query"]] = p
    return list(by_query.values())


def python_questions(proj: Path, n_packages: int, per_package: int):
    """The venv's distributions' public docstrings blanked in place (the
    venv is the benchmark's own); returns (pairs, files, ids, env)."""
    site = next((proj / ".venv/lib").glob("python*/site-packages"))
    pairs, files, ids = [], {}, []
    for dist in sorted(site.glob("*.dist-info")):
        meta = (dist / "METADATA").read_text(errors="replace")
        name = re.search(r"^Name: (.+)$", meta, re.M).group(1).strip()
        version = re.search(r"^Version: (.+)$", meta, re.M).group(1).strip()
        if name.lower() in ("pip", "setuptools") or len(ids) == n_packages:
            continue
        id_ = f"{name}@{version}"
        record = [l.split(",")[0] for l in (dist / "RECORD").read_text().splitlines()]
        sources = sorted(r for r in record if r.endswith((".py", ".pyi")) and not r.startswith("..")
                         and "__pycache__" not in r and ".dist-info/" not in r)
        # Cited as the agent cites them: a distribution in one top-level
        # folder is rooted there (click@8.1.7/core.py).
        tops = {r.split("/")[0] for r in sources}
        strip = len(tops) == 1 and all("/" in r for r in sources)
        found = []
        for rel in sources:
            cited = rel.split("/", 1)[1] if strip else rel
            parts = Path(rel).parts
            private = any(c.startswith("_") for c in parts[:-1]) or (
                parts[-1].startswith("_") and parts[-1] != "__init__.py")
            if AUX.intersection(Path(cited).parts[:-1]) or private:
                files[f"{id_}/{cited}"] = (site / rel).read_text(errors="replace").lower()
                continue
            found.extend(blank_python(site / rel, f"{id_}/{cited}"))
            files[f"{id_}/{cited}"] = (site / rel).read_text(errors="replace").lower()
        if not found:
            continue
        found = merged(found)
        step = max(1, len(found) / max(per_package, 1))
        pairs.extend(found[int(i * step)] for i in range(min(per_package, len(found))))
        ids.append(id_)
    return pairs, files, ids, {}


def searched(agent: str, env: dict, proj: Path, query: str, deps: bool) -> list:
    args = [agent, "search", "--json", "-k", os.environ.get("BENCH_K", "10"), "--root", str(proj)] + os.environ.get("BENCH_SEARCH", "").split() + (["--deps"] if deps else []) + ["--", query]
    res = subprocess.run(args, env=env, capture_output=True, text=True)
    ranked = []
    for r in json.loads(res.stdout or "[]"):
        if r["path"] not in ranked:
            ranked.append(r["path"])
    return ranked


def measure(agent: str, kind: str, tmp: Path, n: int, per: int) -> dict:
    """With `tmp` kept from an earlier run (`--keep`), its projects,
    questions and indices are reused: only the searches run again."""
    saved = tmp / "questions.json"
    if saved.exists():
        proj, pairs, files, ids, extra, times = json.loads(saved.read_text()).values()
        proj = Path(proj)
    else:
        if kind == "rust":
            proj = fd_project(tmp)
            pairs, files, ids, extra = rust_questions(proj, tmp, n, per)
        else:
            proj = black_project(tmp)
            pairs, files, ids, extra = python_questions(proj, n, per)
        times = None
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp / "cache"), XDG_STATE_HOME=str(tmp / "state"), **extra)
    if times is None:
        started = time.time()
        run([agent, "index", "--json", str(proj)], env=env, capture_output=True)
        project_seconds = time.time() - started
        started = time.time()
        report = json.loads(run([agent, "index", "--deps", "--json", str(proj)], env=env, capture_output=True,
                                text=True).stdout)
        index_seconds = time.time() - started
        chunks = sum(b["chunks"] for b in report["built"] if b["id"] in ids)
        times = [project_seconds, index_seconds, chunks]
        saved.write_text(json.dumps({"proj": str(proj), "pairs": pairs, "files": files, "ids": ids,
                                     "extra": extra, "times": times}))
    project_seconds, index_seconds, chunks = times
    acc = {"deps": [0, 0], "grep": [0, 0], "project_only": [0, 0]}
    latencies, misses = [], []
    for p in pairs:
        t0 = time.time()
        deps = searched(agent, env, proj, p["query"], True)
        latencies.append(time.time() - t0)
        targets = set(p["targets"])
        if not targets.intersection(deps[:5]):
            misses.append({"query": p["query"], "targets": p["targets"], "found": deps[:5]})
        own = [] if os.environ.get("BENCH_NO_PROJECT") else searched(agent, env, proj, p["query"], False)
        for name, ranked in (("deps", deps), ("grep", grep_rank(files, p["query"])), ("project_only", own)):
            acc[name][0] += bool(targets.intersection(ranked[:1]))
            acc[name][1] += bool(targets.intersection(ranked[:5]))
    q = max(len(pairs), 1)
    latencies.sort()
    return {
        "project": proj.name,
        "packages": ids,
        "questions": len(pairs),
        "project_index_seconds": round(project_seconds, 1),
        "deps_index_seconds": round(index_seconds, 1),
        "chunks": chunks,
        "acc1": {k: round(v[0] / q, 3) for k, v in acc.items()},
        "acc5": {k: round(v[1] / q, 3) for k, v in acc.items()},
        "search_seconds_p50": round(latencies[len(latencies) // 2], 2) if latencies else None,
        "misses_at_5": misses,
    }


def main() -> None:
    agent, out = sys.argv[1], Path(sys.argv[2])
    args = sys.argv[3:]
    n = int(args[args.index("--crates") + 1]) if "--crates" in args else 6
    per = int(args[args.index("--per-crate") + 1]) if "--per-crate" in args else 15
    kinds = [args[args.index("--only") + 1]] if "--only" in args else ["rust", "python"]
    keep = Path(args[args.index("--keep") + 1]) if "--keep" in args else None
    results = []
    for kind in kinds:
        if keep:
            tmp = keep / kind
            tmp.mkdir(parents=True, exist_ok=True)
        else:
            tmp = Path(tempfile.mkdtemp(prefix=f"bench-deps-{kind}-"))
        try:
            results.append(measure(agent, kind, tmp, n, per))
        finally:
            if not keep:
                shutil.rmtree(tmp, ignore_errors=True)
    out.write_text(json.dumps(results, indent=2))
    for r in results:
        print(f"\n{r['project']}: {len(r['packages'])} dependencies ({', '.join(r['packages'])}), "
              f"{r['chunks']} chunks indexed in {r['deps_index_seconds']:.1f}s")
        print(f"{r['questions']} questions (first sentences of public items' documentation, blanked from the indexed text)")
        print(f"{'':24}{'Acc@1':>8}{'Acc@5':>8}")
        for key, label in (("deps", "agent search --deps"), ("grep", "grep (words, ranked)"),
                           ("project_only", "project-only search")):
            print(f"{label:24}{r['acc1'][key]:>8.3f}{r['acc5'][key]:>8.3f}")
        print(f"search process p50 {r['search_seconds_p50']} s")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
