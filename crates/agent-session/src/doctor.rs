//! `agent doctor`'s checks, as data: everything `agent ask` needs, end to
//! end, each with the fix for what is missing. The binary prints them.

use std::ffi::{c_char, c_void, CStr};
use std::path::{Path, PathBuf};

use serde::Serialize;

use agent_base::models::{self, FileState};
use agent_base::paths;
use agent_base::term::untrusted;
use agent_engine::engine::{self, EngineConfig, LlamaEngine};
use agent_engine::gguf;
use agent_engine::offload::{self, Device, GpuLayers};
use agent_llm::Placement;
use agent_llm::{CompletionRequest, Flow, LlmError, Message, Provider};

/// One line of the checklist.
#[derive(Debug, Serialize)]
pub struct Check {
    pub name: &'static str,
    pub ok: bool,
    /// Does `agent ask` depend on it? Other checks only warn.
    pub required: bool,
    pub detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

/// What `agent doctor` found.
#[derive(Debug, Serialize)]
pub struct Report {
    /// Every required check passed: `agent ask` can run.
    pub ready: bool,
    pub checks: Vec<Check>,
    pub devices: Vec<Device>,
    pub offload: Option<Placement>,
}

/// Every check, with the devices llama.cpp sees and where the model
/// would run on them.
pub fn report(model: Option<PathBuf>, gpu_layers: GpuLayers, gpu_device: Option<usize>) -> Report {
    let mut checks = vec![managed_check()];
    let dir = paths::models_dir();
    let statuses = models::verify_all(&dir, |_| {});
    let bad: Vec<String> = statuses
        .iter()
        .filter(|s| s.state != FileState::Ok)
        .map(|s| format!("{} ({:?})", s.file.path, s.state).to_lowercase())
        .collect();
    checks.push(Check {
        name: "model files",
        ok: bad.is_empty(),
        required: false,
        detail: if bad.is_empty() {
            format!("{} files verified in {}", statuses.len(), dir.display())
        } else {
            format!("in {}: {}", dir.display(), bad.join(", "))
        },
        fix: (!bad.is_empty()).then(models::fetch_hint),
    });

    let explicit = model.is_some();
    let model = model.unwrap_or_else(paths::default_chat_model);
    let config = EngineConfig {
        gpu_layers,
        gpu_device,
        ..EngineConfig::new(&model)
    };
    let (devices, offload) = offload_check(&config);
    checks.push(offload.check);
    checks.push(chat_model_check(&config, explicit));
    if model == paths::default_chat_model() {
        checks.push(default_model_note());
    }
    checks.push(onnx_runtime_check(&dir.join(paths::ONNX_RUNTIME_LIB)));
    // Before the index: opening it moves an old `.agent/` state.
    checks.push(state_check());
    checks.push(index_check());
    if let Some(check) = deps_check() {
        checks.push(check);
    }
    checks.push(instructions_check());
    if let Some(check) = config_links_check() {
        checks.push(check);
    }
    checks.extend(conventions_checks());
    checks.push(trust_check());
    checks.push(checkers_check());
    let sandbox = agent_sandbox::describe();
    checks.push(Check {
        name: "sandbox",
        ok: sandbox.is_ok(),
        required: false,
        fix: sandbox.is_err().then(|| {
            "a Linux kernel with Landlock (5.13+, in the boot `lsm=` list), macOS with /usr/bin/sandbox-exec, or `--sandbox off` to run commands unfenced without asking".into()
        }),
        detail: sandbox.unwrap_or_else(|e| e),
    });
    if agent_sandbox::available() {
        checks.push(sandbox_sets_check());
        checks.push(layer_check());
    }
    checks.push(llama_cpp_check());
    Report {
        ready: checks.iter().all(|c| c.ok || !c.required),
        checks,
        devices,
        offload: offload.plan,
    }
}

/// An error's text split into what went wrong and its fix (the text after
/// `\n  fix: `, the form every error of the agent's gives one in).
fn detail_and_fix(text: &str) -> (String, Option<String>) {
    match text.split_once("\n  fix: ") {
        Some((what, fix)) if !fix.is_empty() => (what.to_string(), Some(fix.to_string())),
        Some((what, _)) => (what.to_string(), None),
        None => (text.to_string(), None),
    }
}

/// llama.cpp's threads, CPU kernels and features; a portable build whose
/// CPU backends are missing cannot run a model.
fn llama_cpp_check() -> Check {
    if let Err(e) = agent_engine::backends::ready() {
        let (detail, fix) = detail_and_fix(&e);
        return Check {
            name: "llama.cpp",
            ok: false,
            required: true,
            detail,
            fix,
        };
    }
    Check {
        name: "llama.cpp",
        ok: true,
        required: false,
        detail: format!(
            "{}{}; CPU kernels: {}; {}",
            agent_base::term::counted(threads_to_use().max(1) as usize, "thread"),
            if std::env::var_os("AGENT_THREADS").is_some() {
                " (AGENT_THREADS)"
            } else {
                ""
            },
            crate::about::cpu_backend(),
            engine::system_info()
        ),
        fix: None,
    }
}

/// The administrator's managed file: where it is and what it restricts; a
/// file that cannot be read stops every other command.
fn managed_check() -> Check {
    use agent_policy::managed::SYSTEM_FILE;
    if let Some(e) = crate::admin::load_error() {
        return Check {
            name: "managed",
            ok: false,
            required: true,
            detail: e.to_string(),
            fix: Some(
                "the administrator fixes the managed file; until then the agent does not run"
                    .into(),
            ),
        };
    }
    let m = crate::admin::managed();
    let detail = match &m.path {
        None => format!("none ({SYSTEM_FILE} not found): nothing restricted"),
        Some(p) => {
            let r = m.restrictions();
            let also = m.also.as_ref().map_or(String::new(), |a| {
                format!(" narrowed by {} (AGENT_MANAGED_CONFIG)", a.display())
            });
            let mut d = format!(
                "{}{also}: {}",
                p.display(),
                if r.is_empty() {
                    "restricts nothing".into()
                } else {
                    r.join("; ")
                }
            );
            if m.require_sandbox && agent_sandbox::describe().is_err() {
                d.push_str("; this system has no sandbox, so commands are refused");
            }
            d
        }
    };
    Check {
        name: "managed",
        ok: true,
        required: false,
        detail,
        fix: None,
    }
}

/// What the tiny default model can and cannot do, said plainly: it is
/// there so everything runs out of the box, not to do the work.
fn default_model_note() -> Check {
    Check {
        name: "answers",
        ok: false,
        required: false,
        detail: format!(
            "the default model ({}, 135M parameters) proves the set-up: it runs the tools, \
the grammar and the loop. It cannot be relied on to answer questions about code or to make \
changes; when its reply is no answer, `agent ask` exits with 3 and shows what the search found.",
            paths::DEFAULT_CHAT_MODEL
        ),
        fix: Some(
            "for real work use a coding model: --model PATH or AGENT_MODEL=PATH to any GGUF \
chat model (e.g. qwen2.5-coder-7b-instruct-q4_k_m.gguf)"
                .into(),
        ),
    }
}

struct OffloadReport {
    check: Check,
    plan: Option<Placement>,
}

/// The devices llama.cpp sees, and where the configured model would run.
fn offload_check(config: &EngineConfig) -> (Vec<Device>, OffloadReport) {
    let devices = engine::devices().unwrap_or_default();
    let listed: Vec<String> = devices
        .iter()
        .map(|d| {
            format!(
                "{} {} ({}, {}: {} of {} MiB free)",
                d.index,
                d.name,
                d.description,
                d.backend,
                d.memory_free >> 20,
                d.memory_total >> 20
            )
        })
        .collect();
    let built = offload::compiled_backends();
    let mut check = Check {
        name: "gpu",
        ok: true,
        required: false,
        detail: String::new(),
        fix: None,
    };
    let plan = match engine::plan(config, &devices) {
        Ok((plan, _)) => {
            if plan.gpu_layers == 0 && config.gpu_layers != GpuLayers::Count(0) {
                check.ok = false;
                if built.is_empty() {
                    check.fix = Some("scripts/install --features vulkan (or cuda; metal is on by default on macOS): see the README, GPU".into());
                }
            }
            let placement = Placement::from(&plan);
            check.detail = format!("the model gets: {}", plan.summary());
            Some(placement)
        }
        // A bad --gpu-device: `ask` would fail the same way.
        Err(e @ LlmError::Offload(_)) => {
            check.ok = false;
            check.required = true;
            (check.detail, check.fix) = detail_and_fix(&e.to_string());
            None
        }
        // No readable model: the chat model check says why.
        Err(_) => {
            check.ok = false;
            check.detail = "no plan without a readable model (see the chat model line)".into();
            None
        }
    };
    check.detail = format!(
        "{}; backends built in: {}; devices: {}",
        check.detail,
        if built.is_empty() {
            "CPU only".to_string()
        } else {
            built.join(", ")
        },
        listed.join("; ")
    );
    (devices, OffloadReport { check, plan })
}

/// Loads the model and generates one token: the only proof that `ask` works.
/// `explicit`: the model is the user's `--model`, not the default one.
fn chat_model_check(config: &EngineConfig, explicit: bool) -> Check {
    let model = config.model_path.as_path();
    let fix = if explicit {
        "check the path: --model takes any GGUF chat model file (drop it to use the default model)"
            .to_string()
    } else {
        format!(
            "{}, or --model PATH to any GGUF chat model",
            models::fetch_hint()
        )
    };
    let mut check = Check {
        name: "chat model",
        ok: false,
        required: true,
        detail: String::new(),
        fix: Some(fix),
    };
    let info = match gguf::inspect(model) {
        Ok(info) => info,
        Err(e) => {
            check.detail = format!("{}: {e}", model.display());
            return check;
        }
    };
    let result = LlamaEngine::load(&EngineConfig {
        ctx_size: Some(512),
        ..config.clone()
    })
    .and_then(|mut engine| {
        let mut req = CompletionRequest::new(vec![Message::user("Say OK.")]);
        req.max_tokens = 1;
        let c = engine.complete(&req, &mut |_| Flow::Continue)?;
        let template = engine.chat_format().info().clone();
        Ok((c, engine.plan().clone(), template))
    });
    match result {
        Ok((c, plan, template)) => {
            check.ok = true;
            check.fix = None;
            let placed = match &plan.device {
                Some(d) if plan.gpu_layers > 0 => {
                    format!(
                        " with {}/{} layers on {}",
                        plan.gpu_layers, plan.model_layers, d.name
                    )
                }
                _ => " on the CPU".into(),
            };
            check.detail = format!(
                "{} ({}, {:.0} MB) loads and generates{placed} (first token in {:.0} ms)",
                info.name.unwrap_or_else(|| model.display().to_string()),
                info.architecture.unwrap_or_default(),
                info.file_size as f64 / 1e6,
                c.ttft_ms
            );
            // Which template renders its prompts, and why not its own.
            check.detail.push_str(&format!(
                "; chat template: {} (calls: {}{})",
                template.source,
                template.family,
                if template.thinks { ", thinks" } else { "" }
            ));
            if let Some(fallback) = &template.fallback {
                check.detail.push_str(&format!("; {fallback}"));
            }
        }
        Err(e) => {
            check.detail = e.to_string();
            // The error says how to fix it already: once is enough.
            if check.detail.contains("fix:") {
                check.fix = None;
            }
        }
    }
    check
}

/// Which AGENTS.md files go into the system prompt.
/// What the sandbox keeps read-only and hidden in this workspace, its
/// limits, and the capabilities a command really has (read from a command
/// run inside it, not assumed).
fn sandbox_sets_check() -> Check {
    use agent_policy::{Mode, Policy};
    let root = paths::workspace_root(&std::env::current_dir().unwrap_or_default());
    // As a session here would load it: what an untrusted workspace's
    // policy.toml loosens is held back.
    let trusted = crate::trust::workspace_trusted(&root).unwrap_or(false);
    let mut policy =
        Policy::load_for(&paths::team_dir(&root), Mode::default(), trusted).unwrap_or_default();
    crate::admin::managed().restrict(&mut policy);
    let sandbox = agent_tools::fence::sandbox(&root, &policy);
    let support = agent_sandbox::support();
    let shown = |paths: &[std::path::PathBuf]| -> String {
        let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
        let names: Vec<String> = paths
            .iter()
            .filter(|p| std::fs::symlink_metadata(p).is_ok())
            .map(|p| match (p.strip_prefix(&root), &home) {
                (Ok(rel), _) => rel.display().to_string(),
                (_, Some(h)) if p.starts_with(h) => {
                    format!("~/{}", p.strip_prefix(h).unwrap_or(p).display())
                }
                _ => p.display().to_string(),
            })
            .collect();
        if names.is_empty() {
            "none here".into()
        } else {
            names.join(", ")
        }
    };
    let limit = |v: Option<u64>, unit: &str| v.map_or("none".into(), |v| format!("{v}{unit}"));
    let l = &sandbox.limits;
    let enforced = if support.mounts() {
        "enforced by mounts"
    } else {
        "NOT enforced (no user namespace here; Landlock alone)"
    };
    let detail = format!(
        "read-only for commands ({enforced}): {}; hidden from commands ({enforced}): {} \
         (and any of ~/.ssh ~/.aws ~/.kube ~/.gnupg ... that appear){}; limits per command: \
         processes {}, memory {} {}, file size {}, CPU {} per process; \
         capabilities: {}; {}",
        shown(&sandbox.read_only),
        shown(&sandbox.deny_read),
        match (&sandbox.home, support.mounts()) {
            (Some(_), true) =>
                "; the home folder hidden but for the toolchains' folders and the git identity",
            _ => "",
        },
        limit(l.processes, ""),
        limit(l.memory_mb, " MiB"),
        if support.memory_cgroup {
            "for the whole command (a cgroup)"
        } else {
            "per process (RLIMIT_DATA)"
        },
        limit(l.file_size_mb, " MiB"),
        limit(l.cpu_s, " s"),
        command_capabilities(&sandbox),
        allowlist_note(&policy, &support),
    );
    Check {
        name: "sandbox sets",
        ok: support.mounts(),
        required: false,
        detail,
        fix: (!support.mounts()).then(|| {
            "allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, \
             user.max_user_namespaces > 0, or an AppArmor profile that permits them)"
                .into()
        }),
    }
}

/// The capability sets and no_new_privs of a command run in `sandbox`.
/// Whether commands write a copy-on-write layer whose changes the agent
/// admits, or the workspace itself (and why).
fn layer_check() -> Check {
    let root = paths::workspace_root(&std::env::current_dir().unwrap_or_default());
    let layers = paths::state_location(&root).join("layers");
    let probed = std::fs::create_dir_all(&layers)
        .map_err(|e| format!("{}: {e}", layers.display()))
        .and_then(|()| agent_sandbox::overlay_support(&layers));
    let bypass: Vec<String> = agent_tools::admit::bypass(&root)
        .iter()
        .filter_map(|p| Some(format!("{}/", p.strip_prefix(&root).ok()?.display())))
        .collect();
    match probed {
        Ok(()) => Check {
            name: "command layer",
            ok: true,
            required: false,
            detail: format!(
                "in use: commands write a copy-on-write layer over the workspace, and what they \
                 change is admitted as one change set (a diff, undone by /undo); files that \
                 configure agents, git hooks or tools are asked for, a .git anywhere refused; \
                 written directly: {}",
                if bypass.is_empty() {
                    "no build folder here (target/, node_modules/, ... when git ignores them)"
                        .to_string()
                } else {
                    bypass.join(", ")
                }
            ),
            fix: None,
        },
        Err(why) => Check {
            name: "command layer",
            ok: false,
            required: false,
            detail: format!(
                "NOT in use: {why}; commands write the workspace directly, and only the agent's \
                 settings are put back after each"
            ),
            fix: Some(
                "Linux 5.11+ with user namespaces, and the state folder on a file system with \
                 extended attributes (ext4, xfs, btrfs; tmpfs from 6.6)"
                    .into(),
            ),
        },
    }
}

/// Files that configure the agent which are symlinks: never followed, so
/// what they point at is not read (a command or a repository may have
/// planted one), and how to fix that.
fn config_links_check() -> Option<Check> {
    let root = paths::workspace_root(&std::env::current_dir().unwrap_or_default());
    let team = paths::team_dir(&root);
    let mut candidates = vec![
        team.clone(),
        root.join(".mcp.json"),
        root.join("AGENTS.md"),
        root.join("CLAUDE.md"),
        root.join(".claude"),
    ];
    if let Ok(entries) = std::fs::read_dir(&team) {
        candidates.extend(entries.flatten().map(|e| e.path()));
    }
    let links: Vec<String> = candidates
        .iter()
        .filter(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink()))
        .map(|p| p.strip_prefix(&root).unwrap_or(p).display().to_string())
        .collect();
    // A linked policy, config or .mcp.json stops the agent; a linked
    // AGENTS.md or skill folder is only left out.
    let fatal = links
        .iter()
        .any(|l| !l.starts_with(".claude") && l != "AGENTS.md" && l != "CLAUDE.md");
    (!links.is_empty()).then(|| Check {
        name: "config links",
        ok: false,
        required: fatal,
        detail: format!(
            "{} {} a symlink: the agent never reads its configuration through a link",
            links.join(", "),
            if links.len() == 1 { "is" } else { "are" }
        ),
        fix: Some(
            "replace each link with the file itself (cp --remove-destination \"$(readlink -f PATH)\" PATH), \
             or remove it"
                .into(),
        ),
    })
}

