use clap::Parser;
use tracing_subscriber::EnvFilter;

use agent::cli::{Cli, Command};
use agent::cmd::{self, exit};

fn main() {
    restore_sigpipe();
    agent::alloc::route_tree_sitter();
    let cli = Cli::parse();
    init_logging(cli.verbose);
    let cancel = agent::cancel::install_ctrl_c();
    let result = match &cli.command {
        Command::Ask(args) => cmd::ask::run(args, &cancel, cli.verbose > 0),
        Command::Chat(args) => cmd::chat::run(args, &cancel, cli.verbose > 0),
        Command::Sessions(args) => cmd::sessions::run(args),
        Command::Index(args) => cmd::index::run(args, &cancel),
        Command::Search(args) => cmd::search::run(args),
        Command::Map(args) => cmd::map::run(args),
        Command::Models(args) => cmd::models::run(args),
        Command::Doctor(args) => cmd::doctor::run(args),
        Command::Mcp(args) => cmd::mcp::run(args),
    };
    let code = match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            exit::FAILURE
        }
    };
    std::process::exit(code);
}

/// `agent search | head`: a closed pipe ends the process quietly, as it does
/// every Unix tool, instead of a panic in `println!` (Rust ignores SIGPIPE).
/// What the agent writes to disk is written as it happens, so nothing of
/// a session is lost.
fn restore_sigpipe() {
    #[cfg(unix)]
    // SAFETY: called first thing in main, before any thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// Logs go to stderr. llama.cpp's own (very chatty) logs arrive under the
/// `llama-cpp-2` target and are shown only from `-vv` on.
fn init_logging(verbose: u8) {
    let default = match verbose {
        0 => "warn,llama-cpp-2=off",
        1 => "info,llama-cpp-2=off",
        2 => "debug",
        _ => "trace",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .init();
}
