//! What this engine was built with: the llama.cpp it links and that build's
//! summary. Below both the engine and the prompt cache, whose entries are
//! valid for one build only.

/// The `llama-cpp-2` (and `llama-cpp-sys-2`) release this engine links:
/// the llama.cpp it vendors. Kept equal to the workspace's pin by a test.
pub const LLAMA_CPP_CRATE_VERSION: &str = "0.1.160";

/// llama.cpp's build and CPU feature summary (SIMD flags, backends).
pub fn system_info() -> String {
    // A portable build's CPU features are its loaded backend's.
    let _ = crate::engine::backend();
    // SAFETY: returns a pointer to a static, NUL-terminated buffer.
    unsafe { std::ffi::CStr::from_ptr(llama_cpp_sys_2::llama_print_system_info()) }
        .to_string_lossy()
        .trim()
        .to_string()
}
