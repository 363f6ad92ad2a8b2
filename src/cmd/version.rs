//! `agent --version --json`: what this binary is, for scripts, an offline
//! install's checks and bug reports.

use serde_json::json;

/// Whether the arguments ask for the JSON version (`--version --json`, in
/// either order, and nothing else).
pub(crate) fn wants_json(args: &[String]) -> bool {
    let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
    args.sort_unstable();
    matches!(args.as_slice(), ["--json", "--version" | "-V"])
}

/// The build's facts. The git commit is known only when the build was given
/// it (`AGENT_GIT_COMMIT`, as `scripts/bundle` records it in its
/// BUILD-INFO.json instead): reading git from a build script would rebuild
/// the binary and every test binary at each commit.
pub(crate) fn report() -> serde_json::Value {
    let features: Vec<&str> = [
        ("cuda", cfg!(feature = "cuda")),
        ("vulkan", cfg!(feature = "vulkan")),
        ("metal", cfg!(feature = "metal")),
        ("rocm", cfg!(feature = "rocm")),
        ("embed-cuda", cfg!(feature = "embed-cuda")),
        ("s3", cfg!(feature = "s3")),
        ("portable", cfg!(feature = "portable")),
    ]
    .into_iter()
    .filter_map(|(name, on)| on.then_some(name))
    .collect();
    json!({
        "name": "agent",
        "version": env!("CARGO_PKG_VERSION"),
        "commit": option_env!("AGENT_GIT_COMMIT"),
        "target": format!("{}-{}", std::env::consts::ARCH, std::env::consts::OS),
        // Cargo's profile folder: `debug`, `release` or `dist`.
        "profile": option_env!("AGENT_BUILD_PROFILE")
            .unwrap_or(if cfg!(debug_assertions) { "debug" } else { "release" }),
        "features": features,
        // Languages whose grammar this build links (the `lang-*` features).
        "languages": agent_session::about::languages(),
        "llama_cpp": agent_session::about::llama_cpp(),
    })
}

#[cfg(test)]
mod tests {
    use super::wants_json;

    #[test]
    fn only_version_and_json_together_ask_for_the_json_version() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(wants_json(&args(&["--version", "--json"])));
        assert!(wants_json(&args(&["--json", "-V"])));
        assert!(!wants_json(&args(&["--version"])));
        assert!(!wants_json(&args(&["ask", "--json", "--version"])));
    }
}