/// Whether `allow_network = ["host:port"]` can be enforced here (a network
/// namespace of the command's own, on Linux), and the list in force.
fn allowlist_note(policy: &agent_policy::Policy, support: &agent_sandbox::Support) -> String {
    let works = cfg!(target_os = "linux") && support.mounts();
    match (&policy.network_allowlist, works) {
        (Some(list), true) => format!(
            "network: only {} through the agent's proxy",
            list.join(", ")
        ),
        (Some(_), false) => "network: allow_network lists hosts, which this system cannot \
                             enforce (no network namespace for commands): commands fail"
            .into(),
        (None, true) => "a network allowlist (allow_network = [\"host:port\"]) works here".into(),
        (None, false) => "no network allowlist here (it needs Linux user namespaces)".into(),
    }
}

fn command_capabilities(sandbox: &agent_sandbox::Sandbox) -> String {
    let Ok(prepared) = sandbox.prepare() else {
        return "unknown (the sandbox could not be prepared)".into();
    };
    let out = agent_sandbox::command(prepared, "sh")
        .args([
            "-c",
            "grep -E '^(CapEff|CapBnd|CapAmb|NoNewPrivs)' /proc/self/status",
        ])
        .current_dir(std::env::temp_dir())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .output();
    match out {
        Ok(out) if out.status.success() => {
            let text = String::from_utf8_lossy(&out.stdout);
            let fields: Vec<String> = text
                .lines()
                .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
                .collect();
            let none = text
                .lines()
                .filter(|l| l.starts_with("Cap"))
                .all(|l| l.ends_with("0000000000000000"));
            format!(
                "{} ({})",
                if none { "none" } else { "SOME KEPT" },
                fields.join(", ")
            )
        }
        _ => "unknown (a command could not be run in the sandbox)".into(),
    }
}

