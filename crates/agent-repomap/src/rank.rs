//! Ranking: a graph from referencing files to defining files, personalized
//! PageRank over it, and a score for every definition.
//!
//! The package's own code leads: tests, examples, benchmarks, docs and
//! scripts ([`is_secondary`]) rank below it, though their references still
//! count. A type, trait or class also gets the references to its members,
//! so a type whose methods are called everywhere is as central as its API.
//!
//! Deterministic by construction: files are indexed in path order, edges are
//! built and summed in a fixed order, the iteration count and tolerance are
//! fixed, and ties are broken by path then line. Hash maps are used for
//! lookups and accumulation only, never iterated.

use rustc_hash::FxHashMap as HashMap;

use super::tags::{Def, DefKind, FileTags, ScopeKind};
use crate::defs::Import;

/// PageRank damping factor (the usual value).
const DAMPING: f64 = 0.85;
const MAX_ITERATIONS: usize = 100;
/// L1 change between iterations below which PageRank has converged.
const TOLERANCE: f64 = 1e-10;
/// A name defined in more files than this is ubiquitous (`new`, `fmt`, `__init__`).
const UBIQUITOUS_DEFINERS: usize = 5;
const UBIQUITOUS_WEIGHT: f64 = 0.1;
/// A name defined in more files than this is not followed at all (unless
/// focused): its share per definer would be negligible, and its edges many.
const MAX_DEFINERS: usize = 25;
/// How much tests, examples, benchmarks, docs and scripts count next to the
/// package's own code: their definitions rank below it, the random surfer
/// starts in them less often (their references to the package still count),
/// and a name they define again (a fixture's copy of a type) takes little
/// of the references from the real one.
const SECONDARY_WEIGHT: f64 = 0.1;
/// How often the random surfer starts in such a file, next to the
/// package's own: less, but their references still say which of the
/// package's names matter (a type the tests use everywhere is central).
const SECONDARY_START: f64 = 0.5;
/// A private name (Rust without `pub`, Python `_name`) is visible in its own
/// file (and Rust child modules) only: references to it from other files are
/// nearly always clashes with another name (`.collect()` vs a private
/// `fn collect`).
const PRIVATE_WEIGHT: f64 = 0.01;
/// A Rust definition visible within its crate only (`pub(crate)`,
/// `pub(super)`, a method of such a trait): the crate's plumbing, not what
/// it is for. References to it are real, so it keeps more than a private one.
const CRATE_PRIVATE_WEIGHT: f64 = 0.3;
/// A public type named like its module or its package (`meta/regex.rs:
/// Regex`, `pikevm.rs: PikeVM`, `agent-index/src/lib.rs: Index`): the
/// front door of the code around it.
const FRONT_DOOR_WEIGHT: f64 = 3.0;
/// Share of a front door's score that a type its public methods take or
/// return (defined beside it) gets at least: see [`companions`].
const COMPANION_SHARE: f64 = 0.3;
/// Methods of `impl Trait for Type` (`fmt`, `default`, `drop`) are mostly
/// reached through the trait, not by name.
const TRAIT_IMPL_WEIGHT: f64 = 0.2;
/// A reference to a module by its file name (`use agent_lang::walk`, `from . import utils`).
const MODULE_REF_WEIGHT: f64 = 0.5;
/// Weight of each file's virtual edge to "elsewhere": as much evidence as
/// one plain reference.
const UNEXPLAINED_WEIGHT: f64 = 1.0;
/// Edges through an identifier the request mentions count this much more.
const FOCUS_IDENT_EDGE_WEIGHT: f64 = 10.0;
/// Share of the teleport mass spread evenly when there are seeds, so files
/// unreachable from the seeds still get a (small) rank.
const UNIFORM_SHARE: f64 = 0.3;
const FOCUS_FILE_SEED: f64 = 1.0;
const FOCUS_IDENT_SEED: f64 = 1.0;
const RECENT_FILE_SEED: f64 = 0.5;
/// Share of its file's rank that a definition gets without any reference, so
/// unreferenced definitions are ordered by how central their file is.
const BASE_SHARE: f64 = 0.01;
/// Share of the references to its members (methods, associated items) that
/// a type, trait or class gets as its own: a type is as central as its API
/// is used, which calls through `value.method()` show better than its name.
const MEMBER_SHARE: f64 = 1.0;
/// Added to definitions named in the focus: they come first.
const FOCUS_IDENT_BOOST: f64 = 1.0;
/// Added to definitions in focused files: they come right after.
const FOCUS_FILE_BOOST: f64 = 0.5;

/// A definition's place in the ranking.
#[derive(Debug, Clone, Copy)]
pub struct RankedDef {
    /// Index into the ranked files slice.
    pub file: u32,
    /// Index into that file's `defs`.
    pub def: u32,
    pub score: f64,
}

#[derive(Debug, Clone)]
pub struct Ranking {
    /// PageRank of each file, indexed like the input (sums to 1).
    pub file_rank: Vec<f64>,
    /// Every definition outside unit-test modules, best first; an item
    /// defined twice in a file (see [`repeats`]) once.
    pub defs: Vec<RankedDef>,
}

/// What the request is about.
#[derive(Debug, Clone, Default)]
pub struct Seeds {
    pub focus: Vec<String>,
    pub recent_files: Vec<String>,
}

/// Files matched by a path-like focus item: the exact path, a path suffix
/// (`engine.rs`, `llm/engine.rs`) or a folder (`src/llm`).
fn match_path(files: &[(&str, &FileTags)], item: &str) -> Vec<u32> {
    let item = item.trim().trim_start_matches("./").trim_end_matches('/');
    if item.is_empty() {
        return Vec::new();
    }
    if let Ok(i) = files.binary_search_by(|(rel, _)| (*rel).cmp(item)) {
        return vec![i as u32];
    }
    let suffix = format!("/{item}");
    let prefix = format!("{item}/");
    let by_suffix: Vec<u32> = (0..files.len() as u32)
        .filter(|&i| files[i as usize].0.ends_with(&suffix))
        .collect();
    if !by_suffix.is_empty() {
        return by_suffix;
    }
    (0..files.len() as u32)
        .filter(|&i| files[i as usize].0.starts_with(&prefix))
        .collect()
}

/// Splits focus items into files and identifiers. An item that looks like a
/// path (has `/` or `.`) and matches files is a file focus; anything else is
/// read as identifiers (`Engine::load` → `Engine`, `load`).
fn parse_focus(files: &[(&str, &FileTags)], focus: &[String]) -> (Vec<u32>, Vec<String>) {
    let (mut focus_files, mut idents) = (Vec::new(), Vec::new());
    for item in focus {
        if item.contains(['/', '.']) {
            let matched = match_path(files, item);
            if !matched.is_empty() {
                focus_files.extend(matched);
                continue;
            }
        }
        idents.extend(
            item.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .filter(|s| !s.is_empty())
                .map(str::to_string),
        );
    }
    focus_files.sort_unstable();
    focus_files.dedup();
    idents.sort_unstable();
    idents.dedup();
    (focus_files, idents)
}

/// The module name a file provides: `src/walk.rs` → `walk`, `src/llm/mod.rs` → `llm`,
/// `pkg/utils/__init__.py` → `utils`. Crate roots and entry points provide none.
fn module_name(rel: &str) -> Option<&str> {
    let (dir, file) = rel.rsplit_once('/').unwrap_or(("", rel));
    let stem = file.rsplit_once('.').map_or(file, |(s, _)| s);
    let name = match stem {
        "mod" | "__init__" => dir.rsplit('/').next().filter(|d| !d.is_empty())?,
        "lib" | "main" | "__main__" | "build" | "setup" | "conftest" => return None,
        s => s,
    };
    (name.len() >= crate::defs::MIN_REF_LEN).then_some(name)
}

