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

/// The archive `scripts/bundle` wrote into `out`, unpacked into `into`:
/// the bundle's folder.
fn unpack(out: &Path, into: &Path) -> PathBuf {
    let archive = std::fs::read_dir(out)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(".tar.zst"))
        .expect("an archive");
    std::fs::create_dir(into).unwrap();
    sh(Command::new("tar")
        .arg("--zstd")
        .arg("-xf")
        .arg(&archive)
        .arg("-C")
        .arg(into));
    std::fs::read_dir(into)
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path()
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
    // This build is compiled for this machine's processor: carried only
    // when asked, since on another CPU it can die of an illegal instruction.
    let refused = Command::new(root.join("scripts/bundle"))
        .arg("--out")
        .arg(&out)
        .env("AGENT_BIN", env!("CARGO_BIN_EXE_agent"))
        .output()
        .unwrap();
    let why = String::from_utf8_lossy(&refused.stderr);
    assert!(
        !refused.status.success() && why.contains("--this-cpu-only"),
        "{why}"
    );
    sh(Command::new(root.join("scripts/bundle"))
        .arg("--out")
        .arg(&out)
        .arg("--deps")
        .arg("--this-cpu-only")
        .env("XDG_CACHE_HOME", &build_cache)
        .env("AGENT_BIN", env!("CARGO_BIN_EXE_agent")));
    let bundle = unpack(&out, &dir.path().join("unpacked"));
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

/// The portable bundle (`scripts/bundle` builds it when not given
/// AGENT_BIN) on two older processors under qemu-user: without AVX
/// (Nehalem) it loads llama.cpp's SSE4.2 kernels, with AVX2 but no AVX-512
/// (Haswell) the Haswell ones, and on each it checks itself (`agent
/// doctor`) and answers (`agent ask --no-tools`); on this machine it loads
/// kernels of its own level. The portable agent is a second build, the one
/// shipped (the `dist` profile, its own flags and target folder):
/// `scripts/test` makes it in CI or with `AGENT_TEST_PORTABLE=1`, and
/// installs qemu-user. By hand:
/// `AGENT_TEST_PORTABLE_BIN=~/.cache/agent/target-dist/dist/agent
/// cargo test --release --test cli -- portable`.
#[test]
#[cfg(target_arch = "x86_64")]
fn the_portable_bundle_loads_the_kernels_each_processor_can_run() {
    let Some(bin) = std::env::var_os("AGENT_TEST_PORTABLE_BIN").map(PathBuf::from) else {
        agent_test_support::skip!(
            "no portable agent: AGENT_TEST_PORTABLE=1 scripts/test builds one (a second cold build, about 45 minutes on two cores)"
        );
    };
    let qemu = Path::new("/usr/bin/qemu-x86_64");
    if !qemu.is_file() {
        agent_test_support::skip!("qemu-user is missing: apt-get install qemu-user");
    }
    let dir = tempfile::tempdir().unwrap();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let out = dir.path().join("out");
    sh(Command::new(root.join("scripts/bundle"))
        .arg("--out")
        .arg(&out)
        .env("AGENT_BIN", &bin));
    let bundle = unpack(&out, &dir.path().join("unpacked"));
    let prefix = dir.path().join("opt");
    let home = dir.path().join("home");
    let work = home.join("work");
    std::fs::create_dir_all(&work).unwrap();
    sh(Command::new(bundle.join("install.sh"))
        .arg("--prefix")
        .arg(&prefix)
        .current_dir(&work)
        .env("HOME", &home));
    let installed = prefix.join("bin/agent");
    // On `cpu` (None: this machine, natively), in a clean environment.
    let run = |cpu: Option<&str>, args: &[&str]| {
        let mut cmd = match cpu {
            Some(cpu) => {
                let mut c = Command::new(qemu);
                c.args(["-cpu", cpu]).arg(&installed);
                c
            }
            None => Command::new(&installed),
        };
        cmd.args(args)
            .current_dir(&work)
            .env_clear()
            .env("HOME", &home)
            .env("PATH", "/usr/bin:/bin")
            // One thread: llama.cpp's threads spin while they wait, and
            // beside another test two of them on two cores crawl.
            .env("AGENT_THREADS", "1");
        cmd.output().unwrap()
    };
    let variant = |cpu: Option<&str>| {
        let out = run(cpu, &["--version", "--json"]);
        assert!(
            out.status.success(),
            "{cpu:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        v["llama_cpp"]["cpu_backend"].as_str().unwrap().to_string()
    };
    for (cpu, expected) in [("Nehalem", "sse42"), ("Haswell", "haswell")] {
        assert_eq!(variant(Some(cpu)), expected, "on {cpu}");
        // Its llama.cpp and model checks (qemu-user may lack the
        // sandbox's system calls, which other checks report).
        let doctor = run(Some(cpu), &["doctor"]);
        let said = String::from_utf8_lossy(&doctor.stdout);
        let ok = |check: &str, with: &str| {
            said.lines()
                .any(|l| l.starts_with("[ok") && l.contains(check) && l.contains(with))
        };
        assert!(
            ok("llama.cpp", &format!("CPU kernels: {expected}")) && ok("chat model", "generates"),
            "doctor on {cpu}:\n{said}\n{}",
            String::from_utf8_lossy(&doctor.stderr)
        );
        let asked = run(
            Some(cpu),
            &[
                "ask",
                "--no-tools",
                "--max-tokens",
                "8",
                "--json",
                "Say hello.",
            ],
        );
        assert!(
            asked.status.success(),
            "ask on {cpu}: {}",
            String::from_utf8_lossy(&asked.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&asked.stdout).unwrap();
        assert!(
            v["completion_tokens"].as_u64().unwrap() > 0,
            "on {cpu}: {v}"
        );
    }
    let here = variant(None);
    assert!(
        !["sse42", "built in"].contains(&here.as_str()),
        "natively: {here}"
    );
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
