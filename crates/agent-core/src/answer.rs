//! Is a final answer an answer? Small models often end a request with text
//! that is not one: the question copied back, our own instructions copied
//! back ("This is the finish call with your best answer."), a tool name
//! (`finiSh`), or words that say nothing about the code ("Your answer is
//! already finished."). [`Judge::check`] names the fault; the loop sends such
//! an answer back to the model, and on the last step ends the request with
//! no answer (exit code 3), showing what the search found instead.

use std::collections::HashSet;

/// Why an answer is not one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fault {
    /// No words at all.
    Empty,
    /// The request, copied back.
    Restates,
    /// Our own prompts or tool names, copied back.
    Parrots,
    /// Nothing that the workspace or the tool results mention.
    NoSubstance,
}

impl Fault {
    /// For logs and the fallback answer: "the model's answer …".
    pub(crate) fn reason(self) -> &'static str {
        match self {
            Fault::Empty => "was empty",
            Fault::Restates => "only repeated the question",
            Fault::Parrots => "only repeated the agent's own instructions",
            Fault::NoSubstance => "said nothing about the code",
        }
    }

    /// What the model is told when its answer is sent back.
    pub(crate) fn feedback(self) -> &'static str {
        match self {
            Fault::Empty | Fault::Restates => FEEDBACK[0],
            Fault::Parrots => FEEDBACK[1],
            Fault::NoSubstance => FEEDBACK[2],
        }
    }
}

/// What the model is told when its answer is sent back, by [`Fault`]; also
/// part of the vocabulary of our own words.
pub(crate) const FEEDBACK: [&str; 3] = [
    "Your answer only repeats the request. Answer it from the tool results above \
(name files and functions), or call another tool first.",
    "Your answer repeats these instructions instead of answering. Answer the user's \
request itself from the tool results above (name files and functions), or call another tool first.",
    "Your answer says nothing about the code. Answer with what the tool results show: \
name the files, functions or values, or call another tool first.",
];

/// Share of an answer's word triples found in our own prompts at or above
/// which the answer is our prompt copied back.
const PARROT_SHARE: f32 = 0.5;

/// Knows the agent's own words (system prompt rules, tool descriptions,
/// loop notices), so it can tell them apart from an answer.
pub(crate) struct Judge {
    ours: HashSet<String>,
    our_triples: HashSet<(String, String, String)>,
}

impl Judge {
    /// `internal`: every text the agent itself puts in front of the model.
    pub(crate) fn new<S: AsRef<str>>(internal: &[S]) -> Self {
        let mut ours = HashSet::new();
        let mut our_triples = HashSet::new();
        for text in internal {
            let w = words(text.as_ref());
            our_triples.extend(triples(&w));
            ours.extend(w);
        }
        Self { ours, our_triples }
    }

    /// The fault of `answer` to `request`, if it has one. `evidence` is what
    /// the model saw of the workspace during the request (tool results, the
    /// repo map); None when the request had no tools to look with, and then
    /// the answer need not be about the code.
    pub(crate) fn check(
        &self,
        answer: &str,
        request: &str,
        evidence: Option<&str>,
    ) -> Option<Fault> {
        let w = words(answer);
        if w.is_empty() {
            return Some(Fault::Empty);
        }
        if restates(answer, request) {
            return Some(Fault::Restates);
        }
        if self.parrots(&w) {
            return Some(Fault::Parrots);
        }
        let evidence = evidence?;
        if answer
            .split(|c: char| c.is_whitespace() || c == ',' || c == '(' || c == ')')
            .any(looks_like_code)
        {
            return None;
        }
        let seen: HashSet<String> = words(evidence).into_iter().collect();
        let substantive = w.iter().any(|word| {
            word.chars().count() >= 3
                && !STOPWORDS.contains(&word.as_str())
                && !self.ours.contains(word)
                && seen.contains(word)
        });
        (!substantive).then_some(Fault::NoSubstance)
    }

