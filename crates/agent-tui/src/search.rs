//! Ctrl-R: the history searched backwards, as a shell does. What is typed
//! narrows to the latest entry containing it, Ctrl-R again goes to older
//! ones; Enter takes the entry into the editor, Esc puts the draft back.

use crate::history::History;

pub(crate) struct ReverseSearch {
    pub query: String,
    /// The entry shown: its index in the history.
    found: Option<usize>,
    /// Nothing (older) matches the query.
    pub failed: bool,
    /// The editor's text before the search, back on Esc.
    pub draft: String,
}

impl ReverseSearch {
    pub(crate) fn new(draft: &str) -> Self {
        Self {
            query: String::new(),
            found: None,
            failed: false,
            draft: draft.to_string(),
        }
    }

    /// The query changed: the latest entry matching it; on a miss the
    /// last match stays in view.
    pub(crate) fn retype(&mut self, history: &History) {
        let found = history.find(&self.query, None);
        self.failed = found.is_none();
        if found.is_some() {
            self.found = found;
        }
    }

    /// Ctrl-R again: the next older match; the current one stays when there is none.
    pub(crate) fn older(&mut self, history: &History) {
        let older = match self.found {
            Some(at) => history.find(&self.query, Some(at)),
            None => history.find(&self.query, None),
        };
        self.failed = older.is_none();
        if older.is_some() {
            self.found = older;
        }
    }

    /// What the editor shows: the entry found, else the draft.
    pub(crate) fn text(&self, history: &History) -> String {
        self.found
            .and_then(|i| history.get(i))
            .unwrap_or(&self.draft)
            .to_string()
    }

    /// The line above the input.
    pub(crate) fn prompt(&self) -> String {
        let state = if self.failed {
            "no match"
        } else {
            "search history"
        };
        format!("{state}: {}▏", self.query)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typing_narrows_ctrl_r_goes_older_and_a_miss_keeps_the_last_match() {
        let mut history = History::open(None);
        for entry in ["alpha one", "beta two", "alpha three"] {
            history.push(entry);
        }
        let mut s = ReverseSearch::new("draft");
        assert_eq!(s.text(&history), "draft");
        s.query.push_str("alp");
        s.retype(&history);
        assert_eq!(s.text(&history), "alpha three");
        s.older(&history);
        assert_eq!(s.text(&history), "alpha one");
        s.older(&history);
        assert!(s.failed);
        assert_eq!(s.text(&history), "alpha one");
        s.query = "zzz".into();
        s.retype(&history);
        assert!(s.failed);
        assert_eq!(s.text(&history), "alpha one");
        assert_eq!(s.prompt(), "no match: zzz▏");
    }
}
