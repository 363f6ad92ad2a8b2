use std::path::Path;

use super::*;

#[test]
fn host_sockets_are_the_path_bound_ones_the_workspaces_included() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let host = dir.path().join("docker.sock");
    let own = ws.join("test.sock");
    let _l1 = std::os::unix::net::UnixListener::bind(&host).unwrap();
    let _l2 = std::os::unix::net::UnixListener::bind(&own).unwrap();
    let gone = dir.path().join("gone.sock");
    let plain = dir.path().join("plain.txt");
    std::fs::write(&plain, "x").unwrap();
    let table = format!(
        "Num       RefCount Protocol Flags    Type St Inode Path\n\
         0000000000000000: 00000002 00000000 00010000 0001 01 1001 {}\n\
         0000000000000000: 00000002 00000000 00010000 0001 01 1002 {}\n\
         0000000000000000: 00000002 00000000 00010000 0001 01 1003 @/tmp/.X11-unix/X0\n\
         0000000000000000: 00000002 00000000 00010000 0001 01 1004 {}\n\
         0000000000000000: 00000002 00000000 00010000 0001 01 1005 {}\n\
         0000000000000000: 00000003 00000000 00000000 0001 03 1006\n\
         0000000000000000: 00000002 00000000 00010000 0001 01 1001 {}\n",
        host.display(),
        own.display(),
        gone.display(),
        plain.display(),
        host.display(),
    );
    let mut want = vec![host, own];
    want.sort();
    assert_eq!(host_sockets(&table), want);
}

/// `sh -c script` in `cwd` inside `sandbox`: exit code and output.
fn run(sandbox: &Sandbox, cwd: &Path, script: &str) -> (i32, String) {
    let prepared = sandbox.prepare().unwrap();
    let out = crate::command(prepared, "sh")
        .arg("-c")
        .arg(script)
        .current_dir(cwd)
        .output()
        .unwrap();
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    (out.status.code().unwrap_or(-1), text)
}

/// Why the kernel cannot do what a test checks, or `None` when it can.
/// Each test skips with it itself (`skip!` returns from the test).
fn fence_missing() -> Option<String> {
    if landlock_abi().is_none() {
        return Some("this kernel has no Landlock".into());
    }
    if !support().mounts() {
        return Some("no user namespace here, so no read-only or hidden sets".into());
    }
    None
}

#[test]
fn the_read_only_set_refuses_writes_renames_and_removals() {
    if let Some(why) = fence_missing() {
        agent_test_support::skip!("{why}");
    }
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(ws.join(".git/hooks")).unwrap();
    std::fs::write(ws.join(".git/config"), "[core]\n").unwrap();
    std::fs::write(ws.join("AGENTS.md"), "Be kind.\n").unwrap();
    let mut sandbox = Sandbox::new(vec![ws.clone()]);
    sandbox.read_only = vec![ws.join(".git"), ws.join("AGENTS.md"), ws.join("missing")];
    let (code, out) = run(
        &sandbox,
        &ws,
        "echo 'touch /tmp/pwned' > .git/hooks/pre-commit; echo hook=$?; \
         printf '[pager]\\n\\tlog = x\\n' >> .git/config; echo config=$?; \
         mv .git .gitx; echo mv=$?; rm -f AGENTS.md; echo rm=$?; \
         ln -sf /etc/passwd AGENTS.md; echo ln=$?; echo ok > built.txt; echo build=$?",
    );
    assert_eq!(code, 0, "{out}");
    for step in ["hook", "config", "mv", "rm", "ln"] {
        assert!(out.contains(&format!("{step}=")), "{step}: {out}");
        assert!(
            !out.contains(&format!("{step}=0")),
            "{step} succeeded: {out}"
        );
    }
    assert!(out.contains("Read-only file system"), "{out}");
    assert!(out.contains("build=0"), "{out}");
    assert!(!ws.join(".git/hooks/pre-commit").exists());
    assert_eq!(
        std::fs::read_to_string(ws.join(".git/config")).unwrap(),
        "[core]\n"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("AGENTS.md")).unwrap(),
        "Be kind.\n"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("built.txt")).unwrap(),
        "ok\n"
    );
}