/// Whether `def` is a public type named like its module or its package
/// (see [`FRONT_DOOR_WEIGHT`]), case and `_`/`-` aside: `meta/regex.rs:
/// Regex`, `hybrid/dfa.rs: DFA`, `crates/agent-index/src/lib.rs: Index`
/// (the last part of the package's name), `src/flask/__init__.py: Flask`.
fn is_front_door(rel: &str, tags: &FileTags, def: &Def, reexported: bool) -> bool {
    if !matches!(
        def.kind,
        DefKind::Struct | DefKind::Enum | DefKind::Union | DefKind::Trait | DefKind::Class
    ) || def.scope.is_some()
        || visibility_weight(tags, def) < 1.0
    {
        return false;
    }
    if reexported || rel == "src/lib.rs" || rel.ends_with("/src/lib.rs") {
        return true;
    }
    let norm = |s: &str| -> String {
        s.chars()
            .filter(|c| !matches!(c, '_' | '-'))
            .flat_map(char::to_lowercase)
            .collect()
    };
    let name = norm(&def.name);
    let mut parts = rel.rsplit('/');
    let file = parts.next().unwrap_or(rel);
    let stem = file.split('.').next().unwrap_or(file);
    let dirs: Vec<&str> = parts.collect(); // innermost first
    let package = match stem {
        "mod" | "__init__" => dirs.first().copied(),
        // `crates/agent-index/src/lib.rs`: the folder holding `src`.
        "lib" | "main" => match dirs.as_slice() {
            ["src", pkg, ..] => Some(*pkg),
            [pkg, ..] => Some(*pkg),
            [] => None,
        },
        _ => return name == norm(stem),
    };
    package.is_some_and(|p| {
        name == norm(p)
            || p.rsplit(['-', '_'])
                .next()
                .is_some_and(|last| name == norm(last))
    })
}

/// Folders whose code is not the package's own.
const SECONDARY_DIRS: &[&str] = &[
    "tests",
    "test",
    "testing",
    "testdata",
    "fixtures",
    "examples",
    "example",
    "benches",
    "bench",
    "benchmarks",
    "docs",
    "doc",
    "scripts",
    "samples",
];

/// Whether `rel` is test, example, benchmark, documentation or script code
/// (see [`SECONDARY_WEIGHT`]): by a folder on its path, or by its name
/// (`test_app.py`, `app_test.go`, `tests.rs`, `app.spec.ts`, `conftest.py`).
pub fn is_secondary(rel: &str) -> bool {
    let (dirs, file) = rel.rsplit_once('/').unwrap_or(("", rel));
    let stem = file.split('.').next().unwrap_or(file);
    dirs.split('/').any(|d| SECONDARY_DIRS.contains(&d))
        || stem.starts_with("test_")
        || stem.ends_with("_test")
        || stem.ends_with("_tests")
        || matches!(stem, "tests" | "test" | "conftest")
        || file.contains(".test.")
        || file.contains(".spec.")
}

fn file_weight(rel: &str) -> f64 {
    if is_secondary(rel) {
        SECONDARY_WEIGHT
    } else {
        1.0
    }
}

/// Whether a definition belongs to unit tests (`mod tests { .. }`): not API,
/// so neither ranked nor shown.
fn in_test_module(tags: &FileTags, def: &Def) -> bool {
    let is_test_mod = |text: &str| text.ends_with("mod tests") || text.ends_with("mod test");
    (def.kind == DefKind::Module && is_test_mod(&def.signature))
        || tags.scope_chain(def).iter().any(|&s| {
            let scope = &tags.scopes[s as usize];
            scope.kind == ScopeKind::Module && is_test_mod(&scope.text)
        })
}

/// Names nearly every codebase defines or calls (standard trait, collection
/// and iterator methods, macros such as `format!`, Python's dunder methods).
/// A call like `.len()` is almost always the standard library's, so a reference by such a name says next to
/// nothing about the repository's own `len`, and a map that leads with them
/// says nothing about the code.
const GENERIC_NAMES: &[&str] = &[
    "len",
    "is_empty",
    "new",
    "default",
    "get",
    "get_mut",
    "set",
    "insert",
    "remove",
    "push",
    "pop",
    "clear",
    "contains",
    "iter",
    "iter_mut",
    "into_iter",
    "next",
    "fmt",
    "clone",
    "eq",
    "ne",
    "cmp",
    "partial_cmp",
    "hash",
    "from",
    "into",
    "try_from",
    "as_ref",
    "as_mut",
    "deref",
    "deref_mut",
    "drop",
    "index",
    "path",
    "name",
    "id",
    "key",
    "value",
    "run",
    "open",
    "close",
    "read",
    "write",
    "flush",
    "to_string",
    "as_str",
    "main",
    "__init__",
    "__repr__",
    "__str__",
    "__eq__",
    "__hash__",
    "__len__",
    "__iter__",
    "__next__",
    "__getitem__",
    "__setitem__",
    "__contains__",
    "__call__",
    "__enter__",
    "__exit__",
    "format",
    "count",
    "json",
    "error",
    "extend",
    "map",
    "filter",
    "find",
    "join",
    "split",
    "trim",
    "parse",
    "take",
    "skip",
    "sum",
    "min",
    "max",
    "sort",
    "first",
    "last",
    "append",
    "add",
    "sub",
    "to_owned",
    "borrow",
    "with_capacity",
    "capacity",
    "unwrap",
    "expect",
    "is_some",
    "is_none",
    "any",
    "all",
    "print",
    "println",
    "vec",
    "matches",
    "assert",
    "write_str",
    "entry",
    "retain",
    "truncate",
    "lines",
    "chars",
    "bytes",
    "as_bytes",
    "starts_with",
    "ends_with",
    "replace",
    "lock",
    "send",
    "recv",
    "spawn",
    "wait",
    "kill",
    "exists",
    "display",
    "root",
    // Python's dict, set and str methods.
    "update",
    "setdefault",
    "copy",
    "keys",
    "items",
    "values",
    "popitem",
    "discard",
    "startswith",
    "endswith",
    "strip",
    "encode",
    "decode",
    "lower",
    "upper",
];
const GENERIC_NAME_WEIGHT: f64 = 0.1;

fn name_weight(name: &str) -> f64 {
    if GENERIC_NAMES.contains(&name) {
        GENERIC_NAME_WEIGHT
    } else {
        1.0
    }
}

/// How much a reference by name says about this definition.
fn target_weight(tags: &FileTags, def: &Def) -> f64 {
    let scope = def.scope.map(|s| tags.scopes[s as usize].kind);
    let kind = match (def.kind, scope) {
        // `mod x;` says where code is, not what it does.
        (DefKind::Module, _) => 0.3,
        // Associated types are reached as `Self::Output`, `T::Future`: a bare
        // `Future` is another trait of the same name.
        (DefKind::Type, Some(ScopeKind::Trait | ScopeKind::TraitImpl | ScopeKind::Impl)) => 0.1,
        (_, Some(ScopeKind::TraitImpl)) => TRAIT_IMPL_WEIGHT,
        _ => 1.0,
    };
    kind * name_weight(&def.name) * visibility_weight(tags, def)
}

/// [`PRIVATE_WEIGHT`] for a private definition, [`CRATE_PRIVATE_WEIGHT`]
/// for one visible in its crate only (`pub(crate) fn`, or any member of a
/// `pub(crate) trait`), else 1.
fn visibility_weight(tags: &FileTags, def: &Def) -> f64 {
    if !def.public {
        return PRIVATE_WEIGHT;
    }
    let restricted = |text: &str| text.starts_with("pub(") && !text.starts_with("pub(self)");
    let in_restricted_trait = def.scope.is_some_and(|s| {
        let scope = &tags.scopes[s as usize];
        scope.kind == ScopeKind::Trait
            && (restricted(&scope.text)
                // A private Rust trait (other languages' interfaces read otherwise).
                || scope.text.starts_with("trait ")
                || scope.text.starts_with("unsafe trait "))
    });
    if restricted(&def.signature) || in_restricted_trait {
        CRATE_PRIVATE_WEIGHT
    } else {
        1.0
    }
}