fn instructions_check() -> Check {
    use agent_config::instructions::{personal_file, Instructions, FILE_NAME};
    let root = paths::workspace_root(&std::env::current_dir().unwrap_or_default());
    let found = Instructions::load(&root, personal_file().as_deref());
    let names: Vec<String> = found
        .files
        .iter()
        .map(|p| untrusted(p).to_string())
        .collect();
    Check {
        name: "instructions",
        ok: true,
        required: false,
        detail: if names.is_empty() {
            format!(
                "no {FILE_NAME} in {} or in your config folder",
                untrusted(&root)
            )
        } else {
            format!(
                "read {} (subfolders' {FILE_NAME} are added as tools reach them)",
                names.join(", ")
            )
        },
        fix: None,
    }
}

/// The team's own conventions: skills, custom commands and hooks, with
/// what is wrong with each that is not usable.
fn conventions_checks() -> Vec<Check> {
    use agent_config::{commands, hooks, settings::Settings, skills};
    let root = paths::workspace_root(&std::env::current_dir().unwrap_or_default());
    let mut out = Vec::new();

    let found = skills::Skills::load(&root, skills::personal_dir().as_deref());
    let names: Vec<String> = found
        .skills
        .iter()
        .map(|s| format!("{} ({})", untrusted(&s.name), s.source))
        .chain(found.held.iter().map(|s| {
            format!(
                "{} ({}, declares tools: waits for `agent trust`)",
                untrusted(&s.name),
                s.source
            )
        }))
        .collect();
    out.push(Check {
        name: "skills",
        ok: found.problems.is_empty(),
        required: false,
        detail: {
            let loaded = if names.is_empty() {
                "none (SKILL.md folders in .agent/skills/, .claude/skills/ or ~/.config/agent/skills/)".to_string()
            } else {
                names.join(", ")
            };
            if found.problems.is_empty() {
                loaded
            } else {
                let problems: Vec<String> = found
                    .problems
                    .iter()
                    .map(|p| p.replace('\n', "\n         "))
                    .collect();
                format!(
                    "{loaded}; {} unusable:\n       - {}",
                    problems.len(),
                    problems.join("\n       - ")
                )
            }
        },
        fix: None,
    });

    let listed = commands::list(&root, commands::personal_dir().as_deref());
    out.push(Check {
        name: "commands",
        ok: true,
        required: false,
        detail: if listed.is_empty() {
            "none (prompt files in .agent/commands/NAME.md become /NAME)".into()
        } else {
            listed
                .iter()
                .map(|c| format!("/{}", untrusted(&c.name)))
                .collect::<Vec<_>>()
                .join(", ")
        },
        fix: None,
    });

    let check = match Settings::load(&root).and_then(|s| Ok((hooks::Hooks::new(&s)?, s))) {
        Err(e) => {
            let (detail, fix) = detail_and_fix(&format!("{e:#}"));
            Check {
                name: "hooks",
                ok: false,
                required: false,
                detail,
                fix,
            }
        }
        Ok((hooks, settings)) => {
            let mut problems = Vec::new();
            let mut listed = Vec::new();
            for (event, list) in [
                (hooks::Event::PreTool, &hooks.pre_tool),
                (hooks::Event::PostTool, &hooks.post_tool),
            ] {
                for hook in list {
                    let matcher = if hook.matcher.is_empty() {
                        "*"
                    } else {
                        &hook.matcher
                    };
                    listed.push(format!(
                        "{} [{}] {}{}",
                        event.key(),
                        untrusted(matcher),
                        untrusted(&hook.command),
                        if hook.read_only {
                            " (read-only requests too)"
                        } else {
                            ""
                        }
                    ));
                    if let Some(problem) = hooks::check_program(&hook.command, &root) {
                        problems.push(problem);
                    }
                }
            }
            Check {
                name: "hooks",
                ok: problems.is_empty(),
                required: false,
                detail: if listed.is_empty() {
                    format!(
                        "none; compaction at {:.0}% of the context ({})",
                        settings.compact_at * 100.0,
                        untrusted(&settings.file)
                    )
                } else {
                    format!(
                        "{}; compaction at {:.0}% of the context",
                        listed.join(", "),
                        settings.compact_at * 100.0
                    )
                },
                fix: (!problems.is_empty()).then(|| problems.join("; ").replace("\n  fix: ", ": ")),
            }
        }
    };
    out.push(check);
    out
}

