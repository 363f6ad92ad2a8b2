//! A crate's module tree, read from its `mod` declarations: which files
//! are one platform's implementation (`#[cfg(windows)] mod windows;`, or
//! `cfg_if!`'s `if #[cfg(unix)] { #[path = "unix/mod.rs"] mod imp; }`).
//! Such a file holds the same public names as the API's front door
//! (`filetime::set_file_times` and its four platform bodies), and a
//! question about using the crate is answered by the front door.
//!
//! Written by hand rather than with `syn`: only `mod` lines and the
//! attributes above them matter, and a crate that does not parse (a newer
//! edition's syntax) must still be read.

use std::collections::HashSet;
use std::path::{Component, Path, PathBuf};

/// The files under `root` (a crate's folder) that the crate compiles only
/// for some platforms, relative to `root` with `/` separators: every file
/// of a module declared under a platform `cfg`, and its submodules.
pub fn platform_files(root: &Path) -> HashSet<String> {
    let mut walk = Walk {
        root,
        seen: HashSet::new(),
        platform: HashSet::new(),
    };
    for entry in ["src/lib.rs", "src/main.rs"] {
        walk.visit(PathBuf::from(entry), false);
    }
    walk.platform
}

struct Walk<'a> {
    root: &'a Path,
    seen: HashSet<PathBuf>,
    platform: HashSet<String>,
}

impl Walk<'_> {
    fn visit(&mut self, rel: PathBuf, gated: bool) {
        if !self.seen.insert(rel.clone()) {
            return;
        }
        let Ok(text) = std::fs::read_to_string(self.root.join(&rel)) else {
            return;
        };
        if gated {
            self.platform.insert(slashed(&rel));
        }
        for decl in declarations(&text) {
            let children = resolve(&rel, &decl);
            for child in children {
                if self.root.join(&child).is_file() {
                    self.visit(child, gated || decl.platform);
                    break;
                }
            }
        }
    }
}

/// One `mod NAME;` line: its name, its `#[path]`, and whether a platform
/// `cfg` guards it.
#[derive(Debug, PartialEq)]
struct Decl {
    name: String,
    path: Option<String>,
    platform: bool,
}

/// The out-of-line module declarations of a file (inline `mod x { .. }`
/// blocks are skipped: their files are rare and their paths nest).
fn declarations(text: &str) -> Vec<Decl> {
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(name) = mod_name(line) else {
            continue;
        };
        let mut path = None;
        let mut platform = false;
        let mut above = i;
        // The attributes right above it, then what opens the block it is in.
        while above > 0 {
            above -= 1;
            let l = lines[above];
            if l.is_empty() || l.starts_with("//") {
                continue;
            }
            if !l.starts_with("#[") {
                platform |= opens_platform_branch(&lines, above);
                break;
            }
            platform |= l.starts_with("#[cfg(") && names_platform(l);
            if let Some(p) = l.strip_prefix("#[path") {
                path = p.split('"').nth(1).map(str::to_string);
            }
        }
        out.push(Decl {
            name,
            path,
            platform,
        });
    }
    out
}

/// `NAME` of `mod NAME;`, `pub mod NAME;` or `pub(crate) mod NAME;`.
fn mod_name(line: &str) -> Option<String> {
    let rest = line.strip_suffix(';')?;
    let rest = match rest.strip_prefix("pub") {
        Some(r) if r.starts_with('(') => r.split_once(')')?.1.trim_start(),
        Some(r) => r.trim_start(),
        None => rest,
    };
    let name = rest.strip_prefix("mod ")?.trim();
    let ident = name.trim_start_matches("r#");
    (!ident.is_empty() && ident.chars().all(|c| c.is_alphanumeric() || c == '_'))
        .then(|| ident.to_string())
}

/// Whether line `at` opens a `cfg_if!` branch for a platform: `if
/// #[cfg(unix)] {`, `} else if #[cfg(windows)] {`, or the `} else {` of a
/// chain whose first branch names a platform.
fn opens_platform_branch(lines: &[&str], at: usize) -> bool {
    let line = lines[at];
    if line.contains("if #[cfg(") {
        return names_platform(line);
    }
    if line.starts_with("} else") && line.ends_with('{') {
        return lines[..at]
            .iter()
            .rev()
            .take(60)
            .find(|l| l.starts_with("if #[cfg(") || l.contains(" if #[cfg("))
            .is_some_and(|l| names_platform(l));
    }
    false
}

