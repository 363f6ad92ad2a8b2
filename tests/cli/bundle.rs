//! The offline bundle (`scripts/bundle`): built from this binary, installed
//! with an empty HOME, then `agent index` and `agent ask` run inside
//! bubblewrap with no network and every folder but that HOME read-only, so
//! the install needs nothing from outside and writes nothing outside. With
//! `--deps`, the dependency indices built here come along: a project there
//! locking the same crate searches it without indexing anything.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common;

fn sh(cmd: &mut Command) -> std::process::Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// What only scripts/test installs: bubblewrap, and cargo-cyclonedx for the SBOM.
fn tools() -> Option<PathBuf> {
    let bwrap = std::env::var_os("AGENT_TEST_BWRAP")?;
    std::env::var_os("AGENT_TEST_CYCLONEDX")?;
    Some(PathBuf::from(bwrap))
}

/// A bubblewrap jail: `/` read-only, `home` writable, no network.
fn offline(bwrap: &Path, home: &Path, cwd: &Path) -> Command {
    let mut cmd = Command::new(bwrap);
    cmd.args(["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"])
        .args(["--unshare-net", "--unshare-pid", "--die-with-parent"])
        .arg("--bind")
        .args([home, home])
        .arg("--chdir")
        .arg(cwd)
        .args(["env", "-i"])
        .arg(format!("HOME={}", home.display()))
        .arg(format!("TMPDIR={}", home.join("tmp").display()))
        .arg(format!(
            "PATH={}:/usr/bin:/bin",
            home.join(".local/bin").display()
        ));
    cmd
}

#[test]
fn the_bundle_installs_and_runs_offline_writing_only_its_home() {
    let Some(bwrap) = tools() else {
        agent_test_support::skip!(
            "AGENT_TEST_BWRAP and AGENT_TEST_CYCLONEDX are set by scripts/test"
        );
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    // This machine indexed a project's dependency: hexfmt 1.1.0.
    let build_cache = dir.path().join("build-cache");
    let build_cargo = dir.path().join("build-cargo");
    let locking = dir.path().join("locking");
    hexfmt_project(&build_cargo, &locking);
    sh(common::agent_bin()
        .args(["index", "--deps", "--json"])
        .arg(&locking)
        .env("XDG_CACHE_HOME", &build_cache)
        .env("CARGO_HOME", &build_cargo));
    sh(Command::new(root.join("scripts/bundle"))
        .arg("--out")
        .arg(&out)
        .arg("--deps")
        .env("XDG_CACHE_HOME", &build_cache)
        .env("AGENT_BIN", env!("CARGO_BIN_EXE_agent")));
    let archive = std::fs::read_dir(&out)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(".tar.zst"))
        .expect("an archive");
    let unpacked = dir.path().join("unpacked");
    std::fs::create_dir(&unpacked).unwrap();
    sh(Command::new("tar")
        .arg("--zstd")
        .arg("-xf")
        .arg(&archive)
        .arg("-C")
        .arg(&unpacked));
    let bundle = std::fs::read_dir(&unpacked)
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path();
    for file in [
        "bin/agent",
        "install.sh",
        "SHA256SUMS",
        "sbom.cdx.json",
        "BUILD-INFO.json",
        "models/manifest.json",
        "licenses/README.md",
        "deps/cargo/hexfmt@1.1.0/indexed.json",
    ] {
        assert!(
            bundle.join(file).is_file(),
            "{file} missing from the bundle"
        );
    }
    let sbom: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(bundle.join("sbom.cdx.json")).unwrap())
            .unwrap();
    let names: Vec<&str> = sbom["components"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    for name in [
        "llama-cpp-2",
        "lancedb",
        "llama.cpp",
        "SQLite",
        "ONNX Runtime",
    ] {
        assert!(names.contains(&name), "{name} not in the SBOM");
    }

    // Installed with an empty HOME, offline: the checksums, `agent models`
    // and `agent doctor` all pass.
    let home = dir.path().join("home");
    std::fs::create_dir_all(home.join("tmp")).unwrap();
    sh(offline(&bwrap, &home, &bundle).arg("./install.sh"));
    assert!(home.join(".local/bin/agent").is_file());
    assert!(home
        .join(".local/share/agent/models/manifest.json")
        .is_file());

    // The dependency's index came along: a project locking hexfmt 1.1.0,
    // its source in this HOME's cargo registry, searches it at once.
    let there = home.join("there");
    hexfmt_project(&home.join(".cargo"), &there);
    let found = sh(offline(&bwrap, &home, &there).args([
        "agent",
        "search",
        "--deps",
        "--json",
        "format bytes as hexadecimal",
    ]));
    let hits: serde_json::Value = serde_json::from_slice(&found.stdout).unwrap();
    assert_eq!(hits[0]["path"], "hexfmt@1.1.0/src/lib.rs", "{hits}");

    // A repository in HOME, indexed and asked about, offline.
    let repo = home.join("repo");
    std::fs::create_dir_all(repo.join("src")).unwrap();
    std::fs::write(
        repo.join("src/calc.py"),
        "def add(a, b):\n    \"\"\"Sum of two numbers.\"\"\"\n    return a + b\n",
    )
    .unwrap();
    sh(Command::new("git").args(["init", "-q"]).current_dir(&repo));
    sh(offline(&bwrap, &home, &repo).args(["agent", "index", "."]));
    let asked = offline(&bwrap, &home, &repo)
        .args([
            "agent",
            "ask",
            "--max-steps",
            "2",
            "--json",
            "Where is add defined?",
        ])
        .output()
        .unwrap();
    // 0 answered, 3 no answer of the 135M's own (the search's evidence instead).
    assert!(
        matches!(asked.status.code(), Some(0 | 3)),
        "{}",
        String::from_utf8_lossy(&asked.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&asked.stdout).expect("JSON on stdout");
    assert!(v["answer"].as_str().unwrap().contains("calc.py"), "{v}");
}

/// A crate `hexfmt 1.1.0` in the registry of `cargo_home`, and a project at
/// `root` locking it.
fn hexfmt_project(cargo_home: &Path, root: &Path) {
    let write = |path: PathBuf, text: &str| {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(
        cargo_home.join("registry/src/index.crates.io-0000/hexfmt-1.1.0/src/lib.rs"),
        "/// Formats bytes as lower-case hexadecimal, two digits per byte.\npub fn to_hex(bytes: &[u8]) -> String { bytes.iter().map(|b| format!(\"{b:02x}\")).collect() }\n",
    );
    write(
        root.join("Cargo.toml"),
        "[package]\nname = \"app\"\nversion = \"0.1.0\"\n",
    );
    write(root.join("src/main.rs"), "fn main() {}\n");
    write(
        root.join("Cargo.lock"),
        "version = 4\n\n[[package]]\nname = \"app\"\nversion = \"0.1.0\"\ndependencies = [\"hexfmt\"]\n\n\
         [[package]]\nname = \"hexfmt\"\nversion = \"1.1.0\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\n",
    );
}
