//! `agent acp`: the agent for editors, as an Agent Client Protocol agent on
//! stdio (crates/agent-acp); here each session gets its agent, built as
//! `agent chat` builds one.

use std::path::Path;

use anyhow::Result;

use crate::cli::AcpArgs;
use agent_acp::StdioServer;
use agent_core::Agent;
use agent_llm::Sampling;
use agent_mcp::config::ServerConfig;
use agent_policy::Mode;

pub fn run(args: &AcpArgs) -> Result<i32> {
    // Only protocol messages on stdout: whatever else writes there lands in
    // the log (stderr).
    let output = super::mcp::protocol_output()?;
    let input = std::io::BufReader::new(std::io::stdin());
    agent_acp::serve(&mut Factory { args }, Box::new(input), Box::new(output))?;
    Ok(super::exit::OK)
}

struct Factory<'a> {
    args: &'a AcpArgs,
}

impl agent_acp::Sessions for Factory<'_> {
    fn open(&mut self, cwd: &Path, mcp: Vec<StdioServer>, resume: Option<&str>) -> Result<Agent> {
        let root = agent_base::paths::repo_root(Some(cwd))?;
        let sampling = Sampling {
            temperature: self.args.temperature,
            ..Sampling::greedy()
        };
        let servers = mcp
            .into_iter()
            .map(|s| ServerConfig {
                name: s.name,
                command: s.command,
                args: s.args,
                env: s.env,
                startup_timeout_s: None,
            })
            .collect();
        super::chat::agent_in(
            &root,
            &self.args.agent,
            &self.args.model,
            self.args.max_tokens,
            sampling,
            resume.map(String::from),
            servers,
        )
    }

    fn yolo(&self) -> bool {
        self.args.agent.mode == Mode::Yolo
    }
}
