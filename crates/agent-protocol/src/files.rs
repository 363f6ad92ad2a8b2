//! Where the tools read and write file contents: the disk, or an editor
//! that holds unsaved buffers (an ACP client's file system).
//!
//! Paths reach a [`FileAccess`] resolved and checked (workspace, policy,
//! protected files): it only moves the bytes. Metadata, listings, searches
//! and deletions stay on the disk.

use std::io::Read;
use std::path::Path;

pub trait FileAccess: Send + Sync {
    /// The content of an existing file, to stream.
    fn open(&self, path: &Path) -> std::io::Result<Box<dyn Read + '_>>;

    /// Creates or replaces a file; `mode` gives a new file its permission
    /// bits (an existing one keeps its own).
    fn write(&self, path: &Path, bytes: &[u8], mode: Option<u32>) -> std::io::Result<()>;

    /// The whole content of an existing file.
    fn read(&self, path: &Path) -> std::io::Result<Vec<u8>> {
        let mut bytes = Vec::new();
        self.open(path)?.read_to_end(&mut bytes)?;
        Ok(bytes)
    }
}

/// The files as they are on disk; writes are atomic.
pub struct Disk;

impl FileAccess for Disk {
    fn open(&self, path: &Path) -> std::io::Result<Box<dyn Read + '_>> {
        Ok(Box::new(std::fs::File::open(path)?))
    }

    fn write(&self, path: &Path, bytes: &[u8], mode: Option<u32>) -> std::io::Result<()> {
        agent_base::files::atomic_write(path, bytes, mode)
    }
}