    fn parrots(&self, w: &[String]) -> bool {
        let t = triples(w);
        if t.is_empty() {
            // One or two words: a tool name or a word of our prompts alone.
            let stop = |word: &String| STOPWORDS.contains(&word.as_str());
            return w.iter().all(|word| self.is_ours(word) || stop(word))
                && w.iter().any(|word| self.is_ours(word) && !stop(word));
        }
        let hits = t.iter().filter(|t| self.our_triples.contains(*t)).count();
        hits as f32 >= PARROT_SHARE * t.len() as f32
    }
}

impl Judge {
    /// One of our words, or a misspelling of a long one (`finih`, `finsh`).
    fn is_ours(&self, word: &str) -> bool {
        self.ours.contains(word)
            || (word.chars().count() >= 4
                && self
                    .ours
                    .iter()
                    .any(|o| o.chars().count() >= 5 && within_one_edit(word, o)))
    }
}

/// Levenshtein distance at most 1.
fn within_one_edit(a: &str, b: &str) -> bool {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let (short, long) = if a.len() <= b.len() {
        (&a, &b)
    } else {
        (&b, &a)
    };
    if long.len() - short.len() > 1 {
        return false;
    }
    let prefix = short
        .iter()
        .zip(long.iter())
        .take_while(|(x, y)| x == y)
        .count();
    if prefix == short.len() {
        return true; // equal, or one character added at the end
    }
    if short.len() == long.len() {
        short[prefix + 1..] == long[prefix + 1..] // one substitution
    } else {
        short[prefix..] == long[prefix + 1..] // one insertion
    }
}

/// Whether a final answer merely restates the request, as tiny models do when
/// they copy the question into `finish`: no words at all, or a run of the
/// request's own words covering at least four fifths of it. A short answer
/// that names something the request mentions ("src/calc.py") is an answer.
pub(crate) fn restates(answer: &str, request: &str) -> bool {
    let (answer, request) = (words(answer), words(request));
    if answer.is_empty() {
        return true;
    }
    answer.len() >= 3
        && answer.len() * 5 >= request.len() * 4
        && request
            .windows(answer.len())
            .any(|w| w == answer.as_slice())
}

