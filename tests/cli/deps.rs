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
    // `--deps PATH`: the path is the project's, not the flag's value.
    let out = agent(cargo_home)
        .args(["index", "--json", "--deps"])
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
    // `--deps all` reads `all` as the folder; the error says `--deps=all`.
    let out = agent(&cargo_home)
        .args(["index", "--deps", "all"])
        .current_dir(&a)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && said.contains("--deps=all"),
        "{said}"
    );

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

    // The first prompt names the dependencies' items the code uses most.
    write(
        &a.join("src/main.rs"),
        "use hexfmt::to_hex;\nuse lru_lite::LruCache;\n\nfn main() {\n    let _cache: Option<LruCache<u8, u8>> = None;\n    println!(\"{} {}\", to_hex(&[1]), to_hex(&[2]));\n}\n",
    );
    let out = agent(&cargo_home)
        .current_dir(&a)
        .args(["ask", "--print-prompt", "--model"])
        .arg(common::tiny_model())
        .arg("Explain what src/main.rs does")
        .output()
        .unwrap();
    common::assert_success(&out);
    let prompt = String::from_utf8_lossy(&out.stdout);
    let used = prompt
        .split_once("Libraries used most")
        .unwrap_or_else(|| panic!("no dependencies' lines in the prompt:\n{prompt}"))
        .1;
    let used = used.split_once("Repository map").map_or(used, |(u, _)| u);
    assert!(
        used.contains("hexfmt: to_hex") && used.contains("lru_lite: LruCache"),
        "{used}"
    );

    // Another workspace locking the same versions: nothing is embedded again.
    let b = tmp.path().join("b");
    project(&b);
    let second = index(&cargo_home, &b);
    assert_eq!(second["built"].as_array().unwrap().len(), 0, "{second}");
    assert_eq!(second["reused"].as_array().unwrap().len(), 2, "{second}");
}