#[test]
fn the_deny_read_set_is_hidden() {
    if let Some(why) = fence_missing() {
        agent_test_support::skip!("{why}");
    }
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    let home = dir.path().join("home");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(home.join(".aws")).unwrap();
    std::fs::write(
        home.join(".aws/credentials"),
        "aws_secret_access_key=AKIA\n",
    )
    .unwrap();
    std::fs::write(home.join(".netrc"), "machine x password hunter2\n").unwrap();
    let mut sandbox = Sandbox::new(vec![ws.clone()]);
    sandbox.deny_read = vec![home.join(".aws"), home.join(".netrc"), dir.path().into()];
    let script = format!(
        "cat {h}/.aws/credentials; ls -A {h}/.aws; cat {h}/.netrc; echo done",
        h = home.display()
    );
    let (_, out) = run(&sandbox, &ws, &script);
    assert!(out.contains("done"), "{out}");
    assert!(!out.contains("AKIA") && !out.contains("hunter2"), "{out}");
    // The folder holding the workspace was not hidden (it would hide the
    // workspace): the command still runs in it.
    assert!(!out.contains("credentials\n"), "{out}");
}

#[test]
fn commands_have_no_capabilities_no_device_nodes_and_a_minimal_dev() {
    if let Some(why) = fence_missing() {
        agent_test_support::skip!("{why}");
    }
    let dir = tempfile::tempdir().unwrap();
    let sandbox = Sandbox::new(vec![dir.path().into()]);
    let (_, out) = run(
        &sandbox,
        dir.path(),
        "grep -E '^(CapEff|CapPrm|CapBnd|CapAmb|NoNewPrivs)' /proc/self/status; \
         mknod blk b 7 0; echo blk=$?; mknod kmsg c 1 11; echo chr=$?; \
         hostname sandboxed; echo host=$?; ls /dev; echo x > /dev/null; echo null=$?; \
         echo k > /dev/kmsg; echo kmsg=$?",
    );
    for line in ["CapEff:\t0000000000000000", "CapBnd:\t0000000000000000"] {
        assert!(out.contains(line), "{line}: {out}");
    }
    assert!(out.contains("NoNewPrivs:\t1"), "{out}");
    for step in ["blk", "chr", "host", "kmsg"] {
        assert!(out.contains(&format!("{step}=")), "{step}: {out}");
        assert!(
            !out.contains(&format!("{step}=0")),
            "{step} succeeded: {out}"
        );
    }
    assert!(out.contains("null=0"), "{out}");
    assert!(!dir.path().join("blk").exists() && !dir.path().join("kmsg").exists());
    assert!(!out.contains("sda") && !out.contains("kmsg\n"), "{out}");
}

#[test]
fn limits_stop_a_fork_flood_and_a_large_allocation() {
    if let Some(why) = fence_missing() {
        agent_test_support::skip!("{why}");
    }
    let s = support();
    let dir = tempfile::tempdir().unwrap();
    let mut sandbox = Sandbox::new(vec![dir.path().into()]);
    sandbox.limits = Limits {
        processes: Some(64),
        memory_mb: Some(256),
        file_size_mb: Some(1),
        cpu_s: Some(30),
    };
    let (code, out) = run(
        &sandbox,
        dir.path(),
        "python3 -c 'b = bytearray(512 * 1024 * 1024)' 2>&1; echo mem=$?; \
         head -c 2000000 /dev/zero > big; echo fsize=$?; python3 -c 'print(2 ** 10)'",
    );
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("MemoryError") && out.contains("mem=1"),
        "{out}"
    );
    assert!(!out.contains("fsize=0"), "{out}");
    assert!(out.contains("1024"), "{out}");
    // Last, as `skip!` ends the test: the other limits are checked either way.
    if s.root && child::pids_cgroup_base().is_none() {
        agent_test_support::skip!(optional: "the process limit: root, and no pids cgroup is writable here");
    }
    // `echo` is a builtin: the file counts the processes that started.
    let (_, out) = run(
        &sandbox,
        dir.path(),
        "for i in $(seq 300); do sleep 5 & echo $! >> pids; done",
    );
    let started = std::fs::read_to_string(dir.path().join("pids"))
        .unwrap_or_default()
        .lines()
        .count();
    assert!(started < 64, "{out}");
}

