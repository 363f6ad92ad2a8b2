#!/usr/bin/env python3
"""Retrieval probes on CoSQA: what moves MRR@10 with the shipped embedder?

Re-embeds the CoSQA corpus outside the Rust pipeline (same ONNX model and
tokenizer from models/minilm, mean pooling, 256 tokens) so that many text
variants and scoring tricks can be tried in minutes. The product's own
numbers come from `scripts/bench retrieval`; this script backs the probes
listed in BENCHMARKS.md.

  python3 -m venv /tmp/rv && /tmp/rv/bin/pip install onnxruntime tokenizers numpy
  /tmp/rv/bin/python scripts/retrieval_probes.py [dev|test]

Embeddings are cached in ~/.cache/agent/probes.
"""
import ast
import collections
import hashlib
import json
import math
import os
import re
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "models" / "minilm"
EVAL = Path(os.environ.get("AGENT_EVAL_DIR", ROOT.parent / "shared" / "eval")) / "cosqa"
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "agent" / "probes"

tok = Tokenizer.from_file(str(MODEL / "tokenizer.json"))
opts = ort.SessionOptions()
opts.intra_op_num_threads = os.cpu_count() or 1
sess = ort.InferenceSession(str(MODEL / "model.onnx"), opts, providers=["CPUExecutionProvider"])


def embed(texts, max_len=256, batch=64):
    tok.enable_truncation(max_len)
    tok.no_padding()
    encs = tok.encode_batch(texts)
    order = sorted(range(len(texts)), key=lambda i: len(encs[i].ids))
    out = np.zeros((len(texts), 384), dtype=np.float32)
    for s in range(0, len(order), batch):
        idx = order[s : s + batch]
        width = max(len(encs[i].ids) for i in idx)
        ids = np.zeros((len(idx), width), np.int64)
        mask = np.zeros_like(ids)
        for r, i in enumerate(idx):
            ids[r, : len(encs[i].ids)] = encs[i].ids
            mask[r, : len(encs[i].ids)] = 1
        hidden = sess.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})[0]
        v = (hidden * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
        out[idx] = v / np.linalg.norm(v, axis=1, keepdims=True)
    return out


def cached(texts):
    key = hashlib.sha1("\x00".join(texts).encode()).hexdigest()[:16]
    path = CACHE / f"{key}.npy"
    if path.exists():
        return np.load(path)
    CACHE.mkdir(parents=True, exist_ok=True)
    v = embed(texts)
    np.save(path, v)
    return v


def mrr10(scores, gold):
    top = np.argsort(-scores, axis=1)[:, :10]
    return round(float(np.mean([1 / (np.where(r == g)[0][0] + 1) if g in r else 0 for r, g in zip(top, gold)])), 4)


def parts(src):
    """(name, first line, docstring) of the corpus function."""
    try:
        node = next(n for n in ast.parse(src).body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)))
        return node.name, src.split("\n", 1)[0], ast.get_docstring(node) or ""
    except Exception:
        m = re.search(r"def\s+(\w+)", src)
        return (m.group(1) if m else ""), src.split("\n", 1)[0], ""


STOP = set("a an the of to in for on with and or is are be how do does what which python py using use get from by into as it its this that can i my your code function way".split())


def words(text, stop=False):
    out = []
    for w in re.findall(r"[A-Za-z0-9_]+", text):
        pieces = [w] + [p for p in re.split(r"_+|(?<=[a-z])(?=[A-Z])|(?<=[A-Za-z])(?=[0-9])", w) if p]
        out += [p.lower() for p in dict.fromkeys(pieces) if not (stop and p.lower() in STOP)]
    return out


def bm25(docs, queries, k1=1.2, b=0.75):
    df, tfs = collections.Counter(), [collections.Counter(d) for d in docs]
    for c in tfs:
        df.update(c.keys())
    avg = sum(map(len, docs)) / len(docs)
    postings = collections.defaultdict(list)
    for i, c in enumerate(tfs):
        for t, f in c.items():
            postings[t].append((i, f))
    scores = np.zeros((len(queries), len(docs)), np.float32)
    for qi, q in enumerate(queries):
        for t in set(q):
            idf = math.log(1 + (len(docs) - df[t] + 0.5) / (df[t] + 0.5))
            for i, f in postings.get(t, []):
                scores[qi, i] += idf * f * (k1 + 1) / (f + k1 * (1 - b + b * len(docs[i]) / avg))
    return scores


def minmax(s):
    lo, hi = s.min(1, keepdims=True), s.max(1, keepdims=True)
    return (s - lo) / np.maximum(hi - lo, 1e-9)


def main():
    split = sys.argv[1] if len(sys.argv) > 1 else "dev"
    corpus = json.loads((EVAL / "code_idx_map.txt").read_text())
    codes = [""] * len(corpus)
    for text, i in corpus.items():
        codes[i] = text
    labelled = json.loads((EVAL / f"cosqa-retrieval-{split}-500.json").read_text())
    queries, gold = [q["doc"] for q in labelled], np.array([q["retrieval_idx"] for q in labelled])
    info = [parts(c) for c in codes]
    q = cached(queries)
    views = {
        "header (path | symbol + code, as shipped)": [f"corpus/{i}.py | {info[i][0]}\n{c}" for i, c in enumerate(codes)],
        "code only": codes,
        "summary (name words, signature, docstring)": [f"{' '.join(words(n))}\n{sig}\n{doc}" for n, sig, doc in info],
    }
    dense = {}
    print(f"CoSQA {split}: MRR@10")
    for name, texts in views.items():
        dense[name] = cached(texts)
        print(f"  vector, {name}: {mrr10(q @ dense[name].T, gold)}")
    shipped, code = (q @ dense[k].T for k in list(views)[:2])
    summary = q @ dense[list(views)[2]].T
    print(f"  vector, code + 0.5 summary: {mrr10(code + 0.5 * summary, gold)}")
    for stop in (False, True):
        b = bm25([words(c, stop) for c in codes], [words(x, stop) for x in queries])
        print(f"  bm25 (identifier split{', stop words' if stop else ''}): {mrr10(b, gold)}; "
              + ", ".join(f"linear {w} with code-only vector: {mrr10((1 - w) * code + w * minmax(b), gold)}" for w in (0.05, 0.1, 0.2)))
    docs = dense["code only"]
    top = np.argsort(-code, 1)[:, :3]
    prf = q + 0.3 * docs[top].mean(1)
    prf /= np.linalg.norm(prf, axis=1, keepdims=True)
    print(f"  pseudo-relevance feedback (top 3, 0.3): {mrr10(prf @ docs.T, gold)}")
    mu = docs.mean(0)
    centered = (docs - mu) / np.linalg.norm(docs - mu, axis=1, keepdims=True)
    qc = (q - mu) / np.linalg.norm(q - mu, axis=1, keepdims=True)
    print(f"  centering on the corpus mean: {mrr10(qc @ centered.T, gold)}")
    dd = docs @ docs.T
    np.fill_diagonal(dd, -1)
    hub = np.sort(dd, 1)[:, -10:].mean(1)
    print(f"  hubness correction (cos - 0.25 * mean cos to 10 nearest docs): {mrr10(code - 0.25 * hub[None, :], gold)}")


if __name__ == "__main__":
    main()