/// How much an unreferenced definition of this kind is worth showing.
fn def_weight(tags: &FileTags, def: &Def) -> f64 {
    let kind = match def.kind {
        DefKind::Struct | DefKind::Enum | DefKind::Union | DefKind::Trait | DefKind::Class => 1.0,
        DefKind::Function | DefKind::Type => 1.0,
        DefKind::Macro => 0.8,
        DefKind::Method => 0.6,
        DefKind::Constant | DefKind::Static => 0.5,
        DefKind::Module => 1.0, // (already in target_weight)
    };
    let test = def.name.starts_with("test_") || def.name.starts_with("Test");
    kind * target_weight(tags, def) * if test { 0.1 } else { 1.0 }
}

/// Ranks `files` (sorted by path) for a request described by `seeds`.
pub fn rank(files: &[(&str, &FileTags)], seeds: &Seeds) -> Ranking {
    let n = files.len();
    if n == 0 {
        return Ranking {
            file_rank: Vec::new(),
            defs: Vec::new(),
        };
    }
    let (focus_files, focus_idents) = parse_focus(files, &seeds.focus);
    let focus = Focus {
        files: focus_files,
        idents: focus_idents,
    };
    let definers = Definers::new(files);
    let modules = modules(files);
    let paths: Vec<Vec<String>> = files.iter().map(|(rel, _)| module_path(rel)).collect();
    let (edges, via) = reference_edges(files, &definers, &modules, &paths, &focus);
    let merged = merge_edges(edges);
    // Every file also has a virtual edge back to the restart distribution, so
    // a file with only weak evidence (one reference to a private name) does
    // not hand all its rank along it.
    let mut out_weight = vec![UNEXPLAINED_WEIGHT; n];
    for &(f, _, w) in &merged {
        out_weight[f as usize] += w;
    }
    let personal = personalization(files, seeds, &focus, &definers);
    let file_rank = pagerank(n, &merged, &out_weight, &personal);

    // Definition scores: the rank flowing along each edge, shared out by name.
    let mut flow = vec![0.0f64; definers.slots.len()];
    for (from, slot, w) in via {
        let f = from as usize;
        flow[slot as usize] += DAMPING * file_rank[f] * w / out_weight[f];
    }
    let mut defs = Vec::new();
    let reexported = reexports(files, &definers, &paths);
    let ctx = ScoreContext {
        definers: &definers,
        flow: &flow,
        file_rank: &file_rank,
        focus: &focus,
        reexported: &reexported,
    };
    for fi in 0..n {
        score_file_defs(files, fi, &ctx, &mut defs);
    }
    // Files are indexed in path order, and definitions in line order within a file.
    defs.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then(a.file.cmp(&b.file))
            .then(a.def.cmp(&b.def))
    });
    Ranking { file_rank, defs }
}

/// An edge `(from, to, weight)`: to a file, or in `reference_edges`'
/// second list to a definers slot.
type Edge = (u32, u32, f64);

/// The request's focus: files (indices, sorted) and identifiers (sorted).
struct Focus {
    files: Vec<u32>,
    idents: Vec<String>,
}

impl Focus {
    fn has_ident(&self, name: &str) -> bool {
        self.idents
            .binary_search_by(|f| f.as_str().cmp(name))
            .is_ok()
    }

    fn has_file(&self, file: u32) -> bool {
        self.files.binary_search(&file).is_ok()
    }
}

/// Name → its definers: a range of `slots`, one per (defining file, name),
/// files ascending, with the best `target_weight` of its definitions there
/// (the edge's weight) and their sum (what they share).
struct Definers<'a> {
    slots: Vec<Slot>,
    by_name: HashMap<&'a str, std::ops::Range<u32>>,
}

/// One file's definitions of one name.
#[derive(Debug, Clone, Copy)]
struct Slot {
    file: u32,
    /// The best [`target_weight`] among them: the weight of edges to them.
    weight: f64,
    /// The sum of their weights: what they share the edges' flow by.
    shared: f64,
}

/// Whether each definition repeats an earlier one of the file: the same
/// name and kind in a scope with the same header (`#[cfg(..)]` variants of
/// one constant, a Python property's getter and setter). The map shows an
/// item once, and its references are not counted twice.
fn repeats(tags: &FileTags) -> Vec<bool> {
    let mut seen: rustc_hash::FxHashSet<(&str, DefKind, Option<&str>)> = Default::default();
    tags.defs
        .iter()
        .map(|d| {
            let scope = d.scope.map(|s| tags.scopes[s as usize].text.as_str());
            !seen.insert((d.name.as_str(), d.kind, scope))
        })
        .collect()
}

impl<'a> Definers<'a> {
    fn new(files: &[(&'a str, &'a FileTags)]) -> Self {
        let mut by_name: HashMap<&str, Vec<Slot>> = HashMap::default();
        for (fi, (rel, tags)) in files.iter().enumerate() {
            let repeats = repeats(tags);
            for (di, d) in tags.defs.iter().enumerate() {
                if repeats[di] || in_test_module(tags, d) {
                    continue;
                }
                let weight = target_weight(tags, d) * file_weight(rel);
                let v = by_name.entry(d.name.as_str()).or_default();
                match v.last_mut() {
                    Some(slot) if slot.file == fi as u32 => {
                        slot.weight = slot.weight.max(weight);
                        slot.shared += weight;
                    }
                    _ => v.push(Slot {
                        file: fi as u32,
                        weight,
                        shared: weight,
                    }),
                }
            }
        }
        // Slots in name order, so their layout does not depend on hashing.
        let mut names: Vec<(&str, Vec<Slot>)> = by_name.into_iter().collect();
        names.sort_unstable_by_key(|(name, _)| *name);
        let mut definers = Definers {
            slots: Vec::new(),
            by_name: HashMap::default(),
        };
        for (name, v) in names {
            let start = definers.slots.len() as u32;
            definers.slots.extend(v);
            definers
                .by_name
                .insert(name, start..definers.slots.len() as u32);
        }
        definers
    }

    fn get(&self, name: &str) -> Option<std::ops::Range<u32>> {
        self.by_name.get(name).cloned()
    }

    /// The slot of `file`'s definitions of `name`.
    fn slot(&self, file: u32, name: &str) -> Option<u32> {
        let range = self.by_name.get(name)?;
        let defs = &self.slots[range.start as usize..range.end as usize];
        defs.binary_search_by_key(&file, |s| s.file)
            .ok()
            .map(|i| range.start + i as u32)
    }

    /// The defining file of a slot.
    fn file(&self, slot: u32) -> u32 {
        self.slots[slot as usize].file
    }

    /// The share of `flow` (per slot) that a definition of `name` in `file`
    /// with `weight` gets: its slot's flow in proportion to its own weight
    /// among that file's definitions of the name (a private `new` next to a
    /// public one gets little of what `new` receives; seven traits' `as_usize`
    /// get a seventh each).
    fn flow_to(&self, flow: &[f64], file: u32, name: &str, weight: f64) -> f64 {
        let Some(range) = self.by_name.get(name) else {
            return 0.0;
        };
        let defs = &self.slots[range.start as usize..range.end as usize];
        defs.binary_search_by_key(&file, |s| s.file)
            .map_or(0.0, |i| {
                let slot = range.start as usize + i;
                flow[slot] * weight / self.slots[slot].shared
            })
    }
}

/// Module name → the files that provide it (see [`module_name`]).
fn modules<'a>(files: &[(&'a str, &FileTags)]) -> HashMap<&'a str, Vec<u32>> {
    let mut modules: HashMap<&str, Vec<u32>> = HashMap::default();
    for (fi, (rel, _)) in files.iter().enumerate() {
        if let Some(m) = module_name(rel) {
            modules.entry(m).or_default().push(fi as u32);
        }
    }
    modules
}