/// Whether the workspace is trusted, and everything it ships that waits
/// for trust or runs with it, one fact per line.
fn trust_check() -> Check {
    use agent_config::trust::{State, TrustStore};
    let root = paths::workspace_root(&std::env::current_dir().unwrap_or_default());
    let found = crate::trust::inventory(&root)
        .and_then(|inv| Ok((TrustStore::open_default()?.state(&root, &inv), inv)));
    let (state, inv) = match found {
        Ok(found) => found,
        Err(e) => {
            return Check {
                name: "trust",
                ok: false,
                required: false,
                detail: format!("{e:#}"),
                fix: None,
            }
        }
    };
    let mut detail = crate::trust::state_words(&state).to_string();
    if let State::Pending { changed } = &state {
        detail.push_str(&format!("; pending: {}", inv.summary()));
        if !changed.is_empty() {
            let changed: Vec<String> = changed.iter().map(|f| untrusted(f).to_string()).collect();
            detail.push_str(&format!(" (changed: {})", changed.join(", ")));
        }
    }
    for line in inv.lines() {
        detail.push_str("\n                     ");
        detail.push_str(&line);
    }
    let pending = matches!(state, State::Pending { .. });
    Check {
        name: "trust",
        ok: !pending,
        required: false,
        detail,
        fix: pending.then(|| {
            "check it with `agent trust --show`, then `agent trust` (or --trust for one run)".into()
        }),
    }
}

