//! The client's file system, when its `initialize` offers one: the tools
//! read through `fs/read_text_file` (so the editor's unsaved buffers are
//! what the agent sees) and write through `fs/write_text_file` (so the
//! editor knows of the change), asked while the prompt runs.
//!
//! The tools have checked every path before it gets here; a side the
//! client does not offer stays on the disk.

use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use serde_json::{json, Value};

use crate::rpc::{Peer, RpcError};
use agent_base::cancel::CancelToken;
use agent_protocol::Disk;
use agent_protocol::FileAccess;

/// What the client's `clientCapabilities.fs` offers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Offered {
    pub read: bool,
    pub write: bool,
}

impl Offered {
    pub(crate) fn from_capabilities(capabilities: &Value) -> Self {
        let fs = &capabilities["fs"];
        Self {
            read: fs["readTextFile"].as_bool().unwrap_or(false),
            write: fs["writeTextFile"].as_bool().unwrap_or(false),
        }
    }

    pub(crate) fn any(self) -> bool {
        self.read || self.write
    }
}

/// One session's view of the client's files.
pub(crate) struct ClientFiles {
    pub peer: Arc<Peer>,
    pub session: String,
    pub offered: Offered,
    /// The session's prompt token: a cancel stops a wait for the client.
    pub cancel: CancelToken,
}

fn io_error(e: RpcError) -> std::io::Error {
    std::io::Error::other(format!("the editor answered: {} ({})", e.message, e.code))
}

impl FileAccess for ClientFiles {
    fn open(&self, path: &Path) -> std::io::Result<Box<dyn Read + '_>> {
        if !self.offered.read {
            return Disk.open(path);
        }
        let answer = self
            .peer
            .ask(
                "fs/read_text_file",
                json!({"sessionId": self.session, "path": path}),
                &self.cancel,
            )
            .map_err(io_error)?;
        let Some(content) = answer.get("content").and_then(Value::as_str) else {
            return Err(std::io::Error::other(
                "the editor's fs/read_text_file answer has no `content` text",
            ));
        };
        Ok(Box::new(std::io::Cursor::new(content.as_bytes().to_vec())))
    }

    fn write(&self, path: &Path, bytes: &[u8], mode: Option<u32>) -> std::io::Result<()> {
        if !self.offered.write {
            return Disk.write(path, bytes, mode);
        }
        let Ok(content) = std::str::from_utf8(bytes) else {
            // The protocol carries text only.
            return Disk.write(path, bytes, mode);
        };
        let existed = path.exists();
        self.peer
            .ask(
                "fs/write_text_file",
                json!({"sessionId": self.session, "path": path, "content": content}),
                &self.cancel,
            )
            .map_err(io_error)?;
        // A file the editor created gets the bits asked for (a moved script
        // stays executable); an existing one keeps its own.
        if let (false, Some(mode), true) = (existed, mode, path.exists()) {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))?;
        }
        Ok(())
    }
}