/// Edges referencing file → defining file, grouped by source. The second
/// list keeps the slot (defining file and name) each edge weight came from,
/// to hand file rank on to definitions afterwards.
fn reference_edges(
    files: &[(&str, &FileTags)],
    definers: &Definers,
    modules: &HashMap<&str, Vec<u32>>,
    paths: &[Vec<String>],
    focus: &Focus,
) -> (Vec<Edge>, Vec<Edge>) {
    let mut edges: Vec<Edge> = Vec::new();
    let mut via: Vec<Edge> = Vec::new();
    for (fi, (_, tags)) in files.iter().enumerate() {
        let from = fi as u32;
        for (name, count) in &tags.refs {
            // Fifty `format!` calls say no more about the repository's own
            // `format` than one does.
            let strength = if GENERIC_NAMES.contains(&name.as_str()) {
                1.0
            } else {
                (*count as f64).sqrt()
            };
            let focus_mul = if focus.has_ident(name) {
                FOCUS_IDENT_EDGE_WEIGHT
            } else {
                1.0
            };
            if let Some(range) = definers.get(name) {
                // A name the file imports from one module is no longer ambiguous.
                let slots: Vec<u32> = match range.len() > 1 {
                    true => imported_slots(tags, name, paths, fi, range.clone(), definers),
                    false => None,
                }
                .unwrap_or_else(|| range.collect());
                let n_def = slots.len();
                if n_def > MAX_DEFINERS && focus_mul == 1.0 {
                    continue; // `new`, `fmt`: says nothing about where it points
                }
                // An ambiguous name is split among its definers (a test's or
                // fixture's copy counting little), and a ubiquitous one says
                // little about any of them.
                let n_eff: f64 = slots
                    .iter()
                    .map(|&slot| file_weight(files[definers.file(slot) as usize].0))
                    .sum();
                let mut mul = focus_mul / n_eff.max(1.0);
                if n_def > UBIQUITOUS_DEFINERS {
                    mul *= UBIQUITOUS_WEIGHT;
                }
                for slot in slots {
                    let Slot {
                        file: to, weight, ..
                    } = definers.slots[slot as usize];
                    if to != from {
                        let w = strength * mul * weight;
                        edges.push((from, to, w));
                        via.push((from, slot, w));
                    }
                }
            }
            if let Some(mods) = modules.get(name.as_str()) {
                let mul = MODULE_REF_WEIGHT * focus_mul / mods.len() as f64;
                for &to in mods {
                    if to != from {
                        edges.push((from, to, strength * mul));
                    }
                }
            }
        }
    }
    (edges, via)
}

/// A file's module path, for matching imports against: `src/meta/regex.rs`
/// → `meta, regex`; `src/hybrid/mod.rs` → `hybrid`;
/// `crates/agent-index/src/lib.rs` → `crates, agent_index`.
fn module_path(rel: &str) -> Vec<String> {
    let mut parts: Vec<&str> = rel.split('/').collect();
    if let Some(last) = parts.last_mut() {
        *last = last.split('.').next().unwrap_or(last);
    }
    if matches!(parts.last(), Some(&("mod" | "lib" | "main" | "__init__"))) {
        parts.pop();
    }
    parts
        .into_iter()
        .filter(|p| *p != "src")
        .map(|p| p.replace('-', "_"))
        .collect()
}

/// The definers of `name` (its `range` of slots) that file `from`'s `use`
/// of it points at: those whose module path (see [`module_path`]) has most
/// of the import's segments (`self`/`super` read from `from`'s own), then
/// the most folders in common with `from`. `None` when the file does not
/// import the name or no definer matches any segment.
fn imported_slots(
    tags: &FileTags,
    name: &str,
    paths: &[Vec<String>],
    from: usize,
    range: std::ops::Range<u32>,
    definers: &Definers,
) -> Option<Vec<u32>> {
    let import = tags.imports.iter().find(|i| i.name == name)?;
    resolve(import, paths, from, range, definers)
}

/// The definers in `range` that `import` (in file `from`) points at; see
/// [`imported_slots`].
fn resolve(
    import: &Import,
    paths: &[Vec<String>],
    from: usize,
    range: std::ops::Range<u32>,
    definers: &Definers,
) -> Option<Vec<u32>> {
    let mut want: Vec<&str> = Vec::new();
    for (k, seg) in import.path.split("::").enumerate() {
        match seg {
            "self" if k == 0 => want.extend(paths[from].iter().map(String::as_str)),
            "super" => {
                if k == 0 {
                    want.extend(paths[from].iter().map(String::as_str));
                }
                want.pop();
            }
            "crate" | "self" | "" => {}
            seg => want.push(seg),
        }
    }
    let key = |slot: u32| {
        let path = &paths[definers.file(slot) as usize];
        let hits = want.iter().filter(|w| path.iter().any(|p| p == *w)).count();
        let common = path
            .iter()
            .zip(&paths[from])
            .take_while(|(a, b)| a == b)
            .count();
        (hits, common)
    };
    let best = range.clone().map(key).max()?;
    (best.0 > 0).then(|| range.filter(|&s| key(s) == best).collect())
}

/// For each definers slot, whether a `pub use` in another file re-exports
/// that file's definition of the name (`meta/mod.rs: pub use
/// self::regex::{Cache, Regex}`): the API its crate or module offers.
fn reexports(files: &[(&str, &FileTags)], definers: &Definers, paths: &[Vec<String>]) -> Vec<bool> {
    let mut out = vec![false; definers.slots.len()];
    for (fi, (_, tags)) in files.iter().enumerate() {
        for import in tags.imports.iter().filter(|i| i.public) {
            let Some(range) = definers.get(&import.name) else {
                continue;
            };
            for slot in resolve(import, paths, fi, range, definers).unwrap_or_default() {
                if definers.file(slot) != fi as u32 {
                    out[slot as usize] = true;
                }
            }
        }
    }
    out
}

/// Parallel edges merged, sorted by source then target. The edges come
/// grouped by source: sorting each group by target is enough.
fn merge_edges(mut edges: Vec<Edge>) -> Vec<Edge> {
    let mut merged: Vec<Edge> = Vec::with_capacity(edges.len());
    for group in edges.chunk_by_mut(|a, b| a.0 == b.0) {
        group.sort_by_key(|e| e.1);
        // Merge parallel edges in order (sums in a fixed order: reproducible floats).
        for &(f, t, w) in group.iter() {
            match merged.last_mut() {
                Some(last) if last.0 == f && last.1 == t => last.2 += w,
                _ => merged.push((f, t, w)),
            }
        }
    }
    merged
}

/// Personalization: where the random surfer restarts (sums to 1).
fn personalization(
    files: &[(&str, &FileTags)],
    seeds: &Seeds,
    focus: &Focus,
    definers: &Definers,
) -> Vec<f64> {
    let n = files.len();
    let mut seed = vec![0.0f64; n];
    for &f in &focus.files {
        seed[f as usize] += FOCUS_FILE_SEED;
    }
    for ident in &focus.idents {
        if let Some(range) = definers.get(ident) {
            for slot in range {
                seed[definers.file(slot) as usize] += FOCUS_IDENT_SEED;
            }
        }
    }
    for recent in &seeds.recent_files {
        for f in match_path(files, recent) {
            seed[f as usize] += RECENT_FILE_SEED;
        }
    }
    let seed_total: f64 = seed.iter().sum();
    // Without seeds the surfer starts in the package's own code more often.
    let weights: Vec<f64> = files
        .iter()
        .map(|(rel, _)| {
            if is_secondary(rel) {
                SECONDARY_START
            } else {
                1.0
            }
        })
        .collect();
    let weight_total: f64 = weights.iter().sum();
    if seed_total > 0.0 {
        (0..n)
            .map(|i| {
                UNIFORM_SHARE * weights[i] / weight_total
                    + (1.0 - UNIFORM_SHARE) * seed[i] / seed_total
            })
            .collect()
    } else {
        weights.iter().map(|w| w / weight_total).collect()
    }
}

