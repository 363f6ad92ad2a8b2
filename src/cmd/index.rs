//! `agent index`: build, update, watch or describe the code index.

use std::path::Path;
use std::time::Instant;

use anyhow::Result;

use super::exit;
use crate::cli::IndexArgs;
use agent_base::cancel::CancelToken;
use agent_base::paths;
use agent_base::term::untrusted_text;
use agent_index::{watch, Index, IndexOptions, Progress, UpdateStats};
use agent_lang::walk::WalkOptions;
use agent_repomap::{default_cache_path, RepoMap};

pub(crate) fn run(args: &IndexArgs, cancel: &CancelToken) -> Result<i32> {
    // This process only indexes (no searches to keep fast), so all of it
    // runs with the allocator holding no more than it uses.
    let _frugal = agent_base::alloc::Frugal::new();
    let root = paths::repo_root(args.path.as_deref())?;
    if args.status {
        return status(&root, args.json);
    }
    let options = options(args);
    let mut index = if args.rebuild {
        Index::rebuild(&root, options)?
    } else {
        Index::open_writer(&root, options)?
    };
    if !args.json && args.path.is_none() && !root.join(".git").exists() {
        eprintln!(
            "note: not inside a git repository; indexing {} (pass a path to index another folder)",
            agent_base::term::untrusted(&root)
        );
    }
    if let (Some(why), false) = (index.rechunking(), args.json) {
        eprintln!("{why}");
    }
    let started = Instant::now();
    // First every file's rows (BM25 finds them at once), then the map, then
    // the vectors, the map's most important files first.
    let mut stats = update_rows(&mut index, started, cancel)?;
    let priority = map_priority(&index, &stats.changed_paths);
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
        if stats.chunks_unembedded > 0 {
            eprintln!(
                "interrupted: every file is searchable by keyword; {} chunks still lack vectors. Run `agent index` again to finish",
                stats.chunks_unembedded
            );
        } else {
            eprintln!("interrupted: the index is consistent; run `agent index` again to finish");
        }
        return Ok(exit::INTERRUPTED);
    }
    if args.watch {
        watch_changes(&mut index, args.json, cancel)?;
    }
    Ok(exit::OK)
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

/// The index options the command line asks for.
fn options(args: &IndexArgs) -> IndexOptions {
    let defaults = IndexOptions::default();
    IndexOptions {
        walk: WalkOptions {
            max_file_bytes: args.max_file_kb * 1024,
            max_files: args.max_files,
            max_total_bytes: args.max_total_mb.saturating_mul(1 << 20),
            ..WalkOptions::default()
        },
        threads: args.threads.map_or(defaults.threads, usize::from),
        embedder: match &args.embed_server {
            Some(url) => agent_index::embed::Choice::Server {
                url: url.clone(),
                model: args.embed_model.clone(),
                api_key: std::env::var("AGENT_EMBED_API_KEY").ok(),
            },
            None => agent_index::embed::Choice::AsRecorded,
        },
        store: args.store.clone(),
        ..defaults
    }
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
        bar.set_message(progress_message(p, started.elapsed().as_secs_f64()));
    })?;
    bar.finish_and_clear();
    Ok(stats)
}

/// The files in the order their vectors should come: the repo map's
/// ranking, personalized by the files that just changed. The map's tag
/// cache follows the same updates (cheap: it re-tags only files whose size
/// or mtime moved). Not held during the fill: on a large tree its tags are
/// memory the vector index build needs.
fn map_priority(index: &Index, changed: &[String]) -> Vec<String> {
    let mut map = RepoMap::open(index.root(), &default_cache_path(index.root()));
    if let Err(e) = map.refresh() {
        eprintln!(
            "warning: repo map not updated: {}",
            untrusted_text(&format!("{e:#}"))
        );
    }
    map.ranked_files(changed)
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
        bar.set_message(progress_message(p, fill_started.elapsed().as_secs_f64()));
    })?;
    bar.finish_and_clear();
    Ok(())
}