/// The language checkers run after edits that this workspace can use.
fn checkers_check() -> Check {
    let root = paths::workspace_root(&std::env::current_dir().unwrap_or_default());
    let (found, missing): (Vec<_>, Vec<_>) = agent_tools::diagnose::programs(&root)
        .into_iter()
        .partition(|(_, program)| program.is_some());
    let names = |list: &[(&str, Option<std::path::PathBuf>)]| {
        list.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
    };
    let mut detail = String::from("after edits: a tree-sitter parse");
    if !found.is_empty() {
        detail.push_str(&format!(", then {}", names(&found)));
    }
    if !missing.is_empty() {
        detail.push_str(&format!(" (not installed: {})", names(&missing)));
    }
    Check {
        name: "checkers",
        ok: true,
        required: false,
        detail,
        fix: None,
    }
}

/// Where the agent keeps its own state for this workspace (outside it),
/// and the old state still in `.agent/` that the next run moves there.
fn state_check() -> Check {
    let root = paths::workspace_root(&std::env::current_dir().unwrap_or_default());
    if let Some(what) = paths::not_a_project(&root) {
        return Check {
            name: "state",
            ok: false,
            required: false,
            detail: format!("{} is {what}, not a project", root.display()),
            fix: Some("run `agent doctor` inside a project folder".into()),
        };
    }
    let location = paths::state_location(&root);
    let pending = agent_base::state::pending(&root);
    let mut detail = format!("{} (for {})", location.display(), root.display());
    if !pending.is_empty() {
        let names: Vec<String> = pending
            .iter()
            .map(|p| {
                format!(
                    ".agent/{}",
                    p.file_name().unwrap_or_default().to_string_lossy()
                )
            })
            .collect();
        detail.push_str(&format!(
            "; old state in the workspace, moved there when the agent next opens it: {}",
            names.join(", ")
        ));
    }
    Check {
        name: "state",
        ok: true,
        required: false,
        detail,
        fix: None,
    }
}

