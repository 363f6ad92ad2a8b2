//! The model manifest (`models/manifest.json`, compiled into the binary) and
//! verification of the files it lists: `agent models` and `agent doctor`
//! check each file's sha256 against it (and `doctor` then loads the model and
//! generates a token, so "ready" means `agent ask` works).

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

#[allow(
    clippy::expect_used,
    reason = "the manifest is compiled in, and the tests parse it"
)]
pub fn manifest() -> Manifest {
    serde_json::from_str(MANIFEST_JSON).expect("models/manifest.json is valid (checked by tests)")
}

/// How to get the model files, for whoever runs this binary: the clone's
/// `scripts/fetch-models`, by its full path, while that clone exists; for an
/// installed binary whose clone is gone, where the files go instead.
pub fn fetch_hint() -> String {
    let script = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scripts/fetch-models"
    ));
    let script = script.canonicalize().ok().filter(|p| p.is_file());
    let explicit = std::env::var_os("AGENT_MODELS_DIR").filter(|d| !d.is_empty());
    let dir = match explicit {
        Some(dir) => PathBuf::from(dir),
        None => crate::paths::installed_models_dir().unwrap_or_else(crate::paths::models_dir),
    };
    hint_for(script.as_deref(), &dir)
}

fn hint_for(script: Option<&Path>, dir: &Path) -> String {
    match script {
        Some(script) => format!("run {}", script.display()),
        None => format!(
            "copy a models folder that has the files `agent models` lists (from another machine, \
or fetched in a clone of agent with scripts/fetch-models) to {}, or set AGENT_MODELS_DIR to it",
            dir.display()
        ),
    }
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
    fn the_fetch_hint_names_what_exists_for_this_binary() {
        // A binary built here: the clone's script, by a path that works
        // from any folder.
        let hint = fetch_hint();
        let script = hint.strip_prefix("run ").expect(&hint);
        assert!(
            Path::new(script).is_absolute() && Path::new(script).is_file(),
            "{hint}"
        );
        // An installed binary whose clone is gone: where the files go.
        let dir = Path::new("/home/u/.local/share/agent/models");
        let hint = hint_for(None, dir);
        assert!(hint.contains("/home/u/.local/share/agent/models"), "{hint}");
        assert!(
            hint.contains("AGENT_MODELS_DIR") && !hint.starts_with("run"),
            "{hint}"
        );
    }

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