/// The folders a process leaves behind go with the next process's first
/// command, and a new one or one with processes in it stays. (A leftover folder whose name a new
/// process's command took again used to make its process limit vanish
/// without a word: pids are reused, and 18,000 folders had piled up.)
#[test]
fn stale_pids_cgroups_are_swept_and_each_command_gets_a_new_one() {
    let Some(base) = child::pids_cgroup_base() else {
        agent_test_support::skip!(optional: "no pids cgroup is writable here");
    };
    let procs = child::pids_cgroup(8).unwrap().unwrap();
    let fresh = Path::new(procs.to_str().unwrap()).parent().unwrap();
    assert_eq!(
        std::fs::read_to_string(fresh.join("pids.max"))
            .unwrap()
            .trim(),
        "8"
    );
    let again = child::pids_cgroup(8).unwrap().unwrap();
    assert_ne!(procs, again, "each command has a folder of its own");
    let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    let made = hour_ago
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let left = base.join(format!("agent-cmd-1-{made}-0"));
    let busy = base.join(format!("agent-cmd-1-{made}-1"));
    let mut sleeper = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    for dir in [&left, &busy] {
        std::fs::create_dir(dir).unwrap();
    }
    std::fs::write(busy.join("cgroup.procs"), sleeper.id().to_string()).unwrap();
    child::sweep_stale(&base);
    let (left_gone, busy_kept, fresh_kept) = (!left.exists(), busy.exists(), fresh.exists());
    sleeper.kill().unwrap();
    sleeper.wait().unwrap();
    let _ = std::fs::remove_dir(&left);
    for _ in 0..50 {
        if std::fs::remove_dir(&busy).is_ok() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(
        left_gone && busy_kept && fresh_kept,
        "{left_gone} {busy_kept} {fresh_kept}"
    );
}

#[test]
fn a_layered_command_writes_the_layer_and_never_the_workspace() {
    if let Some(why) = fence_missing() {
        agent_test_support::skip!("{why}");
    }
    let dir = tempfile::tempdir().unwrap();
    let (ws, state) = (dir.path().join("ws"), dir.path().join("state"));
    std::fs::create_dir_all(ws.join("d")).unwrap();
    std::fs::create_dir_all(ws.join("sub")).unwrap();
    std::fs::create_dir_all(ws.join("target")).unwrap();
    std::fs::create_dir_all(ws.join(".git")).unwrap();
    std::fs::write(ws.join(".git/config"), "[core]\n").unwrap();
    for (path, text) in [("a.txt", "a\n"), ("b.txt", "b\n"), ("d/f", "f\n")] {
        std::fs::write(ws.join(path), text).unwrap();
    }
    std::fs::create_dir_all(&state).unwrap();
    if let Err(why) = overlay_support(&state) {
        agent_test_support::skip!("{why}");
    }
    let (upper, work) = (state.join("upper"), state.join("work"));
    std::fs::create_dir(&upper).unwrap();
    std::fs::create_dir(&work).unwrap();
    let mut sandbox = Sandbox::new(vec![ws.clone()]);
    sandbox.read_only = vec![ws.join(".git")];
    sandbox.overlay = Some(crate::Overlay {
        root: ws.clone(),
        upper: upper.clone(),
        work,
        bypass: vec![ws.join("target")],
    });
    let script = "set -e; echo new > c.txt; echo more >> a.txt; rm b.txt; rm -rf d; \
                  echo built > target/out; cd sub; echo rel > r.txt; cd ..; cat a.txt c.txt; \
                  if { echo x > .git/config; } 2>/dev/null; then echo GIT-WRITTEN; fi";
    let (code, text) = run(&sandbox, &ws, script);
    assert_eq!(code, 0, "{text}");
    assert_eq!(text, "a\nmore\nnew\n", "the command saw its own changes");
    // The workspace is as it was, but for the bypass folder.
    assert_eq!(std::fs::read_to_string(ws.join("a.txt")).unwrap(), "a\n");
    assert!(ws.join("b.txt").exists() && ws.join("d/f").exists());
    assert!(!ws.join("c.txt").exists() && !ws.join("sub/r.txt").exists());
    assert_eq!(
        std::fs::read_to_string(ws.join("target/out")).unwrap(),
        "built\n"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join(".git/config")).unwrap(),
        "[core]\n"
    );
    // The layer holds the changes, deletions as whiteouts.
    use std::os::unix::fs::FileTypeExt;
    assert_eq!(
        std::fs::read_to_string(upper.join("c.txt")).unwrap(),
        "new\n"
    );
    assert_eq!(
        std::fs::read_to_string(upper.join("a.txt")).unwrap(),
        "a\nmore\n"
    );
    assert_eq!(
        std::fs::read_to_string(upper.join("sub/r.txt")).unwrap(),
        "rel\n"
    );
    for gone in ["b.txt", "d"] {
        let meta = std::fs::symlink_metadata(upper.join(gone)).unwrap();
        assert!(meta.file_type().is_char_device(), "{gone}: {meta:?}");
    }
    assert!(
        !upper.join("target").exists(),
        "bypassed writes are not in the layer"
    );
}

