//! Files given with a request (`agent ask -f`, a chat's `@path`, an
//! editor's embedded resources): read here, fitted to the context window by
//! the loop ([`crate::budget`]), and sent as the fenced blocks the model
//! reads, before the user's words. Binary files and files over
//! [`MAX_ATTACHMENT_BYTES`] are refused with an error that says what to do.

use std::ops::Range;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

/// Attached files larger than this are refused: past it, what the model
/// reads is an outline and excerpts ([`crate::budget::excerpt`]) of a file
/// the user did better to name by path; the error says so up front.
pub(crate) const MAX_ATTACHMENT_BYTES: u64 = 256 * 1024;

/// What introduces an attached file's block.
const HEADER: (&str, &str) = ("File `", "`:\n");

pub(crate) use agent_protocol::request::{Attachment, Request};

/// A file's text as the model reads it: named, then fenced by more
/// backticks than any run inside it, so the block ends where it says
/// ([`blocks`] finds it again in a stored turn).
pub(crate) fn fenced(name: &str, text: &str) -> String {
    let fence = "`".repeat(longest_backtick_run(text).max(2) + 1);
    format!(
        "{}{name}{}{fence}\n{}\n{fence}\n",
        HEADER.0,
        HEADER.1,
        text.trim_end()
    )
}

fn longest_backtick_run(text: &str) -> usize {
    text.split(|c| c != '`').map(str::len).max().unwrap_or(0)
}

/// The attached files' blocks in `content` (a request turn's text): each
/// file's name and the byte range of its text.
pub(crate) fn blocks(content: &str) -> Vec<(String, Range<usize>)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = content[from..].find(HEADER.0).map(|i| from + i) {
        from = at + HEADER.0.len();
        let line_start = at == 0 || content[..at].ends_with('\n');
        let Some(end_of_name) = content[from..].find(HEADER.1).map(|i| from + i) else {
            break;
        };
        let name = &content[from..end_of_name];
        if !line_start || name.contains('\n') {
            continue;
        }
        let fence_at = end_of_name + HEADER.1.len();
        let fence_len = content[fence_at..]
            .bytes()
            .take_while(|&b| b == b'`')
            .count();
        if fence_len < 3 || !content[fence_at + fence_len..].starts_with('\n') {
            continue;
        }
        let body = fence_at + fence_len + 1;
        let close = format!("\n{}\n", &content[fence_at..fence_at + fence_len]);
        let Some(end) = content[body - 1..].find(&close).map(|i| body - 1 + i) else {
            continue;
        };
        out.push((name.to_string(), body..end.max(body)));
        from = end + close.len();
    }
    out
}

/// What follows the last attached file's block in `content`: the user's
/// words.
pub(crate) fn after_blocks(content: &str) -> &str {
    match blocks(content).last() {
        Some((_, body)) => {
            let rest = &content[body.end..];
            // The closing fence's line, and the blank line after it.
            rest.trim_start_matches('\n')
                .trim_start_matches('`')
                .trim_start_matches('\n')
        }
        None => content,
    }
}

/// The files, in order; the first one that cannot be attached is the error.
pub fn attachments(paths: &[PathBuf]) -> Result<Vec<Attachment>> {
    paths.iter().map(|path| attachment(path)).collect()
}

/// One file, or a clear refusal (missing, not a regular file, too large,
/// binary).
pub(crate) fn attachment(path: &Path) -> Result<Attachment> {
    attachment_as(path, &path.display().to_string())
}

/// [`attachment`], the file named `shown` (a chat's `@path`: relative to
/// the workspace).
pub fn attachment_as(path: &Path, shown: &str) -> Result<Attachment> {
    let meta =
        std::fs::metadata(path).with_context(|| format!("cannot read {}", path.display()))?;
    if !meta.is_file() {
        bail!("{} is not a regular file", path.display());
    }
    if meta.len() > MAX_ATTACHMENT_BYTES {
        bail!(
            "{} is {} KiB; attachments are limited to {} KiB\n  fix: attach a smaller file or an excerpt, or name the file in the question and let the agent read it",
            path.display(),
            meta.len() / 1024,
            MAX_ATTACHMENT_BYTES / 1024
        );
    }
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    if bytes.contains(&0) {
        bail!(
            "{} looks binary; only text files can be attached",
            path.display()
        );
    }
    Ok(Attachment {
        name: shown.to_string(),
        text: String::from_utf8_lossy(&bytes).into_owned(),
    })
}

/// The attachments as the model reads them: each a fenced block followed by
/// a blank line, in order.
pub(crate) fn render(attachments: &[Attachment]) -> String {
    let mut out = String::new();
    for a in attachments {
        out.push_str(&fenced(&a.name, &a.text));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_named_and_fenced_with_a_blank_line_after() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.txt");
        std::fs::write(&path, "hello\n\n").unwrap();
        let text = render(&attachments(std::slice::from_ref(&path)).unwrap());
        assert_eq!(
            text,
            format!("File `{}`:\n```\nhello\n```\n\n", path.display())
        );
    }

    #[test]
    fn binaries_and_folders_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("b.bin");
        std::fs::write(&path, [1u8, 0, 2]).unwrap();
        let why = attachment(&path).unwrap_err().to_string();
        assert!(why.contains("looks binary"), "{why}");
        let why = attachment(dir.path()).unwrap_err().to_string();
        assert!(why.contains("not a regular file"), "{why}");
    }

    #[test]
    fn blocks_are_found_again_whatever_fences_their_text_holds() {
        let a = Attachment {
            name: "README.md".into(),
            text: "# Use\n```sh\nrun it\n```\nand ````` five".into(),
        };
        let b = Attachment {
            name: "src/x.rs".into(),
            text: "fn x() {}\n".into(),
        };
        let content = format!(
            "context first\n\n{}Explain File `y`: please",
            render(&[a.clone(), b.clone()])
        );
        let found = blocks(&content);
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(found[0].0, "README.md");
        assert_eq!(&content[found[0].1.clone()], a.text);
        assert_eq!(found[1].0, "src/x.rs");
        assert_eq!(&content[found[1].1.clone()], "fn x() {}");
        assert!(blocks("Explain File `y`: please").is_empty());
    }
}
