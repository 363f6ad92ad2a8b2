#!/usr/bin/env python3
"""The portable agent's engine against the native one's, side by side.

Usage: bench_portable.py NATIVE_AGENT PORTABLE_AGENT ROUNDS THREADS OUT.json

Each round runs `agent ask --no-tools` (prompt cache off, 128 tokens) with
the native binary, then the portable one, in a scratch folder; decode and
prefill tok/s are the medians over the rounds, and the ratio is portable
over native (issue 55: decode within 5%).
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

QUESTION = "Write a long story about a lighthouse keeper who finds a map. Keep going."


def run(agent, cwd, threads):
    cmd = [agent, "ask", "--no-tools", "--prompt-cache", "off", "--max-tokens", "128", "--json", QUESTION]
    env = dict(os.environ, AGENT_THREADS=str(threads))
    out = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        sys.exit(f"{agent} failed ({out.returncode}):\n{out.stderr[-2000:]}")
    v = json.loads(out.stdout)
    return v["completion_tokens"] / (v["decode_ms"] / 1000), v["prompt_tokens"] / (v["prefill_ms"] / 1000)


def main():
    native, portable, rounds, threads, result = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
    variant = json.loads(subprocess.run([portable, "--version", "--json"], capture_output=True, text=True, check=True).stdout)["llama_cpp"]["cpu_backend"]
    runs = {"native": [], "portable": []}
    with tempfile.TemporaryDirectory() as work:
        for _ in range(rounds):
            for kind, agent in (("native", native), ("portable", portable)):
                runs[kind].append(run(agent, work, threads))
    out = {kind: {"decode_tok_s": round(statistics.median(d for d, _ in r), 1),
                  "prefill_tok_s": round(statistics.median(p for _, p in r), 1)} for kind, r in runs.items()}
    out["portable"]["cpu_backend"] = variant
    out["decode_ratio"] = round(out["portable"]["decode_tok_s"] / out["native"]["decode_tok_s"], 3)
    out["prefill_ratio"] = round(out["portable"]["prefill_tok_s"] / out["native"]["prefill_tok_s"], 3)
    out["rounds"], out["threads"] = rounds, threads
    with open(result, "w") as f:
        json.dump(out, f, indent=2)
    print(f"""
portable vs native engine (agent ask --no-tools, 128 tokens, {threads} threads, medians of {rounds} alternating rounds; portable kernels: {variant})
  prefill  portable {out['portable']['prefill_tok_s']:8.1f} tok/s   native {out['native']['prefill_tok_s']:8.1f}   ratio {out['prefill_ratio']:.3f}
  decode   portable {out['portable']['decode_tok_s']:8.1f} tok/s   native {out['native']['decode_tok_s']:8.1f}   ratio {out['decode_ratio']:.3f}  (target >= 0.95)
wrote {result}""")


if __name__ == "__main__":
    main()
