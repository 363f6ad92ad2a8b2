//! `agent index`: build, update, watch or describe the code index
//! (`agent_session::index`), with progress bars.

use std::path::Path;
use std::time::Instant;

use anyhow::Result;

use super::exit;
use crate::terminal::print;
use agent_base::cancel::CancelToken;
use agent_base::paths;
use agent_cli::{DepsWhich, IndexArgs};
use agent_session::index::{self, Index, IndexSettings, UpdateStats};

pub(crate) fn run(args: &IndexArgs, cancel: &CancelToken) -> Result<i32> {
    // This process only indexes (no searches to keep fast), so all of it
    // runs with the allocator holding no more than it uses.
    let _frugal = agent_base::alloc::Frugal::new();
    // `--deps all` (before `--deps=all` was required) names a path "all".
    if let Some(word @ ("all" | "direct")) = args.path.as_deref().and_then(|p| p.to_str()) {
        if args.deps.is_some() && !Path::new(word).exists() {
            anyhow::bail!("no folder named {word}\n  fix: agent index --deps={word} [PATH]");
        }
    }
    let root = paths::repo_root(args.path.as_deref())?;
    if args.status {
        return status(&root, args.json);
    }
    if let Some(which) = args.deps {
        return deps(&root, which, args, cancel);
    }
    let settings = IndexSettings {
        rebuild: args.rebuild,
        max_file_kb: args.max_file_kb,
        max_files: args.max_files,
        max_total_mb: args.max_total_mb,
        threads: args.threads.map(usize::from),
        embed_server: args.embed_server.clone(),
        embed_model: args.embed_model.clone(),
        store: args.store.clone(),
    };
    let mut quiet = |_| {};
    let say: agent_session::Say = if args.json { &mut quiet } else { &mut print };
    let mut index = index::open(&root, &settings, args.path.is_some(), say)?;
    let started = Instant::now();
    // First every file's rows (BM25 finds them at once), then the map, then
    // the vectors, the map's most important files first.
    let mut stats = update_rows(&mut index, started, cancel)?;
    let priority = index::priority(&index, &stats.changed_paths, &mut print);
    if !stats.interrupted {
        let searchable = started.elapsed().as_secs_f64();
        fill_vectors(
            &mut index, &priority, &mut stats, searchable, args.json, cancel,
        )?;
    }
    report(&stats, args.json);
    if let (Some(store), false, false) = (&args.store, args.json, stats.interrupted) {
        eprintln!("published to the shared index in {store}; search it with `--store {store}`");
    }
    if stats.interrupted {
        eprintln!("{}", index::interrupted(&stats));
        return Ok(exit::INTERRUPTED);
    }
    if args.watch {
        if !args.json {
            eprintln!(
                "watching {} for changes at low CPU priority (Ctrl-C to stop)",
                agent_base::term::untrusted(index.root())
            );
        }
        let json = args.json;
        let mut shown = |stats: &UpdateStats| {
            if stats.files_indexed + stats.files_removed > 0 || json {
                report(stats, json)
            }
        };
        index::watch(&mut index, cancel, &mut shown, &mut print)?;
    }
    Ok(exit::OK)
}

/// `agent index --deps`: the dependencies' indices, a progress bar per
/// package, then what was indexed, reused and missing.
fn deps(root: &Path, which: DepsWhich, args: &IndexArgs, cancel: &CancelToken) -> Result<i32> {
    let which = match which {
        DepsWhich::Direct => index::deps::Which::Direct,
        DepsWhich::All => index::deps::Which::All,
    };
    let bar = indicatif::ProgressBar::new(0);
    bar.set_style(bar_style("chunks"));
    if args.json {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    let mut started = Instant::now();
    let report = index::deps::index(
        root,
        which,
        args.threads.map(usize::from),
        cancel,
        &mut |event| match event {
            index::deps::Event::Package { n, of, id, pass } => {
                started = Instant::now();
                bar.reset();
                let pass = match pass {
                    index::deps::Pass::Keywords => "rows",
                    index::deps::Pass::Surface => "used surface",
                    index::deps::Pass::Vectors => "vectors",
                };
                bar.set_prefix(format!(
                    "{pass} [{n}/{of}] {}",
                    agent_base::term::untrusted(id)
                ));
            }
            index::deps::Event::Progress(p) => {
                let total = p.chunks_unembedded.max(p.chunks_done);
                bar.set_length(total as u64);
                bar.set_position(p.chunks_embedded as u64);
                bar.set_message(index::progress_message(p, started.elapsed().as_secs_f64()));
            }
        },
    )?;
    bar.finish_and_clear();
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        for line in report.lines() {
            println!("{}", agent_base::term::untrusted(&line));
        }
    }
    Ok(if report.interrupted {
        exit::INTERRUPTED
    } else {
        exit::OK
    })
}

