//! Opening the agent for a workspace, the same way for every front end
//! (`agent ask`, `agent chat` in lines or in the terminal UI, `agent acp`).
//! (The saved conversations are `agent_store::session`.)

use std::path::Path;

use agent_core::{Agent, AgentConfig};
use agent_llm::{Provider, Sampling};
use agent_mcp::config::ServerConfig;
use agent_tools::SemanticSearch;
use anyhow::Result;

use crate::search::IndexSearch;
use crate::settings::AgentSettings;
use crate::{admin, mcp, trust, Ask, Notice, Say};

/// What a session is opened with besides its model.
#[derive(Debug, Clone)]
pub struct Opening {
    pub agent: AgentSettings,
    /// Most tokens of one reply.
    pub max_tokens: usize,
    pub sampling: Sampling,
    /// A saved session to continue.
    pub resume: Option<String>,
    /// MCP servers of the front end's (an editor's, over ACP): the user
    /// chose them there, so they start as trusted.
    pub extra_mcp: Vec<ServerConfig>,
}

/// The agent for the workspace at `root` on `provider`, with the
/// workspace's trusted MCP servers and the opening's own. `ask`, when
/// given, asks the user to trust a workspace that waits for it.
pub fn open(
    root: &Path,
    provider: Box<dyn Provider>,
    opening: Opening,
    ask: Option<&mut dyn Ask>,
    say: Say<'_>,
) -> Result<Agent> {
    let settings = &opening.agent;
    admin::check_agent(settings)?;
    let root = root.to_path_buf();
    // What the repository ships runs only in a trusted workspace.
    let trust = trust::for_session(&root, ask, say)?;
    let config = AgentConfig {
        mode: settings.mode,
        max_steps: settings.max_steps,
        max_tokens: opening.max_tokens,
        sampling: opening.sampling,
        verify: settings.verify.clone(),
        repo_map: settings.repo_map,
        sandbox: settings.sandbox,
        explore: settings.explore,
        resume: opening.resume,
        trusted: trust.trusted,
        protected_paths: trust.protected,
        managed: admin::managed().clone(),
        audit: admin::audit_config(),
        ..AgentConfig::new(&root)
    };
    let search = IndexSearch::for_workspace(&root).map(|s| Box::new(s) as Box<dyn SemanticSearch>);
    let mut agent = Agent::new(provider, config, search)?;
    // A skill folder that cannot be read is the team's to fix: say so, and
    // go on with the others.
    for problem in &agent.skills().problems {
        say(Notice::Warning(problem.clone()));
    }
    // The team's own tools: trusted servers only; one that fails is
    // reported and left out.
    if let Some(hub) =
        mcp::start_for_session(&root, agent.policy(), trust.trusted, opening.extra_mcp, say)?
    {
        agent.add_tools(hub.tools());
    }
    Ok(agent)
}
