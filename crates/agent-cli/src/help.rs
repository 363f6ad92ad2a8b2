//! The long help of the commands (`--help`'s text after the flags): how
//! each works, its files, its examples and exit codes.

pub(crate) const AFTER_HELP: &str = "\
Quick start:
  agent models                         # once: are the model files in place (sha256)? says how to get them
  agent doctor                         # is everything in place? names the fix if not
  agent index                          # index the repository (optional; enables search_semantic)
  agent ask \"Where is the config parsed?\"       # the agent reads, searches, answers
  agent ask \"Add a --verbose flag to the CLI\"    # ...and changes code, asking before each write
  agent chat                           # a conversation; `agent chat --resume` continues the last one

Everything runs on this machine: llama.cpp in-process, no network at run time.
Environment: AGENT_MODELS_DIR (models folder), RUST_LOG (log filter).";

pub(crate) const CONFIG_HELP: &str = "\
Precedence, highest first: the administrator's managed file (/etc/agent/managed.toml, or the file
AGENT_MANAGED_CONFIG names), the command line, the environment, the workspace (.agent/policy.toml,
.agent/config.toml), the user (~/.config/agent/), the defaults. The managed file wins only where
it restricts: it can forbid yolo or the network, never allow what a workspace turned off.

Examples:
  agent config show                     # key = value
  agent config show --origin            # ...and where each came from
  agent config show --origin --mode yolo --json";

pub(crate) const AUDIT_HELP: &str = "\
Every audit record carries the sha256 of the record before it; each file starts with a head
record, and the latest record's hash is also kept apart from the file (beside the administrator's
sink, or in ~/.local/state/agent/audit-heads/ for the workspace's own copy). `verify` names the
first record that was changed, deleted, inserted or reordered, and a tail that was cut off. It
cannot tell a whole chain rewritten together with its head by someone who can write both (the
user, for their own copy): an administrator's sink the user cannot write guards against that.

Without FILE: the workspace's own copy (logs/audit.jsonl in its state folder, `agent doctor` names it) and the sink, if one is set
(audit_dir in the managed file, or AGENT_AUDIT_DIR): DIR/USER.jsonl.

Examples:
  agent audit verify
  agent audit verify /var/log/agent/alice.jsonl --json
  agent audit export --since 24h --json > records.jsonl
  agent audit export --since 2026-11-27T00:00:00Z --json";

pub(crate) const TRUST_HELP: &str = "\
A repository can ship what runs code or widens the sandbox: hooks ([[hooks.*]] in
.agent/config.toml), MCP servers (.mcp.json, [mcp_servers.*]), policy.toml keys that loosen the
policy (allow_network = true, allow rules, timeouts above the defaults) and commands or skills
whose front matter declares tools (allowed-tools). Until you trust the workspace none of it takes
effect: `agent ask` and `agent chat` say so in one line (and ask on a terminal), `agent doctor`
lists it. Keys that restrict (deny, scrub_env, lower timeouts) always apply.

A trust is pinned by the sha256 of those files and of the files they run inside the workspace (a
hook's script, an MCP server's script): any change, by a commit or by a command, means asking
again. Trusts are kept in ~/.config/agent/trusted-workspaces.json, out of every workspace, and
the files trusted hooks and servers run are read-only to the agent's commands.

`agent mcp trust NAME` still approves one server alone; a trusted workspace starts all of them.

Examples:
  agent trust --show          # what this workspace ships, every argument and env var, escaped
  agent trust                 # trust it as it is now
  agent trust --revoke
  agent trust --show --json
  agent --trust ask \"...\"     # scripts, CI: trusted for this run only";

pub(crate) const ACP_HELP: &str = "\
An editor starts `agent acp` itself and speaks the Agent Client Protocol (JSON-RPC) on its stdin
and stdout; you do not run it by hand. Each editor session is an agent session in the folder the
editor opened (saved like `agent chat`'s, and loadable again); the editor shows the answer, the
model's reasoning, every tool call with its status, and each edit as a diff.

Writes and commands that --mode would confirm are asked in the editor: allow once, always allow
(that kind of action, for the rest of the session) or reject. The editor's stop button cancels the
generation and the running command; what was done stays done (ask the agent to undo it). MCP
servers configured in the editor (stdio ones) join the workspace's trusted ones. When the editor
offers its file system, files are read and written through it: unsaved buffers are what the agent
sees and edits. Stdout carries
only protocol messages; logs go to stderr (-v for more); it ends when the editor closes its stdin.

Zed (settings.json):
  \"agent_servers\": {
    \"agent\": {
      \"type\": \"custom\",
      \"command\": \"agent\",
      \"args\": [\"acp\"],
      \"env\": {}
    }
  }
JetBrains IDEs (~/.jetbrains/acp.json): the same \"agent_servers\" entry.
Neovim (CodeCompanion, avante.nvim): a custom ACP adapter with command `agent`, args `acp`.

Examples:
  agent acp                                   # the default model, confirm mode
  agent acp --mode yolo --model ~/models/qwen2.5-coder-7b-instruct-q4_k_m.gguf
  agent acp --server http://gpu-box:8080/v1   # a remote OpenAI-compatible server
  agent acp --script turns.json               # replay model turns (tests)";

