#!/usr/bin/env python3
"""Corpora for `scripts/bench index` and `scripts/bench retrieval`.

All of it is real code nobody on this project wrote: sdists of well-known
Python projects from PyPI and Rust crates from crates.io (taken from the
cargo registry, where the build already put them), plus the CoSQA evaluation
set from ../shared/eval.

  bench_corpus.py code DEST             requests, flask, regex, ignore → DEST/<name>/
  bench_corpus.py cosqa DEST SPLIT      one file per CoSQA function + DEST.SPLIT.queries.json
  bench_corpus.py docstrings SRC DEST   docstring → function pairs from SRC (a `code` folder),
                                        docstrings stripped from the indexed text
  bench_corpus.py doccomments LANG SRC DEST
                                        the same for TypeScript (JSDoc), Go (godoc) or Java
                                        (Javadoc) sources under SRC
  bench_corpus.py doccomments-all DEST  rxjs (TypeScript, npm), cobra (Go, Debian) and
                                        java.util.concurrent (Java, Debian's OpenJDK 17
                                        sources) → DEST/{typescript,go,java}
  bench_corpus.py multilang DEST        those three sources plus zstandard's C (PyPI),
                                        copied to DEST/<language>/
  bench_corpus.py map-corpora DEST      rxjs, cobra, react-native-maps' Android Java (npm)
                                        and zstandard → DEST/{ts-rxjs,go-cobra,java-rn-maps,c-zstandard}
"""
import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SDISTS = {"requests": "2.32.3", "flask": "3.0.3"}
CRATES = ["regex", "ignore"]
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "agent" / "bench-sdists"


def code(dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    CACHE.mkdir(parents=True, exist_ok=True)
    for name, version in SDISTS.items():
        target = dest / name
        if target.exists():
            continue
        archive = CACHE / f"{name}-{version}.tar.gz"
        if not archive.exists():
            subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                            "-q", "-d", str(CACHE), f"{name}=={version}"], check=True)
        with tempfile.TemporaryDirectory() as tmp, tarfile.open(archive) as tar:
            tar.extractall(tmp, filter="data")
            shutil.copytree(next(Path(tmp).iterdir()), target)
    meta = json.loads(subprocess.run(["cargo", "metadata", "--format-version", "1"],
                                     cwd=ROOT, capture_output=True, check=True, text=True).stdout)
    for crate in CRATES:
        target = dest / crate
        if target.exists():
            continue
        pkg = next(p for p in meta["packages"] if p["name"] == crate)
        shutil.copytree(Path(pkg["manifest_path"]).parent, target)


def cosqa(dest: Path, split: str) -> None:
    eval_dir = ROOT.parent / "shared" / "eval" / "cosqa"
    if not eval_dir.is_dir():
        eval_dir = Path(os.environ.get("AGENT_EVAL_DIR", "")) / "cosqa"
    corpus = json.loads((eval_dir / "code_idx_map.txt").read_text())
    queries = json.loads((eval_dir / f"cosqa-retrieval-{split}-500.json").read_text())
    files = dest / "corpus"
    if not files.is_dir():
        files.mkdir(parents=True)
        for text, idx in corpus.items():
            (files / f"{idx}.py").write_text(text + "\n")
    labelled = [{"query": q["doc"], "target": f"corpus/{q['retrieval_idx']}.py"} for q in queries]
    Path(f"{dest}.{split}.queries.json").write_text(json.dumps(labelled))


def first_sentence(doc: str) -> str:
    doc = " ".join(doc.strip().split())
    m = re.match(r"(.+?[.!?])(\s|$)", doc)
    return (m.group(1) if m else doc)[:200]


def python_pairs(src: Path):
    for path in sorted(src.rglob("*.py")):
        if "test" in path.parts or "tests" in path.parts or "docs" in path.parts:
            continue
        text = path.read_text(errors="replace")
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        lines = text.splitlines()
        for node in ast.walk(tree):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            doc = ast.get_docstring(node)
            if not doc or len(first_sentence(doc)) < 20 or node.name.startswith("__"):
                continue
            body0 = node.body[0]
            start = (node.decorator_list[0].lineno if node.decorator_list else node.lineno) - 1
            kept = lines[start:body0.lineno - 1] + lines[body0.end_lineno:node.end_lineno]
            if len(kept) < 3:
                continue
            indent = min(len(l) - len(l.lstrip()) for l in kept if l.strip())
            yield first_sentence(doc), "\n".join(l[indent:] for l in kept) + "\n", ".py"


RUST_FN = re.compile(r"^\s*pub(\([^)]*\))?\s+(const\s+|async\s+|unsafe\s+)*fn\s+\w+")


