//! The prompt cache on disk: the KV state of a prompt, kept across
//! processes under `cache/kv/` in the workspace's state folder
//! (`paths::state_dir`), so the next `agent ask` prefills only what differs
//! from a prompt seen before (`--prompt-cache on|off`, `--prompt-cache-mb`).
//!
//! One file per entry: a header (the key of the model and context it was
//! made with, the token count, the payload size and an HMAC-SHA256 of the
//! header and body), the prompt's tokens, then llama.cpp's serialized
//! sequence state. The key holds the model file's size, mtime and first MiB,
//! the engine's build, the context size and the KV placement. The HMAC's key
//! is the user's own (`kv.key` in `~/.config/agent/`, mode 0600, made once,
//! which no command reads), so an entry written by anyone else, even with a
//! right-looking digest (a recomputed digest is not an HMAC), is not loaded.
//! A file from another model, build or context size, a forged, damaged or
//! truncated one, is removed before llama.cpp ever reads it (said at `-v`).
//!
//! The engine saves after a call that prefilled at least 32 new tokens, and
//! only for a workspace (a folder with `.git`, or team files in `.agent/`). A
//! new process loads the entry sharing the longest token prefix with its first
//! prompt, drops the entry's tail and prefills the rest. A process replaces
//! the entry it extends, and saves again only once its cache grew by half.
//!
//! Files are written to a temporary name and renamed, so a reader (another
//! process) sees a whole entry or none; the least recently used entries (by
//! mtime, touched on load) go when the folder outgrows its cap.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use sha2::{Digest, Sha256};

/// HMAC-SHA256 (RFC 2104) over the sha2 crate's SHA-256, written out: the
/// `hmac` crate turns on `digest`'s `mac` feature, which DataFusion's crypto
/// functions share, and that rebuilds the whole LanceDB stack (40 minutes on
/// two cores) for twenty lines. Checked against RFC 4231's vectors.
struct HmacSha256 {
    inner: Sha256,
    outer_pad: [u8; 64],
}

impl HmacSha256 {
    fn new(key: &[u8]) -> Self {
        let mut block = [0u8; 64];
        if key.len() > 64 {
            block[..32].copy_from_slice(&Sha256::digest(key));
        } else {
            block[..key.len()].copy_from_slice(key);
        }
        let (mut inner_pad, mut outer_pad) = ([0x36u8; 64], [0x5cu8; 64]);
        for i in 0..64 {
            inner_pad[i] ^= block[i];
            outer_pad[i] ^= block[i];
        }
        let mut inner = Sha256::new();
        inner.update(inner_pad);
        Self { inner, outer_pad }
    }

    fn update(&mut self, data: &[u8]) {
        self.inner.update(data);
    }

    fn finalize(self) -> [u8; 32] {
        let mut outer = Sha256::new();
        outer.update(self.outer_pad);
        outer.update(self.inner.finalize());
        outer.finalize().into()
    }

    /// Whether `tag` is this MAC, compared in constant time.
    fn verify(self, tag: &[u8]) -> bool {
        let mac = self.finalize();
        tag.len() == mac.len() && mac.iter().zip(tag).fold(0u8, |d, (a, b)| d | (a ^ b)) == 0
    }
}

const MAGIC: &[u8; 8] = b"AGENTKV2";
/// Magic, key, token count, payload length, HMAC.
const HEADER: usize = 8 + 32 + 4 + 8 + 32;
const EXTENSION: &str = "kv";
/// A temporary file older than this was left by a process that died mid-write.
const STALE_TEMP: Duration = Duration::from_secs(3600);

/// Where the cache lives and how large it may grow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptCacheConfig {
    pub dir: PathBuf,
    pub max_bytes: u64,
    /// The user's key that authenticates entries (`state::user_key("kv")`).
    pub auth_key: [u8; 32],
}

/// The entries of one model and context (the key) in a folder.
#[derive(Debug)]
pub struct PromptCache {
    dir: PathBuf,
    key: [u8; 32],
    max_bytes: u64,
    auth_key: [u8; 32],
}

/// An entry's file and the tokens it holds the state of.
#[derive(Debug, Clone)]
pub struct Entry {
    pub path: PathBuf,
    pub tokens: Vec<i32>,
}

/// The model file as keys know it: size, mtime and a digest of its first
/// MiB (the GGUF header). Read once per engine, for every key made from it.
pub struct ModelFile {
    len: u64,
    mtime: std::time::Duration,
    head: [u8; 32],
}

impl ModelFile {
    pub fn read(model: &Path) -> io::Result<Self> {
        let meta = fs::metadata(model)?;
        let mtime = meta
            .modified()?
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default();
        let mut head = Vec::with_capacity(1 << 20);
        File::open(model)?.take(1 << 20).read_to_end(&mut head)?;
        Ok(Self {
            len: meta.len(),
            mtime,
            head: Sha256::digest(&head).into(),
        })
    }

