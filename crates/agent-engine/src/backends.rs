//! Where llama.cpp's CPU kernels come from. A source build links them in,
//! compiled for the build machine's processor (`target-cpu=native`). A
//! portable build (`--features portable`, what `scripts/bundle` ships)
//! carries them as loadable backends, one per x86-64 level or Arm version
//! (`libggml-cpu-haswell.so`, `libggml-cpu-skylakex.so`, ...), and llama.cpp
//! loads the best one the running processor supports, at start: so one
//! bundle runs on a laptop without AVX and at AVX-512 speed on a server.
//!
//! The backends are looked for in the install's `lib/agent` (beside its
//! `bin/`), beside the binary, then where the build left them.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The file name every CPU variant's backend starts with.
const CPU_BACKEND_PREFIX: &str = "libggml-cpu-";

/// The folder a portable build loaded its backends from.
static LOADED_FROM: OnceLock<PathBuf> = OnceLock::new();

/// Loads the CPU backends of a portable build (before llama.cpp starts);
/// a build with the kernels linked in has nothing to load. The error says
/// where they were looked for.
pub(crate) fn load() -> Result<(), String> {
    if !cfg!(feature = "portable") {
        return Ok(());
    }
    let candidates = search_path();
    let Some(dir) = candidates.iter().find(|d| has_cpu_backend(d)) else {
        let looked: Vec<String> = candidates.iter().map(|d| d.display().to_string()).collect();
        return Err(format!(
            "llama.cpp's CPU backends ({CPU_BACKEND_PREFIX}*.so) are missing: looked in {}\n  fix: install the bundle again (its install.sh puts them in lib/agent beside bin/)",
            looked.join(", ")
        ));
    };
    load_from(dir);
    let _ = LOADED_FROM.set(dir.canonicalize().unwrap_or_else(|_| dir.clone()));
    Ok(())
}

/// The folder the backends were loaded from (None: linked in, or not
/// loaded yet), for `scripts/bundle`, which carries them.
pub fn loaded_from() -> Option<PathBuf> {
    crate::engine::backend().ok()?;
    LOADED_FROM.get().cloned()
}

#[cfg(feature = "portable")]
fn load_from(dir: &Path) {
    llama_cpp_2::llama_backend::load_backends_from_path(dir);
}

#[cfg(not(feature = "portable"))]
fn load_from(_dir: &Path) {}

/// Whether llama.cpp started (a portable build: with its CPU backends), or
/// why not, with the fix.
pub fn ready() -> Result<(), String> {
    crate::engine::backend().map(|_| ()).map_err(|e| match e {
        agent_llm::LlmError::Backend(why) => why,
        other => other.to_string(),
    })
}

/// Where a portable build's backends may be, in order.
fn search_path() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(bin) = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(Path::to_path_buf))
    {
        dirs.push(bin.join("../lib/agent"));
        dirs.push(bin);
    }
    #[cfg(feature = "portable")]
    dirs.extend(llama_cpp_sys_2::BACKENDS_DIR.map(PathBuf::from));
    dirs
}

fn has_cpu_backend(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|entries| {
        entries.flatten().any(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.starts_with(CPU_BACKEND_PREFIX))
        })
    })
}

/// The CPU variant llama.cpp runs on (`haswell`, `skylakex`, `x64`, ...):
/// the backend file its CPU functions were loaded from. None when the
/// kernels are linked into the binary (a source build, `native`).
pub fn cpu_variant() -> Option<String> {
    crate::engine::backend().ok()?;
    let file = cpu_backend_file()?;
    let name = file.file_name()?.to_str()?;
    let variant = name.strip_prefix(CPU_BACKEND_PREFIX)?;
    Some(variant.split('.').next().unwrap_or(variant).to_string())
}

/// The shared object that holds the CPU backend's functions (the binary
/// itself when they are linked in).
#[cfg(unix)]
fn cpu_backend_file() -> Option<PathBuf> {
    use std::ffi::CStr;
    // SAFETY: the name is NUL-terminated; a registry of that name, when
    // there is one, lives as long as the process, and so does the address
    // of its function; dladdr only reads.
    unsafe {
        let reg = llama_cpp_sys_2::ggml_backend_reg_by_name(c"CPU".as_ptr());
        if reg.is_null() {
            return None;
        }
        let function = llama_cpp_sys_2::ggml_backend_reg_get_proc_address(
            reg,
            c"ggml_backend_get_features".as_ptr(),
        );
        if function.is_null() {
            return None;
        }
        let mut info: libc::Dl_info = std::mem::zeroed();
        if libc::dladdr(function.cast_const(), &mut info) == 0 || info.dli_fname.is_null() {
            return None;
        }
        Some(PathBuf::from(
            CStr::from_ptr(info.dli_fname)
                .to_string_lossy()
                .into_owned(),
        ))
    }
}

#[cfg(not(unix))]
fn cpu_backend_file() -> Option<PathBuf> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_with_a_cpu_variant_holds_backends() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!has_cpu_backend(dir.path()));
        std::fs::write(dir.path().join("libggml-base.so"), b"").unwrap();
        assert!(!has_cpu_backend(dir.path()));
        std::fs::write(dir.path().join("libggml-cpu-haswell.so"), b"").unwrap();
        assert!(has_cpu_backend(dir.path()));
    }

    #[test]
    fn the_variant_is_named_by_where_the_kernels_are() {
        // This test binary's build decides: linked in (None), or a
        // loadable backend named for its variant.
        let variant = cpu_variant();
        assert_eq!(variant.is_some(), cfg!(feature = "portable"), "{variant:?}");
    }
}
