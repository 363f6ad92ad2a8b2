//! The model manifest (`models/manifest.json`, compiled into the binary) and
//! verification of the files it lists.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The manifest as shipped in the source tree. Embedding it means the hashes
/// a binary trusts cannot drift from the ones it was built with.
const MANIFEST_JSON: &str = include_str!("../../../models/manifest.json");

#[derive(Debug, Clone, Deserialize)]
pub struct Manifest {
    pub files: Vec<ManifestFile>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct ManifestFile {
    /// Path relative to the models folder.
    pub path: String,
    /// `chat`, `embedder` or `runtime`.
    pub role: String,
    /// The PyPI package that carries the file.
    pub package: String,
    pub size: u64,
    pub sha256: String,
}

pub fn manifest() -> Manifest {
    serde_json::from_str(MANIFEST_JSON).expect("models/manifest.json is valid (checked by tests)")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FileState {
    Ok,
    Missing,
    WrongSize,
    WrongHash,
    Unreadable,
}

#[derive(Debug, Clone, Serialize)]
pub struct FileStatus {
    #[serde(flatten)]
    pub file: ManifestFile,
    pub full_path: PathBuf,
    pub state: FileState,
}

/// Checks every manifest file in `dir`. `on_progress` gets bytes hashed so far.
pub fn verify_all(dir: &Path, mut on_progress: impl FnMut(u64)) -> Vec<FileStatus> {
    let mut hashed = 0;
    manifest()
        .files
        .into_iter()
        .map(|file| {
            let full_path = dir.join(&file.path);
            let state = verify_file(&full_path, &file, |n| on_progress(hashed + n));
            hashed += file.size;
            FileStatus {
                file,
                full_path,
                state,
            }
        })
        .collect()
}

pub fn verify_file(
    path: &Path,
    expected: &ManifestFile,
    on_progress: impl FnMut(u64),
) -> FileState {
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return FileState::Missing,
        Err(_) => return FileState::Unreadable,
        Ok(meta) if meta.len() != expected.size => return FileState::WrongSize,
        Ok(_) => {}
    }
    match sha256_file(path, on_progress) {
        Ok(hash) if hash == expected.sha256 => FileState::Ok,
        Ok(_) => FileState::WrongHash,
        Err(_) => FileState::Unreadable,
    }
}

pub fn sha256_file(path: &Path, mut on_progress: impl FnMut(u64)) -> std::io::Result<String> {
    let mut file = File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut done = 0u64;
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        done += n as u64;
        on_progress(done);
    }
    Ok(hex::encode(hasher.finalize()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifest_parses_and_names_each_role() {
        let m = manifest();
        for role in ["chat", "embedder", "runtime"] {
            assert!(m.files.iter().any(|f| f.role == role), "no {role} file");
        }
        assert!(m.files.iter().all(|f| f.sha256.len() == 64));
    }

    #[test]
    fn detects_missing_wrong_size_and_wrong_hash() {
        let dir = tempfile::tempdir().unwrap();
        let expected = ManifestFile {
            path: "x.bin".into(),
            role: "chat".into(),
            package: "p".into(),
            size: 3,
            sha256: hex::encode(Sha256::digest(b"abc")),
        };
        let p = dir.path().join("x.bin");
        assert_eq!(verify_file(&p, &expected, |_| {}), FileState::Missing);
        std::fs::write(&p, b"abcd").unwrap();
        assert_eq!(verify_file(&p, &expected, |_| {}), FileState::WrongSize);
        std::fs::write(&p, b"abd").unwrap();
        assert_eq!(verify_file(&p, &expected, |_| {}), FileState::WrongHash);
        std::fs::write(&p, b"abc").unwrap();
        assert_eq!(verify_file(&p, &expected, |_| {}), FileState::Ok);
    }
}