/// `agent index --watch` after the first pass: an update per burst of file
/// events, at low priority, until Ctrl-C.
fn watch_changes(index: &mut Index, json: bool, cancel: &CancelToken) -> Result<()> {
    if !json {
        eprintln!(
            "watching {} for changes at low CPU priority (Ctrl-C to stop)",
            agent_base::term::untrusted(index.root())
        );
    }
    watch::lower_priority(watch::Scope::Process);
    let mut map = RepoMap::open(index.root(), &default_cache_path(index.root()));
    watch::watch(
        index,
        watch::DEFAULT_DEBOUNCE,
        cancel,
        &mut |result| match result {
            Ok(stats) => {
                if stats.files_indexed + stats.files_removed > 0 {
                    // The map's tags follow the index (only moved files are re-tagged).
                    if let Err(e) = map.refresh() {
                        eprintln!(
                            "warning: repo map not updated: {}",
                            untrusted_text(&format!("{e:#}"))
                        );
                    }
                }
                if stats.files_indexed + stats.files_removed > 0 || json {
                    report(&stats, json)
                }
            }
            Err(e) => eprintln!(
                "update failed (still watching): {}",
                untrusted_text(&format!("{e:#}"))
            ),
        },
    )?;
    Ok(())
}

/// `312 chunks written, 1,024 embedded (40/s), 96 to embed in this batch`
fn progress_message(p: &Progress, secs: f64) -> String {
    if p.searchable && p.building_indices {
        return "updating the vector index".into();
    }
    if p.searchable {
        return match p.chunks_embedded {
            0 => String::new(),
            n => format!("{:.0}/s", n as f64 / secs.max(1e-3)),
        };
    }
    if p.building_indices {
        return format!(
            "{} chunks written, updating the search indices",
            p.chunks_done
        );
    }
    let mut msg = format!("{} chunks written", p.chunks_done);
    if p.chunks_embedded > 0 {
        msg.push_str(&format!(
            ", {} embedded ({:.0}/s)",
            p.chunks_embedded,
            p.chunks_embedded as f64 / secs.max(1e-3)
        ));
    }
    if p.chunks_to_embed > 0 {
        msg.push_str(&format!(", embedding {} more", p.chunks_to_embed));
    }
    msg
}

fn report(stats: &UpdateStats, json: bool) {
    if json {
        println!("{}", serde_json::to_value(stats).unwrap_or_default());
        return;
    }
    for note in &stats.recovered {
        eprintln!("note: {note}");
    }
    // Rows and vectors apart: a run that only fills vectors writes no chunk.
    println!(
        "{} files seen: {} indexed ({} chunks written), {} removed, {} skipped; vectors: {} embedded, {} from cache; in {:.1}s",
        stats.files_seen,
        stats.files_indexed,
        stats.chunks_written,
        stats.files_removed,
        stats.skipped.len(),
        stats.chunks_embedded,
        stats.cache_hits,
        stats.seconds
    );
    if stats.vector_index_built {
        println!(
            "built the vector index: from {} chunks on, searches probe it instead of comparing every vector",
            agent_index::ANN_MIN_ROWS
        );
    }
    print_skipped(&stats.skipped);
}

/// Files skipped for a reason worth reading, the first ten by name, then
/// how many more; the expected kinds (binary, generated, minified) counted.
fn print_skipped(skipped: &[agent_lang::walk::Skipped]) {
    const SHOWN: usize = 10;
    let quiet = |s: &&agent_lang::walk::Skipped| {
        matches!(s.reason.as_str(), "binary" | "generated" | "minified")
    };
    let notable: Vec<&agent_lang::walk::Skipped> = skipped.iter().filter(|s| !quiet(s)).collect();
    for s in notable.iter().take(SHOWN) {
        println!(
            "  skipped {}: {}",
            agent_base::term::untrusted(if s.rel.is_empty() { "?" } else { &s.rel }),
            agent_base::term::untrusted(&s.reason)
        );
    }
    if notable.len() > SHOWN {
        println!(
            "  … and {} more skipped (`agent index --json` lists them all)",
            notable.len() - SHOWN
        );
    }
    let mut kinds: Vec<(&str, usize)> = Vec::new();
    for s in skipped.iter().filter(quiet) {
        match kinds.iter_mut().find(|(k, _)| *k == s.reason) {
            Some((_, n)) => *n += 1,
            None => kinds.push((s.reason.as_str(), 1)),
        }
    }
    if !kinds.is_empty() {
        let parts: Vec<String> = kinds.iter().map(|(k, n)| format!("{n} {k}")).collect();
        println!("  also skipped, as expected: {}", parts.join(", "));
    }
}
