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
//! Rendering the top `k` definitions shows them grouped by file, files in the
//! order their best definition is ranked, definitions in line order under
//! their scope headers. The order of files does not depend on `k`, so a
//! bigger budget extends the map rather than reshuffling it.

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

/// Precomputed for rendering any prefix of the ranking.
struct Layout<'a> {
    files: &'a [(&'a str, &'a FileTags)],
    ranking: &'a Ranking,
    /// Per file: position of its best definition in the ranking (`u32::MAX` if none).
    first_pos: Vec<u32>,
    /// `approx_chars[k]`: rough size of the rendering of the top `k` definitions,
    /// used only to guess which `k` to measure next.
    approx_chars: Vec<usize>,
}

const INDENT: &str = "  ";

impl<'a> Layout<'a> {
    fn new(files: &'a [(&'a str, &'a FileTags)], ranking: &'a Ranking) -> Self {
        let mut first_pos = vec![u32::MAX; files.len()];
        let mut approx_chars = Vec::with_capacity(ranking.defs.len() + 1);
        approx_chars.push(0);
        let mut total = 0;
        for (pos, d) in ranking.defs.iter().enumerate() {
            let slot = &mut first_pos[d.file as usize];
            if *slot == u32::MAX {
                *slot = pos as u32;
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
            first_pos,
            approx_chars,
        }
    }

    /// The largest `k` whose approximate rendering has at most `chars` characters.
    fn defs_within(&self, chars: f64) -> usize {
        self.approx_chars
            .partition_point(|&c| c as f64 <= chars)
            .saturating_sub(1)
    }

    /// The outline of the top `k` definitions, and how many files it shows.
    fn render(&self, k: usize) -> (String, usize) {
        let mut picked: Vec<(u32, u32)> = self.ranking.defs[..k]
            .iter()
            .map(|d| (self.first_pos[d.file as usize], d.def))
            .collect();
        // (file order, definition index): definitions are stored in line order.
        picked.sort_unstable();
        let mut out = String::with_capacity(self.approx_chars[k] + 64);
        let mut files_shown = 0;
        let mut current = u32::MAX;
        let mut open: Vec<u32> = Vec::new(); // scopes whose header is printed, outermost first
        for (first, di) in picked {
            let file = self.ranking.defs[first as usize].file;
            let (rel, tags) = self.files[file as usize];
            if file != current {
                current = file;
                files_shown += 1;
                open.clear();
                // A newline in a file name would read as a line of the map.
                out.push_str(&agent_base::term::escape_line(rel));
                out.push_str(":\n");
            }
            let def = &tags.defs[di as usize];
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

/// The longest prefix of the ranking whose outline fits `budget` tokens as
/// counted by `count_tokens`. Only measured renderings are returned, so the
/// result never exceeds the budget (unless even the empty map does).
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
    let layout = Layout::new(files, ranking);
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
        let layout = Layout::new(&files, &ranking);
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
        let (text, _) = Layout::new(&files, &partial).render(1);
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
        let full = Layout::new(&files, &ranking).render(ranking.defs.len()).0;
        for budget in 0..=approx_tokens(&full) + 5 {
            let f = fit(&files, &ranking, budget, &approx_tokens);
            assert!(f.tokens <= budget, "budget {budget}: {} tokens", f.tokens);
            assert_eq!(f.tokens, approx_tokens(&f.text));
            // Maximal: one more definition would not fit.
            if f.defs_shown < ranking.defs.len() {
                let more = Layout::new(&files, &ranking).render(f.defs_shown + 1).0;
                assert!(approx_tokens(&more) > budget);
            }
        }
        let f = fit(&files, &ranking, 0, &approx_tokens);
        assert_eq!((f.text.as_str(), f.defs_shown, f.files_shown), ("", 0, 0));
        let f = fit(&files, &ranking, 10_000, &approx_tokens);
        assert_eq!(f.text, full);
    }
}
