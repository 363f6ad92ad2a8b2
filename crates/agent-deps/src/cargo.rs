//! Rust: `Cargo.lock` read against the registry sources Cargo unpacked
//! (`$CARGO_HOME/registry/src/INDEX/NAME-VERSION`, one folder per crate
//! version, shared by every project on the machine).
//!
//! The workspace's members are the packages the manifests name (the root
//! `[package]`, `[workspace] members`); the lock lists each member's
//! dependencies, with the version when two of a name are locked, so the
//! direct ones come out exact. Packages without a source that are not
//! members are path dependencies (patched or vendored in the project): they
//! are the project's own files, listed as missing with that reason.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::{Ecosystem, Env, Missing, Package, Resolution};

#[derive(Deserialize)]
struct Lock {
    #[serde(default)]
    package: Vec<Locked>,
}

#[derive(Deserialize)]
struct Locked {
    name: String,
    version: String,
    source: Option<String>,
    #[serde(default)]
    dependencies: Vec<String>,
}

/// The crates `root/Cargo.lock` locks, found under `$CARGO_HOME`.
pub fn resolve(root: &Path, env: &Env) -> Resolution {
    let mut out = Resolution::default();
    let Ok(text) = std::fs::read_to_string(root.join("Cargo.lock")) else {
        return out;
    };
    out.sources.push("Cargo.lock".into());
    let lock: Lock = match toml::from_str(&text) {
        Ok(lock) => lock,
        Err(e) => {
            out.missing.push(Missing {
                ecosystem: Ecosystem::Cargo,
                name: "Cargo.lock".into(),
                version: None,
                direct: true,
                why: format!("Cargo.lock cannot be read: {e}"),
            });
            return out;
        }
    };
    let members = members(root);
    let direct = direct_deps(&lock, &members);
    let registries = registry_dirs(env);
    for p in &lock.package {
        let is_direct = direct.contains(&(p.name.clone(), p.version.clone()));
        let missing = |why: String| Missing {
            ecosystem: Ecosystem::Cargo,
            name: p.name.clone(),
            version: Some(p.version.clone()),
            direct: is_direct,
            why,
        };
        match p.source.as_deref() {
            None if members.contains(&p.name) => {}
            None => out.missing.push(missing(
                "a path dependency: its files are in the project (patched or vendored), searched with it".into(),
            )),
            Some(s) if s.starts_with("registry+") || s.starts_with("sparse+") => {
                let folder = format!("{}-{}", p.name, p.version);
                match registries.iter().map(|r| r.join(&folder)).find(|d| d.is_dir()) {
                    Some(dir) => out.packages.push(Package {
                        ecosystem: Ecosystem::Cargo,
                        name: p.name.clone(),
                        version: p.version.clone(),
                        root: dir,
                        files: None,
                        direct: is_direct,
                    }),
                    None => out.missing.push(missing(format!(
                        "not downloaded: no {folder} in {} (`cargo fetch` gets it)",
                        cargo_src_hint(env)
                    ))),
                }
            }
            Some(s) => out.missing.push(missing(format!(
                "from {}: only registry crates are looked up",
                s.split('#').next().unwrap_or(s)
            ))),
        }
    }
    out
}

fn cargo_src_hint(env: &Env) -> String {
    env.cargo_home
        .as_ref()
        .map(|h| h.join("registry/src/*").display().to_string())
        .unwrap_or_else(|| "$CARGO_HOME/registry/src/*".into())
}

/// The unpacked registries: `$CARGO_HOME/registry/src/*`.
fn registry_dirs(env: &Env) -> Vec<PathBuf> {
    let Some(home) = &env.cargo_home else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(home.join("registry/src"))
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_dir())
                .collect()
        })
        .unwrap_or_default();
    dirs.sort();
    dirs
}

/// The names of the workspace's own packages: the root manifest's
/// `[package]` and its `[workspace] members` (a trailing `/*` expanded).
fn members(root: &Path) -> HashSet<String> {
    let mut names = HashSet::new();
    let Some(manifest) = read_manifest(&root.join("Cargo.toml")) else {
        return names;
    };
    if let Some(name) = package_name(&manifest) {
        names.insert(name);
    }
    let patterns = manifest
        .get("workspace")
        .and_then(|w| w.get("members"))
        .and_then(|m| m.as_array())
        .cloned()
        .unwrap_or_default();
    for pattern in patterns.iter().filter_map(|p| p.as_str()) {
        let dirs: Vec<PathBuf> = match pattern.strip_suffix("/*") {
            Some(parent) => std::fs::read_dir(root.join(parent))
                .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
                .unwrap_or_default(),
            None => vec![root.join(pattern)],
        };
        for dir in dirs {
            if let Some(name) =
                read_manifest(&dir.join("Cargo.toml")).and_then(|m| package_name(&m))
            {
                names.insert(name);
            }
        }
    }
    names
}

