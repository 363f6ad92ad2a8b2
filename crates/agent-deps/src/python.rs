//! Python: the distributions installed in the project's environment, each
//! a `NAME-VERSION.dist-info` folder in `site-packages` whose `METADATA`
//! gives its name and version and whose `RECORD` lists its files. The
//! installed version is the locked one (a lockfile is installed into the
//! environment; what is not installed cannot be read anyway).
//!
//! The environment: `.venv`, `venv` or `env` in the project, else
//! `$VIRTUAL_ENV`. Direct dependencies: the names in `pyproject.toml`
//! (`[project]` dependencies and optional ones, `[dependency-groups]`,
//! Poetry's tables) and `requirements*.txt`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::{normalize, Ecosystem, Env, Missing, Package, Resolution};

/// Source files worth indexing in a distribution.
const SOURCE_EXTS: &[&str] = &[".py", ".pyi"];

/// The environment's distributions, the declared ones marked direct.
pub fn resolve(root: &Path, env: &Env) -> Resolution {
    let mut out = Resolution::default();
    let declared = declared(root, &mut out.sources);
    let Some(site) = site_packages(root, env) else {
        for name in declared {
            out.missing.push(Missing {
                ecosystem: Ecosystem::Python,
                name,
                version: None,
                direct: true,
                why: "no Python environment found (.venv, venv or $VIRTUAL_ENV)".into(),
            });
        }
        return out;
    };
    out.sources.push(site.display().to_string());
    let mut installed = BTreeSet::new();
    for dist in dist_infos(&site) {
        let Some((name, version)) = name_version(&dist) else {
            continue;
        };
        let key = normalize(Ecosystem::Python, &name);
        let direct = declared.contains(&key);
        installed.insert(key);
        let files = record_files(&dist);
        if files.is_empty() {
            continue;
        }
        out.packages
            .push(package(&site, name, version, files, direct));
    }
    for name in declared.difference(&installed) {
        out.missing.push(Missing {
            ecosystem: Ecosystem::Python,
            name: name.clone(),
            version: None,
            direct: true,
            why: format!("not installed in {}", site.display()),
        });
    }
    out
}

/// A distribution whose source files are all in one top-level folder is
/// rooted there (`requests@2.32.3/api.py`); one spread over several (or a
/// lone module) is rooted at `site-packages`, limited to its own files.
fn package(
    site: &Path,
    name: String,
    version: String,
    files: Vec<String>,
    direct: bool,
) -> Package {
    let tops: BTreeSet<&str> = files
        .iter()
        .map(|f| f.split_once('/').map_or(f.as_str(), |(top, _)| top))
        .collect();
    let single = (tops.len() == 1)
        .then(|| tops.iter().next().copied())
        .flatten()
        .filter(|top| files.iter().all(|f| f.starts_with(&format!("{top}/"))));
    let (root, files) = match single {
        Some(top) => {
            let prefix = format!("{top}/");
            let rel = files
                .iter()
                .filter_map(|f| f.strip_prefix(&prefix).map(str::to_string))
                .collect();
            (site.join(top), rel)
        }
        None => (site.to_path_buf(), files),
    };
    Package {
        ecosystem: Ecosystem::Python,
        name,
        version,
        root,
        files: Some(files),
        direct,
    }
}

/// `lib/python3.*/site-packages` of the project's environment.
fn site_packages(root: &Path, env: &Env) -> Option<PathBuf> {
    let envs = [".venv", "venv", "env"]
        .iter()
        .map(|d| root.join(d))
        .chain(env.virtual_env.clone());
    for venv in envs {
        if !venv.join("pyvenv.cfg").is_file() && !venv.join("lib").is_dir() {
            continue;
        }
        let mut libs: Vec<PathBuf> = std::fs::read_dir(venv.join("lib"))
            .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        libs.sort();
        if let Some(site) = libs
            .iter()
            .rev()
            .map(|l| l.join("site-packages"))
            .find(|s| s.is_dir())
        {
            return Some(site);
        }
        // Windows' layout.
        let site = venv.join("Lib/site-packages");
        if site.is_dir() {
            return Some(site);
        }
    }
    None
}