/// What scoring a file's definitions reads.
#[derive(Clone, Copy)]
struct ScoreContext<'a> {
    definers: &'a Definers<'a>,
    /// Rank flowing to each definers slot.
    flow: &'a [f64],
    file_rank: &'a [f64],
    focus: &'a Focus,
    /// Per definers slot, see [`reexports`].
    reexported: &'a [bool],
}

/// Scores the definitions of file `fi` (outside unit-test modules) into
/// `out`: the flow reaching each by name, its members' flow for a type, a
/// base share of its file's rank, and the focus boosts.
fn score_file_defs(
    files: &[(&str, &FileTags)],
    fi: usize,
    ctx: &ScoreContext,
    out: &mut Vec<RankedDef>,
) {
    let ScoreContext {
        definers,
        flow,
        file_rank,
        focus,
        reexported,
    } = *ctx;
    let (rel, tags) = files[fi];
    let focused_file = focus.has_file(fi as u32);
    let file_weight = file_weight(rel);
    let flows: Vec<f64> = tags
        .defs
        .iter()
        .map(|d| {
            definers.flow_to(
                flow,
                fi as u32,
                &d.name,
                target_weight(tags, d) * file_weight,
            )
        })
        .collect();
    let repeats = repeats(tags);
    let owners = owners(tags);
    let mut member_flow = vec![0.0f64; tags.defs.len()];
    for (di, owner) in owners.iter().enumerate() {
        if let (Some(owner), false) = (*owner, repeats[di]) {
            let d = &tags.defs[di];
            member_flow[owner] += flows[di] + BASE_SHARE * file_rank[fi] * def_weight(tags, d);
        }
    }
    let mut scores: Vec<Option<f64>> = vec![None; tags.defs.len()];
    let mut front = vec![false; tags.defs.len()];
    for (di, d) in tags.defs.iter().enumerate() {
        if repeats[di] || in_test_module(tags, d) {
            continue;
        }
        let weight = def_weight(tags, d);
        let mut score =
            (flows[di] + MEMBER_SHARE * member_flow[di] + BASE_SHARE * file_rank[fi] * weight)
                * file_weight;
        let reexported = definers
            .slot(fi as u32, &d.name)
            .is_some_and(|slot| reexported[slot as usize]);
        if is_front_door(rel, tags, d, reexported) {
            score *= FRONT_DOOR_WEIGHT;
            front[di] = true;
        }
        scores[di] = Some(score);
    }
    companions(tags, &owners, &front, &mut scores);
    for (di, d) in tags.defs.iter().enumerate() {
        let Some(mut score) = scores[di] else {
            continue;
        };
        if focus.has_ident(&d.name) {
            score += FOCUS_IDENT_BOOST;
        }
        if focused_file {
            score += FOCUS_FILE_BOOST * def_weight(tags, d);
        }
        out.push(RankedDef {
            file: fi as u32,
            def: di as u32,
            score,
        });
    }
}

/// Raises the types a front door's public methods take or return, defined
/// in its file, to [`COMPANION_SHARE`] of the front door's score: to use
/// `meta::Regex` one needs the `Cache` its `search_with(&self, cache: &mut
/// Cache, ..)` takes, though the rest of the crate names its own `Cache`.
fn companions(
    tags: &FileTags,
    owners: &[Option<usize>],
    front: &[bool],
    scores: &mut [Option<f64>],
) {
    let mut floor: HashMap<&str, f64> = HashMap::default();
    for (di, d) in tags.defs.iter().enumerate() {
        let Some(owner) = owners[di].filter(|&o| front[o]) else {
            continue;
        };
        let (Some(owner_score), true) = (scores[owner], visibility_weight(tags, d) >= 1.0) else {
            continue;
        };
        if d.kind != DefKind::Function && d.kind != DefKind::Method {
            continue;
        }
        for word in d
            .signature
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        {
            let f = floor.entry(word).or_insert(0.0);
            *f = f.max(COMPANION_SHARE * owner_score);
        }
    }
    for (di, d) in tags.defs.iter().enumerate() {
        let is_type = matches!(
            d.kind,
            DefKind::Struct | DefKind::Enum | DefKind::Union | DefKind::Trait | DefKind::Class
        );
        if !is_type || d.scope.is_some() || visibility_weight(tags, d) < 1.0 {
            continue;
        }
        if let (Some(score), Some(&f)) = (scores[di].as_mut(), floor.get(d.name.as_str())) {
            *score = score.max(f);
        }
    }
}

/// For each definition, the type, trait or class (an index into
/// `tags.defs`) it is a member of: the definition that opens its scope (a
/// trait, a class), or for an `impl Type` or `impl Trait for Type` block
/// the type of that name in the same file.
fn owners(tags: &FileTags) -> Vec<Option<usize>> {
    let mut by_scope: Vec<Option<usize>> = vec![None; tags.scopes.len()];
    let mut types: HashMap<&str, usize> = HashMap::default();
    for (i, d) in tags.defs.iter().enumerate() {
        match (d.kind, d.opens) {
            (DefKind::Trait | DefKind::Class, Some(s)) => by_scope[s as usize] = Some(i),
            (DefKind::Struct | DefKind::Enum | DefKind::Union, _) => {
                types.entry(d.name.as_str()).or_insert(i);
            }
            _ => {}
        }
    }
    for (s, scope) in tags.scopes.iter().enumerate() {
        if matches!(scope.kind, ScopeKind::Impl | ScopeKind::TraitImpl) {
            by_scope[s] = impl_type(&scope.text).and_then(|t| types.get(t).copied());
        }
    }
    tags.defs
        .iter()
        .map(|d| d.scope.and_then(|s| by_scope[s as usize]))
        .collect()
}

/// `impl<'a, T: X> engine::Engine<'a, T> where ..` → `Engine`;
/// `impl fmt::Display for Engine` → `Engine`.
fn impl_type(header: &str) -> Option<&str> {
    let mut rest = header.trim_start_matches("unsafe ").strip_prefix("impl")?;
    if rest.starts_with('<') {
        // Skip the generic parameters, which nest.
        let mut depth = 0;
        let end = rest.char_indices().find_map(|(i, c)| {
            match c {
                '<' => depth += 1,
                '>' => depth -= 1,
                _ => {}
            }
            (depth == 0).then_some(i + 1)
        })?;
        rest = &rest[end..];
    }
    if let Some((_, ty)) = rest.split_once(" for ") {
        rest = ty;
    }
    let path = rest.trim_start().split(['<', ' ', '{']).next()?;
    path.rsplit("::").next().filter(|t| !t.is_empty())
}

/// Power iteration. The rank not sent along edges (the virtual
/// `UNEXPLAINED_WEIGHT` edge of every file) restarts like the surfer.
fn pagerank(n: usize, edges: &[(u32, u32, f64)], out_weight: &[f64], personal: &[f64]) -> Vec<f64> {
    let mut rank = personal.to_vec();
    let mut next = vec![0.0f64; n];
    for _ in 0..MAX_ITERATIONS {
        next.iter_mut().for_each(|x| *x = 0.0);
        for &(f, t, w) in edges {
            let f = f as usize;
            next[t as usize] += DAMPING * rank[f] * w / out_weight[f];
        }
        let unexplained: f64 = (0..n)
            .map(|i| rank[i] * UNEXPLAINED_WEIGHT / out_weight[i])
            .sum();
        let restart = (1.0 - DAMPING) + DAMPING * unexplained;
        let mut change = 0.0;
        for i in 0..n {
            next[i] += restart * personal[i];
            change += (next[i] - rank[i]).abs();
        }
        std::mem::swap(&mut rank, &mut next);
        if change < TOLERANCE {
            break;
        }
    }
    rank
}