fn read_manifest(path: &Path) -> Option<toml::Table> {
    toml::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

fn package_name(manifest: &toml::Table) -> Option<String> {
    Some(manifest.get("package")?.get("name")?.as_str()?.to_string())
}

/// `(name, version)` of every package a member depends on in the lock.
fn direct_deps(lock: &Lock, members: &HashSet<String>) -> HashSet<(String, String)> {
    let mut direct = HashSet::new();
    for member in lock
        .package
        .iter()
        .filter(|p| p.source.is_none() && members.contains(&p.name))
    {
        for dep in &member.dependencies {
            // "name", or "name version" when two versions are locked, or
            // "name version (source)".
            let mut words = dep.split_whitespace();
            let Some(name) = words.next() else { continue };
            let version = words.next();
            let found = lock
                .package
                .iter()
                .filter(|p| p.name == name && version.is_none_or(|v| v == p.version));
            for p in found {
                if !members.contains(&p.name) {
                    direct.insert((p.name.clone(), p.version.clone()));
                }
            }
        }
    }
    direct
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_files::write;

    #[test]
    fn the_lock_resolves_to_registry_folders_with_the_direct_ones_marked() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("proj");
        let home = dir.path().join("cargo");
        let reg = home.join("registry/src/index.crates.io-0000");
        write(&reg.join("alpha-1.2.0/src/lib.rs"), "pub fn a() {}\n");
        write(&reg.join("beta-0.3.1/src/lib.rs"), "pub fn b() {}\n");
        write(&reg.join("beta-0.4.0/src/lib.rs"), "pub fn b2() {}\n");
        write(
            &project.join("Cargo.toml"),
            "[workspace]\nmembers = [\"crates/*\"]\n",
        );
        write(
            &project.join("crates/app/Cargo.toml"),
            "[package]\nname = \"app\"\nversion = \"0.1.0\"\n",
        );
        let reg_src = "source = \"registry+https://github.com/rust-lang/crates.io-index\"";
        write(
            &project.join("Cargo.lock"),
            &format!(
                "version = 4\n\n[[package]]\nname = \"app\"\nversion = \"0.1.0\"\ndependencies = [\"alpha\", \"beta 0.4.0\", \"patched\"]\n\n\
                 [[package]]\nname = \"alpha\"\nversion = \"1.2.0\"\n{reg_src}\ndependencies = [\"beta 0.3.1\"]\n\n\
                 [[package]]\nname = \"beta\"\nversion = \"0.3.1\"\n{reg_src}\n\n\
                 [[package]]\nname = \"beta\"\nversion = \"0.4.0\"\n{reg_src}\n\n\
                 [[package]]\nname = \"gamma\"\nversion = \"9.0.0\"\n{reg_src}\n\n\
                 [[package]]\nname = \"patched\"\nversion = \"1.0.0\"\n"
            ),
        );
        let env = Env {
            cargo_home: Some(home),
            ..Env::default()
        };
        let res = resolve(&project, &env);
        let mut found: Vec<(String, bool)> =
            res.packages.iter().map(|p| (p.id(), p.direct)).collect();
        found.sort();
        assert_eq!(
            found,
            vec![
                ("alpha@1.2.0".into(), true),
                ("beta@0.3.1".into(), false),
                ("beta@0.4.0".into(), true),
            ]
        );
        assert_eq!(
            res.find("beta").unwrap().version,
            "0.4.0",
            "a bare name means the direct one"
        );
        let why: Vec<(&str, bool, &str)> = res
            .missing
            .iter()
            .map(|m| (m.name.as_str(), m.direct, m.why.as_str()))
            .collect();
        assert_eq!(why.len(), 2, "{why:?}");
        assert!(why
            .iter()
            .any(|(n, d, w)| *n == "gamma" && !d && w.contains("not downloaded")));
        assert!(why
            .iter()
            .any(|(n, d, w)| *n == "patched" && *d && w.contains("path dependency")));
    }
}
