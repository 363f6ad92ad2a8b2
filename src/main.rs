//! The `agent` binary, a front end: the command line (`agent_cli`), one module per
//! subcommand (`cmd`), what every front end does alike on the terminal
//! (`session`), and the session's notices and questions on the terminal
//! (`terminal`). It parses flags into `agent_session`'s settings, calls the
//! crates and prints; what a second front end would need is decided below it.

// The binary is a front end: printing is its job (the crates below it
// print nothing; `clippy::print_*` holds them to that).
#![allow(clippy::print_stdout, clippy::print_stderr)]

use agent_base::term::untrusted_text;
use clap::Parser;
use tracing_subscriber::EnvFilter;

mod cmd;
mod session;
mod terminal;

use agent_cli::{Cli, Command};
use cmd::exit;

fn main() {
    keep_environment_private();
    quiet_on_closed_output();
    agent_session::route_tree_sitter();
    let args: Vec<String> = std::env::args().skip(1).collect();
    if cmd::version::wants_json(&args) {
        println!("{:#}", cmd::version::report());
        return;
    }
    let mut cli = Cli::parse();
    let command = cli
        .command
        .take()
        .unwrap_or_else(|| agent_cli::default_command(agent_tui::available()));
    init_logging(cli.verbose);
    agent_base::paths::allow_root_workspace(cli.allow_root_workspace);
    if let Some(store) = command.index_store() {
        // Every index reader in the process (search, the agent's tools, its
        // prefetch, doctor) opens the shared index; set before any thread.
        std::env::set_var(agent_session::index::STORE_ENV, store);
    }
    agent_session::trust::set_flag(cli.trust);
    // The administrator's rules, read once; a file that cannot be read
    // stops everything but `agent doctor`, which shows why.
    if let Err(e) = cmd::admin::init() {
        if !matches!(command, Command::Doctor(_)) {
            eprintln!("error: {}", untrusted_text(&e));
            std::process::exit(exit::USAGE);
        }
    }
    let cancel = agent_base::cancel::install_ctrl_c();
    let result = match &command {
        Command::Ask(args) => cmd::ask::run(args, &cancel, cli.verbose > 0),
        Command::Chat(args) => cmd::chat::run(args, &cancel, cli.verbose > 0),
        Command::Sessions(args) => cmd::sessions::run(args),
        Command::Init(args) => cmd::init::run(args, &cancel),
        Command::Index(args) => cmd::index::run(args, &cancel),
        Command::Search(args) => cmd::search::run(args),
        Command::Map(args) => cmd::map::run(args),
        Command::Models(args) => cmd::models::run(args),
        Command::Doctor(args) => cmd::doctor::run(args),
        Command::Mcp(args) => cmd::mcp::run(args),
        Command::Trust(args) => cmd::trust::run(args),
        Command::Acp(args) => cmd::acp::run(args),
        Command::Config(args) => cmd::config::run(args),
        Command::Audit(args) => cmd::audit::run(args),
    };
    let code = match result {
        Ok(code) => code,
        Err(e) => {
            let closed_output = e.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            });
            if closed_output {
                die_of_sigpipe();
            }
            if let Some(refused) = e
                .chain()
                .find_map(|c| c.downcast_ref::<cmd::admin::Refused>())
            {
                eprintln!("{refused}");
                std::process::exit(exit::USAGE);
            }
            eprintln!("error: {}", untrusted_text(&format!("{e:#}")));
            let refused = e
                .chain()
                .any(|c| c.downcast_ref::<agent_base::paths::NotAProject>().is_some());
            if refused {
                exit::USAGE
            } else {
                exit::FAILURE
            }
        }
    };
    std::process::exit(code);
}

/// The agent's environment holds the user's secrets, and its commands run
/// as the same user: not dumpable, its `/proc` entry (environ, memory) is
/// closed to them even where no PID namespace hides it. Children get the
/// default back when they exec.
fn keep_environment_private() {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl with integer arguments.
    unsafe {
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
    }
}

/// `agent search | head`: a closed pipe ends the process quietly, killed by
/// SIGPIPE as every Unix tool is, instead of a panic in `println!`.
///
/// SIGPIPE itself stays ignored (Rust's default): the agent writes to pipes
/// of its own children (MCP servers, Python's compiler), and one that exits
/// early must be an error the agent handles, not its death. So only a failed
/// write to our own stdout or stderr ends the process, here.
fn quiet_on_closed_output() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("");
        if message.starts_with("failed printing to std") && message.contains("Broken pipe") {
            die_of_sigpipe();
        }
        default(info)
    }));
}

/// Ends the process the way a closed pipe ends a Unix tool.
fn die_of_sigpipe() -> ! {
    #[cfg(unix)]
    // SAFETY: restoring the default action and raising the signal has no
    // memory effects; the process ends here.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        libc::raise(libc::SIGPIPE);
    }
    std::process::exit(141)
}

/// Logs go to stderr. llama.cpp's own (very chatty) logs arrive under the
/// `llama-cpp-2` target and are shown only from `-vv` on.
fn init_logging(verbose: u8) {
    // LanceDB's index training warns about its own sampling ("KMeans: more
    // than 10% of clusters are empty"): nothing a user can act on.
    let default = match verbose {
        0 => "warn,llama-cpp-2=off,lance_index=error",
        1 => "info,llama-cpp-2=off,lance_index=error",
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
