//! The administrator's managed configuration: read once at start
//! ([`init`], from the binary's `main`), then handed to what needs it: the
//! session's checks here (mode, sandbox, model by sha256, server: a refusal
//! exits 2), the MCP allowlist ([`crate::mcp`]), and `AgentConfig::managed` /
//! `AgentConfig::audit` for the crates below. No other crate reads the file
//! itself. A file that cannot be read stops every command but `agent doctor`,
//! which shows why.
//!
//! Below, `Agent::new` narrows the workspace's `Policy` with it
//! (`Managed::restrict`: network off, the sandbox required, protected paths)
//! and drops hooks it does not allow; the tools see only that narrowed policy
//! (`run_cmd` refuses commands when the sandbox is required and missing,
//! writes refuse protected paths).

use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use agent_policy::managed::Managed;
use agent_store::log::AuditConfig;

use crate::settings::{AgentSettings, ModelSettings};

/// The managed configuration, or why it could not be read.
static MANAGED: OnceLock<Result<Managed, String>> = OnceLock::new();

/// The chat model's sha256, once hashed (for the audit records).
static MODEL_SHA: Mutex<Option<String>> = Mutex::new(None);

/// Sets a sink for the audit records (tests); the administrator's
/// `audit_dir` wins over it.
pub const AUDIT_DIR_ENV: &str = "AGENT_AUDIT_DIR";

/// A refusal by the administrator's rules: printed as it is, exit code 2.
#[derive(Debug)]
pub struct Refused(pub String);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refused {}

/// Reads the managed file; the error, if any, is kept for `agent doctor`.
pub fn init() -> Result<(), String> {
    MANAGED
        .get_or_init(|| Managed::load().map_err(|e| format!("{e:#}")))
        .as_ref()
        .map(|_| ())
        .map_err(Clone::clone)
}

/// The managed configuration read at start (unrestricted before [`init`]
/// or after a failed read, which stops every command but `agent doctor`).
pub fn managed() -> &'static Managed {
    static NONE: OnceLock<Managed> = OnceLock::new();
    match MANAGED.get() {
        Some(Ok(m)) => m,
        _ => NONE.get_or_init(Managed::default),
    }
}

/// Why the managed file could not be read, if it could not.
pub fn load_error() -> Option<&'static str> {
    MANAGED.get()?.as_ref().err().map(String::as_str)
}

/// The permission mode and the sandbox switch of a session, as the
/// administrator allows them.
pub fn check_agent(args: &AgentSettings) -> anyhow::Result<()> {
    let m = managed();
    m.check_mode(args.mode).map_err(Refused)?;
    m.check_sandbox_flag(args.sandbox).map_err(Refused)?;
    Ok(())
}

/// The model a session runs, as the administrator allows it: a `--server`
/// URL on the list, a GGUF file whose sha256 is on the list.
pub fn check_model(args: &ModelSettings) -> anyhow::Result<()> {
    if args.script.is_some() {
        return Ok(());
    }
    let m = managed();
    if let Some(url) = &args.server {
        return m.check_server(url).map_err(|e| Refused(e).into());
    }
    let path = args
        .model
        .clone()
        .unwrap_or_else(agent_base::paths::default_chat_model);
    let wanted = m.allowed_models.is_some() || sink_dir().is_some();
    let sha = if wanted {
        match model_sha256(&path) {
            Ok(sha) => Some(sha),
            // A missing file is said by the loader, with its fix.
            Err(_) if m.allowed_models.is_none() || !path.exists() => None,
            Err(e) => anyhow::bail!("cannot hash {}: {e}", path.display()),
        }
    } else {
        cached_sha256(&path)
    };
    if let Some(sha) = &sha {
        if !m.allows_model(sha) {
            return Err(Refused(m.refusal(&format!(
                "the model {} (sha256 {sha}); allowed models are listed by sha256 in {}",
                path.display(),
                m.path.as_deref().unwrap_or(Path::new("?")).display()
            )))
            .into());
        }
    }
    *MODEL_SHA.lock().unwrap_or_else(|e| e.into_inner()) = sha;
    Ok(())
}