/// Whether a `cfg` predicate names an operating system or architecture
/// (not a feature, not `test`).
fn names_platform(cfg: &str) -> bool {
    const KEYS: &[&str] = &[
        "unix",
        "windows",
        "target_os",
        "target_family",
        "target_arch",
        "target_env",
        "target_vendor",
        "target_pointer_width",
        "wasm",
    ];
    KEYS.iter().any(|k| cfg.contains(k))
}

/// Where the module's file may be, in the order rustc looks.
fn resolve(parent: &Path, decl: &Decl) -> Vec<PathBuf> {
    let dir = parent.parent().unwrap_or(Path::new(""));
    if let Some(p) = &decl.path {
        return vec![normalized(&dir.join(p))];
    }
    let file = parent.file_name().and_then(|f| f.to_str()).unwrap_or("");
    let base = if matches!(file, "lib.rs" | "main.rs" | "mod.rs") {
        dir.to_path_buf()
    } else {
        dir.join(file.trim_end_matches(".rs"))
    };
    vec![
        base.join(format!("{}.rs", decl.name)),
        base.join(&decl.name).join("mod.rs"),
    ]
}

/// `a/b/../c` as `a/c`: `#[path]` may climb.
fn normalized(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

fn slashed(rel: &Path) -> String {
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_files::write;

    #[test]
    fn platform_modules_and_their_submodules_are_found_through_the_tree() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        // filetime's shape: one front door, a body per platform by cfg_if.
        write(
            &root.join("src/lib.rs"),
            "pub mod api;\nmod util;\n#[cfg(test)]\nmod tests;\n#[cfg(feature = \"x\")]\nmod extra;\n\
             cfg_if::cfg_if! {\n    if #[cfg(target_os = \"redox\")] {\n        #[path = \"redox.rs\"]\n        mod imp;\n\
             } else if #[cfg(windows)] {\n        #[path = \"windows.rs\"]\n        mod imp;\n\
             } else {\n        #[path = \"unix/mod.rs\"]\n        mod imp;\n    }\n}\n\
             #[cfg(all(unix, not(target_os = \"macos\")))]\npub(crate) mod linux;\n",
        );
        for f in [
            "src/api.rs",
            "src/util.rs",
            "src/tests.rs",
            "src/extra.rs",
            "src/redox.rs",
            "src/windows.rs",
            "src/linux.rs",
        ] {
            write(&root.join(f), "pub fn f() {}\n");
        }
        write(&root.join("src/unix/mod.rs"), "mod utimes;\n");
        write(&root.join("src/unix/utimes.rs"), "pub fn set() {}\n");
        // A submodule of a public one is looked for in its folder.
        write(&root.join("src/api.rs"), "#[cfg(unix)]\nmod sys;\n");
        write(&root.join("src/api/sys.rs"), "pub fn g() {}\n");

        let mut found: Vec<String> = platform_files(root).into_iter().collect();
        found.sort();
        assert_eq!(
            found,
            [
                "src/api/sys.rs",
                "src/linux.rs",
                "src/redox.rs",
                "src/unix/mod.rs",
                "src/unix/utimes.rs",
                "src/windows.rs",
            ]
        );
    }

    #[test]
    fn a_cfg_if_else_after_a_feature_branch_is_not_a_platform() {
        let text = "cfg_if! {\n if #[cfg(feature = \"std\")] {\n mod with_std;\n } else {\n mod core_only;\n }\n}\n";
        let decls = declarations(text);
        assert_eq!(decls.len(), 2);
        assert!(decls.iter().all(|d| !d.platform), "{decls:?}");
    }

    #[test]
    fn only_out_of_line_declarations_count() {
        assert_eq!(mod_name("mod imp;").as_deref(), Some("imp"));
        assert_eq!(
            mod_name("pub(crate) mod r#async;").as_deref(),
            Some("async")
        );
        assert_eq!(mod_name("pub mod x {"), None);
        assert_eq!(mod_name("let model = mod_x;"), None);
    }
}
