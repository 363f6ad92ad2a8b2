//! Rendering: a file-by-file outline of signature lines, and the search for
//! how many ranked definitions fit a token budget.
//!
//! ```text
//! src/llm/engine.rs:
//!   impl LlamaEngine
//!     pub fn load(config: &EngineConfig) -> Result<Self, LlmError>
//!   pub fn system_info() -> String
//! ```
//!
//! The outline is laid out once for the whole ranking, and a budget only
//! says where it ends: the map for a smaller budget is the map for a larger
//! one cut at the end of a line. A busier machine sizes the first prompt
//! smaller (`agent-core`'s `first_prompt`); cut rather than laid out
//! afresh, that prompt shares all of its map with the one the prompt cache
//! on disk holds.
//!
//! The ranking is laid out in tiers of [`TIER_DEFS`] definitions, best
//! first. A tier shows its definitions grouped by file, files in the order
//! their best definition in the tier is ranked, definitions in line order
//! under their scope headers; a file with definitions in several tiers is
//! named again in each (but where one tier ends with it and the next opens
//! with it). So a cut anywhere keeps the ranking but within one
//! tier, and the map reads as a file-by-file outline.

use super::rank::Ranking;
use super::tags::FileTags;

/// The outline that fits, and what it holds.
#[derive(Debug, Clone, PartialEq)]
pub struct Fitted {
    pub text: String,
    pub tokens: usize,
    pub files_shown: usize,
    pub defs_shown: usize,
}

/// Ranked definitions per tier of the outline (see the module's doc). Each
/// tier names its files again: smaller tiers keep the ranking more closely,
/// larger ones repeat fewer headers. At 24, a 655-token map of this
/// repository's crates shows 90-95% as many of the top definitions as one
/// laid out afresh for its budget (16 and 32 do a little worse, pure rank
/// order about 80%).
pub(crate) const TIER_DEFS: usize = 24;

/// Precomputed for rendering any prefix of the outline.
struct Layout<'a> {
    files: &'a [(&'a str, &'a FileTags)],
    ranking: &'a Ranking,
    /// Indices into `ranking.defs` in the order the outline shows them:
    /// tier after tier of ranked definitions, each grouped by file
    /// (files in the order of their best definition in the tier) and in
    /// line order within a file.
    order: Vec<u32>,
    /// `approx_chars[k]`: rough size of the rendering of the first `k`
    /// definitions of `order`, used only to guess which `k` to measure next.
    approx_chars: Vec<usize>,
}

const INDENT: &str = "  ";

impl<'a> Layout<'a> {
    fn new(files: &'a [(&'a str, &'a FileTags)], ranking: &'a Ranking, tier: usize) -> Self {
        let tier = tier.max(1);
        let mut order = Vec::with_capacity(ranking.defs.len());
        // Per file: the tier (+1) in which `first_pos` was set, and the
        // position of the file's best definition in that tier.
        let mut stamp = vec![0usize; files.len()];
        let mut first_pos = vec![0usize; files.len()];
        for (t, chunk) in ranking.defs.chunks(tier).enumerate() {
            let start = t * tier;
            let mut picked: Vec<(usize, u32, u32)> = Vec::with_capacity(chunk.len());
            for (i, d) in chunk.iter().enumerate() {
                let f = d.file as usize;
                if stamp[f] != t + 1 {
                    stamp[f] = t + 1;
                    first_pos[f] = i;
                }
                picked.push((first_pos[f], d.def, (start + i) as u32));
            }
            // (file order, definition index): definitions are stored in line order.
            picked.sort_unstable();
            order.extend(picked.into_iter().map(|(_, _, pos)| pos));
        }
        let mut approx_chars = Vec::with_capacity(order.len() + 1);
        approx_chars.push(0);
        let mut total = 0;
        let mut current = u32::MAX;
        for &pos in &order {
            let d = &ranking.defs[pos as usize];
            if d.file != current {
                current = d.file;
                total += files[d.file as usize].0.len() + 2;
            }
            total += files[d.file as usize].1.defs[d.def as usize]
                .signature
                .len()
                + 2 * INDENT.len()
                + 1;
            approx_chars.push(total);
        }
        Layout {
            files,
            ranking,
            order,
            approx_chars,
        }
    }

