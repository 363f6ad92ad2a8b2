#!/usr/bin/env python3
"""Fresh-process speed of `agent ask`: the prompt cache on disk and
prompt-lookup speculative decoding (issue 31).

1. Time to first token of a fresh `agent ask` (the agent loop, first model
   request) in an indexed repository: cold (no cache entry) against warm
   (an earlier process saved one), for the same question again and for
   another question. Cold and warm runs alternate, so machine load hits both.
2. Decode tokens/s with speculation on and off, alternating, on edit-shaped
   generation (repeat a file; rewrite a function with one change; a unified
   diff whose 40-line hunk retypes its context) and on free prose. The answers of both must be identical (greedy decoding).

Usage: bench_speed.py [--reps N] [--model PATH] [--only cache|speculation] [--hog]
                      [--threads N] [--cases a,b]   (AGENT_BIN: the binary)
Writes bench-results/speed.json (a run of one part keeps the other's figures).
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
AGENT = os.environ.get("AGENT_BIN", str(ROOT / "target/release/agent"))
LOAD_LINE = re.compile(r"prompt cache: (\d+) of (\d+) prompt tokens from .* \(([\d.]+) MB\) in (\d+) ms")

# The repository the agent works in: a copy of the engine crate's sources.
SOURCES = ROOT / "crates/agent-engine/src"

FUNCTION = '''def summarize(orders):
    """Totals per customer, skipping cancelled orders."""
    totals = {}
    for order in orders:
        if order.get("status") == "cancelled":
            continue
        customer = order["customer"]
        amount = float(order.get("amount", 0))
        totals[customer] = totals.get(customer, 0.0) + amount
    ranked = sorted(totals.items(), key=lambda item: item[1], reverse=True)
    lines = []
    for customer, amount in ranked:
        lines.append(f"{customer}: {amount:.2f}")
    return "\\n".join(lines)
'''

# 39 lines: the hunk of a diff that renames `rows` retypes all of them.
REPORT = '''import csv
from collections import defaultdict


def load(path):
    """Rows of the CSV file at `path`, as dictionaries."""
    with open(path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    return rows


def by_region(rows):
    """Sales per region, largest first."""
    totals = defaultdict(float)
    for row in rows:
        region = row["region"].strip() or "unknown"
        totals[region] += float(row["amount"])
    return sorted(totals.items(), key=lambda item: item[1], reverse=True)


def monthly(rows):
    """Sales per month (YYYY-MM), oldest first."""
    totals = defaultdict(float)
    for row in rows:
        month = row["date"][:7]
        totals[month] += float(row["amount"])
    return sorted(totals.items())


def report(path):
    """A plain-text report of the CSV file at `path`."""
    rows = load(path)
    lines = ["By region:"]
    for region, amount in by_region(rows):
        lines.append(f"  {region}: {amount:.2f}")
    lines.append("By month:")
    for month, amount in monthly(rows):
        lines.append(f"  {month}: {amount:.2f}")
    return "\\n".join(lines)
'''


def run(args, cwd, model):
    cmd = [AGENT, *args]
    if model:
        cmd += ["--model", model]
    started = time.monotonic()
    out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=1800)
    wall = time.monotonic() - started
    if out.returncode not in (0, 3):
        sys.exit(f"{' '.join(cmd)} failed ({out.returncode}):\n{out.stderr[-3000:]}")
    return json.loads(out.stdout), out.stderr, wall


def dir_size(path):
    return sum(f.stat().st_size for f in Path(path).glob("*.kv"))


def start_hog():
    """A busy loop on every core (the machine made busy between two runs)."""
    spin = [sys.executable, "-c", "while True: pass"]
    return [subprocess.Popen(spin) for _ in range(os.cpu_count() or 1)]


def stop_hog(hog):
    for proc in hog:
        proc.kill()
        proc.wait()


def prompt_cache(reps, model, hog=False):
    work = Path(tempfile.mkdtemp(prefix="bench-speed-"))
    saved = {}
    try:
        repo = work / "repo"
        shutil.copytree(SOURCES, repo / "src")
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
        # The agent's state (index, prompt cache) in this run's own homes,
        # outside the repository: the cache's folder is found, not assumed.
        for var, sub in (("XDG_STATE_HOME", "state"), ("XDG_CACHE_HOME", "cache")):
            saved[var] = os.environ.get(var)
            os.environ[var] = str(work / sub)
        subprocess.run([AGENT, "index", str(repo)], cwd=repo, check=True, capture_output=True)
        (workspace,) = (work / "state/agent/workspaces").iterdir()
        kv = workspace / "cache/kv"
        questions = [
            "Where does the engine decide how many layers go on the GPU?",
            "How does the prompt cache check that a file on disk is not damaged?",
        ]
        ask = ["ask", "--json", "-v", "--max-steps", "1", "--max-tokens", "16"]
        rows = []
        for rep in range(reps):
            shutil.rmtree(kv, ignore_errors=True)
            cold, _, _ = run([*ask, questions[0]], repo, model)
            size = dir_size(kv)
            busy = start_hog() if hog else []
            try:
                same, same_err, _ = run([*ask, questions[0]], repo, model)
                other, other_err, _ = run([*ask, questions[1]], repo, model)
            finally:
                stop_hog(busy)
            loads = [LOAD_LINE.search(e) for e in (same_err, other_err)]
            row = {
                "prompt_tokens": cold["prompt_tokens"],
                "cold_ttft_ms": cold["ttft_ms"],
                "warm_same_ttft_ms": same["ttft_ms"],
                "warm_other_ttft_ms": other["ttft_ms"],
                "same_loaded": same["prompt_cache"]["loaded_tokens"],
                "same_prompt_tokens": same["prompt_tokens"],
                "same_loaded_share": same["prompt_cache"]["loaded_tokens"] / same["prompt_tokens"],
                "map_tokens": [r["first_prompt"]["map_tokens"] for r in (cold, same, other)],
                "other_loaded": other["prompt_cache"]["loaded_tokens"],
                "cache_mb": size / 1e6,
                "load_ms": [int(m.group(4)) if m else None for m in loads],
            }
            rows.append(row)
            print(
                f"  rep {rep + 1}: cold {row['cold_ttft_ms']:.0f} ms, warm same question "
                f"{row['warm_same_ttft_ms']:.0f} ms ({row['same_loaded']} of "
                f"{row['same_prompt_tokens']} tokens loaded), map tokens cold/same/other {row['map_tokens']}, "
                f"warm other question {row['warm_other_ttft_ms']:.0f} ms "
                f"({row['other_loaded']} loaded), entry {row['cache_mb']:.1f} MB, "
                f"load {row['load_ms']} ms",
                flush=True,
            )
        med = lambda key: statistics.median(r[key] for r in rows)
        summary = {
            "runs": rows,
            "cold_ttft_ms": med("cold_ttft_ms"),
            "warm_same_ttft_ms": med("warm_same_ttft_ms"),
            "warm_other_ttft_ms": med("warm_other_ttft_ms"),
            "ratio_same": med("warm_same_ttft_ms") / med("cold_ttft_ms"),
            "ratio_other": med("warm_other_ttft_ms") / med("cold_ttft_ms"),
            "same_loaded_share": med("same_loaded_share"),
            "hog": hog,
            "cache_mb": med("cache_mb"),
            "load_ms": statistics.median(
                ms for r in rows for ms in r["load_ms"] if ms is not None
            ) if any(ms is not None for r in rows for ms in r["load_ms"]) else None,
        }
        print(
            f"TTFT warm/cold: same question {summary['ratio_same']:.3f}, other question "
            f"{summary['ratio_other']:.3f}; same question loaded {summary['same_loaded_share']:.0%} of its "
            f"prompt{' (CPU hog during the warm runs)' if hog else ''} (cold {summary['cold_ttft_ms']:.0f} ms; entry "
            f"{summary['cache_mb']:.1f} MB, loaded in {summary['load_ms']} ms)"
        )
        return summary
    finally:
        for var, value in saved.items():
            if value is None:
                os.environ.pop(var, None)
            else:
                os.environ[var] = value
        shutil.rmtree(work, ignore_errors=True)


def speculation(reps, model, threads=None, cases_only=None):
    work = Path(tempfile.mkdtemp(prefix="bench-spec-"))
    try:
        (work / "orders.py").write_text(FUNCTION)
        (work / "report.py").write_text(REPORT)
        # A fixed length: the file grows (6.5 kB, then 11.8 kB between two
        # runs of this bench, whose tokens/s without speculation went from
        # 34 to 8.6), and figures of two runs must compare.
        source = (SOURCES / "speculative.rs").read_text()
        (work / "engine.rs").write_text(source[: source.rindex("\n", 0, 6500) + 1])
        cases = {
            "repeat_file": (["-f", "engine.rs", "Repeat the file exactly."], 256),
            "function_one_change": (
                ["-f", "orders.py", "Rewrite this function with `totals` renamed to `per_customer`."],
                256,
            ),
            "patch_40_line_hunk": (
                [
                    "-f",
                    "report.py",
                    "Write a unified diff for `git apply` that renames `rows` to `records` "
                    "throughout this file: one hunk, every line of the file in it.",
                ],
                384,
            ),
            "prose": (["Write a short story about a lighthouse keeper and a storm."], 192),
        }
        results = {}
        for name, (words, max_tokens) in cases.items():
            if cases_only and name not in cases_only:
                continue
            base = ["ask", "--no-tools", "--json", "--prompt-cache", "off", "--max-tokens", str(max_tokens)]
            if threads:
                base += ["--threads", str(threads)]
            modes = ["on", "auto", "off"]
            speeds = {m: [] for m in modes}
            answers = {}
            acceptance = []
            for rep in range(reps):
                order = modes[rep % 3:] + modes[:rep % 3]
                for switch in order:
                    v, _, _ = run([*base, "--speculative", switch, *words], work, model)
                    tps = v["completion_tokens"] / (v["decode_ms"] / 1000)
                    speeds[switch].append(tps)
                    answers.setdefault(switch, v["answer"])
                    if answers[switch] != v["answer"]:
                        sys.exit(f"{name}: greedy output changed between runs")
                    if switch == "on":
                        acceptance.append(v["speculative"])
            identical = answers["on"] == answers["off"]
            identical_auto = answers["auto"] == answers["off"]
            on, off = statistics.median(speeds["on"]), statistics.median(speeds["off"])
            auto = statistics.median(speeds["auto"])
            spec = acceptance[0]
            results[name] = {
                "tokens_per_s_on": on,
                "tokens_per_s_off": off,
                "tokens_per_s_auto": auto,
                "speedup": on / off,
                "speedup_auto": auto / off,
                "identical_output": identical,
                "identical_output_auto": identical_auto,
                "drafted": spec["drafted"],
                "accepted": spec["accepted"],
                "acceptance": spec["acceptance"],
                "runs_on": speeds["on"],
                "runs_off": speeds["off"],
                "runs_auto": speeds["auto"],
            }
            print(
                f"  {name}: {on:.1f} tok/s with speculation (on), {auto:.1f} (auto), {off:.1f} "
                f"without: {on / off:.2f}x on, {auto / off:.2f}x auto; output identical: "
                f"{identical} (on), {identical_auto} (auto); "
                f"{spec['accepted']}/{spec['drafted']} drafts accepted",
                flush=True,
            )
        return results
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--model")
    parser.add_argument("--only", choices=["cache", "speculation"])
    parser.add_argument(
        "--hog",
        action="store_true",
        help="prompt cache: a busy loop on every core from each cold run to the end of its warm runs",
    )
    parser.add_argument(
        "--threads",
        type=int,
        help="llama.cpp threads for the speculation runs (1: the regime where llama.cpp "
        "computes a token alone and in a batch with the same bits)",
    )
    parser.add_argument("--cases", help="comma-separated speculation cases (default: all)")
    args = parser.parse_args()
    report = {"agent": AGENT}
    if args.only in (None, "cache"):
        report["prompt_cache_reps"] = args.reps
        print("prompt cache: fresh `agent ask` processes, cold and warm alternating", flush=True)
        report["prompt_cache"] = prompt_cache(args.reps, args.model, args.hog)
    if args.only in (None, "speculation"):
        print("speculative decoding: on and off alternating", flush=True)
        cases = args.cases.split(",") if args.cases else None
        report["threads"] = args.threads
        report["speculation_reps"] = args.reps
        report["speculation"] = speculation(args.reps, args.model, args.threads, cases)
    out = ROOT / "bench-results/speed.json"
    out.parent.mkdir(exist_ok=True)
    # A run of one part (--only) keeps the other part's last figures.
    previous = json.loads(out.read_text()) if out.exists() else {}
    previous.pop("reps", None)  # before the parts kept their own
    out.write_text(json.dumps({**previous, **report}, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
