//! A small GBNF recognizer for tests: it parses llama.cpp's grammar dialect
//! (one rule per line; literals, character classes, groups, alternatives,
//! `* + ? {m} {m,} {m,n}`) and says whether a text matches a rule in full.
//! It checks that the generated grammars are well-formed and admit exactly
//! the calls they should, without a model.

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};

#[derive(Debug, Clone)]
enum Expr {
    Seq(Vec<Expr>),
    Alt(Vec<Expr>),
    Lit(Vec<char>),
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
    Any,
    Ref(String),
    Repeat(Box<Expr>, usize, Option<usize>),
}

pub(super) struct Grammar {
    rules: HashMap<String, Expr>,
}

impl Grammar {
    pub(super) fn parse(text: &str) -> Result<Self, String> {
        let mut rules = HashMap::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (name, body) = line
                .split_once("::=")
                .ok_or_else(|| format!("line {}: no `::=` in {line:?}", n + 1))?;
            let name = name.trim();
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
                return Err(format!("line {}: bad rule name {name:?}", n + 1));
            }
            let mut parser = Parser {
                chars: body.chars().collect(),
                pos: 0,
            };
            let expr = parser.alternatives()?;
            parser.skip_ws();
            if parser.pos != parser.chars.len() {
                return Err(format!(
                    "line {}: unexpected {:?}",
                    n + 1,
                    &body[parser.byte_pos()..]
                ));
            }
            if rules.insert(name.to_string(), expr).is_some() {
                return Err(format!("rule {name} defined twice"));
            }
        }
        let grammar = Self { rules };
        for expr in grammar.rules.values() {
            grammar.check_refs(expr)?;
        }
        Ok(grammar)
    }

    fn check_refs(&self, e: &Expr) -> Result<(), String> {
        match e {
            Expr::Ref(name) if !self.rules.contains_key(name) => {
                Err(format!("undefined rule {name}"))
            }
            Expr::Seq(items) | Expr::Alt(items) => {
                items.iter().try_for_each(|i| self.check_refs(i))
            }
            Expr::Repeat(inner, _, _) => self.check_refs(inner),
            _ => Ok(()),
        }
    }

    /// Whether all of `input` matches `rule`.
    pub(super) fn matches(&self, rule: &str, input: &str) -> bool {
        let input: Vec<char> = input.chars().collect();
        let matcher = Matcher {
            grammar: self,
            input: &input,
            memo: RefCell::new(HashMap::new()),
        };
        matcher.rule(rule, 0).contains(&input.len())
    }
}

struct Parser {
    chars: Vec<char>,
    pos: usize,
}

impl Parser {
    fn byte_pos(&self) -> usize {
        self.chars[..self.pos].iter().map(|c| c.len_utf8()).sum()
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.pos += 1;
        }
    }

    fn alternatives(&mut self) -> Result<Expr, String> {
        let mut alts = vec![self.sequence()?];
        while self.peek() == Some('|') {
            self.pos += 1;
            alts.push(self.sequence()?);
        }
        Ok(if alts.len() == 1 {
            alts.pop().unwrap()
        } else {
            Expr::Alt(alts)
        })
    }

    fn sequence(&mut self) -> Result<Expr, String> {
        let mut items = Vec::new();
        loop {
            self.skip_ws();
            match self.peek() {
                None | Some('|') | Some(')') => break,
                _ => {
                    let primary = self.primary()?;
                    items.push(self.postfix(primary)?);
                }
            }
        }
        Ok(Expr::Seq(items))
    }

    fn primary(&mut self) -> Result<Expr, String> {
        match self.peek().unwrap() {
            '"' => {
                self.pos += 1;
                let mut lit = Vec::new();
                loop {
                    match self.peek() {
                        None => return Err("unterminated literal".into()),
                        Some('"') => {
                            self.pos += 1;
                            return Ok(Expr::Lit(lit));
                        }
                        Some('\\') => lit.push(self.escape()?),
                        Some(c) => {
                            lit.push(c);
                            self.pos += 1;
                        }
                    }
                }
            }
            '[' => {
                self.pos += 1;
                let negated = self.peek() == Some('^');
                if negated {
                    self.pos += 1;
                }
                let mut ranges = Vec::new();
                loop {
                    let first = match self.peek() {
                        None => return Err("unterminated class".into()),
                        Some(']') => {
                            self.pos += 1;
                            return Ok(Expr::Class { negated, ranges });
                        }
                        Some('\\') => self.escape()?,
                        Some(c) => {
                            self.pos += 1;
                            c
                        }
                    };
                    let last =
                        if self.peek() == Some('-') && self.chars.get(self.pos + 1) != Some(&']') {
                            self.pos += 1;
                            match self.peek() {
                                Some('\\') => self.escape()?,
                                Some(c) => {
                                    self.pos += 1;
                                    c
                                }
                                None => return Err("unterminated range".into()),
                            }
                        } else {
                            first
                        };
                    ranges.push((first, last));
                }
            }
            '(' => {
                self.pos += 1;
                let inner = self.alternatives()?;
                self.skip_ws();
                if self.peek() != Some(')') {
                    return Err("missing `)`".into());
                }
                self.pos += 1;
                Ok(inner)
            }
            '.' => {
                self.pos += 1;
                Ok(Expr::Any)
            }
            c if c.is_ascii_alphanumeric() || c == '-' => {
                let start = self.pos;
                while self
                    .peek()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || c == '-')
                {
                    self.pos += 1;
                }
                Ok(Expr::Ref(self.chars[start..self.pos].iter().collect()))
            }
            c => Err(format!("unexpected {c:?}")),
        }
    }

    fn escape(&mut self) -> Result<char, String> {
        self.pos += 1; // the backslash
        let c = self.peek().ok_or("dangling escape")?;
        self.pos += 1;
        let hex = |p: &mut Parser, n: usize| -> Result<char, String> {
            let digits: String = p.chars[p.pos..p.pos + n].iter().collect();
            p.pos += n;
            u32::from_str_radix(&digits, 16)
                .ok()
                .and_then(char::from_u32)
                .ok_or_else(|| format!("bad escape {digits}"))
        };
        Ok(match c {
            'n' => '\n',
            'r' => '\r',
            't' => '\t',
            'x' => hex(self, 2)?,
            'u' => hex(self, 4)?,
            'U' => hex(self, 8)?,
            c => c,
        })
    }

    fn postfix(&mut self, mut e: Expr) -> Result<Expr, String> {
        loop {
            e = match self.peek() {
                Some('*') => Expr::Repeat(Box::new(e), 0, None),
                Some('+') => Expr::Repeat(Box::new(e), 1, None),
                Some('?') => Expr::Repeat(Box::new(e), 0, Some(1)),
                Some('{') => {
                    let end = self.chars[self.pos..]
                        .iter()
                        .position(|&c| c == '}')
                        .ok_or("missing `}`")?;
                    let body: String = self.chars[self.pos + 1..self.pos + end].iter().collect();
                    self.pos += end;
                    let num = |s: &str| {
                        s.trim()
                            .parse::<usize>()
                            .map_err(|_| format!("bad count {body:?}"))
                    };
                    let (min, max) = match body.split_once(',') {
                        None => (num(&body)?, Some(num(&body)?)),
                        Some((m, n)) if n.trim().is_empty() => (num(m)?, None),
                        Some((m, n)) => (num(m)?, Some(num(n)?)),
                    };
                    Expr::Repeat(Box::new(e), min, max)
                }
                _ => return Ok(e),
            };
            self.pos += 1;
        }
    }
}