    /// The largest `k` whose approximate rendering has at most `chars` characters.
    fn defs_within(&self, chars: f64) -> usize {
        self.approx_chars
            .partition_point(|&c| c as f64 <= chars)
            .saturating_sub(1)
    }

    /// The outline of the first `k` definitions of `order`, and how many
    /// files it shows. Each line only appends to the outline of `k - 1`.
    fn render(&self, k: usize) -> (String, usize) {
        let mut out = String::with_capacity(self.approx_chars[k] + 64);
        let mut shown = vec![false; self.files.len()];
        let mut files_shown = 0;
        let mut current = u32::MAX;
        let mut open: Vec<u32> = Vec::new(); // scopes whose header is printed, outermost first
        for &pos in &self.order[..k] {
            let d = &self.ranking.defs[pos as usize];
            let (rel, tags) = self.files[d.file as usize];
            if d.file != current {
                current = d.file;
                if !std::mem::replace(&mut shown[d.file as usize], true) {
                    files_shown += 1;
                }
                open.clear();
                // A newline in a file name would read as a line of the map.
                out.push_str(&agent_base::term::escape_line(rel));
                out.push_str(":\n");
            }
            let def = &tags.defs[d.def as usize];
            let chain = tags.scope_chain(def);
            let common = open.iter().zip(&chain).take_while(|(a, b)| a == b).count();
            open.truncate(common);
            for &s in &chain[common..] {
                push_line(&mut out, open.len() + 1, &tags.scopes[s as usize].text);
                open.push(s);
            }
            push_line(&mut out, open.len() + 1, &def.signature);
            // A printed trait/class/module is the header of what follows inside it.
            if let Some(s) = def.opens {
                open.push(s);
            }
        }
        (out, files_shown)
    }
}

fn push_line(out: &mut String, depth: usize, text: &str) {
    for _ in 0..depth {
        out.push_str(INDENT);
    }
    out.push_str(text);
    out.push('\n');
}