    /// Identifies what a saved state is valid for: this model file, the
    /// engine build and the context parameters in `context` (anything that
    /// changes the state's layout).
    pub fn key(&self, context: &str) -> [u8; 32] {
        let mut h = Sha256::new();
        h.update(MAGIC);
        h.update(self.len.to_le_bytes());
        h.update(self.mtime.as_nanos().to_le_bytes());
        h.update(self.head);
        h.update(env!("CARGO_PKG_VERSION").as_bytes());
        h.update(crate::build::system_info().as_bytes());
        h.update(context.as_bytes());
        h.finalize().into()
    }
}

impl PromptCache {
    pub fn new(config: &PromptCacheConfig, key: [u8; 32]) -> Self {
        Self {
            dir: config.dir.clone(),
            key,
            max_bytes: config.max_bytes,
            auth_key: config.auth_key,
        }
    }

    /// The HMAC of an entry: over its header up to the tag, then its body.
    fn tag(&self, head: &[u8], body: &[&[u8]]) -> HmacSha256 {
        let mut mac = HmacSha256::new(&self.auth_key);
        mac.update(head);
        for part in body {
            mac.update(part);
        }
        mac
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The entry sharing the longest token prefix with `prompt` (at least
    /// `min` tokens), and that length. Entries of another key, and files that
    /// cannot be entries, are removed on the way.
    pub fn best(&self, prompt: &[i32], min: usize) -> Option<(Entry, usize)> {
        let mut best: Option<(Entry, usize)> = None;
        for path in self.entries().into_iter().map(|(p, _, _)| p) {
            let tokens = match self.read_tokens(&path) {
                Ok(tokens) => tokens,
                Err(why) => {
                    discard(&path, &why);
                    continue;
                }
            };
            let common = common_prefix(&tokens, prompt);
            if common >= min && best.as_ref().is_none_or(|(_, n)| common > *n) {
                best = Some((Entry { path, tokens }, common));
            }
        }
        best
    }

    /// The entry's state, checked against its digest; a damaged or truncated
    /// file is removed and None returned. A hit counts as a use (LRU).
    pub fn read_state(&self, entry: &Entry) -> Option<Vec<u8>> {
        match self.read_checked(&entry.path) {
            Ok(mut bytes) => {
                touch(&entry.path);
                let payload = HEADER + 4 * entry.tokens.len();
                bytes.drain(..payload);
                Some(bytes)
            }
            Err(why) => {
                discard(&entry.path, &why);
                None
            }
        }
    }

    /// Writes an entry atomically (temporary file, then rename) and evicts the
    /// least recently used entries beyond the cap. On error (a full disk) the
    /// temporary file goes and the cache is as before.
    pub fn save(&self, tokens: &[i32], state: &[u8]) -> io::Result<PathBuf> {
        fs::create_dir_all(&self.dir)?;
        let token_bytes: Vec<u8> = tokens.iter().flat_map(|t| t.to_le_bytes()).collect();
        let mut head = Vec::with_capacity(HEADER);
        head.extend_from_slice(MAGIC);
        head.extend_from_slice(&self.key);
        head.extend_from_slice(&(tokens.len() as u32).to_le_bytes());
        head.extend_from_slice(&(state.len() as u64).to_le_bytes());
        let tag = self.tag(&head, &[token_bytes.as_slice(), state]).finalize();
        let mut name = Sha256::new();
        name.update(self.key);
        name.update(&token_bytes);
        let name = hex(&name.finalize()[..16]);
        let path = self.dir.join(format!("{name}.{EXTENSION}"));
        let temp = self.dir.join(format!(
            ".{name}.{}.{}.tmp",
            std::process::id(),
            SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .unwrap_or_default()
                .as_nanos()
        ));
        let written = (|| {
            let mut file = File::create(&temp)?;
            file.write_all(&head)?;
            file.write_all(&tag)?;
            file.write_all(&token_bytes)?;
            file.write_all(state)?;
            file.sync_data()?;
            fs::rename(&temp, &path)
        })();
        if let Err(e) = written {
            let _ = fs::remove_file(&temp);
            return Err(e);
        }
        self.evict(&path);
        Ok(path)
    }

    /// Removes an entry this process made redundant (a longer one holds it).
    pub fn remove(&self, entry: &Path) {
        let _ = fs::remove_file(entry);
    }

    /// Entries (path, size, last use), oldest first; stale temporary files
    /// are removed.
    fn entries(&self) -> Vec<(PathBuf, u64, SystemTime)> {
        let Ok(dir) = fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let now = SystemTime::now();
        let mut out = Vec::new();
        for item in dir.flatten() {
            let path = item.path();
            let Ok(meta) = item.metadata() else { continue };
            let used = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
            if path.extension().is_some_and(|e| e == "tmp") {
                if now.duration_since(used).unwrap_or_default() > STALE_TEMP {
                    let _ = fs::remove_file(&path);
                }
                continue;
            }
            if meta.is_file() && path.extension().is_some_and(|e| e == EXTENSION) {
                out.push((path, meta.len(), used));
            }
        }
        out.sort_by_key(|(_, _, used)| *used);
        out
    }

    /// Removes the least recently used entries until the folder fits its
    /// cap, never `keep` (the entry just written).
    fn evict(&self, keep: &Path) {
        let entries = self.entries();
        let mut total: u64 = entries.iter().map(|(_, size, _)| size).sum();
        for (path, size, _) in entries {
            if total <= self.max_bytes {
                break;
            }
            if path == keep {
                continue;
            }
            tracing::info!(
                "prompt cache: evicting {} (least recently used)",
                path.display()
            );
            // Another process may have removed it already.
            let _ = fs::remove_file(&path);
            total = total.saturating_sub(size);
        }
    }

    /// The header's checks and the tokens; not the payload's digest.
    fn read_tokens(&self, path: &Path) -> Result<Vec<i32>, String> {
        let mut file = File::open(path).map_err(|e| e.to_string())?;
        let len = file.metadata().map_err(|e| e.to_string())?.len();
        let mut header = [0u8; HEADER];
        file.read_exact(&mut header)
            .map_err(|_| "truncated (no complete header)".to_string())?;
        let (n_tokens, payload) = self.check_header(&header, len)?;
        let mut bytes = vec![0u8; 4 * n_tokens];
        file.read_exact(&mut bytes)
            .map_err(|_| "truncated (tokens cut off)".to_string())?;
        let _ = payload;
        Ok(bytes
            .chunks_exact(4)
            .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    }

    /// The whole file, its header and HMAC checked.
    fn read_checked(&self, path: &Path) -> Result<Vec<u8>, String> {
        let bytes = fs::read(path).map_err(|e| e.to_string())?;
        if bytes.len() < HEADER {
            return Err("truncated (no complete header)".into());
        }
        let (n_tokens, _) = self.check_header(&bytes[..HEADER], bytes.len() as u64)?;
        let body = &bytes[HEADER..];
        let mac = self.tag(&bytes[..HEADER - 32], &[body]);
        if !mac.verify(&bytes[HEADER - 32..HEADER]) {
            return Err(format!(
                "not authenticated (its HMAC does not match this user's key: damaged, \
                 or written by someone else; {n_tokens} tokens)"
            ));
        }
        Ok(bytes)
    }

    /// Token count and payload size from a header, if it is one of ours,
    /// of this key, and the file is as long as it says.
    fn check_header(&self, header: &[u8], file_len: u64) -> Result<(usize, u64), String> {
        if &header[..8] != MAGIC {
            return Err("not a prompt cache entry of this version".into());
        }
        if header[8..40] != self.key {
            return Err("made with another model, build or context size".into());
        }
        let (Some(n_tokens), Some(payload)) = (
            header
                .get(40..44)
                .and_then(|b| b.try_into().ok())
                .map(u32::from_le_bytes),
            header
                .get(44..52)
                .and_then(|b| b.try_into().ok())
                .map(u64::from_le_bytes),
        ) else {
            return Err("shorter than a header".into());
        };
        let n_tokens = n_tokens as usize;
        let expected = HEADER as u64 + 4 * n_tokens as u64 + payload;
        if file_len != expected {
            return Err(format!(
                "truncated or damaged ({file_len} bytes, the header says {expected})"
            ));
        }
        Ok((n_tokens, payload))
    }
}

/// Removes an entry that cannot be used, and says why at `-v`.
fn discard(path: &Path, why: &str) {
    tracing::info!(
        "prompt cache: ignoring and removing {}: {why}",
        path.display()
    );
    let _ = fs::remove_file(path);
}

/// Marks an entry as just used: eviction goes by modification time.
fn touch(path: &Path) {
    if let Ok(file) = OpenOptions::new().append(true).open(path) {
        let _ = file.set_modified(SystemTime::now());
    }
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// How many leading tokens `a` and `b` share.
pub(crate) fn common_prefix<T: PartialEq>(a: &[T], b: &[T]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_sha256_matches_rfc_4231() {
        let mac = |key: &[u8], data: &[u8]| {
            let mut m = HmacSha256::new(key);
            m.update(data);
            hex(&m.finalize())
        };
        assert_eq!(
            mac(&[0x0b; 20], b"Hi There"),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
        );
        assert_eq!(
            mac(b"Jefe", b"what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        // A key longer than the block is hashed first (test case 6).
        assert_eq!(
            mac(
                &[0xaa; 131],
                b"Test Using Larger Than Block-Size Key - Hash Key First"
            ),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
        let mut m = HmacSha256::new(b"k");
        m.update(b"x");
        let tag = m.finalize();
        let mut again = HmacSha256::new(b"k");
        again.update(b"x");
        assert!(again.verify(&tag));
    }

    fn cache(dir: &Path, key: u8, max_bytes: u64) -> PromptCache {
        PromptCache::new(
            &PromptCacheConfig {
                dir: dir.to_path_buf(),
                max_bytes,
                auth_key: [9; 32],
            },
            [key; 32],
        )
    }

    #[test]
    fn an_entry_round_trips_and_the_longest_prefix_wins() {
        let dir = tempfile::tempdir().unwrap();
        let c = cache(dir.path(), 1, 1 << 20);
        c.save(&[1, 2, 3], b"short").unwrap();
        c.save(&[1, 2, 3, 4, 5], b"long").unwrap();
        let (entry, common) = c.best(&[1, 2, 3, 4, 9], 1).unwrap();
        assert_eq!((entry.tokens.as_slice(), common), (&[1, 2, 3, 4, 5][..], 4));
        assert_eq!(c.read_state(&entry).unwrap(), b"long");
        assert!(c.best(&[7, 8], 1).is_none());
    }

    #[test]
    fn another_key_a_truncated_or_a_damaged_file_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let other = cache(dir.path(), 2, 1 << 20).save(&[1, 2], b"x").unwrap();
        let c = cache(dir.path(), 1, 1 << 20);
        let cut = c.save(&[1, 2, 3], b"payload").unwrap();
        let bytes = fs::read(&cut).unwrap();
        fs::write(&cut, &bytes[..bytes.len() - 2]).unwrap();
        assert!(c.best(&[1, 2, 3], 1).is_none());
        assert!(!other.exists() && !cut.exists());

        let damaged = c.save(&[1, 2, 3], b"payload").unwrap();
        let mut bytes = fs::read(&damaged).unwrap();
        *bytes.last_mut().unwrap() ^= 1;
        fs::write(&damaged, &bytes).unwrap();
        let (entry, _) = c.best(&[1, 2, 3], 1).unwrap();
        assert!(c.read_state(&entry).is_none());
        assert!(!damaged.exists());
    }

    /// A command that could write the folder forges an entry: the real
    /// prompt's tokens, another state, and a recomputed SHA-256 in the tag's
    /// place (what the old format checked). Not loaded, and removed.
    #[test]
    fn a_forged_entry_without_the_users_hmac_is_not_loaded() {
        let dir = tempfile::tempdir().unwrap();
        let c = cache(dir.path(), 1, 1 << 20);
        let path = c.save(&[5, 6, 7], b"the real state").unwrap();
        let bytes = fs::read(&path).unwrap();
        let mut forged = bytes[..HEADER - 32].to_vec();
        forged[44..52].copy_from_slice(&(b"forged state!!".len() as u64).to_le_bytes());
        let mut body: Vec<u8> = [5i32, 6, 7].iter().flat_map(|t| t.to_le_bytes()).collect();
        body.extend_from_slice(b"forged state!!");
        forged.extend_from_slice(&Sha256::digest(&body));
        forged.extend_from_slice(&body);
        fs::write(&path, &forged).unwrap();

        let (entry, common) = c.best(&[5, 6, 7], 1).unwrap();
        assert_eq!(common, 3);
        assert!(c.read_state(&entry).is_none());
        assert!(!path.exists());

        // Another user's key (or none) cannot make one either.
        let mut other = cache(dir.path(), 1, 1 << 20);
        other.auth_key = [1; 32];
        other.save(&[5, 6, 7], b"theirs").unwrap();
        let (entry, _) = c.best(&[5, 6, 7], 1).unwrap();
        assert!(c.read_state(&entry).is_none());
    }

    #[test]
    fn the_least_recently_used_entries_go_beyond_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let c = cache(dir.path(), 1, 2 * (HEADER as u64 + 4 + 1000));
        let first = c.save(&[1], &[0; 1000]).unwrap();
        let second = c.save(&[2], &[0; 1000]).unwrap();
        // The first is used, so the second is the least recent.
        std::thread::sleep(Duration::from_millis(20));
        let (entry, _) = c.best(&[1], 1).unwrap();
        c.read_state(&entry).unwrap();
        std::thread::sleep(Duration::from_millis(20));
        let third = c.save(&[3], &[0; 1000]).unwrap();
        assert!(first.exists() && third.exists());
        assert!(!second.exists());
    }

    #[test]
    fn a_failed_write_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let c = cache(&dir.path().join("kv"), 1, 1 << 20);
        // The folder is a file: nothing can be written.
        fs::write(dir.path().join("kv"), "").unwrap();
        assert!(c.save(&[1], b"x").is_err());
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