pub(crate) const ASK_HELP: &str = "\
How it works:
  An intent gate decides what the request needs: chat and questions about the agent are answered
  directly; questions about the repository get read-only tools (list_dir, read_file, glob, grep,
  search_semantic); coding tasks also get edit, apply_patch, write_file, undo and run_cmd.
  Every tool call is generated under a grammar, so it always parses. Writes show a diff.
  An answer that only repeats the question is sent back; on the last step the search results
  are shown instead, marked as such.

Permissions (--mode):
  confirm  ask before every write and command (default); reads never ask
  human    ask before every tool call, reads included
  yolo     never ask; the command policy still refuses dangerous commands, and a command whose
           program or target is decided at run time ($X, `... | sh`) still asks
  Commands are checked against built-in denials (rm -rf /, curl | sh, network tools, ...) and
  .agent/policy.toml, then run in a sandbox (--sandbox on, Linux Landlock): they write only in
  the workspace and a private temp dir and reach no network. Whatever a command starts ends with
  it. `undo` (or the model's undo tool) reverts the last change set.

Logs and state (outside the workspace, in ~/.local/state/agent/workspaces/NAME-HASH/, or under
$XDG_STATE_HOME; `agent doctor` names it; .agent/ holds only what a team commits):
  sessions.sqlite         every session and message (`agent sessions list`)
  logs/audit.jsonl        requests, intents, tool calls, decisions, diffs, commands
  logs/trace.jsonl        each model request/response with token counts and timings

Custom commands: `agent ask /NAME args` sends the prompt file .agent/commands/NAME.md (or
.claude/commands/, ~/.config/agent/commands/) with $ARGUMENTS replaced by the args.
Skills (SKILL.md folders in .agent/skills/, .claude/skills/, ~/.config/agent/skills/) are listed
to the model, which loads one with the skill tool. Hooks ([[hooks.pre_tool]], [[hooks.post_tool]]
in .agent/config.toml) run around tool calls, in the sandbox, with the call as JSON on stdin.

Examples:
  agent ask \"Where is the retry delay computed?\"
  agent ask --mode yolo --verify \"python3 -m unittest\" \"Fix the failing test in tests/test_math.py\"
  agent ask --json \"What does parse_config return?\"       # one JSON object for scripts
  agent ask --json --output-schema where.json \"Where is the retry delay computed?\"   # .result
  agent ask --no-tools -f src/main.rs \"What does main do?\"  # plain answer, no tools
  agent ask --script turns.json \"...\"                      # replay recorded model turns
  agent ask --model ~/models/qwen2.5-coder-7b-instruct-q4_k_m.gguf \"...\"

Schema-checked answers for scripts and CI: --output-schema FILE gives the answer also as JSON of
that JSON Schema's shape (type, properties, required, items, enum), written under a grammar made
from it: `--json` carries it as \"result\", text output prints it as the last line.

Exit codes: 0 answered, 1 error, 3 no answer (none within --max-steps, or the model's reply was
not an answer: what the search found is printed instead) or not done (a coding task whose
changes were all declined or refused), 4 answered but not in --output-schema's shape (a
server's reply that does not match), 130 interrupted (Ctrl-C).";

pub(crate) const CHAT_HELP: &str = "\
On a terminal the chat is a terminal UI (`agent` alone opens it too): Enter sends, Ctrl-J,
Shift+Enter or a trailing \\ starts a new line, a paste is one message, Up/Down recall earlier
requests (kept per workspace), / lists the commands and Tab completes one, Esc stops the current
step, Ctrl-C twice quits; edits and commands are approved in place (y, n, a for always).
Answers show their Markdown; reasoning and tool output are folded to their first lines, Ctrl-T
prints the last folded one in full and keeps the next ones whole (Ctrl-T again folds).
A pipe, TERM=dumb or --no-tui get the line mode:

Type a request and press Enter; /exit or Ctrl-D ends the chat (empty lines are ignored). Ctrl-C
stops the current step and returns to the prompt (twice quits). Every message is saved as it
happens; --resume shows the last exchanges first.

Commands (never sent to the model): /help, /clear (new conversation), /undo (the agent's last
change in this session; `agent sessions undo ID` for an earlier one), /model, /tokens (usage and how full the context is), /compact [focus] (replace the
conversation so far by the model's summary), /init (write AGENTS.md), /exit. Prompt files in
.agent/commands/NAME.md (or ~/.config/agent/commands/) are /NAME: `/review src/app.py` sends the
file's text with $ARGUMENTS replaced by `src/app.py`.

A conversation that passes 80% of the context window (compact_at in .agent/config.toml) is
compacted the same way; a model whose summary is no summary gets old turns pruned instead.

Examples:
  agent chat
  agent chat --resume            # continue the latest session
  agent chat --resume 20261122-213000-ab12
  agent chat --mode yolo --verify \"cargo test\"";

pub(crate) const INIT_HELP: &str = "\
What goes in: the install, build, test, lint and type-check commands the repository's files name
(Cargo.toml, go.mod, package.json scripts, pyproject.toml, tox.ini, noxfile.py, Makefile,
CMakeLists.txt, Maven/Gradle, GitHub Actions and GitLab CI), its languages and folders, and its
central modules (the repo map's ranking); with a model, two or three sentences on what the project
is, kept only when they are about this repository.

The file is shown as a diff and confirmed like any write; an existing AGENTS.md is never replaced
without a yes on a terminal, even with --mode yolo (which creates a new one without asking).
`agent chat` has the same as /init.

Examples:
  agent init                      # review the diff, answer y
  agent init --print --no-model   # only print what it would write
  agent init --mode yolo          # create AGENTS.md without asking (replacing one still asks)";