/// The longest prefix of the outline (whole lines, the first `k`
/// definitions of the layout) that fits `budget` tokens as counted by
/// `count_tokens`: a prefix of what any larger budget gets. Only measured
/// renderings are returned, so the result never exceeds the budget (unless
/// even the empty map does).
///
/// The search brackets the answer from a size estimate, then alternates
/// interpolation (tokens per character, measured on the previous probe) with
/// bisection: few probes, each near the final size, so an exact tokenizer
/// costs little.
pub fn fit(
    files: &[(&str, &FileTags)],
    ranking: &Ranking,
    budget: usize,
    count_tokens: &dyn Fn(&str) -> usize,
) -> Fitted {
    let layout = Layout::new(files, ranking, TIER_DEFS);
    let total = ranking.defs.len();
    let mut best = Fitted {
        text: String::new(),
        tokens: count_tokens(""),
        files_shown: 0,
        defs_shown: 0,
    };
    // Invariant: the top `lo` fit (0 trivially); the top `hi` do not, or `hi > total`.
    let (mut lo, mut hi) = (0usize, total + 1);
    let mut tokens_per_char = 0.25; // a first guess: about 4 characters per token
    let mut step = 0;
    while hi - lo > 1 {
        let estimate = layout.defs_within(budget as f64 / tokens_per_char);
        let probe = if hi > total {
            // No upper bound yet: overshoot the estimate a little to get one.
            (estimate + estimate / 5 + 1).max(2 * lo)
        } else if step % 2 == 1 {
            estimate
        } else {
            lo + (hi - lo) / 2
        };
        let probe = probe.clamp(lo + 1, hi - 1);
        let (text, files_shown) = layout.render(probe);
        let tokens = count_tokens(&text);
        if layout.approx_chars[probe] > 0 && tokens > 0 {
            tokens_per_char = tokens as f64 / layout.approx_chars[probe] as f64;
        }
        if tokens <= budget {
            lo = probe;
            best = Fitted {
                text,
                tokens,
                files_shown,
                defs_shown: probe,
            };
        } else {
            hi = probe;
        }
        step += 1;
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rank::{rank, Seeds};
    use crate::tags::Tagger;
    use agent_lang::walk::Lang;

    fn approx_tokens(s: &str) -> usize {
        s.len().div_ceil(4)
    }

    const ENGINE: &str = r#"
pub struct LlamaEngine { n: usize }
impl LlamaEngine {
    pub fn load(config: &EngineConfig) -> Result<Self, LlmError> { todo!() }
    pub fn unload(&mut self) {}
}
pub fn system_info() -> String { String::new() }
pub trait Provider {
    fn complete(&self, prompt: &str) -> String;
    fn name(&self) -> &str;
}
"#;
    const USER: &str = r#"
use crate::engine::{LlamaEngine, system_info, Provider};
pub fn main_loop(config: &EngineConfig) {
    let e = LlamaEngine::load(config).unwrap();
    println!("{}", system_info());
}
"#;

    fn sample() -> Vec<(&'static str, FileTags)> {
        let mut t = Tagger::new();
        vec![
            ("src/app.rs", t.tag(Lang::Rust, USER)),
            ("src/engine.rs", t.tag(Lang::Rust, ENGINE)),
        ]
    }

    #[test]
    fn outline_groups_by_file_with_scope_headers() {
        let v = sample();
        let files: Vec<(&str, &FileTags)> = v.iter().map(|(r, t)| (*r, t)).collect();
        let ranking = rank(&files, &Seeds::default());
        let layout = Layout::new(&files, &ranking, TIER_DEFS);
        let (text, n) = layout.render(ranking.defs.len());
        assert_eq!(n, 2);
        assert_eq!(
            text,
            "src/engine.rs:
  pub struct LlamaEngine
  impl LlamaEngine
    pub fn load(config: &EngineConfig) -> Result<Self, LlmError>
    pub fn unload(&mut self)
  pub fn system_info() -> String
  pub trait Provider
    fn complete(&self, prompt: &str) -> String
    fn name(&self) -> &str
src/app.rs:
  pub fn main_loop(config: &EngineConfig)
"
        );
        // A method shown without its trait still gets the trait as header.
        let only_name = ranking
            .defs
            .iter()
            .position(|d| files[d.file as usize].1.defs[d.def as usize].name == "name")
            .unwrap();
        let mut partial = ranking.clone();
        partial.defs = vec![ranking.defs[only_name]];
        let (text, _) = Layout::new(&files, &partial, TIER_DEFS).render(1);
        assert_eq!(
            text,
            "src/engine.rs:\n  pub trait Provider\n    fn name(&self) -> &str\n"
        );
    }

    #[test]
    fn fit_never_exceeds_the_budget_and_uses_it() {
        let v = sample();
        let files: Vec<(&str, &FileTags)> = v.iter().map(|(r, t)| (*r, t)).collect();
        let ranking = rank(&files, &Seeds::default());
        let full = Layout::new(&files, &ranking, TIER_DEFS)
            .render(ranking.defs.len())
            .0;
        for budget in 0..=approx_tokens(&full) + 5 {
            let f = fit(&files, &ranking, budget, &approx_tokens);
            assert!(f.tokens <= budget, "budget {budget}: {} tokens", f.tokens);
            assert_eq!(f.tokens, approx_tokens(&f.text));
            // Maximal: one more definition would not fit.
            if f.defs_shown < ranking.defs.len() {
                let more = Layout::new(&files, &ranking, TIER_DEFS)
                    .render(f.defs_shown + 1)
                    .0;
                assert!(approx_tokens(&more) > budget);
            }
        }
        let f = fit(&files, &ranking, 0, &approx_tokens);
        assert_eq!((f.text.as_str(), f.defs_shown, f.files_shown), ("", 0, 0));
        let f = fit(&files, &ranking, 10_000, &approx_tokens);
        assert_eq!(f.text, full);
    }
}