def rust_pairs(src: Path):
    for path in sorted(src.rglob("*.rs")):
        if "tests" in path.parts or "benches" in path.parts or "examples" in path.parts:
            continue
        lines = path.read_text(errors="replace").splitlines()
        i = 0
        while i < len(lines):
            if not lines[i].strip().startswith("///"):
                i += 1
                continue
            doc_start = i
            while i < len(lines) and lines[i].strip().startswith(("///", "#[")):
                i += 1
            if i >= len(lines) or not RUST_FN.match(lines[i]):
                continue
            doc = " ".join(l.strip()[3:].strip() for l in lines[doc_start:i] if l.strip().startswith("///"))
            depth, j, seen_brace = 0, i, False
            while j < len(lines):
                depth += lines[j].count("{") - lines[j].count("}")
                seen_brace |= "{" in lines[j]
                if seen_brace and depth <= 0 or (not seen_brace and lines[j].rstrip().endswith(";")):
                    break
                j += 1
            body = lines[i:j + 1]
            attrs = [l for l in lines[doc_start:i] if l.strip().startswith("#[")]
            if len(body) >= 3 and len(first_sentence(doc)) >= 20 and "```" not in doc[:40]:
                indent = min(len(l) - len(l.lstrip()) for l in body if l.strip())
                yield first_sentence(doc), "\n".join(l[indent:] for l in attrs + body) + "\n", ".rs"
            i = j + 1


# A function's first line, after its doc comment, per language.
FUNC_HEAD = {
    "typescript": re.compile(
        r"^\s*(export\s+)?(default\s+)?(public\s+|protected\s+|private\s+|static\s+|async\s+|abstract\s+)*"
        r"(function\s*\*?\s*\w+|\w+)\s*(<[^>]*>)?\s*\("
    ),
    "go": re.compile(r"^func\s+(\([^)]*\)\s*)?\w+"),
    "java": re.compile(
        r"^\s*(@\w+\s+)*((public|protected|private|static|final|synchronized|abstract|native)\s+)+"
        r"[\w<>\[\],.? ]+\s+\w+\s*\("
    ),
}
EXTENSIONS = {"typescript": ".ts", "go": ".go", "java": ".java"}
SKIP_WORDS = {"if", "for", "while", "switch", "catch", "return", "new", "constructor"}


def doc_text(lines) -> str:
    """The prose of a `/** .. */` or `//` comment block, tags and markup dropped."""
    out = []
    for line in lines:
        t = line.strip()
        t = re.sub(r"^(/\*\*|/\*|\*/|\*|//)", "", t).strip()
        t = t.removesuffix("*/").strip()
        if t.startswith("@"):
            break  # @param, @return, ...: the prose is over
        out.append(t)
    text = " ".join(out)
    text = re.sub(r"\{@\w+\s+([^}]*)\}", r"\1", text)  # {@link Foo} → Foo
    text = re.sub(r"<[^>]+>", "", text)  # HTML in Javadoc
    return text


def c_family_pairs(src: Path, lang: str):
    """(first sentence of the doc comment, the function without it) for
    every documented function of LANG under SRC; tests excluded."""
    ext = EXTENSIONS[lang]
    head = FUNC_HEAD[lang]
    for path in sorted(src.rglob(f"*{ext}")):
        name = path.name
        if "test" in path.parts or "tests" in path.parts or "_test" in name or ".spec." in name or ".d.ts" in name:
            continue
        lines = path.read_text(errors="replace").splitlines()
        i = 0
        while i < len(lines):
            t = lines[i].strip()
            if not (t.startswith("/**") or (lang == "go" and t.startswith("//"))):
                i += 1
                continue
            start = i
            if t.startswith("/**"):
                while i < len(lines) and "*/" not in lines[i]:
                    i += 1
                i += 1
            else:
                while i < len(lines) and lines[i].strip().startswith("//"):
                    i += 1
            doc = lines[start:i]
            # Annotations between the comment and the function stay with the function.
            j = i
            while j < len(lines) and lines[j].strip().startswith("@") and lang == "java":
                j += 1
            if j >= len(lines) or not head.match(lines[j]):
                continue
            word = re.findall(r"\w+", lines[j].split("(")[0])
            if word and word[-1] in SKIP_WORDS:
                continue
            # The body: from the head to the brace that closes it.
            depth, k, seen = 0, j, False
            while k < len(lines):
                depth += lines[k].count("{") - lines[k].count("}")
                seen |= "{" in lines[k]
                if seen and depth <= 0 or (not seen and lines[k].rstrip().endswith(";")):
                    break
                k += 1
            body = lines[i:k + 1]
            query = first_sentence(doc_text(doc))
            name = word[-1] if word else ""
            if lang == "go" and query.split(" ", 1)[0] == name and " " in query:
                # godoc starts with the function's name: the task is the prose.
                query = query.split(" ", 1)[1]
            if seen and len(body) >= 3 and len(query) >= 20:
                indent = min(len(l) - len(l.lstrip()) for l in body if l.strip())
                yield query, "\n".join(l[indent:] for l in body) + "\n", ext
            i = k + 1


