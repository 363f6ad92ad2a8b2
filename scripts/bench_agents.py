#!/usr/bin/env python3
"""Two builds of the agent side by side, as users run them.

Usage: bench_agents.py OUT.json ROUNDS THREADS NAME=AGENT NAME=AGENT [--only engine,index,search] [--tree DIR]

For builds that should behave the same and differ in how they were made:
native against portable (issue 55, item 1), release against the smaller
distribution profile (item 2). Each round runs every part with the first
agent, then the second; figures are medians over the rounds, and each ratio
is the second over the first.

- size: the file, its size stripped (`strip -o`), and its `.text`.
- engine: `agent ask --no-tools` (prompt cache off, 128 tokens): decode and
  prefill tok/s.
- index: a cold `agent index` of TREE (default: this repository's crates/),
  with empty state and cache folders, so nothing is reused: wall seconds.
- search: then `agent search --json -k 10` three times for each of a few
  questions on that index, each a fresh process (start, embedder, LanceDB):
  the median's wall seconds.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

QUESTION = "Write a long story about a lighthouse keeper who finds a map. Keep going."
SEARCHES = [
    "where is the context window budget enforced",
    "load the chat template from the model file",
    "sandbox refuses writes outside the workspace",
    "fn main",
    "hybrid search BM25 and vector fusion",
]
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def timed(cmd, cwd, env):
    start = time.monotonic()
    out = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=1800)
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd[:2])} failed ({out.returncode}):\n{out.stderr[-2000:]}")
    return time.monotonic() - start, out.stdout


def size(agent):
    with tempfile.TemporaryDirectory() as tmp:
        stripped = os.path.join(tmp, "agent")
        subprocess.run(["strip", "-o", stripped, agent], check=True)
        sections = subprocess.run(["size", "-A", stripped], capture_output=True, text=True, check=True).stdout
        text = next(int(line.split()[1]) for line in sections.splitlines() if line.startswith(".text "))
        return {"file_mb": round(os.path.getsize(agent) / 1e6, 1),
                "stripped_mb": round(os.path.getsize(stripped) / 1e6, 1),
                "text_mb": round(text / 1e6, 1)}


def engine(agent, work, env):
    cmd = [agent, "ask", "--no-tools", "--prompt-cache", "off", "--max-tokens", "128", "--json", QUESTION]
    _, out = timed(cmd, work, env)
    v = json.loads(out)
    return {"decode_tok_s": v["completion_tokens"] / (v["decode_ms"] / 1000),
            "prefill_tok_s": v["prompt_tokens"] / (v["prefill_ms"] / 1000)}


def index_and_search(agent, tree, env, parts):
    """Index TREE with fresh state and cache folders, then search it."""
    with tempfile.TemporaryDirectory() as home:
        env = dict(env, HOME=home, XDG_STATE_HOME=f"{home}/state", XDG_CACHE_HOME=f"{home}/cache",
                   XDG_CONFIG_HOME=f"{home}/config", XDG_DATA_HOME=f"{home}/data")
        figures = {}
        seconds, _ = timed([agent, "index", "--json", tree], tree, env)
        if "index" in parts:
            figures["index_s"] = seconds
        if "search" in parts:
            # Each question thrice: a process takes a third of a second, and
            # one slow start would move a median of five.
            figures["search_s"] = statistics.median(
                timed([agent, "search", "--json", "-k", "10", q], tree, env)[0]
                for q in SEARCHES for _ in range(3))
        return figures


def main():
    args = sys.argv[1:]
    parts, tree = {"engine", "index", "search"}, None
    if "--only" in args:
        i = args.index("--only")
        parts = set(args[i + 1].split(","))
        del args[i:i + 2]
    if "--tree" in args:
        i = args.index("--tree")
        tree = os.path.abspath(args[i + 1])
        del args[i:i + 2]
    result, rounds, threads = args[0], int(args[1]), int(args[2])
    agents = [a.split("=", 1) for a in args[3:5]]
    env = dict(os.environ, AGENT_THREADS=str(threads))
    runs = {name: [] for name, _ in agents}
    with tempfile.TemporaryDirectory() as work:
        if parts & {"index", "search"}:
            # A copy, so that nothing else writes it while it is indexed.
            src = tree or os.path.join(ROOT, "crates")
            tree = os.path.join(work, "tree")
            shutil.copytree(src, tree, ignore=shutil.ignore_patterns("target", ".git"))
        for _ in range(rounds):
            for name, agent in agents:
                figures = {}
                if "engine" in parts:
                    figures.update(engine(agent, work, env))
                if parts & {"index", "search"}:
                    figures.update(index_and_search(agent, tree, env, parts))
                runs[name].append(figures)
    out = {"rounds": rounds, "threads": threads, "parts": sorted(parts)}
    for name, agent in agents:
        version = json.loads(subprocess.run([agent, "--version", "--json"], capture_output=True, text=True, check=True).stdout)
        out[name] = {"agent": agent, "cpu_backend": version["llama_cpp"].get("cpu_backend"), **size(agent)}
        for key in runs[name][0]:
            out[name][key] = round(statistics.median(r[key] for r in runs[name]), 3)
    (first, _), (second, _) = agents
    out["ratios"] = {key: round(out[second][key] / out[first][key], 3)
                     for key in out[first] if isinstance(out[first][key], float) and out[first][key]}
    with open(result, "w") as f:
        json.dump(out, f, indent=2)
    print(f"\n{second} against {first} ({threads} threads, medians of {rounds} alternating rounds; ratio = {second} / {first})")
    for key, ratio in out["ratios"].items():
        print(f"  {key:14} {first} {out[first][key]:10.3f}   {second} {out[second][key]:10.3f}   ratio {ratio:.3f}")
    print(f"  cpu backends   {first} {out[first]['cpu_backend']}, {second} {out[second]['cpu_backend']}")
    print(f"wrote {result}")


if __name__ == "__main__":
    main()