/// The sink folder: the administrator's `audit_dir`, else `AGENT_AUDIT_DIR`.
pub fn sink_dir() -> Option<PathBuf> {
    managed().audit_dir.clone().or_else(|| {
        std::env::var_os(AUDIT_DIR_ENV)
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
    })
}

/// Who the audit records name and where they also go.
pub fn audit_config() -> AuditConfig {
    let mut config = AuditConfig::from_env();
    if let Some(user) = account_name() {
        config.user = user;
    }
    if let Some(host) = host_name() {
        config.host = host;
    }
    config.sink_dir = sink_dir();
    config.sink_required = managed().audit_dir.is_some();
    config.model_sha256 = MODEL_SHA.lock().unwrap_or_else(|e| e.into_inner()).clone();
    config
}

/// The name of the account the process runs as (not `$USER`, which the
/// caller sets).
fn account_name() -> Option<String> {
    // SAFETY: getpwuid_r writes into the buffers given, of the sizes given.
    unsafe {
        let mut pwd: libc::passwd = std::mem::zeroed();
        let mut buf = vec![0 as libc::c_char; 4096];
        let mut result: *mut libc::passwd = std::ptr::null_mut();
        let rc = libc::getpwuid_r(
            libc::geteuid(),
            &mut pwd,
            buf.as_mut_ptr(),
            buf.len(),
            &mut result,
        );
        if rc != 0 || result.is_null() || pwd.pw_name.is_null() {
            return None;
        }
        Some(
            std::ffi::CStr::from_ptr(pwd.pw_name)
                .to_string_lossy()
                .into_owned(),
        )
    }
}

fn host_name() -> Option<String> {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most buf.len() bytes into buf.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return None;
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    Some(String::from_utf8_lossy(&buf[..end]).into_owned())
}

/// Where hashes of model files are kept: by path, size, mtime, ctime and
/// inode, in the user's state dir (hashing a 4 GB model takes seconds; it
/// is done once). The user can write this file: the allowlist keeps
/// repositories and mistakes from picking a model, not a user set on
/// running another one (who could run llama.cpp without the agent anyway).
fn sha_cache_file() -> Option<PathBuf> {
    Some(agent_base::paths::state_root()?.join("model-sha256.json"))
}

/// The key a cached hash is valid for.
fn file_key(path: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let canonical = path.canonicalize().ok()?;
    let meta = std::fs::metadata(&canonical).ok()?;
    // ctime and inode too: `touch -d` resets an mtime, not those.
    Some(format!(
        "{}|{}|{}.{}|{}.{}|{}",
        canonical.display(),
        meta.len(),
        meta.mtime(),
        meta.mtime_nsec(),
        meta.ctime(),
        meta.ctime_nsec(),
        meta.ino()
    ))
}

fn read_cache() -> serde_json::Map<String, serde_json::Value> {
    sha_cache_file()
        .and_then(|f| std::fs::read_to_string(f).ok())
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default()
}

/// The cached sha256 of a model file, if its size and mtime are unchanged.
pub fn cached_sha256(path: &Path) -> Option<String> {
    let key = file_key(path)?;
    read_cache().get(&key)?.as_str().map(String::from)
}

/// The sha256 of a model file: cached, or hashed now and cached.
pub fn model_sha256(path: &Path) -> std::io::Result<String> {
    if let Some(sha) = cached_sha256(path) {
        return Ok(sha);
    }
    let sha = agent_base::models::sha256_file(path, |_| {})?;
    if let (Some(key), Some(file)) = (file_key(path), sha_cache_file()) {
        let mut cache = read_cache();
        // An older hash of the same path is stale.
        let same_path = key.split('|').next().unwrap_or_default().to_string();
        cache.retain(|k, _| k.split('|').next() != Some(same_path.as_str()));
        cache.insert(key, sha.clone().into());
        if let Some(dir) = file.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let text = serde_json::to_string_pretty(&cache).unwrap_or_default();
        let _ = agent_base::files::atomic_write(&file, text.as_bytes(), None);
    }
    Ok(sha)
}
