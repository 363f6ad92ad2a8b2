//! `agent acp`: the agent for editors, as an Agent Client Protocol agent on
//! stdio (crates/agent-acp); here each session gets its agent, opened as
//! every front end opens one (`agent_session::open`), and all of them
//! share one model (`agent_session::shared`).

use std::path::Path;

use anyhow::Result;

use agent_acp::StdioServer;
use agent_cli::AcpArgs;
use agent_session::mcp::ServerConfig;
use agent_session::settings::Sampling;
use agent_session::shared::SharedProvider;
use agent_session::{Agent, Opening};

pub(crate) fn run(args: &AcpArgs) -> Result<i32> {
    // Only protocol messages on stdout: whatever else writes there lands in
    // the log (stderr).
    let output = super::mcp::protocol_output()?;
    let input = std::io::BufReader::new(std::io::stdin());
    let mut factory = Factory { args, model: None };
    agent_acp::serve(&mut factory, Box::new(input), Box::new(output))?;
    Ok(super::exit::OK)
}

struct Factory<'a> {
    args: &'a AcpArgs,
    /// Loaded at the first session, then shared: an editor opens a session
    /// per thread, and a second copy of the model would double the memory.
    model: Option<SharedProvider>,
}

impl agent_acp::Sessions for Factory<'_> {
    fn open(&mut self, cwd: &Path, mcp: Vec<StdioServer>, resume: Option<&str>) -> Result<Agent> {
        let root = agent_base::paths::repo_root(Some(cwd))?;
        let model = match &self.model {
            Some(model) => model.clone(),
            None => self
                .model
                .insert(SharedProvider::new(super::provider(&self.args.model)?))
                .clone(),
        };
        let sampling = Sampling {
            temperature: self.args.temperature,
            ..Sampling::greedy()
        };
        let servers = mcp
            .into_iter()
            .map(|s| ServerConfig::stdio(s.name, s.command, s.args, s.env))
            .collect();
        let opening = Opening {
            agent: self.args.agent.settings(),
            max_tokens: self.args.max_tokens,
            sampling,
            resume: resume.map(String::from),
            extra_mcp: servers,
        };
        // No terminal to ask on: what waits for trust is said in the log.
        agent_session::open(
            &root,
            Box::new(model),
            opening,
            None,
            &mut crate::terminal::print,
        )
    }
}