def doccomments(lang: str, src: Path, dest: Path) -> None:
    files = dest / "funcs"
    files.mkdir(parents=True, exist_ok=True)
    labelled, seen = [], set()
    for n, (query, body, ext) in enumerate(c_family_pairs(src, lang)):
        if query in seen:
            continue
        seen.add(query)
        rel = f"funcs/{lang}_{n}{ext}"
        (dest / rel).write_text(body)
        labelled.append({"query": query, "target": rel})
    Path(f"{dest}.queries.json").write_text(json.dumps(labelled))
    print(f"{lang}: {len(labelled)} doc-comment → function pairs from {src}")


MULTILANG = CACHE / "multilang"


def npm_package(name: str, version: str) -> Path:
    """The unpacked `package/` folder of an npm package, fetched once."""
    folder = MULTILANG / f"{name}-{version}"
    if not folder.is_dir():
        MULTILANG.mkdir(parents=True, exist_ok=True)
        subprocess.run(["npm", "pack", "--silent", f"{name}@{version}"], cwd=MULTILANG, check=True, capture_output=True)
        with tarfile.open(MULTILANG / f"{name}-{version}.tgz") as t:
            t.extractall(folder, filter="data")
    return folder / "package"


def debian_package(name: str) -> Path:
    """The unpacked files of a Debian package, fetched once."""
    folder = MULTILANG / name
    if not folder.is_dir():
        MULTILANG.mkdir(parents=True, exist_ok=True)
        subprocess.run(["apt-get", "download", name], cwd=MULTILANG, check=True, capture_output=True)
        deb = sorted(MULTILANG.glob(f"{name}_*.deb"))[-1]
        subprocess.run(["dpkg-deb", "-x", str(deb), str(folder)], check=True)
    return folder


def jdk_concurrent() -> Path:
    """`java.util.concurrent` from OpenJDK 17's sources (Debian's openjdk-17-source)."""
    jdk = MULTILANG / "jdk-concurrent"
    if not jdk.is_dir():
        src_zip = next(debian_package("openjdk-17-source").rglob("src.zip"))
        subprocess.run(["unzip", "-q", "-o", str(src_zip), "java.base/java/util/concurrent/*", "-d", str(jdk)], check=True)
    return jdk


def zstandard() -> Path:
    """The zstandard 0.23.0 sdist (C), fetched once."""
    zstd = MULTILANG / "zstandard-0.23.0"
    if not zstd.is_dir():
        MULTILANG.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
                        "zstandard==0.23.0", "-d", str(MULTILANG)], check=True)
        with tarfile.open(MULTILANG / "zstandard-0.23.0.tar.gz") as t:
            t.extractall(MULTILANG, filter="data")
    return zstd


def fetch_multilang() -> dict:
    """Sources for the per-language pairs, downloaded once into the cache."""
    return {
        "typescript": npm_package("rxjs", "7.8.1") / "src",
        "go": debian_package("golang-github-spf13-cobra-dev") / "usr/share/gocode/src/github.com/spf13/cobra",
        "java": jdk_concurrent(),
    }


def copy_corpora(sources: dict, dest: Path) -> None:
    for name, src in sources.items():
        if not (dest / name).exists():
            shutil.copytree(src, dest / name)


def multilang(dest: Path) -> None:
    copy_corpora({**fetch_multilang(), "c": zstandard()}, dest)


def map_corpora(dest: Path) -> None:
    """The map benchmark's corpora for the table's languages (its Java is
    Android code, closer to an app than the JDK)."""
    copy_corpora({
        "ts-rxjs": npm_package("rxjs", "7.8.1") / "src",
        "go-cobra": fetch_multilang()["go"],
        "java-rn-maps": npm_package("react-native-maps", "1.18.0") / "android",
        "c-zstandard": zstandard(),
    }, dest)


def doccomments_all(dest: Path) -> None:
    for lang, src in fetch_multilang().items():
        doccomments(lang, src, dest / lang)


def docstrings(src: Path, dest: Path) -> None:
    files = dest / "funcs"
    files.mkdir(parents=True, exist_ok=True)
    labelled = []
    seen_queries = set()
    for project in sorted(p for p in src.iterdir() if p.is_dir()):
        pairs = rust_pairs(project) if project.name in CRATES else python_pairs(project)
        for n, (query, body, ext) in enumerate(pairs):
            if query in seen_queries:
                continue  # ambiguous: the same sentence documents two functions
            seen_queries.add(query)
            rel = f"funcs/{project.name}_{n}{ext}"
            (dest / rel).write_text(body)
            labelled.append({"query": query, "target": rel})
    Path(f"{dest}.queries.json").write_text(json.dumps(labelled))


if __name__ == "__main__":
    what = sys.argv[1]
    if what == "code":
        code(Path(sys.argv[2]))
    elif what == "cosqa":
        cosqa(Path(sys.argv[2]), sys.argv[3])
    elif what == "docstrings":
        docstrings(Path(sys.argv[2]), Path(sys.argv[3]))
    elif what == "doccomments":
        doccomments(sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4]))
    elif what == "multilang":
        multilang(Path(sys.argv[2]))
    elif what == "map-corpora":
        map_corpora(Path(sys.argv[2]))
    elif what == "doccomments-all":
        doccomments_all(Path(sys.argv[2]))
    else:
        sys.exit(__doc__)