/// Issue 50: memory is held per command, not per process (four processes
/// of 80 MB each ran under a 100 MB limit), and /dev/shm is small.
#[test]
fn memory_is_limited_for_the_whole_command_and_dev_shm_is_small() {
    if let Some(why) = fence_missing() {
        agent_test_support::skip!("{why}");
    }
    if child::cgroup_base("memory").is_none() {
        agent_test_support::skip!(optional: "no memory cgroup is writable here (RLIMIT_DATA holds each process)");
    }
    let dir = tempfile::tempdir().unwrap();
    let mut sandbox = Sandbox::new(vec![dir.path().into()]);
    sandbox.limits.memory_mb = Some(100);
    let (_, out) = run(
        &sandbox,
        dir.path(),
        "for i in 1 2 3 4; do python3 -c 'import time; b = bytearray(80 << 20); \
         b[::4096] = bytes(len(b[::4096])); time.sleep(1); print(\"ok\")' & done; wait; \
         head -c 200000000 /dev/zero > /dev/shm/big 2>/dev/null; echo shm=$?",
    );
    let fine = out.matches("ok").count();
    assert!(fine < 4, "all four held 80 MB each under 100 MB: {out}");
    assert!(out.contains("shm=1"), "/dev/shm took 200 MB: {out}");
}

/// Issue 50: the home folder is hidden but for what it keeps; a workspace
/// inside it works as before, its read-only set and its layer included.
#[test]
fn the_home_folder_is_hidden_but_for_what_it_keeps() {
    if let Some(why) = fence_missing() {
        agent_test_support::skip!("{why}");
    }
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let ws = home.join("src/proj");
    std::fs::create_dir_all(ws.join(".git")).unwrap();
    std::fs::create_dir_all(home.join(".cargo/bin")).unwrap();
    std::fs::write(home.join(".cargo/bin/tool"), "tool\n").unwrap();
    std::fs::write(home.join(".gitconfig"), "[user]\n\tname = me\n").unwrap();
    std::fs::write(home.join(".bashrc"), "export TOKEN=s3cr3t\n").unwrap();
    std::fs::write(home.join("src/notes.txt"), "private\n").unwrap();
    let state = dir.path().join("state");
    std::fs::create_dir_all(state.join("upper")).unwrap();
    std::fs::create_dir_all(state.join("work")).unwrap();
    let mut sandbox = Sandbox::new(vec![ws.clone()]);
    sandbox.read_only = vec![ws.join(".git")];
    sandbox.home = Some(crate::Home {
        dir: home.clone(),
        keep: vec![
            home.join(".cargo"),
            home.join(".gitconfig"),
            home.join(".npm"),
        ],
    });
    let layered = overlay_support(&state).is_ok();
    if layered {
        sandbox.overlay = Some(crate::Overlay {
            root: ws.clone(),
            upper: state.join("upper"),
            work: state.join("work"),
            bypass: Vec::new(),
        });
    }
    let h = home.display();
    let (code, out) = run(
        &sandbox,
        &ws,
        &format!(
            "cat {h}/.cargo/bin/tool {h}/.gitconfig; cat {h}/.bashrc {h}/src/notes.txt 2>&1 | grep -c 'No such file'; \
             echo made > new.txt && cat new.txt; {{ echo x > .git/x; }} 2>/dev/null || echo git-read-only; \
             {{ echo x > {h}/.cargo/planted; }} 2>/dev/null || echo cargo-unwritable"
        ),
    );
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        out,
        "tool\n[user]\n\tname = me\n2\nmade\ngit-read-only\ncargo-unwritable\n"
    );
    assert_eq!(
        std::fs::read_to_string(home.join(".bashrc")).unwrap(),
        "export TOKEN=s3cr3t\n"
    );
    assert_eq!(
        ws.join("new.txt").exists(),
        !layered,
        "written through the layer when there is one"
    );
}