/// `agent index --status`: what the index holds; exit 1 when it is damaged.
fn status(root: &Path, json: bool) -> Result<i32> {
    let status = Index::open_reader(root)?.status()?;
    if json {
        println!("{}", serde_json::to_string_pretty(&status)?);
    } else {
        print!("{}", status.describe());
    }
    // A damaged index is not "all is well": scripts see it in the code.
    Ok(if status.damage.is_some() {
        exit::FAILURE
    } else {
        exit::OK
    })
}

/// A progress bar's style counting `unit`.
fn bar_style(unit: &str) -> indicatif::ProgressStyle {
    indicatif::ProgressStyle::with_template(&format!(
        "{{spinner}} {{prefix}} [{{bar:30}}] {{pos}}/{{len}} {unit}  {{msg}}"
    ))
    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
    .progress_chars("=> ")
}

/// The first half of an update (every changed file's rows), under a
/// progress bar counting files.
fn update_rows(index: &mut Index, started: Instant, cancel: &CancelToken) -> Result<UpdateStats> {
    // A spinner while the tree is walked: a bar has no length before that
    // ("0/0 files").
    let bar = indicatif::ProgressBar::new_spinner();
    bar.set_style(
        indicatif::ProgressStyle::with_template("{spinner} {prefix} {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
    );
    bar.set_prefix("indexing");
    bar.set_message("looking for files…");
    bar.enable_steady_tick(std::time::Duration::from_millis(120));
    let mut counting = false;
    let stats = index.update_rows(cancel, &mut |p| {
        if !counting {
            counting = true;
            bar.set_style(bar_style("files"));
        }
        bar.set_length(p.files_total as u64);
        bar.set_position(p.files_done as u64);
        bar.set_message(index::progress_message(p, started.elapsed().as_secs_f64()));
    })?;
    bar.finish_and_clear();
    Ok(stats)
}

/// The second half of an update (the vectors), under a progress bar
/// counting chunks; says once how long the index took to become searchable.
fn fill_vectors(
    index: &mut Index,
    priority: &[String],
    stats: &mut UpdateStats,
    searchable: f64,
    json: bool,
    cancel: &CancelToken,
) -> Result<()> {
    let bar = indicatif::ProgressBar::new(0);
    bar.set_style(bar_style("chunks"));
    bar.set_prefix("embedding");
    let mut announced = false;
    let fill_started = Instant::now();
    index.fill_vectors(priority, stats, cancel, &mut |p| {
        if !announced && p.chunks_unembedded > 0 {
            announced = true;
            if !json {
                bar.suspend(|| {
                    eprintln!(
                        "searchable after {searchable:.1}s (keyword search and the repo map); embedding {} chunks, the most important files first",
                        p.chunks_unembedded
                    )
                });
            }
            bar.set_length(p.chunks_unembedded as u64);
        }
        bar.set_position(p.chunks_embedded as u64);
        bar.set_message(index::progress_message(p, fill_started.elapsed().as_secs_f64()));
    })?;
    bar.finish_and_clear();
    Ok(())
}

fn report(stats: &UpdateStats, json: bool) {
    if json {
        println!("{}", serde_json::to_value(stats).unwrap_or_default());
        return;
    }
    for note in &stats.recovered {
        eprintln!("note: {note}");
    }
    for line in index::summary(stats) {
        println!("{line}");
    }
}