struct Matcher<'a> {
    grammar: &'a Grammar,
    input: &'a [char],
    memo: RefCell<HashMap<(String, usize), BTreeSet<usize>>>,
}

impl Matcher<'_> {
    fn rule(&self, name: &str, pos: usize) -> BTreeSet<usize> {
        let key = (name.to_string(), pos);
        if let Some(done) = self.memo.borrow().get(&key) {
            return done.clone();
        }
        let ends = self.ends(&self.grammar.rules[name], pos);
        self.memo.borrow_mut().insert(key, ends.clone());
        ends
    }

    /// Every position where a match of `e` starting at `pos` can end.
    fn ends(&self, e: &Expr, pos: usize) -> BTreeSet<usize> {
        let one_char = |ok: &dyn Fn(char) -> bool| -> BTreeSet<usize> {
            match self.input.get(pos) {
                Some(&c) if ok(c) => BTreeSet::from([pos + 1]),
                _ => BTreeSet::new(),
            }
        };
        match e {
            Expr::Lit(lit) => {
                if self.input[pos.min(self.input.len())..].starts_with(lit) {
                    BTreeSet::from([pos + lit.len()])
                } else {
                    BTreeSet::new()
                }
            }
            Expr::Class { negated, ranges } => {
                one_char(&|c| ranges.iter().any(|&(a, b)| a <= c && c <= b) != *negated)
            }
            Expr::Any => one_char(&|_| true),
            Expr::Ref(name) => self.rule(name, pos),
            Expr::Alt(alts) => alts.iter().flat_map(|a| self.ends(a, pos)).collect(),
            Expr::Seq(items) => items.iter().fold(BTreeSet::from([pos]), |starts, item| {
                starts.iter().flat_map(|&p| self.ends(item, p)).collect()
            }),
            Expr::Repeat(inner, min, max) => {
                let mut out = BTreeSet::new();
                let mut frontier = BTreeSet::from([pos]);
                let mut seen = BTreeSet::new();
                for count in 0.. {
                    if count >= *min {
                        out.extend(frontier.iter().copied());
                    }
                    if max.is_some_and(|m| count >= m) || frontier.is_empty() {
                        break;
                    }
                    let next: BTreeSet<usize> = frontier
                        .iter()
                        .flat_map(|&p| self.ends(inner, p))
                        // Past the minimum, a position reached before adds nothing.
                        .filter(|p| count < *min || seen.insert(*p))
                        .collect();
                    frontier = next;
                }
                out
            }
        }
    }
}

#[test]
fn the_recognizer_reads_gbnf() {
    let g = Grammar::parse(
        "root ::= \"a\" ( b | [x-z]{2,3} )? c*\nb ::= \"\\n\" [^a] \nc ::= | \"c\" | \"\\u00e9\"",
    )
    .unwrap();
    assert!(g.matches("root", "a"));
    assert!(g.matches("root", "a\nq"));
    assert!(g.matches("root", "axyzcé"));
    assert!(!g.matches("root", "ax"));
    assert!(!g.matches("root", "a\na"));
    assert!(Grammar::parse("root ::= missing").is_err());
}
