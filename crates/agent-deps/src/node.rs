//! JavaScript and TypeScript: `package-lock.json` (lockfile v2/v3, whose
//! `packages` map each `node_modules/...` folder to its version), else the
//! versions installed in `node_modules` (a yarn or pnpm project: the
//! installed version is the locked one). Direct: `package.json`'s
//! dependencies, dev, optional and peer ones.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;

use crate::{Ecosystem, Missing, Package, Resolution};

const DEP_KEYS: &[&str] = &[
    "dependencies",
    "devDependencies",
    "optionalDependencies",
    "peerDependencies",
];

/// The packages under `root/node_modules`, the declared ones marked direct.
pub fn resolve(root: &Path) -> Resolution {
    let mut out = Resolution::default();
    let read = |name: &str| -> Option<Value> {
        serde_json::from_str(&std::fs::read_to_string(root.join(name)).ok()?).ok()
    };
    let Some(manifest) = read("package.json") else {
        return out;
    };
    out.sources.push("package.json".into());
    let declared: BTreeSet<String> = DEP_KEYS
        .iter()
        .filter_map(|k| manifest.get(*k)?.as_object())
        .flat_map(|o| o.keys().cloned())
        .collect();
    let missing = |name: &str, version: Option<String>, direct: bool, why: String| Missing {
        ecosystem: Ecosystem::Npm,
        name: name.to_string(),
        version,
        direct,
        why,
    };
    match read("package-lock.json").and_then(|l| l.get("packages").cloned()) {
        Some(Value::Object(packages)) => {
            out.sources.push("package-lock.json".into());
            for (key, entry) in &packages {
                let Some(name) = lock_name(key, entry) else {
                    continue;
                };
                let direct = declared.contains(&name) && !key.contains("/node_modules/");
                let version = entry.get("version").and_then(|v| v.as_str());
                let dir = root.join(key);
                if entry.get("link").and_then(|l| l.as_bool()) == Some(true) {
                    continue;
                }
                match version {
                    Some(v) if dir.join("package.json").is_file() => out.packages.push(Package {
                        ecosystem: Ecosystem::Npm,
                        name,
                        version: v.to_string(),
                        root: dir,
                        files: None,
                        direct,
                    }),
                    Some(v) => out.missing.push(missing(
                        &name,
                        Some(v.to_string()),
                        direct,
                        format!("not installed: no {key} (`npm ci` installs it)"),
                    )),
                    None => {}
                }
            }
            let locked: BTreeSet<&str> = packages
                .keys()
                .filter_map(|k| k.strip_prefix("node_modules/"))
                .collect();
            for name in declared.iter().filter(|n| !locked.contains(n.as_str())) {
                out.missing.push(missing(
                    name,
                    None,
                    true,
                    "not in package-lock.json (`npm install` locks it)".into(),
                ));
            }
        }
        _ => installed(root, &declared, &mut out),
    }
    out
}

/// The package a lock key names: `node_modules/a/node_modules/@s/b` → `@s/b`.
fn lock_name(key: &str, entry: &Value) -> Option<String> {
    if let Some(name) = entry.get("name").and_then(|n| n.as_str()) {
        if key.contains("node_modules/") {
            return Some(name.to_string());
        }
    }
    let (_, name) = key.rsplit_once("node_modules/")?;
    (!name.is_empty()).then(|| name.to_string())
}

/// Without `package-lock.json`: the declared packages as installed.
fn installed(root: &Path, declared: &BTreeSet<String>, out: &mut Resolution) {
    for name in declared {
        let dir = root.join("node_modules").join(name);
        let version = std::fs::read_to_string(dir.join("package.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
            .and_then(|m| Some(m.get("version")?.as_str()?.to_string()));
        match version {
            Some(version) => out.packages.push(Package {
                ecosystem: Ecosystem::Npm,
                name: name.clone(),
                version,
                root: dir,
                files: None,
                direct: true,
            }),
            None => out.missing.push(Missing {
                ecosystem: Ecosystem::Npm,
                name: name.clone(),
                version: None,
                direct: true,
                why: "not installed in node_modules (`npm install` installs it)".into(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_files::write;

    #[test]
    fn the_lock_names_installed_versions_and_nested_copies() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(
            &root.join("package.json"),
            r#"{"name": "app", "dependencies": {"left-pad": "^1", "@s/util": "2"}, "devDependencies": {"gone": "1"}}"#,
        );
        write(
            &root.join("package-lock.json"),
            r#"{"lockfileVersion": 3, "packages": {
                "": {"name": "app"},
                "node_modules/left-pad": {"version": "1.3.0"},
                "node_modules/@s/util": {"version": "2.0.1"},
                "node_modules/@s/util/node_modules/left-pad": {"version": "0.9.0"},
                "node_modules/gone": {"version": "1.0.0"}
            }}"#,
        );
        for (d, v) in [
            ("node_modules/left-pad", "1.3.0"),
            ("node_modules/@s/util", "2.0.1"),
            ("node_modules/@s/util/node_modules/left-pad", "0.9.0"),
        ] {
            write(
                &root.join(d).join("package.json"),
                &format!(r#"{{"version": "{v}"}}"#),
            );
            write(
                &root.join(d).join("index.d.ts"),
                "export declare function f(): void;\n",
            );
        }
        let res = resolve(root);
        let mut found: Vec<(String, bool)> =
            res.packages.iter().map(|p| (p.id(), p.direct)).collect();
        found.sort();
        assert_eq!(
            found,
            vec![
                ("@s/util@2.0.1".into(), true),
                ("left-pad@0.9.0".into(), false),
                ("left-pad@1.3.0".into(), true),
            ]
        );
        assert_eq!(res.missing.len(), 1);
        assert!(
            res.missing[0].why.contains("not installed"),
            "{:?}",
            res.missing
        );
    }

    #[test]
    fn without_a_lock_the_installed_versions_count() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(
            &root.join("package.json"),
            r#"{"dependencies": {"a": "1", "b": "1"}}"#,
        );
        write(
            &root.join("node_modules/a/package.json"),
            r#"{"version": "1.0.4"}"#,
        );
        let res = resolve(root);
        assert_eq!(res.packages[0].id(), "a@1.0.4");
        assert_eq!(res.missing[0].name, "b");
    }
}