/// The workspace's code index, if any: optional for `ask`, so only a warning.
fn index_check() -> Check {
    let root = paths::workspace_root(&std::env::current_dir().unwrap_or_default());
    if paths::not_a_project(&root).is_some() {
        return Check {
            name: "index",
            ok: false,
            required: false,
            detail: format!("{}: not a project folder", root.display()),
            fix: Some("run `agent doctor` inside a project folder".into()),
        };
    }
    let (ok, detail, fix) = match agent_index::Index::open_reader(&root).and_then(|i| i.status()) {
        Ok(s) => (
            true,
            format!(
                "{} files, {} chunks, updated {}",
                s.files,
                s.chunks,
                s.last_update.as_deref().unwrap_or("never")
            ),
            None,
        ),
        Err(e) => (
            false,
            format!("{}: {}", root.display(), e.to_string().lines().next().unwrap_or_default()),
            Some("agent index (optional: gives `agent ask` and `agent search` the repository's code)".into()),
        ),
    };
    Check {
        name: "index",
        ok,
        required: false,
        detail,
        fix,
    }
}

/// The dependencies' indices (`agent index --deps`): how many of the
/// direct ones are indexed, and how many are not on disk; None in a folder
/// that locks none.
fn deps_check() -> Option<Check> {
    let root = paths::workspace_root(&std::env::current_dir().unwrap_or_default());
    if paths::not_a_project(&root).is_some() {
        return None;
    }
    let resolution = crate::deps::resolve(&root);
    let direct: Vec<_> = resolution.direct().collect();
    let missing = resolution.missing.iter().filter(|m| m.direct).count();
    if direct.is_empty() && missing == 0 {
        return None;
    }
    let indexed = direct
        .iter()
        .filter(|p| crate::deps::indexed(p).is_some())
        .count();
    let all = resolution
        .packages
        .iter()
        .filter(|p| crate::deps::indexed(p).is_some())
        .count();
    Some(crate::deps::doctor_line(
        direct.len(),
        indexed,
        all,
        missing,
    ))
}