/// Issue 50: a host socket inside the workspace (a dev database's) is out
/// of an offline command's reach; one the command binds itself works.
#[test]
fn a_socket_listening_in_the_workspace_is_hidden_and_the_commands_own_work() {
    if let Some(why) = fence_missing() {
        agent_test_support::skip!("{why}");
    }
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let listener = std::os::unix::net::UnixListener::bind(ws.join("db.sock")).unwrap();
    listener.set_nonblocking(true).unwrap();
    let sandbox = Sandbox::new(vec![ws.clone()]);
    let script = "import socket, os\n\
        s = socket.socket(socket.AF_UNIX)\n\
        try:\n    s.connect('db.sock'); print('host-reached')\n\
        except OSError as e: print('refused')\n\
        own = socket.socket(socket.AF_UNIX); own.bind('own.sock'); own.listen(1)\n\
        c = socket.socket(socket.AF_UNIX); c.connect('own.sock'); print('own-works')\n";
    std::fs::write(ws.join("probe.py"), script).unwrap();
    let (code, out) = run(&sandbox, &ws, "python3 probe.py");
    assert_eq!(code, 0, "{out}");
    assert_eq!(out, "refused\nown-works\n");
    assert!(listener.accept().is_err(), "the host's socket was reached");
}

/// Issue 56: with an allowlist naming one host, a command reaches it only
/// through the agent's proxy (forwarded and tunnelled), the proxy refuses
/// another host with a 403 naming it, and a direct connection, bypassing
/// the proxy, is refused by the kernel.
#[test]
fn an_allowlisted_command_reaches_only_the_listed_host_through_the_proxy() {
    if let Some(why) = fence_missing() {
        agent_test_support::skip!("{why}");
    }
    if !Path::new("/usr/bin/curl").exists() {
        agent_test_support::skip!("curl is not installed");
    }
    let allowed = agent_test_support::http_server("127.0.0.2", "allowed");
    let other = agent_test_support::http_server("127.0.0.3", "other");
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let mut sandbox = Sandbox::new(vec![ws.clone()]);
    let allow = crate::Allowlist::new(move |host, port| {
        (host == "127.0.0.2" && port == allowed).then(|| format!("127.0.0.2:{allowed}"))
    });
    sandbox.allowlist = Some(allow.clone());
    let script = format!(
        "curl -sS --max-time 20 http://127.0.0.2:{allowed}/a; echo \"forward=$?\"\n\
         curl -sS --max-time 20 -p http://127.0.0.2:{allowed}/b; echo \"tunnel=$?\"\n\
         curl -sS --max-time 20 http://127.0.0.3:{other}/c; echo \"other=$?\"\n\
         curl -sS --max-time 5 --noproxy '*' http://127.0.0.2:{allowed}/d; echo \"direct=$?\"\n\
         curl -sS --max-time 5 --noproxy '*' http://127.0.0.3:{other}/e; echo \"direct-other=$?\"\n"
    );
    let prepared = sandbox.prepare().unwrap();
    let out = crate::command(prepared, "sh")
        .arg("-c")
        .arg(&script)
        .current_dir(&ws)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .envs(sandbox.proxy_env())
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("hello from allowed\nforward=0"), "{text}");
    assert!(text.contains("hello from allowed\ntunnel=0"), "{text}");
    assert!(!text.contains("hello from other"), "{text}");
    assert!(
        text.contains(&format!("does not include 127.0.0.3:{other}")),
        "{text}"
    );
    for refused in ["direct=0", "direct-other=0"] {
        assert!(!text.contains(refused), "{text}");
    }
    assert!(
        text.contains("direct=") && text.contains("direct-other="),
        "{text}"
    );
    let seen = allow.take_log();
    let allowed_rule = Some(format!("127.0.0.2:{allowed}"));
    assert_eq!(
        seen.iter().filter(|a| a.rule == allowed_rule).count(),
        2,
        "{seen:?}"
    );
    assert!(
        seen.iter()
            .any(|a| a.host == "127.0.0.3" && a.port == other && a.rule.is_none()),
        "{seen:?}"
    );
}