fn dist_infos(site: &Path) -> Vec<PathBuf> {
    let mut dists: Vec<PathBuf> = std::fs::read_dir(site)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|e| e == "dist-info"))
                .collect()
        })
        .unwrap_or_default();
    dists.sort();
    dists
}

/// `Name:` and `Version:` from `METADATA`, else the folder's name.
fn name_version(dist: &Path) -> Option<(String, String)> {
    let meta = std::fs::read_to_string(dist.join("METADATA")).unwrap_or_default();
    let header = |key: &str| {
        meta.lines()
            .take_while(|l| !l.is_empty())
            .find_map(|l| l.strip_prefix(key).map(|v| v.trim().to_string()))
    };
    if let (Some(n), Some(v)) = (header("Name:"), header("Version:")) {
        return Some((n, v));
    }
    let stem = dist.file_stem()?.to_str()?;
    let (n, v) = stem.rsplit_once('-')?;
    Some((n.to_string(), v.to_string()))
}

/// The source files `RECORD` lists (relative to `site-packages`), without
/// the metadata, caches and what is installed outside (`../../bin`).
fn record_files(dist: &Path) -> Vec<String> {
    let record = std::fs::read_to_string(dist.join("RECORD")).unwrap_or_default();
    let mut files: Vec<String> = record
        .lines()
        .filter_map(record_path)
        .filter(|p| {
            !p.starts_with("..")
                && !p.starts_with('/')
                && !p
                    .split('/')
                    .any(|c| c.ends_with(".dist-info") || c == "__pycache__")
                && SOURCE_EXTS.iter().any(|e| p.ends_with(e))
        })
        .collect();
    files.sort();
    files.dedup();
    files
}

/// The path of a `RECORD` line (`path,hash,size`; a path with a comma is
/// quoted).
fn record_path(line: &str) -> Option<String> {
    let line = line.trim();
    if let Some(rest) = line.strip_prefix('"') {
        let end = rest.find("\",")?;
        return Some(rest[..end].replace("\"\"", "\""));
    }
    let path = line.split(',').next()?;
    (!path.is_empty()).then(|| path.to_string())
}

/// The values of an array, or of every array in a table (optional
/// dependencies, dependency groups).
fn arrays(v: Option<&toml::Value>) -> Vec<&toml::Value> {
    match v {
        Some(toml::Value::Array(a)) => a.iter().collect(),
        Some(toml::Value::Table(t)) => t.values().filter_map(|v| v.as_array()).flatten().collect(),
        _ => Vec::new(),
    }
}

/// The normalized names the project declares.
fn declared(root: &Path, sources: &mut Vec<String>) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    if let Some(t) = std::fs::read_to_string(root.join("pyproject.toml"))
        .ok()
        .and_then(|t| toml::from_str::<toml::Table>(&t).ok())
    {
        sources.push("pyproject.toml".into());
        let mut specs: Vec<&str> = Vec::new();
        let project = t.get("project");
        for v in arrays(project.and_then(|p| p.get("dependencies")))
            .into_iter()
            .chain(arrays(project.and_then(|p| p.get("optional-dependencies"))))
            .chain(arrays(t.get("dependency-groups")))
        {
            specs.extend(v.as_str());
        }
        names.extend(specs.iter().filter_map(|s| requirement_name(s)));
        let poetry = t.get("tool").and_then(|t| t.get("poetry"));
        let mut tables: Vec<&toml::Table> = Vec::new();
        tables.extend(
            poetry
                .and_then(|p| p.get("dependencies"))
                .and_then(|d| d.as_table()),
        );
        tables.extend(
            poetry
                .and_then(|p| p.get("group"))
                .and_then(|g| g.as_table())
                .into_iter()
                .flat_map(|g| g.values())
                .filter_map(|g| g.get("dependencies")?.as_table()),
        );
        for table in tables {
            names.extend(
                table
                    .keys()
                    .filter(|k| *k != "python")
                    .map(|k| normalize(Ecosystem::Python, k)),
            );
        }
    }
    let mut reqs: BTreeMap<String, String> = BTreeMap::new();
    for entry in std::fs::read_dir(root).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with("requirements") && name.ends_with(".txt") {
            reqs.insert(
                name,
                std::fs::read_to_string(entry.path()).unwrap_or_default(),
            );
        }
    }
    for (file, text) in reqs {
        sources.push(file);
        names.extend(
            text.lines()
                .map(|l| l.split('#').next().unwrap_or_default().trim())
                .filter(|l| !l.starts_with('-'))
                .filter_map(requirement_name),
        );
    }
    names
}