/// Files by rank, best first (ties by path).
pub fn ranked_files(files: &[(&str, &FileTags)], ranking: &Ranking) -> Vec<(String, f64)> {
    let mut order: Vec<usize> = (0..files.len()).collect();
    order.sort_by(|&a, &b| {
        ranking.file_rank[b]
            .total_cmp(&ranking.file_rank[a])
            .then(a.cmp(&b))
    });
    order
        .into_iter()
        .map(|i| (files[i].0.to_string(), ranking.file_rank[i]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tags::Tagger;
    use agent_lang::walk::Lang;

    fn corpus(sources: &[(&'static str, &str)]) -> Vec<(&'static str, FileTags)> {
        let mut tagger = Tagger::new();
        let mut v: Vec<_> = sources
            .iter()
            .map(|(rel, src)| {
                (
                    *rel,
                    tagger.tag(Lang::from_path(std::path::Path::new(rel)), src),
                )
            })
            .collect();
        v.sort_by_key(|(rel, _)| *rel);
        v
    }

    fn refs<'a>(v: &'a [(&'static str, FileTags)]) -> Vec<(&'static str, &'a FileTags)> {
        v.iter().map(|(r, t)| (*r, t)).collect()
    }

    fn position(files: &[(&str, &FileTags)], r: &Ranking, name: &str) -> usize {
        r.defs
            .iter()
            .position(|d| files[d.file as usize].1.defs[d.def as usize].name == name)
            .unwrap_or_else(|| panic!("{name} not ranked"))
    }

    const UTIL: &str =
        "pub fn widely_used_helper(x: u32) -> u32 { x }\npub fn never_called_anywhere() {}\n";
    const OTHER: &str = "pub fn lonely_function() {}\npub struct Lonely;\n";

    fn user(i: usize) -> String {
        format!("use crate::util::widely_used_helper;\npub fn caller_{i}() -> u32 {{ widely_used_helper({i}) }}\n")
    }

    #[test]
    fn widely_used_definition_ranks_above_unused_ones() {
        let (a, b, c) = (user(1), user(2), user(3));
        let v = corpus(&[
            ("src/util.rs", UTIL),
            ("src/other.rs", OTHER),
            ("src/a.rs", &a),
            ("src/b.rs", &b),
            ("src/c.rs", &c),
        ]);
        let files = refs(&v);
        let r = rank(&files, &Seeds::default());
        assert_eq!(position(&files, &r, "widely_used_helper"), 0);
        assert!(
            position(&files, &r, "widely_used_helper")
                < position(&files, &r, "never_called_anywhere")
        );
        let top = ranked_files(&files, &r);
        assert_eq!(top[0].0, "src/util.rs");
        assert!((r.file_rank.iter().sum::<f64>() - 1.0).abs() < 1e-9);
    }

    #[test]
    fn focus_on_a_file_or_identifier_changes_the_top() {
        let (a, b) = (user(1), user(2));
        let v = corpus(&[
            ("src/util.rs", UTIL),
            ("src/other.rs", OTHER),
            ("src/a.rs", &a),
            ("src/b.rs", &b),
        ]);
        let files = refs(&v);
        let by_path = Seeds {
            focus: vec!["other.rs".into()],
            ..Seeds::default()
        };
        let r = rank(&files, &by_path);
        assert_eq!(ranked_files(&files, &r)[0].0, "src/other.rs");
        assert_eq!(files[r.defs[0].file as usize].0, "src/other.rs");

        let by_ident = Seeds {
            focus: vec!["Lonely".into()],
            ..Seeds::default()
        };
        let r = rank(&files, &by_ident);
        assert_eq!(position(&files, &r, "Lonely"), 0);
        assert_eq!(ranked_files(&files, &r)[0].0, "src/other.rs");

        // Recent files seed the rank too, more gently.
        let recent = Seeds {
            recent_files: vec!["src/b.rs".into()],
            ..Seeds::default()
        };
        let base = rank(&files, &Seeds::default());
        let r = rank(&files, &recent);
        let b = files
            .iter()
            .position(|(rel, _)| *rel == "src/b.rs")
            .unwrap();
        assert!(r.file_rank[b] > base.file_rank[b]);
    }

    #[test]
    fn private_and_ubiquitous_names_are_down_weighted() {
        // `run` is defined in 7 files (ubiquitous); `special_thing` in one.
        let mut sources: Vec<(&'static str, String)> = Vec::new();
        let names = ["m1", "m2", "m3", "m4", "m5", "m6", "m7"];
        for m in names {
            let rel: &'static str = Box::leak(format!("src/{m}.rs").into_boxed_str());
            sources.push((rel, "pub fn run() {}\n".to_string()));
        }
        sources.push((
            "src/special.rs",
            "pub fn special_thing() {}\nfn hidden_thing() {}\n".into(),
        ));
        sources.push((
            "src/main.rs",
            "fn main() { run(); run(); run(); special_thing(); hidden_thing(); }\n".into(),
        ));
        let borrowed: Vec<(&'static str, &str)> =
            sources.iter().map(|(r, s)| (*r, s.as_str())).collect();
        let v = corpus(&borrowed);
        let files = refs(&v);
        let r = rank(&files, &Seeds::default());
        let special = files
            .iter()
            .position(|(rel, _)| *rel == "src/special.rs")
            .unwrap();
        let m1 = files
            .iter()
            .position(|(rel, _)| *rel == "src/m1.rs")
            .unwrap();
        assert!(r.file_rank[special] > r.file_rank[m1]);
        assert!(position(&files, &r, "special_thing") < position(&files, &r, "hidden_thing"));
    }

    #[test]
    fn standard_method_names_do_not_lead_the_map() {
        // Every file calls `.len()` (on vectors) and `parse_manifest` once;
        // the repository's own `Stack::len` must not take the calls to the
        // standard library's for its own.
        let caller = |i: usize| {
            format!(
                "use crate::stack::Stack;\npub fn caller_{i}(v: Vec<u8>) -> usize {{ parse_manifest(); v.len() + v.len() + v.len() }}\n"
            )
        };
        let callers: Vec<String> = (0..6).map(caller).collect();
        let mut sources: Vec<(&'static str, &str)> = vec![
            (
                "src/stack.rs",
                "pub struct Stack(Vec<u8>);\nimpl Stack {\n    pub fn len(&self) -> usize { self.0.len() }\n}\n",
            ),
            ("src/manifest.rs", "pub fn parse_manifest() {}\n"),
        ];
        let names = [
            "src/c0.rs",
            "src/c1.rs",
            "src/c2.rs",
            "src/c3.rs",
            "src/c4.rs",
            "src/c5.rs",
        ];
        for (name, src) in names.iter().zip(&callers) {
            sources.push((name, src.as_str()));
        }
        let v = corpus(&sources);
        let r = rank(&refs(&v), &Seeds::default());
        assert!(
            position(&refs(&v), &r, "parse_manifest") < position(&refs(&v), &r, "len"),
            "the specific name ranks first"
        );
    }

    #[test]
    fn module_names_and_focus_parsing() {
        assert_eq!(module_name("src/walk.rs"), Some("walk"));
        assert_eq!(module_name("src/llm/mod.rs"), Some("llm"));
        assert_eq!(module_name("pkg/utils/__init__.py"), Some("utils"));
        assert_eq!(module_name("src/lib.rs"), None);
        assert_eq!(module_name("mod.rs"), None);
        let v = corpus(&[
            ("src/llm/engine.rs", "pub fn x() {}"),
            ("src/walk.rs", "pub fn y() {}"),
        ]);
        let files = refs(&v);
        let focus: Vec<String> = ["src/llm", "walk.rs", "Engine::load", "no/such.rs"]
            .map(String::from)
            .into();
        let (f, i) = parse_focus(&files, &focus);
        assert_eq!(f, [0, 1]);
        assert_eq!(i, ["Engine", "load", "no", "rs", "such"]);
    }

    #[test]
    fn ranking_is_deterministic() {
        let (a, b, c) = (user(1), user(2), user(3));
        let v = corpus(&[
            ("src/util.rs", UTIL),
            ("src/a.rs", &a),
            ("src/b.rs", &b),
            ("src/c.rs", &c),
        ]);
        let files = refs(&v);
        let one = rank(&files, &Seeds::default());
        let two = rank(&files, &Seeds::default());
        let key = |r: &Ranking| {
            r.defs
                .iter()
                .map(|d| (d.file, d.def, d.score.to_bits()))
                .collect::<Vec<_>>()
        };
        assert_eq!(key(&one), key(&two));
        assert!(rank(&[], &Seeds::default()).defs.is_empty());
    }

    fn leak(s: String) -> &'static str {
        Box::leak(s.into_boxed_str())
    }

    #[test]
    fn secondary_paths_and_impl_types() {
        for rel in [
            "tests/test_app.py",
            "examples/tutorial/flaskr/blog.py",
            "docs/conf.py",
            "crates/core/tests/agent/scripted.rs",
            "crates/engine/benches/load.rs",
            "scripts/fetch-models",
            "src/conftest.py",
            "pkg/app_test.go",
            "src/tests.rs",
            "web/app.spec.ts",
            "test_cli.py",
        ] {
            assert!(is_secondary(rel), "{rel}");
        }
        for rel in [
            "src/flask/app.py",
            "crates/agent-tools/src/lib.rs",
            "src/testing.py",
            "src/contest.rs",
            "lib/latest.rb",
        ] {
            assert!(!is_secondary(rel), "{rel}");
        }
        assert_eq!(impl_type("impl LlamaEngine"), Some("LlamaEngine"));
        assert_eq!(
            impl_type("impl<'a, T: Into<X>> eng::Engine<'a, T>"),
            Some("Engine")
        );
        assert_eq!(impl_type("impl fmt::Display for Engine"), Some("Engine"));
        assert_eq!(
            impl_type("impl<T> From<T> for Wrapper<T> where T: Copy"),
            Some("Wrapper")
        );
        assert_eq!(impl_type("struct X"), None);
    }

    /// An example's view that the tests call everywhere, next to the
    /// package's class that only the example uses: the package leads.
    #[test]
    fn examples_tests_and_docs_rank_below_the_package() {
        let mut sources: Vec<(&'static str, &str)> = vec![
            (
                "src/shop/cart.py",
                "class Cart:\n    def add_item(self, item):\n        pass\n",
            ),
            (
                "examples/store/views.py",
                "from shop.cart import Cart\ndef checkout_view(request):\n    return Cart()\n",
            ),
            ("docs/conf.py", "def setup_docs(app):\n    pass\n"),
        ];
        let tests: Vec<String> = (0..5)
            .map(|i| format!("from views import checkout_view\ndef test_{i}():\n    checkout_view(1)\n    checkout_view(2)\n    setup_docs(3)\n"))
            .collect();
        for (i, t) in tests.iter().enumerate() {
            sources.push((leak(format!("tests/test_{i}.py")), t.as_str()));
        }
        let v = corpus(&sources);
        let files = refs(&v);
        let r = rank(&files, &Seeds::default());
        let cart = position(&files, &r, "Cart");
        assert_eq!(cart, 0, "the package's class leads");
        for secondary in ["checkout_view", "setup_docs", "test_0"] {
            assert!(cart < position(&files, &r, secondary), "{secondary}");
        }
        // A focus still reaches into the tests.
        let focused = Seeds {
            focus: vec!["checkout_view".into()],
            ..Seeds::default()
        };
        assert_eq!(
            position(&files, &rank(&files, &focused), "checkout_view"),
            0
        );
    }

    /// A class's members are ordered by how the package uses them: a
    /// method only the tests call comes after one the package's files call.
    #[test]
    fn a_class_shows_the_members_its_package_uses_most() {
        let mut sources: Vec<(&'static str, String)> = vec![(
            "src/app.py",
            "class App:\n    def test_client(self):\n        pass\n    def make_response(self, rv):\n        pass\n".into(),
        )];
        for i in 0..3 {
            sources.push((
                leak(format!("src/part_{i}.py")),
                format!("def handler_{i}(app):\n    return app.make_response({i})\n"),
            ));
        }
        for i in 0..4 {
            sources.push((
                leak(format!("tests/test_part_{i}.py")),
                format!("def test_{i}(app):\n    app.test_client()\n"),
            ));
        }
        let borrowed: Vec<(&'static str, &str)> =
            sources.iter().map(|(r, s)| (*r, s.as_str())).collect();
        let v = corpus(&borrowed);
        let files = refs(&v);
        let r = rank(&files, &Seeds::default());
        assert!(position(&files, &r, "make_response") < position(&files, &r, "test_client"));
    }

    /// A type whose methods the package calls everywhere outranks one
    /// named a little more often but with no API of its own.
    #[test]
    fn a_type_is_as_central_as_its_api_is_used() {
        let mut sources: Vec<(&'static str, String)> = vec![
            (
                "src/engine.rs",
                "pub struct Engine;\nimpl Engine {\n    pub fn generate_text(&self) {}\n    pub fn count_tokens(&self) {}\n}\n".into(),
            ),
            ("src/config.rs", "pub struct Config;\n".into()),
            (
                "src/main.rs",
                "use crate::engine::Engine;\nfn main() { let e = Engine; }\n".into(),
            ),
        ];
        for i in 0..4 {
            sources.push((
                leak(format!("src/user_{i}.rs")),
                format!("pub fn user_{i}(e: &E, c: &Config) {{ e.generate_text(); e.count_tokens(); }}\n"),
            ));
        }
        let borrowed: Vec<(&'static str, &str)> =
            sources.iter().map(|(r, s)| (*r, s.as_str())).collect();
        let v = corpus(&borrowed);
        let files = refs(&v);
        let r = rank(&files, &Seeds::default());
        assert!(position(&files, &r, "Engine") < position(&files, &r, "Config"));
    }

    #[test]
    fn crate_private_helpers_rank_below_the_public_type_that_uses_them() {
        // The helper is called from more files than the type's method, but
        // it is `pub(crate)`: plumbing, not what the crate is for.
        let int = "pub(crate) fn as_index_helper(x: u8) -> usize { x as usize }\n";
        let engine = "pub struct Engine;\nimpl Engine {\n    pub fn step_engine(&self) -> usize { as_index_helper(1) }\n}\n";
        let both = "pub fn go_a(e: &Engine) { e.step_engine(); as_index_helper(2); }\n";
        let helper_only = "pub fn go_c() { as_index_helper(3); }\n";
        let v = corpus(&[
            ("src/int.rs", int),
            ("src/engine.rs", engine),
            ("src/a.rs", both),
            ("src/b.rs", both),
            ("src/c.rs", helper_only),
        ]);
        let files = refs(&v);
        let r = rank(&files, &Seeds::default());
        assert!(
            position(&files, &r, "Engine") < position(&files, &r, "as_index_helper"),
            "{:?}",
            r.defs
        );
    }

    #[test]
    fn a_name_defined_several_times_in_a_file_shares_its_references() {
        // Three traits of one file each declare `as_usize`: a call names one
        // of them, not all three.
        let int = "pub trait U8 { fn as_usize(self) -> usize; }\npub trait U16 { fn as_usize(self) -> usize; }\npub trait U32 { fn as_usize(self) -> usize; }\n";
        let span =
            "pub struct Span;\nimpl Span {\n    pub fn span_width(&self) -> usize { 0 }\n}\n";
        let user = "pub fn go(s: &Span, b: u8) -> usize { s.span_width() + b.as_usize() }\n";
        let v = corpus(&[
            ("src/int.rs", int),
            ("src/span.rs", span),
            ("src/a.rs", user),
            ("src/b.rs", user),
        ]);
        let files = refs(&v);
        let r = rank(&files, &Seeds::default());
        for name in ["U8", "U16", "U32"] {
            assert!(
                position(&files, &r, "Span") < position(&files, &r, name),
                "Span below {name}"
            );
        }
    }

    #[test]
    fn an_item_defined_twice_in_a_file_is_ranked_and_shown_once() {
        // `#[cfg]` variants of one constant are one item of the API.
        let primitives = r#"pub struct SmallIndex(u32);
impl SmallIndex {
    #[cfg(target_pointer_width = "32")]
    pub const MAX: SmallIndex =
        SmallIndex::new_unchecked(core::i32::MAX as usize - 1);
    #[cfg(not(target_pointer_width = "32"))]
    pub const MAX: SmallIndex = SmallIndex::new_unchecked(1);
    pub const fn new_unchecked(index: usize) -> SmallIndex { SmallIndex(index as u32) }
}
"#;
        let user = "pub fn go() -> SmallIndex { SmallIndex::MAX }\n";
        let v = corpus(&[("src/primitives.rs", primitives), ("src/a.rs", user)]);
        let files = refs(&v);
        let r = rank(&files, &Seeds::default());
        let max = |t: &str| t.lines().filter(|l| l.contains("const MAX")).count();
        assert_eq!(
            r.defs
                .iter()
                .filter(|d| files[d.file as usize].1.defs[d.def as usize].name == "MAX")
                .count(),
            1
        );
        let text = crate::render::fit(&files, &r, 10_000, &|s: &str| s.len()).text;
        assert_eq!(max(&text), 1, "{text}");
        let lines: Vec<&str> = text.lines().collect();
        let mut unique = lines.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), lines.len(), "{text}");
    }

    #[test]
    fn a_public_type_named_like_its_module_or_package_ranks_first() {
        // Equally referenced; the helper type comes first in its file, so
        // it would win the tie.
        let regex = "pub struct Helper;\npub struct Regex;\n";
        let pikevm = "pub struct Store;\npub struct PikeVM;\n";
        let user = "pub fn go(r: Regex, h: Helper, s: Store, i: PikeVM) {}\n";
        let v = corpus(&[
            ("src/meta/regex.rs", regex),
            ("src/pikevm/mod.rs", pikevm),
            ("src/a.rs", user),
            ("src/b.rs", user),
        ]);
        let files = refs(&v);
        let r = rank(&files, &Seeds::default());
        assert!(position(&files, &r, "Regex") < position(&files, &r, "Helper"));
        assert!(position(&files, &r, "PikeVM") < position(&files, &r, "Store"));
        assert!(front(&v, "src/meta/regex.rs", "Regex", false));
        assert!(!front(&v, "src/meta/regex.rs", "Helper", false));
        assert!(front(&v, "src/pikevm/mod.rs", "PikeVM", false));
        assert!(!front(&v, "src/pikevm/mod.rs", "Store", false));
    }

    fn front(v: &[(&'static str, FileTags)], rel: &str, name: &str, reexported: bool) -> bool {
        let (_, tags) = v.iter().find(|(r, _)| *r == rel).unwrap();
        let d = tags.defs.iter().find(|d| d.name == name).unwrap();
        is_front_door(rel, tags, d, reexported)
    }

    /// Position of `rel`'s definition of `name`.
    fn position_in(files: &[(&str, &FileTags)], r: &Ranking, rel: &str, name: &str) -> usize {
        r.defs
            .iter()
            .position(|d| {
                let (path, tags) = files[d.file as usize];
                path == rel && tags.defs[d.def as usize].name == name
            })
            .unwrap_or_else(|| panic!("{rel}: {name} not ranked"))
    }

    #[test]
    fn a_file_that_imports_an_ambiguous_name_references_the_definition_it_imports() {
        // Three `Cache` types; without the imports the first by path wins the tie.
        let cache = "pub struct Cache;\n";
        let v = corpus(&[
            ("src/hybrid/dfa.rs", cache),
            ("src/hybrid/regex.rs", cache),
            ("src/meta/regex.rs", cache),
            (
                "src/meta/strategy.rs",
                "use super::regex::Cache;\npub fn go(c: &mut Cache) {}\n",
            ),
            (
                "src/wrap.rs",
                "use crate::{meta::{regex::{Cache}}};\npub fn go(c: &mut Cache) {}\n",
            ),
        ]);
        let files = refs(&v);
        let r = rank(&files, &Seeds::default());
        let meta = position_in(&files, &r, "src/meta/regex.rs", "Cache");
        assert!(meta < position_in(&files, &r, "src/hybrid/dfa.rs", "Cache"));
        assert!(meta < position_in(&files, &r, "src/hybrid/regex.rs", "Cache"));
        assert_eq!(
            module_path("crates/agent-index/src/lib.rs"),
            ["crates", "agent_index"]
        );
        assert_eq!(module_path("src/hybrid/mod.rs"), ["hybrid"]);
        assert_eq!(module_path("src/meta/regex.rs"), ["meta", "regex"]);
    }

    #[test]
    fn a_reexported_type_or_one_at_the_crate_root_is_a_front_door() {
        let regex = "pub struct Helper;\npub struct Cache;\n";
        let user = "pub fn go(h: Helper, c: Cache) {}\n";
        let v = corpus(&[
            (
                "src/meta/mod.rs",
                "pub use self::regex::Cache;\nuse self::regex::Helper;\n",
            ),
            ("src/meta/regex.rs", regex),
            ("src/a.rs", user),
            ("src/b.rs", user),
            ("crates/agent-tools/src/lib.rs", "pub struct Toolbox;\n"),
            ("crates/agent-tools/src/other.rs", "pub struct Toolbox;\n"),
        ]);
        let files = refs(&v);
        let r = rank(&files, &Seeds::default());
        assert!(position(&files, &r, "Cache") < position(&files, &r, "Helper"));
        assert!(front(&v, "crates/agent-tools/src/lib.rs", "Toolbox", false));
        assert!(!front(
            &v,
            "crates/agent-tools/src/other.rs",
            "Toolbox",
            false
        ));
        assert!(front(
            &v,
            "crates/agent-tools/src/other.rs",
            "Toolbox",
            true
        ));
        // A `pub(crate) use` re-exports nothing beyond the crate.
        let v = corpus(&[
            (
                "src/meta/mod.rs",
                "pub(crate) use self::regex::Cache;\nuse self::regex::Helper;\n",
            ),
            ("src/meta/regex.rs", regex),
            ("src/a.rs", user),
        ]);
        let files = refs(&v);
        let r = rank(&files, &Seeds::default());
        assert!(position(&files, &r, "Helper") < position(&files, &r, "Cache"));
    }

    #[test]
    fn types_a_front_doors_methods_take_share_its_score() {
        let regex = "pub struct Regex;\nimpl Regex {\n    pub fn search_with(&self, cache: &mut Cache) {}\n}\npub struct Unrelated;\npub struct Cache;\n";
        let user = "pub fn go(r: &Regex) {}\n";
        let v = corpus(&[
            ("src/regex.rs", regex),
            ("src/a.rs", user),
            ("src/b.rs", user),
        ]);
        let files = refs(&v);
        let r = rank(&files, &Seeds::default());
        let score = |name: &str| r.defs[position(&files, &r, name)].score;
        assert!(position(&files, &r, "Cache") < position(&files, &r, "Unrelated"));
        assert!(score("Cache") >= COMPANION_SHARE * score("Regex") - 1e-12);
        assert!(score("Cache") < score("Regex"));
    }
}
