//! Go: `go.mod`'s requirements (since Go 1.17 it lists every module the
//! build needs, the indirect ones marked `// indirect`) in the module cache,
//! `$GOMODCACHE/PATH@VERSION` with capitals escaped as `!` + lower case.
//! A `replace` to a local folder and a `vendor/` folder keep the sources in
//! the project: listed as missing with that reason.

use std::collections::BTreeMap;
use std::path::Path;

use crate::{Ecosystem, Env, Missing, Package, Resolution};

/// The modules `root/go.mod` requires, found in the module cache.
pub fn resolve(root: &Path, env: &Env) -> Resolution {
    let mut out = Resolution::default();
    let Ok(text) = std::fs::read_to_string(root.join("go.mod")) else {
        return out;
    };
    out.sources.push("go.mod".into());
    let (required, replaced) = parse(&text);
    let vendored = root.join("vendor/modules.txt").is_file();
    for (path, (version, direct)) in required {
        let missing = |why: String| Missing {
            ecosystem: Ecosystem::Go,
            name: path.clone(),
            version: Some(version.clone()),
            direct,
            why,
        };
        if let Some(target) = replaced.get(&path) {
            out.missing.push(missing(format!(
                "replaced by {target} in go.mod: its files are in the project, searched with it"
            )));
            continue;
        }
        if vendored {
            out.missing.push(missing(
                "vendored in the project (vendor/): searched with the project".into(),
            ));
            continue;
        }
        let dir = env
            .go_mod_cache
            .as_ref()
            .map(|c| c.join(format!("{}@{}", escape(&path), escape(&version))));
        match dir.filter(|d| d.is_dir()) {
            Some(dir) => out.packages.push(Package {
                ecosystem: Ecosystem::Go,
                name: path.clone(),
                version: version.clone(),
                root: dir,
                files: None,
                direct,
            }),
            None => out.missing.push(missing(
                "not in the module cache (`go mod download` gets it)".into(),
            )),
        }
    }
    out
}

/// `path → (version, direct)` of the requirements, and the local
/// replacements (`path → folder`).
fn parse(text: &str) -> (BTreeMap<String, (String, bool)>, BTreeMap<String, String>) {
    let mut required = BTreeMap::new();
    let mut replaced = BTreeMap::new();
    let mut block: Option<&str> = None;
    for line in text.lines() {
        let line = line.trim();
        let (code, comment) = line.split_once("//").unwrap_or((line, ""));
        let words: Vec<&str> = code.split_whitespace().collect();
        let (verb, args) = match (block, words.as_slice()) {
            (_, [v, "("]) => {
                block = Some(v);
                continue;
            }
            (Some(_), [")"]) => {
                block = None;
                continue;
            }
            (Some(v), args) => (v, args),
            (None, [v, args @ ..]) => (*v, args),
            (None, []) => continue,
        };
        match (verb, args) {
            ("require", [path, version]) => {
                let direct = !comment.trim().starts_with("indirect");
                required.insert(path.to_string(), (version.to_string(), direct));
            }
            ("replace", [path, .., "=>", target]) if is_local(target) => {
                replaced.insert(path.to_string(), target.to_string());
            }
            _ => {}
        }
    }
    (required, replaced)
}

fn is_local(target: &str) -> bool {
    target.starts_with("./") || target.starts_with("../") || target.starts_with('/')
}

/// The module cache's case escaping: `github.com/BurntSushi` → `github.com/!burnt!sushi`.
fn escape(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for c in path.chars() {
        if c.is_ascii_uppercase() {
            out.push('!');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_mod_requirements_resolve_in_the_module_cache() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("proj");
        let cache = dir.path().join("mod");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(cache.join("github.com/!burnt!sushi/toml@v1.3.2")).unwrap();
        std::fs::create_dir_all(cache.join("golang.org/x/sys@v0.1.0")).unwrap();
        std::fs::write(
            root.join("go.mod"),
            "module example.com/app\n\ngo 1.22\n\nrequire github.com/BurntSushi/toml v1.3.2\n\nrequire (\n\tgolang.org/x/sys v0.1.0 // indirect\n\texample.com/gone v1.0.0\n\texample.com/local v0.0.0\n)\n\nreplace example.com/local => ../local\n",
        )
        .unwrap();
        let env = Env {
            go_mod_cache: Some(cache),
            ..Env::default()
        };
        let res = resolve(&root, &env);
        let found: Vec<(String, bool)> = res.packages.iter().map(|p| (p.id(), p.direct)).collect();
        assert_eq!(
            found,
            vec![
                ("github.com/BurntSushi/toml@v1.3.2".into(), true),
                ("golang.org/x/sys@v0.1.0".into(), false),
            ]
        );
        let why: Vec<(&str, &str)> = res
            .missing
            .iter()
            .map(|m| (m.name.as_str(), m.why.as_str()))
            .collect();
        assert!(why[0].1.contains("not in the module cache"), "{why:?}");
        assert!(why[1].1.contains("replaced by ../local"), "{why:?}");
    }
}
