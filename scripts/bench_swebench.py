#!/usr/bin/env python3
"""SWE-bench Lite file localization, fast enough to rerun whenever the ranking changes.

usage: bench_swebench.py BIN [--modes bm25,vector,hybrid,map,map-words] [--repos sympy ...] [--limit N]
                         [--index-only | --indexed-only] [--jobs N] [--out FILE] [--label NAME] [--extra-arg ARG]

The data and metrics are the shared harness's (../shared/eval/swebench: instances.jsonl, prepare.py,
run.py's sync_tree / rank_files / metrics); what differs is the layout. run.py keeps one work dir per
repository and re-syncs every version on each run, re-indexing half of sympy each time. Here every sdist
keeps its own work dir and index, so a second run costs only the searches:

- first run: each sdist is copied into WORK/<name>-<version>/ and indexed with `BIN index`; before that,
  the embedding cache of the nearest version already indexed is copied in, so only chunks new in this
  version are embedded;
- every run: `BIN index` again (a no-op check when nothing changed), then per instance and mode
  `BIN search --json -k 50 --mode M -- ISSUE_TEXT` in the work dir, files ranked by first appearance.

WORK is $AGENT_EVAL_SWEBENCH_CACHE/bench-work (default ~/.cache/agent-eval-swebench/bench-work).
Modes: bm25, vector and hybrid rank files by `search`; `map` lists the files of the 1,024-token repo map
focused on the issue (`BIN map --request ISSUE`), `map-words` the same map focused on every word of the issue
(the agent's focus before long requests were taken apart). For the maps, "in list" is the share of instances
whose gold file the map shows.

Output: JSON (overall and per repo, per mode, plus per-instance rows) in FILE, and a table on stdout."""
import argparse, collections, concurrent.futures, json, os, shutil, sqlite3, subprocess, sys, time

EVAL = os.environ.get("AGENT_EVAL_SWEBENCH",
                      os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "eval",
                                   "swebench"))
sys.path.insert(0, EVAL)
import prepare  # noqa: E402
import run  # noqa: E402

MODES = ["bm25", "vector", "hybrid"]
MAP_TOKENS = 1024
WORK = os.path.join(prepare.CACHE, "bench-work")


def index_dir(work):
    """The index of the workspace WORK: in the agent's state folder, outside the tree
    (agent_base::paths::state_dir: the folder's name, then 16 hex digits of the sha256 of its path)."""
    import hashlib, re
    canonical = os.path.realpath(work)
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", os.path.basename(canonical) or "root")[:40]
    key = f"{name}-{hashlib.sha256(canonical.encode()).hexdigest()[:16]}"
    base = os.environ.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state")
    return os.path.join(base, "agent", "workspaces", key, "index")


def cache_file(work):
    return os.path.join(index_dir(work), "embeddings.sqlite")


def seed_cache(near_work, work):
    """Copy NEAR_WORK's embedding cache into WORK so unchanged chunks are not embedded again."""
    src, dst = cache_file(near_work), cache_file(work)
    if not os.path.exists(src) or os.path.exists(dst):
        return
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    with sqlite3.connect(src) as a, sqlite3.connect(dst) as b:
        a.backup(b)  # consistent even if a WAL was left behind


def nearest_work_dir(spec):
    """The work dir of the indexed version of SPEC's project nearest to SPEC (earlier on a tie), if any.
    The embedding cache is keyed by chunk content, so any version's cache serves; the nearest shares most."""
    name, _ = spec.split("==")
    want = run.vkey(spec)
    dist = lambda v: (sum(abs(a - b) * 1000 ** -i for i, (a, b) in enumerate(zip(v, want))), v > want)
    best = None
    for d in os.listdir(WORK) if os.path.isdir(WORK) else []:
        m = d.rsplit("-", 1)
        if len(m) == 2 and prepare.norm(m[0]) == prepare.norm(name) and os.path.exists(
                cache_file(os.path.join(WORK, d))):
            v = run.vkey(f"x=={m[1]}")
            if v != want and (best is None or dist(v) < dist(best[0])):
                best = (v, os.path.join(WORK, d))
    return best[1] if best else None


def is_indexed(spec):
    """Whether SPEC's work dir holds a complete index (its last `index` run finished)."""
    work = os.path.join(WORK, os.path.basename(prepare.src_dir(spec)))
    state = os.path.join(index_dir(work), "state.sqlite")
    if not os.path.exists(state):
        return False
    with sqlite3.connect(state) as db:
        row = db.execute("SELECT value FROM meta WHERE key = 'complete'").fetchone()
    return bool(row) and row[0] == "yes"


def ensure_index(binp, spec):
    src = prepare.unpack(spec)
    work = os.path.join(WORK, os.path.basename(src))
    fresh = not os.path.isdir(index_dir(work))
    if fresh:
        run.sync_tree(src, work)
        near = nearest_work_dir(spec)
        if near:
            seed_cache(near, work)
    t = time.monotonic()
    r = subprocess.run([binp, "index", work, "--json"], cwd=work, capture_output=True, text=True)
    secs = time.monotonic() - t
    if r.returncode != 0:
        sys.exit(f"index {spec} failed (rc={r.returncode}):\n{r.stderr[-2000:]}")
    try:
        stats = json.loads(r.stdout)
    except ValueError:
        stats = {}
    print(f"index {spec:20s} {'cold' if fresh else 'check'} {secs:7.1f} s  "
          f"files={stats.get('files_seen')} chunks written={stats.get('chunks_written')} "
          f"embedded={stats.get('chunks_embedded')} cache hits={stats.get('cache_hits')}",
          file=sys.stderr, flush=True)
    stats.pop("skipped", None)
    return work, dict(sdist=spec, seconds=round(secs, 1), cold=fresh, stats=stats)