/// The C ABI entry point of ONNX Runtime: a table whose second function
/// returns the version string.
#[repr(C)]
struct OrtApiBase {
    get_api: unsafe extern "C" fn(u32) -> *const c_void,
    get_version_string: unsafe extern "C" fn() -> *const c_char,
}

fn onnx_runtime_check(lib: &Path) -> Check {
    let mut check = Check {
        name: "onnxruntime",
        ok: false,
        required: false,
        detail: String::new(),
        fix: Some(format!(
            "{} (needed by `agent index`, not by `agent ask`)",
            models::fetch_hint()
        )),
    };
    // SAFETY: loading the library runs its initialisers; it is the ONNX
    // Runtime build the manifest pins, and OrtGetApiBase has this signature
    // in every 1.x release.
    let version = unsafe {
        libloading::Library::new(lib).and_then(|library| {
            let get_base: libloading::Symbol<unsafe extern "C" fn() -> *const OrtApiBase> =
                library.get(b"OrtGetApiBase")?;
            let base = get_base();
            let version = CStr::from_ptr(((*base).get_version_string)())
                .to_string_lossy()
                .into_owned();
            // Keep it loaded: unloading ORT at exit is known to be fragile.
            std::mem::forget(library);
            Ok(version)
        })
    };
    match version {
        Ok(v) => {
            let major_minor: Vec<u32> = v
                .split('.')
                .take(2)
                .filter_map(|p| p.parse().ok())
                .collect();
            check.ok = major_minor >= vec![1, 24];
            check.detail = format!(
                "{} loads, version {v}; embeddings run on {}",
                lib.display(),
                agent_index::embed::execution_provider(lib)
            );
            if check.ok {
                check.fix = None;
            } else {
                check.detail.push_str(" (1.24 or newer is required)");
            }
        }
        Err(e) => check.detail = format!("{}: {e}", lib.display()),
    }
    check
}

/// The threads `ask` and `chat` give llama.cpp without `--threads`:
/// `AGENT_THREADS` when it is a number, else every core.
fn threads_to_use() -> i32 {
    std::env::var("AGENT_THREADS")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(engine::default_threads)
}
