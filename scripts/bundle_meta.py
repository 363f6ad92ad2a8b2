"""What scripts/bundle writes besides the binary and the models.

  bundle_meta.py licenses STAGE   licences of every crate and native library
                                  linked, into STAGE/licenses/
  bundle_meta.py native SBOM      adds the native libraries (llama.cpp,
                                  SQLite, ONNX Runtime) and the model files to
                                  cargo-cyclonedx's CycloneDX SBOM
  bundle_meta.py sums STAGE       STAGE/SHA256SUMS: every file but itself

Crates come from `cargo metadata` (the `agent` binary's normal dependencies
for this platform), their licence texts from their sources in cargo's
registry, as cargo-about would; done here with the standard library only,
since the bundle is made on the machine that has just built the binary.
"""

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LICENSE_FILE = re.compile(r"^(LICEN[CS]E|COPYING|NOTICE|UNLICENSE)", re.I)


def linked_packages() -> list[dict]:
    """Packages the `agent` binary links, on this platform."""
    host = subprocess.run(["rustc", "-vV"], capture_output=True, text=True, check=True).stdout
    target = next(l.split(": ")[1] for l in host.splitlines() if l.startswith("host: "))
    meta = json.loads(subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--locked", "--filter-platform", target],
        cwd=ROOT, capture_output=True, text=True, check=True).stdout)
    packages = {p["id"]: p for p in meta["packages"]}
    nodes = {n["id"]: n for n in meta["resolve"]["nodes"]}
    root = next(p["id"] for p in meta["packages"] if p["name"] == "agent" and p["source"] is None)
    seen, todo = set(), [root]
    while todo:
        node = nodes[todo.pop()]
        if node["id"] in seen:
            continue
        seen.add(node["id"])
        for dep in node["deps"]:
            kinds = {k["kind"] for k in dep["dep_kinds"]}
            if kinds & {None, "build"}:
                todo.append(dep["pkg"])
    return sorted((packages[i] for i in seen), key=lambda p: (p["name"], p["version"]))


def native_libraries() -> list[dict]:
    """The C and C++ libraries inside or beside the binary."""
    registry = next(Path.home().glob(".cargo/registry/src/*"))
    llama = next(registry.glob("llama-cpp-sys-2-*/llama.cpp"), None)
    sqlite = next(registry.glob("libsqlite3-sys-*/sqlite3"), None)
    manifest = json.loads((ROOT / "models" / "manifest.json").read_text())
    ort = manifest["packages"]["onnxruntime"]["version"]
    return [
        {"name": "llama.cpp", "version": "vendored by llama-cpp-sys-2", "license": "MIT",
         "dir": llama, "linked": "statically, into the binary"},
        {"name": "SQLite", "version": "bundled by libsqlite3-sys", "license": "blessing (public domain)",
         "dir": sqlite, "linked": "statically, into the binary"},
        {"name": "ONNX Runtime", "version": ort, "license": "MIT",
         "dir": None, "linked": "dynamically: models/onnxruntime/libonnxruntime.so"},
    ]


def licenses(stage: Path) -> None:
    out = stage / "licenses"
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for p in linked_packages():
        if p["source"] is None:
            continue  # the workspace's own crates: this project's licence
        folder = Path(p["manifest_path"]).parent
        texts = [f for f in folder.iterdir() if f.is_file() and LICENSE_FILE.match(f.name)]
        dest = out / f"{p['name']}-{p['version']}"
        for f in texts:
            dest.mkdir(exist_ok=True)
            shutil.copy(f, dest / f.name)
        rows.append((p["name"], p["version"], p.get("license") or "see its files", len(texts)))
    for lib in native_libraries():
        dest = out / lib["name"].replace(" ", "-")
        if lib["dir"] is not None:
            for f in lib["dir"].iterdir():
                if f.is_file() and LICENSE_FILE.match(f.name):
                    dest.mkdir(exist_ok=True)
                    shutil.copy(f, dest / f.name)
        rows.append((lib["name"], lib["version"], lib["license"], 0))
    for name in ("LICENSE-MIT", "LICENSE-APACHE", "LICENSE"):
        if (ROOT / name).is_file():
            shutil.copy(ROOT / name, out / f"agent-{name}")
    lines = ["# Licences of what the agent binary links", "",
             "| component | version | licence | texts |", "|---|---|---|---|"]
    lines += [f"| {n} | {v} | {l} | {t} |" for n, v, l, t in rows]
    (out / "README.md").write_text("\n".join(lines) + "\n")
    print(f"licences: {len(rows)} components", file=sys.stderr)


def native(sbom_path: Path) -> None:
    sbom = json.loads(sbom_path.read_text())
    components = sbom.setdefault("components", [])
    for lib in native_libraries():
        components.append({
            "type": "library", "name": lib["name"], "version": lib["version"],
            "licenses": [{"license": {"name": lib["license"]}}],
            "properties": [{"name": "agent:linked", "value": lib["linked"]}],
        })
    manifest = json.loads((ROOT / "models" / "manifest.json").read_text())
    for f in manifest["files"]:
        components.append({
            "type": "data" if f["role"] != "runtime" else "library",
            "name": f["path"], "version": manifest["packages"][f["package"]]["version"],
            "hashes": [{"alg": "SHA-256", "content": f["sha256"]}],
            "properties": [{"name": "agent:package", "value": f["package"]}],
        })
    sbom_path.write_text(json.dumps(sbom, indent=2) + "\n")


def sums(stage: Path) -> None:
    lines = []
    for path in sorted(p for p in stage.rglob("*") if p.is_file() and p.name != "SHA256SUMS"):
        digest = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        lines.append(f"{digest.hexdigest()}  {path.relative_to(stage)}")
    (stage / "SHA256SUMS").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    what, arg = sys.argv[1], Path(sys.argv[2])
    {"licenses": licenses, "native": native, "sums": sums}[what](arg)