/// Runs `cmd` in `dir`; its output on failure.
fn run_in(dir: &Path, cmd: &mut Command) {
    let out = cmd.current_dir(dir).output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A real wheel, `tinyslug 0.3.0` (a package of two modules, its RECORD
/// hashed as pip checks it), written by Python's zipfile into `dir`.
fn build_wheel(dir: &Path) -> std::path::PathBuf {
    let script = r#"
import base64, hashlib, sys, zipfile
files = {
    "tinyslug/__init__.py": "from .core import slugify\n",
    "tinyslug/core.py": 'def slugify(title):\n    """Turn a title into a lower-case URL slug joined by hyphens."""\n    return "-".join(title.lower().split())\n',
    "tinyslug-0.3.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: tinyslug\nVersion: 0.3.0\n",
    "tinyslug-0.3.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
record = []
for name, text in files.items():
    digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
    record.append(f"{name},sha256={digest},{len(text.encode())}")
record.append("tinyslug-0.3.0.dist-info/RECORD,,")
files["tinyslug-0.3.0.dist-info/RECORD"] = "\n".join(record) + "\n"
with zipfile.ZipFile(sys.argv[1], "w") as z:
    for name, text in files.items():
        z.writestr(name, text)
"#;
    let wheel = dir.join("tinyslug-0.3.0-py3-none-any.whl");
    run_in(
        dir,
        Command::new("python3").args(["-c", script]).arg(&wheel),
    );
    wheel
}

/// `tiny-pad 1.2.0` packed by npm into a tarball in `dir`.
fn pack_npm_package(dir: &Path) -> std::path::PathBuf {
    let src = dir.join("tiny-pad");
    write(
        &src.join("package.json"),
        r#"{"name": "tiny-pad", "version": "1.2.0", "main": "index.js", "types": "index.d.ts"}"#,
    );
    write(
        &src.join("index.d.ts"),
        "/** Pads a number with leading zeros to the given width. */\nexport declare function zeroPad(n: number, width: number): string;\n",
    );
    write(
        &src.join("index.js"),
        "function zeroPad(n, width) { return String(n).padStart(width, '0'); }\nmodule.exports = { zeroPad };\n",
    );
    run_in(
        dir,
        Command::new("npm").args(["pack", "--silent", "./tiny-pad"]),
    );
    dir.join("tiny-pad-1.2.0.tgz")
}

fn search_deps(cargo_home: &Path, root: &Path, args: &[&str]) -> Vec<String> {
    let out = agent(cargo_home)
        .args(["search", "--deps", "--json", "-k", "3", "--root"])
        .arg(root)
        .args(args)
        .output()
        .unwrap();
    common::assert_success(&out);
    let hits: Value = serde_json::from_slice(&out.stdout).unwrap();
    hits.as_array()
        .unwrap()
        .iter()
        .map(|h| h["path"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn packages_installed_by_pip_and_npm_are_resolved_indexed_and_searched() {
    common::tiny_model(); // the models folder is in place
    for tool in ["python3", "npm"] {
        if Command::new(tool).arg("--version").output().is_err() {
            agent_test_support::skip!("{tool} is not installed");
        }
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("app");
    write(
        &root.join("pyproject.toml"),
        "[project]\nname = \"app\"\nversion = \"0.1.0\"\ndependencies = [\"tinyslug>=0.3\"]\n",
    );
    write(&root.join("app.py"), "from tinyslug import slugify\n");
    write(
        &root.join("package.json"),
        r#"{"name": "app", "version": "0.1.0"}"#,
    );
    let wheel = build_wheel(tmp.path());
    let tarball = pack_npm_package(tmp.path());
    // A real venv, the wheel installed by its pip (offline); a real
    // node_modules and package-lock.json, written by npm.
    run_in(&root, Command::new("python3").args(["-m", "venv", ".venv"]));
    run_in(
        &root,
        Command::new(root.join(".venv/bin/pip"))
            .args(["install", "-q", "--no-index", "--no-deps"])
            .arg(&wheel),
    );
    run_in(
        &root,
        Command::new("npm")
            .args([
                "install",
                "--offline",
                "--no-audit",
                "--no-fund",
                "--silent",
            ])
            .arg(&tarball),
    );
    assert!(root.join("package-lock.json").is_file());

    let cargo_home = tmp.path().join("cargo");
    let report = index(&cargo_home, &root);
    let mut built: Vec<&str> = report["built"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["id"].as_str().unwrap())
        .collect();
    built.sort();
    // pip itself is in the venv too, but not a dependency the project names.
    assert_eq!(built, vec!["tiny-pad@1.2.0", "tinyslug@0.3.0"], "{report}");

    let hits = search_deps(&cargo_home, &root, &["turn a title into a url slug"]);
    assert_eq!(
        hits.first().map(String::as_str),
        Some("tinyslug@0.3.0/core.py"),
        "{hits:?}"
    );
    let hits = search_deps(
        &cargo_home,
        &root,
        &["--package", "tiny-pad", "pad a number with zeros"],
    );
    assert_eq!(
        hits.first().map(String::as_str),
        Some("tiny-pad@1.2.0/index.d.ts"),
        "{hits:?}"
    );
}

/// A crate whose public function is a one-line wrapper in `lib.rs` and
/// whose bodies, one per platform (`cfg_if!` with `#[path]`), say what it
/// does: the search cites the wrapper, the API's front door, first.
#[test]
fn a_platforms_body_is_credited_to_the_crates_front_door() {
    common::tiny_model(); // the models folder is in place
    let tmp = tempfile::tempdir().unwrap();
    let cargo_home = tmp.path().join("cargo");
    let krate = cargo_home.join("registry/src/index.crates.io-0000/ftime-0.1.0");
    write(
        &krate.join("Cargo.toml"),
        "[package]\nname = \"ftime\"\nversion = \"0.1.0\"\n",
    );
    write(
        &krate.join("src/lib.rs"),
        "use std::io;\nuse std::path::Path;\n\ncfg_if::cfg_if! {\n    if #[cfg(windows)] {\n        #[path = \"windows.rs\"]\n        mod imp;\n    } else {\n        #[path = \"unix.rs\"]\n        mod imp;\n    }\n}\n\n\
         pub struct FileTime {\n    seconds: i64,\n}\n\n\
         pub fn set_file_mtime(p: &Path, mtime: FileTime) -> io::Result<()> {\n    imp::set_file_mtime(p, mtime)\n}\n",
    );
    write(
        &krate.join("src/unix.rs"),
        "// Sets the last modification time of the file at a path with utimensat,\n// leaving its access time as it is (UTIME_OMIT).\npub fn set_file_mtime(p: &Path, mtime: FileTime) -> io::Result<()> {\n    let times = [omit(), to_timespec(mtime)];\n    utimensat(p, &times)\n}\n",
    );
    write(
        &krate.join("src/windows.rs"),
        "// Sets the last modification time of the file at a path: opens it for\n// writing attributes and calls SetFileTime with the write time only.\npub fn set_file_mtime(p: &Path, mtime: FileTime) -> io::Result<()> {\n    let f = open_for_attributes(p)?;\n    set_file_time(&f, None, Some(to_filetime(mtime)))\n}\n",
    );
    let app = tmp.path().join("app");
    write(
        &app.join("Cargo.toml"),
        "[package]\nname = \"app\"\nversion = \"0.1.0\"\n",
    );
    write(&app.join("src/main.rs"), "fn main() {}\n");
    write(
        &app.join("Cargo.lock"),
        "version = 4\n\n[[package]]\nname = \"app\"\nversion = \"0.1.0\"\ndependencies = [\"ftime\"]\n\n\
         [[package]]\nname = \"ftime\"\nversion = \"0.1.0\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\n",
    );
    index(&cargo_home, &app);
    let hits = search_deps(
        &cargo_home,
        &app,
        &["--", "set the last modification time of a file"],
    );
    assert_eq!(
        hits.first().map(String::as_str),
        Some("ftime@0.1.0/src/lib.rs"),
        "{hits:?}"
    );
    assert!(
        hits.iter()
            .any(|h| h.ends_with("unix.rs") || h.ends_with("windows.rs")),
        "the bodies are still found, below: {hits:?}"
    );
}
