//! Writing a file so that a reader sees the old content or the new, whole:
//! a temporary file in the same folder, then a rename.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// Writes through a temporary file in the same folder and a rename, keeping
/// the permissions of the file it replaces (or `mode` for a new file).
/// Missing parent folders are created.
pub fn atomic_write(path: &Path, bytes: &[u8], mode: Option<u32>) -> std::io::Result<()> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let dir = path
        .parent()
        .ok_or_else(|| std::io::Error::other("a file path has a parent folder"))?;
    std::fs::create_dir_all(dir)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(
        ".{name}.agent-tmp-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let keep = std::fs::metadata(path)
        .ok()
        .map(|m| m.permissions().mode() & 0o7777)
        .or(mode);
    let result = (|| {
        use std::io::Write;
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_data()?;
        drop(f);
        if let Some(m) = keep {
            std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(m))?;
        }
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_keeps_permissions_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.sh");
        std::fs::write(&p, "old").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        atomic_write(&p, b"new", None).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"new");
        assert_eq!(
            std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o755
        );
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        let n = dir.path().join("a/b/new.txt");
        atomic_write(&n, b"x", Some(0o600)).unwrap();
        assert_eq!(
            std::fs::metadata(&n).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
}