/// The distribution a requirement names: `requests[socks]>=2; python_version>"3"` → `requests`.
fn requirement_name(spec: &str) -> Option<String> {
    let spec = spec.trim();
    let end = spec
        .find(|c: char| !(c.is_ascii_alphanumeric() || "-_.".contains(c)))
        .unwrap_or(spec.len());
    let name = &spec[..end];
    (!name.is_empty() && !spec.contains("://")).then(|| normalize(Ecosystem::Python, name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_files::write;

    /// A distribution installed as pip installs one: its files and a
    /// dist-info with METADATA and RECORD.
    pub(crate) fn install(site: &Path, name: &str, version: &str, files: &[(&str, &str)]) {
        let dist = site.join(format!("{}-{version}.dist-info", name.replace('-', "_")));
        let mut record = String::new();
        for (path, text) in files {
            write(&site.join(path), text);
            record.push_str(&format!("{path},sha256=x,{}\n", text.len()));
        }
        record.push_str(&format!(
            "{}/RECORD,,\n",
            dist.file_name().unwrap().to_string_lossy()
        ));
        record.push_str("../../../bin/tool,sha256=x,1\n");
        write(
            &dist.join("METADATA"),
            &format!("Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\nA description.\n"),
        );
        write(&dist.join("RECORD"), &record);
    }

    #[test]
    fn installed_distributions_resolve_and_declared_ones_are_direct() {
        let dir = tempfile::tempdir().unwrap();
        let site = dir.path().join(".venv/lib/python3.12/site-packages");
        write(&dir.path().join(".venv/pyvenv.cfg"), "home = /usr/bin\n");
        install(
            &site,
            "Tiny-Lib",
            "1.4.2",
            &[
                ("tiny_lib/__init__.py", "def hello():\n    pass\n"),
                ("tiny_lib/core.py", "X = 1\n"),
            ],
        );
        install(&site, "six", "1.16.0", &[("six.py", "def b(): pass\n")]);
        write(
            &dir.path().join("pyproject.toml"),
            "[project]\nname = \"demo\"\ndependencies = [\"tiny_lib>=1.0\", \"absent[extra]==2; python_version>'3'\"]\n",
        );
        let res = resolve(dir.path(), &Env::default());
        let tiny = res.find("Tiny-Lib").unwrap();
        assert_eq!((tiny.version.as_str(), tiny.direct), ("1.4.2", true));
        assert_eq!(tiny.root, site.join("tiny_lib"));
        assert_eq!(
            tiny.files.as_deref().unwrap(),
            &["__init__.py".to_string(), "core.py".to_string()]
        );
        let six = res.find("six").unwrap();
        assert!(!six.direct);
        assert_eq!(six.root, site);
        assert_eq!(six.files.as_deref().unwrap(), &["six.py".to_string()]);
        assert_eq!(res.missing.len(), 1);
        assert_eq!(res.missing[0].name, "absent");
        assert!(res.missing[0].why.contains("not installed"));
    }

    #[test]
    fn requirement_names_are_read_from_their_specs() {
        assert_eq!(
            requirement_name("Django>=4; python_version>'3'"),
            Some("django".into())
        );
        assert_eq!(
            requirement_name("zope.interface"),
            Some("zope-interface".into())
        );
        assert_eq!(requirement_name("git+https://x/y.git"), None);
    }
}
