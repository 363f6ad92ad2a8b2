//! A shared index: one index in a store that a team reads, kept current by
//! one writer (a CI job running `agent index --store URI`), and searched by
//! everyone else with `--store URI` (or `AGENT_INDEX_STORE`), read-only,
//! with a local overlay of their own changes on top.
//!
//! In the store (an `s3://bucket/prefix`, or a folder on a shared disk):
//! - `lance/`: the chunk table, written by LanceDB straight into the store
//!   (its commits are atomic there: conditional puts on S3);
//! - `state.sqlite` and `embeddings.sqlite`: the writer's bookkeeping and
//!   embedding cache, published whole (`VACUUM INTO`, then a put) after each
//!   half of an update. Rows first, bookkeeping second, as in a local index:
//!   a writer that dies in between leaves a state older than the rows, and
//!   the next writer redoes those files. A writer starts from the store's
//!   state and cache, so a fresh CI runner re-reads every file (mtimes
//!   differ), hashes it, and embeds nothing that did not change.
//!
//! On this machine, under `shared/<store>/` in the workspace's state folder:
//! - the writer's working copies of `state.sqlite` and `embeddings.sqlite`
//!   (fetched from the store when it opens) and its `writer.lock`;
//! - `published/state.sqlite`: a reader's copy of the store's state;
//! - `overlay/`: an ordinary local index of the files that differ here from
//!   what the shared index holds (edited, added), searched together with the
//!   shared table, which no longer answers for those files nor for files
//!   deleted here.
//!
//! A reader opens the table in place and fetches only the state. At each
//! search it walks the repository, hashes the files whose mtime or size moved
//! (a memo keeps the rest) and compares them with the shared state; the files
//! that differ or exist only here are indexed into the overlay (an `Index`
//! restricted to them, `IndexOptions::only`). Both tables' fused hits are
//! merged by score before the file ranking, so the results describe this
//! working tree; one embedder serves both (the overlay's is
//! `embed::Choice::matching` the shared index's identity, a server included).
//! The binary's `--store` flag (index, search, ask, chat) is
//! `AGENT_INDEX_STORE`, so every reader in the process (the agent's tools, its
//! prefetch, doctor) opens the same index.
//!
//! Objects other than LanceDB's are read and written whole, through
//! `object_store` (the crate LanceDB itself uses for S3) or the file system.
//! Without the `s3` feature an `s3://` store is refused with the rebuild
//! command; a folder works in every build and is what `scripts/test`
//! exercises, and `scripts/test-s3` runs the same workflow against moto's S3
//! server.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use sha2::{Digest, Sha256};

use super::state::FileState;
use agent_lang::walk::{self, WalkOptions};

/// The environment variable that names the shared store (what `--store`
/// sets).
pub const STORE_ENV: &str = "AGENT_INDEX_STORE";

/// The state and cache files, by the same names in the store and locally.
pub const STATE_FILE: &str = "state.sqlite";

/// The chunk table's folder in the store.
const TABLE_DIR: &str = "lance";

