//! Files given with a request (`agent ask -f`, an editor's embedded
//! resources), as the fenced blocks the model reads.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

/// Attached files larger than this are refused: they would not fit a small
/// model's context anyway, and the error says so up front.
pub const MAX_ATTACHMENT_BYTES: u64 = 256 * 1024;

/// A file's text as the model reads it: named, then fenced.
pub fn fenced(name: &str, text: &str) -> String {
    format!("File `{name}`:\n```\n{}\n```\n", text.trim_end())
}

/// The files, each a fenced block followed by a blank line, in order; the
/// first one that cannot be attached is the error.
pub fn attachments(paths: &[PathBuf]) -> Result<String> {
    let mut out = String::new();
    for path in paths {
        out.push_str(&attachment(path)?);
        out.push('\n');
    }
    Ok(out)
}

/// One file's fenced block, or a clear refusal (missing, not a regular
/// file, too large, binary).
pub fn attachment(path: &Path) -> Result<String> {
    attachment_as(path, &path.display().to_string())
}

/// [`attachment`], the file named `shown` (a chat's `@path`: relative to
/// the workspace).
pub fn attachment_as(path: &Path, shown: &str) -> Result<String> {
    let meta =
        std::fs::metadata(path).with_context(|| format!("cannot read {}", path.display()))?;
    if !meta.is_file() {
        bail!("{} is not a regular file", path.display());
    }
    if meta.len() > MAX_ATTACHMENT_BYTES {
        bail!(
            "{} is {} KiB; attachments are limited to {} KiB\n  fix: attach a smaller file or an excerpt",
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
    Ok(fenced(shown, &String::from_utf8_lossy(&bytes)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_named_and_fenced_with_a_blank_line_after() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.txt");
        std::fs::write(&path, "hello\n\n").unwrap();
        let text = attachments(std::slice::from_ref(&path)).unwrap();
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
}
