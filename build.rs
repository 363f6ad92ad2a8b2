//! A portable build (`--features portable`, what `scripts/bundle` ships)
//! links llama.cpp as shared libraries carried with the binary; its run
//! path finds them in the install's `lib/agent` (beside `bin/`), else beside
//! the binary (cargo's target folder). A source build links llama.cpp in and
//! needs nothing here.
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    // `agent --version --json` names the Cargo profile: `dist` (what is
    // shipped) and `release` differ in how they were optimised, not in
    // cfg. OUT_DIR is TARGET_DIR/PROFILE/build/agent-HASH/out.
    let out = std::env::var("OUT_DIR").unwrap_or_default();
    if let Some(profile) = std::path::Path::new(&out)
        .ancestors()
        .nth(3)
        .and_then(|p| p.file_name())
        .and_then(|p| p.to_str())
    {
        println!("cargo:rustc-env=AGENT_BUILD_PROFILE={profile}");
    }
    let portable = std::env::var_os("CARGO_FEATURE_PORTABLE").is_some();
    let linux = std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    if portable && linux {
        // DT_RPATH (not RUNPATH): libllama.so's own libggml*.so needs are
        // found the same way.
        println!(
            "cargo:rustc-link-arg-bins=-Wl,--disable-new-dtags,-rpath,$ORIGIN/../lib/agent:$ORIGIN"
        );
        // Identical functions folded into one (the same generic instantiated
        // by many crates). On x86-64 Linux rustc links with its own lld,
        // which has the flag; GNU ld, elsewhere, does not.
        if std::env::var("TARGET").is_ok_and(|t| t == "x86_64-unknown-linux-gnu") {
            println!("cargo:rustc-link-arg-bins=-Wl,--icf=all");
        }
    }
}