/// The store named by `--store` or `AGENT_INDEX_STORE`, if any.
pub fn configured() -> Option<String> {
    std::env::var(STORE_ENV)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// A shared store, opened: where its table is, how to move whole files in
/// and out of it, and this machine's folder for it.
pub struct SharedStore {
    /// As the user wrote it (for messages).
    pub uri: String,
    /// This machine's folder for this store, under the repository's `.agent/`.
    pub local: PathBuf,
    /// The chunk table's location.
    pub table: super::store::TableLocation,
    blobs: Blobs,
}

impl SharedStore {
    /// Parses `uri` (`s3://bucket/prefix`, a folder, or `file:///folder`)
    /// for the repository at `root`. Only a `writer` creates a folder store.
    pub fn open(root: &Path, uri: &str, writer: bool) -> Result<Self> {
        let (blobs, table) = match uri.split_once("://") {
            Some(("s3", rest)) => s3_store(uri, rest)?,
            Some(("file", path)) => dir_store(uri, Path::new(path), writer)?,
            Some((scheme, _)) => bail!(
                "unsupported index store {uri:?}: {scheme}:// is not supported\n  fix: use s3://BUCKET/PREFIX (any S3-compatible service) or a folder on a shared disk"
            ),
            None => dir_store(uri, Path::new(uri), writer)?,
        };
        let local = agent_base::paths::state_dir(root)
            .join("shared")
            .join(slug(&table.uri));
        std::fs::create_dir_all(&local)
            .with_context(|| format!("cannot create {}", local.display()))?;
        Ok(Self {
            uri: uri.to_string(),
            local,
            table,
            blobs,
        })
    }

    /// Copies the store's `name` to `dest` (atomically: a temporary file
    /// renamed into place). Returns false when the store has none.
    pub fn fetch(&self, name: &str, dest: &Path) -> Result<bool> {
        let Some(bytes) = self
            .blobs
            .get(name)
            .with_context(|| format!("cannot read {name} from the index store {}", self.uri))?
        else {
            return Ok(false);
        };
        let tmp = dest.with_extension("download");
        std::fs::write(&tmp, bytes)
            .and_then(|()| std::fs::rename(&tmp, dest))
            .with_context(|| format!("cannot write {}", dest.display()))?;
        Ok(true)
    }

    /// Puts the local file `src` into the store as `name`, replacing it.
    pub fn publish(&self, src: &Path, name: &str) -> Result<()> {
        let bytes = std::fs::read(src).with_context(|| format!("cannot read {}", src.display()))?;
        self.blobs.put(name, bytes).with_context(|| {
            format!(
                "cannot write {name} to the index store {} (the table is written; run `agent index --store` again to publish it)",
                self.uri
            )
        })
    }

    /// Deletes what the index keeps in the store (`--rebuild`), and
    /// nothing else there.
    pub fn clear(&self) -> Result<()> {
        for name in [TABLE_DIR, STATE_FILE, super::state::CACHE_FILE] {
            self.blobs.remove(name).with_context(|| {
                format!("cannot delete {name} from the index store {}", self.uri)
            })?;
        }
        Ok(())
    }

    /// Deletes the chunk table (a damaged one, to be written anew).
    pub fn remove_table(&self) -> Result<()> {
        self.blobs
            .remove(TABLE_DIR)
            .with_context(|| format!("cannot remove the chunk table in {}", self.uri))
    }
}

/// The error of a reader whose store holds no index.
pub fn no_index_yet(uri: &str) -> String {
    format!(
        "there is no index in the store {uri} yet\n  fix: run `agent index --store {uri}` (the job that keeps the shared index current), or drop --store (and AGENT_INDEX_STORE) to use this repository's own index"
    )
}

/// A readable name for a store's local folder: its host-ish part and a hash.
fn slug(uri: &str) -> String {
    let tail: String = uri
        .rsplit(['/', '\\'])
        .find(|s| !s.is_empty() && *s != "lance")
        .unwrap_or("store")
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .take(32)
        .collect();
    let hash = hex::encode(&Sha256::digest(uri.as_bytes())[..6]);
    format!("{tail}-{hash}")
}

fn dir_store(uri: &str, path: &Path, writer: bool) -> Result<(Blobs, super::store::TableLocation)> {
    if writer {
        std::fs::create_dir_all(path)
            .with_context(|| format!("cannot create the index store folder {}", path.display()))?;
    } else if !path.is_dir() {
        bail!("{}", no_index_yet(uri));
    }
    let dir = path
        .canonicalize()
        .with_context(|| format!("cannot open {}", path.display()))?;
    let table = super::store::TableLocation::local(&dir.join(TABLE_DIR))?;
    Ok((Blobs::Dir(dir), table))
}

#[cfg(feature = "s3")]
fn s3_store(uri: &str, rest: &str) -> Result<(Blobs, super::store::TableLocation)> {
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    let prefix = prefix.trim_matches('/');
    if bucket.is_empty() {
        bail!("the index store {uri:?} names no bucket\n  fix: --store s3://BUCKET/PREFIX");
    }
    let blobs = s3::S3Blobs::new(bucket, prefix)?;
    let table_uri = match prefix {
        "" => format!("s3://{bucket}/{TABLE_DIR}"),
        p => format!("s3://{bucket}/{p}/{TABLE_DIR}"),
    };
    Ok((
        Blobs::S3(blobs),
        super::store::TableLocation {
            uri: table_uri,
            options: s3::table_options(),
        },
    ))
}

#[cfg(not(feature = "s3"))]
fn s3_store(uri: &str, _rest: &str) -> Result<(Blobs, super::store::TableLocation)> {
    bail!(
        "this agent was built without S3 support, so it cannot open {uri}\n  fix: build it with the s3 feature: `scripts/install --features s3` (or `cargo build --release --features s3`)"
    )
}

/// Whole objects in and out of a store.
enum Blobs {
    Dir(PathBuf),
    #[cfg(feature = "s3")]
    S3(s3::S3Blobs),
}

impl Blobs {
    fn get(&self, name: &str) -> Result<Option<Vec<u8>>> {
        match self {
            Blobs::Dir(dir) => match std::fs::read(dir.join(name)) {
                Ok(b) => Ok(Some(b)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(e.into()),
            },
            #[cfg(feature = "s3")]
            Blobs::S3(s3) => s3.get(name),
        }
    }

    fn put(&self, name: &str, bytes: Vec<u8>) -> Result<()> {
        match self {
            Blobs::Dir(dir) => {
                // Readers on other machines never see half a file.
                let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
                std::fs::write(&tmp, bytes)?;
                std::fs::rename(&tmp, dir.join(name))?;
                Ok(())
            }
            #[cfg(feature = "s3")]
            Blobs::S3(s3) => s3.put(name, bytes),
        }
    }

    /// Deletes the object or folder `name` (nothing else: a folder store
    /// may hold other files), if it is there.
    fn remove(&self, name: &str) -> Result<()> {
        match self {
            Blobs::Dir(dir) => {
                let path = dir.join(name);
                let removed = if path.is_dir() {
                    std::fs::remove_dir_all(&path)
                } else {
                    std::fs::remove_file(&path)
                };
                match removed {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.into()),
                    _ => Ok(()),
                }
            }
            #[cfg(feature = "s3")]
            Blobs::S3(s3) => s3.remove(name),
        }
    }
}

#[cfg(feature = "s3")]
mod s3 {
    //! S3 through `object_store`, configured from the usual environment
    //! (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`,
    //! `AWS_REGION`, `AWS_ENDPOINT_URL` and `AWS_ALLOW_HTTP` for MinIO and
    //! other S3-compatible servers): the same variables LanceDB reads for the
    //! table.

    use anyhow::{Context, Result};
    use futures::TryStreamExt;
    use object_store::aws::{AmazonS3, AmazonS3Builder};
    use object_store::path::Path;
    use object_store::{ObjectStore, ObjectStoreExt, PutPayload};

    pub struct S3Blobs {
        store: AmazonS3,
        prefix: String,
        rt: tokio::runtime::Runtime,
    }

    /// The region when the environment names none: LanceDB would otherwise
    /// ask AWS's metadata service, which a machine outside AWS does not have.
    fn region() -> String {
        std::env::var("AWS_REGION")
            .or_else(|_| std::env::var("AWS_DEFAULT_REGION"))
            .unwrap_or_else(|_| "us-east-1".into())
    }

    /// LanceDB's storage options; the rest it reads from the environment.
    pub fn table_options() -> Vec<(String, String)> {
        vec![("region".into(), region())]
    }

    impl S3Blobs {
        pub fn new(bucket: &str, prefix: &str) -> Result<Self> {
            let store = AmazonS3Builder::from_env()
                .with_bucket_name(bucket)
                .with_region(region())
                .build()
                .context("cannot set up the S3 client (check the AWS_* variables)")?;
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            Ok(Self {
                store,
                prefix: prefix.to_string(),
                rt,
            })
        }

        fn path(&self, name: &str) -> Path {
            match self.prefix.as_str() {
                "" => Path::from(name),
                p => Path::from(format!("{p}/{name}")),
            }
        }

        pub fn get(&self, name: &str) -> Result<Option<Vec<u8>>> {
            self.rt.block_on(async {
                match self.store.get(&self.path(name)).await {
                    Ok(r) => Ok(Some(r.bytes().await?.to_vec())),
                    Err(object_store::Error::NotFound { .. }) => Ok(None),
                    Err(e) => Err(e.into()),
                }
            })
        }

        pub fn put(&self, name: &str, bytes: Vec<u8>) -> Result<()> {
            self.rt.block_on(async {
                self.store
                    .put(&self.path(name), PutPayload::from(bytes))
                    .await?;
                Ok(())
            })
        }

        /// The object `name`, or every object under `name/`.
        pub fn remove(&self, name: &str) -> Result<()> {
            self.rt.block_on(async {
                let path = self.path(name);
                match self.store.delete(&path).await {
                    Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                    Err(e) => return Err(e.into()),
                }
                let objects: Vec<_> = self.store.list(Some(&path)).try_collect().await?;
                for object in objects {
                    self.store.delete(&object.location).await?;
                }
                Ok(())
            })
        }
    }
}

/// What differs here from the shared index: files whose content is not the
/// content the index holds (edited or added), and files it holds that are
/// gone here. Content is compared by hash (other machines' mtimes mean
/// nothing); `memo` keeps each file's hash by mtime and size, so later
/// calls read only what moved.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct LocalChanges {
    pub changed: HashSet<String>,
    pub deleted: HashSet<String>,
}