fn words(s: &str) -> Vec<String> {
    s.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

fn triples(w: &[String]) -> Vec<(String, String, String)> {
    w.windows(3)
        .map(|t| (t[0].clone(), t[1].clone(), t[2].clone()))
        .collect()
}

/// `snake_case`, `CamelCase`, `a::b`, `f()`, `path/to.py`, `` `x` ``, `x.y`.
fn looks_like_code(token: &str) -> bool {
    if token.contains('`') || token.contains("::") || token.contains("()") {
        return true;
    }
    let t = token.trim_matches(|c: char| !c.is_alphanumeric() && c != '_');
    let letters = t.chars().filter(|c| c.is_alphabetic()).count();
    if letters < 2 {
        return false;
    }
    let inner_upper =
        t.chars().skip(1).any(char::is_uppercase) && t.chars().any(char::is_lowercase);
    (t.contains('_') && t.len() > 2)
        || inner_upper
        || (t.contains('/') && t.len() > 2)
        || t.split_once('.').is_some_and(|(a, b)| {
            !a.is_empty() && !b.is_empty() && b.chars().all(|c| c.is_alphanumeric() || c == '.')
        })
}

/// Common English words: an answer made only of these says nothing.
#[rustfmt::skip]
const STOPWORDS: &[&str] = &[
    "the", "and", "for", "are", "but", "not", "you", "all", "any", "can", "her", "was", "one",
    "our", "out", "has", "have", "had", "him", "his", "how", "its", "may", "new", "now", "old",
    "see", "two", "way", "who", "did", "get", "got", "let", "put", "say", "she", "too", "use",
    "used", "uses", "this", "that", "these", "those", "with", "from", "your", "yours", "what",
    "when", "where", "which", "while", "will", "would", "there", "their", "them", "then", "than",
    "they", "been", "being", "were", "here", "into", "onto", "also", "just", "only", "some", "such",
    "very", "more", "most", "much", "many", "each", "every", "other", "about", "above", "after",
    "again", "against", "already", "before", "below", "between", "both", "could", "does", "doing",
    "done", "down", "during", "few", "further", "once", "over", "own", "same", "should", "so",
    "under", "until", "upon", "why", "yes", "yet", "well", "good", "great", "sure", "okay", "thing",
    "things", "something", "anything", "nothing", "everything", "make", "makes", "made", "know",
    "known", "like", "need", "needs", "want", "wants", "look", "looks", "give", "gives", "take",
    "takes", "come", "comes", "goes", "going", "gone", "able", "because", "since", "though",
    "although", "however", "therefore", "thus", "please", "thanks", "thank", "hello", "sorry",
    "here's", "it's", "there's", "that's", "let's", "i'm", "i'll", "isn", "aren", "don", "doesn",
    "didn", "won", "wasn", "weren", "hasn", "haven", "shouldn", "couldn", "wouldn", "ready",
    "finished", "complete", "completed", "provided", "given", "following", "information", "based",
    "note",
];

#[cfg(test)]
mod tests {
    use super::*;

    fn judge() -> Judge {
        Judge::new(&[
            "(Step budget: your next reply must be the finish call with your best answer.)",
            "finish: End the request with the answer for the user.",
            "read_file: Read a file, with line numbers.",
        ])
    }

    #[test]
    fn restating_the_request_is_not_an_answer() {
        let q = "Which crate parses the config?";
        assert!(restates("Which crate parses the config?", q));
        assert!(restates("which crate parses the config", q));
        assert!(restates("  ", q));
        assert!(restates("crate parses the config", q));
        assert!(!restates("The toml crate, in src/config.rs.", q));
        let q = "Where is src/calc.py used?";
        assert!(!restates("src/calc.py", q));
        assert!(!restates("In main.py, which imports src/calc.py.", q));
    }

    #[test]
    fn our_own_prompts_and_tool_names_are_not_answers() {
        let j = judge();
        let q = "What does get_debug_flag do?";
        let seen = Some("def get_debug_flag():\n    val = os.environ.get('FLASK_DEBUG')");
        for junk in [
            "This is the finish call with your best answer.",
            "finiSh",
            "finish",
            "finih",
            "Your next reply must be the finish call.",
        ] {
            assert_eq!(j.check(junk, q, seen), Some(Fault::Parrots), "{junk}");
        }
        assert_eq!(
            j.check("Your answer is already finished...", q, seen),
            Some(Fault::NoSubstance)
        );
        assert_eq!(j.check("", q, seen), Some(Fault::Empty));
    }

    #[test]
    fn one_edit_apart() {
        assert!(within_one_edit("finih", "finish"));
        assert!(within_one_edit("finsh", "finish"));
        assert!(within_one_edit("fimish", "finish"));
        assert!(within_one_edit("finish", "finish"));
        assert!(!within_one_edit("fins", "finish"));
        assert!(!within_one_edit("flask", "finish"));
    }

    #[test]
    fn answers_about_the_code_pass() {
        let j = judge();
        let q = "What does get_debug_flag do?";
        let seen = Some("def get_debug_flag():\n    val = os.environ.get('FLASK_DEBUG')");
        for good in [
            "It reads the FLASK_DEBUG environment variable.",
            "get_debug_flag returns whether debug mode is on",
            "See src/flask/helpers.py.",
            "It checks os.environ",
        ] {
            assert_eq!(j.check(good, q, seen), None, "{good}");
        }
        // Without tools, general answers need not name code.
        assert_eq!(
            j.check(
                "Lifetimes bound how long references live.",
                "Explain lifetimes",
                None
            ),
            None
        );
        assert_eq!(j.check("Hello! How can I help?", "hi", None), None);
    }
}