def old_focus(request):
    """The map focus the agent derived from a request before long requests were taken apart: every word
    of three letters or more, trimmed of punctuation."""
    import re
    words = [w for w in re.split(r"[\s`,?]", request) if len(w) > 2]
    trimmed = [re.sub(r"^[^\w/.]+|[^\w/.]+$", "", w) for w in words]
    return [w for w in trimmed if w]


def search_one(binp, work, inst, mode, search_k, extra):
    if mode == "map":  # the gold file among the files of the 1,024-token map focused on the issue
        cmd = [binp, "map", "--tokens", str(MAP_TOKENS), "--json", "--request", inst["query"]]
    elif mode == "map-words":  # the same with the old focus (every word)
        cmd = [binp, "map", "--tokens", str(MAP_TOKENS), "--json"]
        for w in old_focus(inst["query"]):
            cmd += ["--focus", w]
    else:
        cmd = [binp, "search", "--json", "-k", str(search_k), "--mode", mode, *extra, "--", inst["query"]]
    t = time.monotonic()
    r = subprocess.run(cmd, cwd=work, capture_output=True, text=True, timeout=300)
    secs = time.monotonic() - t
    err = None
    try:
        hits = json.loads(r.stdout)
    except ValueError as e:
        hits, err = [], f"rc={r.returncode} {e}: {r.stderr.strip()[-300:]}"
    if mode.startswith("map"):
        text = hits.get("text", "") if isinstance(hits, dict) else ""
        files = [l[:-1] for l in text.splitlines() if l.endswith(":") and not l.startswith(" ")]
    else:
        files = run.rank_files(hits, work)
    gold = inst["gold_files"]
    ranks = [files.index(g) + 1 if g in files else None for g in gold]
    return dict(instance_id=inst["instance_id"], repo=inst["repo"], sdist=inst["sdist"], mode=mode,
                gold_files=gold, first_gold_rank=min([x for x in ranks if x], default=None),
                all_gold_rank=max(ranks) if ranks and all(ranks) else None,
                top_files=files[:10], seconds=round(secs, 3), error=err)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("bin")
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--repos", nargs="*")
    ap.add_argument("--sdists", nargs="*", help="only these sdists (e.g. sympy==1.1)")
    ap.add_argument("--limit", type=int, help="at most N instances per sdist")
    ap.add_argument("--search-k", type=int, default=50)
    ap.add_argument("--index-only", action="store_true")
    ap.add_argument("--indexed-only", action="store_true",
                    help="evaluate only the sdists whose index is built (skip the others, index nothing new)")
    ap.add_argument("--jobs", type=int, default=2, help="searches run in parallel (default 2)")
    ap.add_argument("--extra-arg", action="append", default=[], help="passed to every `search` (repeatable)")
    ap.add_argument("--label", default="", help="a name for this run in the output")
    ap.add_argument("--out")
    a = ap.parse_args()
    binp = os.path.abspath(a.bin)
    modes = [m for m in a.modes.split(",") if m]
    insts = [json.loads(l) for l in open(os.path.join(EVAL, "instances.jsonl")) if l.strip()]
    if a.repos:
        insts = [i for i in insts if i["repo"].split("/")[1] in a.repos]
    if a.sdists:
        insts = [i for i in insts if i["sdist"] in a.sdists]
    by_sdist = collections.defaultdict(list)
    for i in insts:
        by_sdist[i["sdist"]].append(i)
    t_all = time.monotonic()
    index_runs, rows = [], []
    for spec in sorted(by_sdist, key=lambda s: (s.split("==")[0], run.vkey(s))):
        if a.indexed_only and not is_indexed(spec):
            print(f"skip  {spec:20s} (not indexed yet)", file=sys.stderr)
            continue
        work, ir = ensure_index(binp, spec)
        index_runs.append(ir)
        if a.index_only:
            continue
        todo = by_sdist[spec][: a.limit] if a.limit else by_sdist[spec]
        with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
            futs = [pool.submit(search_one, binp, work, inst, m, a.search_k, a.extra_arg)
                    for inst in todo for m in modes]
            for f in futs:
                r = f.result()
                if r["error"]:
                    print(f"  {r['instance_id']} {r['mode']}: {r['error']}", file=sys.stderr)
                rows.append(r)
    if a.index_only:
        return
    out = {"label": a.label, "bin": binp, "search_k": a.search_k, "extra_args": a.extra_arg,
           "wall_s": round(time.monotonic() - t_all, 1), "index_runs": index_runs, "modes": {}, "rows": rows}
    for mode in modes:
        mr = [r for r in rows if r["mode"] == mode]
        out["modes"][mode] = {"overall": run.metrics(mr, 10),
                              "per_repo": {repo: run.metrics([r for r in mr if r["repo"] == repo], 10)
                                           for repo in sorted({r["repo"] for r in mr})}}
    if a.out:
        json.dump(out, open(a.out, "w"), indent=1)
    print(f"\nSWE-bench Lite file localization {a.label} ({len(rows) // max(len(modes), 1)} instances)")
    print("mode      | repo         |  n | Acc@1 | Acc@5 | Acc@10 | MRR@10 | in list | p50 s")
    for mode in modes:
        m = out["modes"][mode]
        for repo, v in list(m["per_repo"].items()) + [("ALL", m["overall"])]:
            print(f"{mode:9s} | {repo.split('/')[-1]:12s} | {v['n']:2d} | {v['acc@1']:.3f} | {v['acc@5']:.3f} | "
                  f"{v['acc@10']:.3f}  | {v['mrr@10']:.3f}  | {v['found_in_results']:.3f}   | "
                  f"{v['latency_p50_s']:.2f}")


if __name__ == "__main__":
    main()
