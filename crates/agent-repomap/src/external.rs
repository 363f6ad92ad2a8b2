//! What the project uses most of its dependencies, from its `use` lines
//! (Rust): each imported item of a dependency counted by the references to
//! it in the files that import it. A few lines of it open the map, so a
//! model knows which library APIs the code leans on before it asks about
//! one (and that their indexed sources can be searched).

use std::collections::{BTreeMap, HashSet};

use crate::FileTags;

/// One item the project imports from a dependency, and how often the
/// importing files refer to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExternalUse {
    /// The dependency as paths name it (`serde_json`).
    pub krate: String,
    /// The item's path within it (`time::timeout`, `Value`).
    pub item: String,
    pub uses: u32,
}

/// The items of `crates` (package names; `-` read as `_`) that `files`
/// import, most used first (ties by name).
pub fn external_uses<'a>(
    files: impl Iterator<Item = (&'a str, &'a FileTags)>,
    crates: &[String],
) -> Vec<ExternalUse> {
    let crates: HashSet<String> = crates.iter().map(|c| c.replace('-', "_")).collect();
    let mut counts: BTreeMap<(String, String), u32> = BTreeMap::new();
    for (_, tags) in files {
        for import in tags.imports.iter().filter(|i| i.name != "*" && !i.public) {
            let path = import.path.trim_start_matches("::");
            let (head, rest) = path.split_once("::").unwrap_or((path, ""));
            if !crates.contains(head) {
                continue;
            }
            let item = if rest.is_empty() {
                import.name.clone()
            } else {
                format!("{rest}::{}", import.name)
            };
            // Imported and used in a macro or a doc only: still used once.
            let refs = tags
                .refs
                .binary_search_by(|(name, _)| name.as_str().cmp(import.name.as_str()))
                .map_or(1, |i| tags.refs[i].1.max(1));
            *counts.entry((head.to_string(), item)).or_default() += refs;
        }
    }
    let mut uses: Vec<ExternalUse> = counts
        .into_iter()
        .map(|((krate, item), uses)| ExternalUse { krate, item, uses })
        .collect();
    uses.sort_by(|a, b| b.uses.cmp(&a.uses).then_with(|| a.item.cmp(&b.item)));
    uses
}

/// The map's opening lines: up to `max_crates` dependencies, most used
/// first, each with its `max_items` most used items, most used first (the
/// counts are left out: the order says it in fewer tokens). Empty when
/// the project imports nothing from them.
pub fn render(uses: &[ExternalUse], max_crates: usize, max_items: usize) -> String {
    let mut by_crate: Vec<(&str, u32, Vec<&ExternalUse>)> = Vec::new();
    for u in uses {
        match by_crate.iter_mut().find(|(k, _, _)| *k == u.krate) {
            Some((_, total, items)) => {
                *total += u.uses;
                items.push(u);
            }
            None => by_crate.push((u.krate.as_str(), u.uses, vec![u])),
        }
    }
    by_crate.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    let mut out = String::new();
    for (krate, _, items) in by_crate.into_iter().take(max_crates) {
        let items: Vec<&str> = items
            .iter()
            .take(max_items)
            .map(|u| u.item.as_str())
            .collect();
        out.push_str(&format!("  {krate}: {}\n", items.join(", ")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::defs::Import;

    fn file(imports: &[(&str, &str)], refs: &[(&str, u32)]) -> FileTags {
        let mut refs: Vec<(String, u32)> = refs.iter().map(|(n, c)| (n.to_string(), *c)).collect();
        refs.sort();
        FileTags {
            imports: imports
                .iter()
                .map(|(path, name)| Import {
                    name: name.to_string(),
                    path: path.to_string(),
                    public: false,
                })
                .collect(),
            refs,
            ..FileTags::default()
        }
    }

    #[test]
    fn imported_items_of_dependencies_are_counted_by_their_references() {
        let a = file(
            &[
                ("tokio::time", "timeout"),
                ("serde_json", "Value"),
                ("crate::engine", "Engine"),
                ("std::sync", "Arc"),
                ("tokio::sync", "*"),
            ],
            &[("timeout", 3), ("Value", 5), ("Engine", 9), ("Arc", 7)],
        );
        let b = file(
            &[("tokio::time", "timeout"), ("serde_json", "json")],
            &[("timeout", 2)],
        );
        let crates = vec!["tokio".to_string(), "serde-json".to_string()];
        let uses = external_uses([("a.rs", &a), ("b.rs", &b)].into_iter(), &crates);
        let got: Vec<(&str, &str, u32)> = uses
            .iter()
            .map(|u| (u.krate.as_str(), u.item.as_str(), u.uses))
            .collect();
        assert_eq!(
            got,
            [
                ("serde_json", "Value", 5),
                ("tokio", "time::timeout", 5),
                ("serde_json", "json", 1),
            ]
        );
        assert_eq!(
            render(&uses, 5, 4),
            "  serde_json: Value, json\n  tokio: time::timeout\n"
        );
        assert_eq!(render(&uses, 1, 1), "  serde_json: Value\n");
        assert_eq!(render(&[], 5, 4), "");
    }
}