impl LocalChanges {
    /// The paths the shared table must not answer for.
    pub fn shadows(&self, path: &str) -> bool {
        self.changed.contains(path) || self.deleted.contains(path)
    }

    pub fn len(&self) -> usize {
        self.changed.len() + self.deleted.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The hash of a file, remembered while its mtime and size stay.
pub type HashMemo = HashMap<String, (i64, u64, String)>;

pub fn local_changes(
    root: &Path,
    shared: &HashMap<String, FileState>,
    memo: &mut HashMemo,
) -> LocalChanges {
    let (files, _skipped) = walk::walk(root, &WalkOptions::default());
    let mut changes = LocalChanges::default();
    let mut present = HashSet::new();
    for file in &files {
        present.insert(file.rel.as_str());
        let hash = match memo.get(&file.rel) {
            Some((m, s, h)) if *m == file.mtime_ns && *s == file.size => h.clone(),
            _ => {
                let Ok(bytes) = std::fs::read(&file.path) else {
                    continue;
                };
                let h = agent_base::files::sha256_hex(&bytes);
                memo.insert(file.rel.clone(), (file.mtime_ns, file.size, h.clone()));
                h
            }
        };
        if shared.get(&file.rel).is_none_or(|s| s.hash != hash) {
            changes.changed.insert(file.rel.clone());
        }
    }
    changes.deleted = shared
        .keys()
        .filter(|k| !present.contains(k.as_str()))
        .cloned()
        .collect();
    changes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(hash: &str) -> FileState {
        FileState {
            hash: hash.into(),
            mtime_ns: 1,
            size: 1,
            chunks: 1,
            chunker: 1,
        }
    }

    #[test]
    fn local_changes_are_found_by_content_not_mtime() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("same.py"), "x = 1\n").unwrap();
        std::fs::write(root.join("edited.py"), "x = 2\n").unwrap();
        std::fs::write(root.join("new.py"), "x = 3\n").unwrap();
        let hash = |s: &str| hex::encode(Sha256::digest(s.as_bytes()));
        let shared: HashMap<String, FileState> = [
            ("same.py", state(&hash("x = 1\n"))),
            ("edited.py", state(&hash("x = 1\n"))),
            ("gone.py", state(&hash("y\n"))),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        let mut memo = HashMemo::new();
        let changes = local_changes(root, &shared, &mut memo);
        let set = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<HashSet<_>>();
        assert_eq!(changes.changed, set(&["edited.py", "new.py"]));
        assert_eq!(changes.deleted, set(&["gone.py"]));
        assert!(changes.shadows("gone.py") && !changes.shadows("same.py"));
        // Reverting the edit makes the file the shared one again.
        std::fs::write(root.join("edited.py"), "x = 1\n").unwrap();
        let later = filetime_bump(&root.join("edited.py"));
        assert!(later);
        let changes = local_changes(root, &shared, &mut memo);
        assert_eq!(changes.changed, set(&["new.py"]));
    }

    /// Moves a file's mtime forward so the memo sees it changed even within
    /// the file system's timestamp granularity.
    fn filetime_bump(path: &Path) -> bool {
        let f = std::fs::File::options().write(true).open(path).unwrap();
        let later = std::time::SystemTime::now() + std::time::Duration::from_secs(5);
        f.set_modified(later).is_ok()
    }

    #[test]
    fn store_uris_are_parsed_or_refused_with_the_fix() {
        agent_base::paths::isolate_for_tests();
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        std::fs::create_dir_all(&root).unwrap();
        let store_dir = dir.path().join("store");
        let uri = store_dir.to_str().unwrap();
        assert!(
            SharedStore::open(&root, uri, false).is_err(),
            "a reader creates no store"
        );
        let store = SharedStore::open(&root, uri, true).unwrap();
        assert!(store.table.uri.ends_with("/lance"));
        assert!(store
            .local
            .starts_with(agent_base::paths::state_dir(&root).join("shared")));
        assert!(!root.join(".agent").exists());
        let err = SharedStore::open(&root, "gs://bucket/x", true)
            .err()
            .unwrap();
        assert!(format!("{err:#}").contains("fix:"), "{err:#}");
        // Whole files go in and out, replacing what was there.
        let src = dir.path().join("a");
        std::fs::write(&src, "one").unwrap();
        store.publish(&src, STATE_FILE).unwrap();
        std::fs::write(&src, "two").unwrap();
        store.publish(&src, STATE_FILE).unwrap();
        let dest = dir.path().join("b");
        assert!(store.fetch(STATE_FILE, &dest).unwrap());
        assert_eq!(std::fs::read_to_string(&dest).unwrap(), "two");
        assert!(!store.fetch("missing", &dest).unwrap());
        // A rebuild deletes the index's objects and nothing else there.
        std::fs::create_dir_all(store_dir.join(TABLE_DIR).join("x")).unwrap();
        std::fs::write(store_dir.join("someone-elses.txt"), "keep").unwrap();
        store.clear().unwrap();
        assert!(!store.fetch(STATE_FILE, &dest).unwrap());
        assert!(!store_dir.join(TABLE_DIR).exists());
        assert!(store_dir.join("someone-elses.txt").exists());
        #[cfg(not(feature = "s3"))]
        {
            let err = SharedStore::open(&root, "s3://bucket/x", false)
                .err()
                .unwrap();
            assert!(format!("{err:#}").contains("--features s3"), "{err:#}");
        }
    }
}
