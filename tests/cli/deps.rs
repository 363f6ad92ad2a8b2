//! Issue 54 through the binary: `agent index --deps` on a project locking
//! crates of a registry made here, `agent search --deps` citing
//! `NAME@VERSION/path`, and a second workspace locking the same versions
//! reusing their indices without embedding anything.

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A project whose Cargo.lock locks `lru-lite 0.5.0` and `hexfmt 1.1.0`.
fn project(root: &Path) {
    let reg = "source = \"registry+https://github.com/rust-lang/crates.io-index\"";
    write(
        &root.join("Cargo.toml"),
        "[package]\nname = \"app\"\nversion = \"0.1.0\"\n",
    );
    write(&root.join("src/main.rs"), "fn main() {}\n");
    write(
        &root.join("Cargo.lock"),
        &format!(
            "version = 4\n\n[[package]]\nname = \"app\"\nversion = \"0.1.0\"\ndependencies = [\"hexfmt\", \"lru-lite\"]\n\n\
             [[package]]\nname = \"hexfmt\"\nversion = \"1.1.0\"\n{reg}\n\n\
             [[package]]\nname = \"lru-lite\"\nversion = \"0.5.0\"\n{reg}\n"
        ),
    );
}

fn agent(cargo_home: &Path) -> Command {
    let mut cmd = common::agent_bin();
    cmd.stdin(Stdio::null())
        .env("CARGO_HOME", cargo_home)
        .env_remove("VIRTUAL_ENV")
        .env_remove("GOMODCACHE");
    cmd
}

fn index(cargo_home: &Path, root: &Path) -> Value {
    let out = agent(cargo_home)
        .args(["index", "--deps", "--json"])
        .arg(root)
        .output()
        .unwrap();
    common::assert_success(&out);
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn index_deps_then_search_them_and_share_them_with_another_workspace() {
    common::tiny_model(); // the models folder is in place
    let tmp = tempfile::tempdir().unwrap();
    let cargo_home = tmp.path().join("cargo");
    let reg = cargo_home.join("registry/src/index.crates.io-0000");
    write(
        &reg.join("lru-lite-0.5.0/src/lib.rs"),
        "/// A cache that evicts the least recently used entry once it holds `capacity` entries.\npub struct LruCache<K, V> { map: Vec<(K, V)>, capacity: usize }\n",
    );
    write(
        &reg.join("hexfmt-1.1.0/src/lib.rs"),
        "/// Formats bytes as lower-case hexadecimal, two digits per byte.\npub fn to_hex(bytes: &[u8]) -> String { bytes.iter().map(|b| format!(\"{b:02x}\")).collect() }\n",
    );
    let a = tmp.path().join("a");
    project(&a);

    // Nothing indexed yet: searching the dependencies says how to index them.
    let out = agent(&cargo_home)
        .args(["search", "--deps", "--root"])
        .arg(&a)
        .arg("evict the least recently used entry")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("agent index --deps"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let first = index(&cargo_home, &a);
    let built = first["built"].as_array().unwrap();
    assert_eq!(built.len(), 2, "{first}");
    assert!(
        built.iter().all(|b| b["chunks"].as_u64() > Some(0)),
        "{first}"
    );

    let out = agent(&cargo_home)
        .args(["search", "--deps", "--json", "-k", "1", "--root"])
        .arg(&a)
        .arg("evict the least recently used entry")
        .output()
        .unwrap();
    common::assert_success(&out);
    let hits: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(hits[0]["path"], "lru-lite@0.5.0/src/lib.rs", "{hits}");

    // Another workspace locking the same versions: nothing is embedded again.
    let b = tmp.path().join("b");
    project(&b);
    let second = index(&cargo_home, &b);
    assert_eq!(second["built"].as_array().unwrap().len(), 0, "{second}");
    assert_eq!(second["reused"].as_array().unwrap().len(), 2, "{second}");
}
