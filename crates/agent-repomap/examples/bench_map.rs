//! Times the repo map on one source tree: cold (no cache: walk, read, parse,
//! write the cache, rank, render) and warm (a new `RepoMap` on the cache built
//! by the cold run: walk, stat, load, rank, render; nothing changed).
//!
//!     cargo run --release --example bench_map -- ROOT [--cache PATH] [--reps N] [--tokens N] [--print]
//!
//! Prints one JSON object: {"files", "cold_ms", "warm_ms", ...} (medians of
//! the reps), and with `--print` the rendered map text after it. Tokens are
//! counted as characters / 4.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a bench/example: a panic ends the run with its reason, printing is its output"
)]

use std::path::PathBuf;
use std::time::Instant;

use agent_repomap::{MapOptions, RepoMap};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> anyhow::Result<()> {
    agent_lang::route_tree_sitter();
    let mut args = std::env::args().skip(1);
    let mut root: Option<PathBuf> = None;
    let mut cache: Option<PathBuf> = None;
    let (mut reps, mut tokens) = (3usize, 1024usize);
    let mut print = false;
    let mut names: Vec<String> = Vec::new();
    while let Some(a) = args.next() {
        let mut value = || {
            args.next()
                .ok_or_else(|| anyhow::anyhow!("{a} needs a value"))
        };
        match a.as_str() {
            "--cache" => cache = Some(value()?.into()),
            "--reps" => reps = value()?.parse()?,
            "--tokens" => tokens = value()?.parse()?,
            "--print" => print = true,
            "--rank" => names.extend(value()?.split(',').map(str::to_string)),
            _ if root.is_none() => root = Some(a.into()),
            _ => anyhow::bail!(
                "usage: bench_map ROOT [--cache PATH] [--reps N] [--tokens N] [--print]"
            ),
        }
    }
    let root = root.ok_or_else(|| {
        anyhow::anyhow!("usage: bench_map ROOT [--cache PATH] [--reps N] [--tokens N] [--print]")
    })?;
    let scratch = tempfile_dir()?;
    let cache = cache.unwrap_or_else(|| scratch.join("repomap.sqlite"));
    let count = |s: &str| s.len().div_ceil(4);
    let opts = MapOptions {
        token_budget: tokens,
        ..MapOptions::default()
    };
    let remove_cache = || {
        for suffix in ["", "-wal", "-shm"] {
            let mut p = cache.as_os_str().to_owned();
            p.push(suffix);
            let _ = std::fs::remove_file(PathBuf::from(p));
        }
    };

    let (mut cold, mut warm) = (Vec::new(), Vec::new());
    let mut last = None;
    for _ in 0..reps.max(1) {
        remove_cache();
        let t = Instant::now();
        let mut map = RepoMap::open(&root, &cache);
        let stats = map.refresh()?;
        let out = map.render(&opts, &count);
        cold.push(t.elapsed().as_secs_f64() * 1e3);
        drop(map);

        let t = Instant::now();
        let mut map = RepoMap::open(&root, &cache);
        let warm_stats = map.refresh()?;
        let warm_out = map.render(&opts, &count);
        warm.push(t.elapsed().as_secs_f64() * 1e3);
        anyhow::ensure!(
            warm_stats.parsed == 0,
            "warm run parsed {} files",
            warm_stats.parsed
        );
        anyhow::ensure!(warm_out.text == out.text, "warm map differs from cold map");
        last = Some((stats, out));
    }
    let ranks = if names.is_empty() {
        String::new()
    } else {
        ranks(&root, &cache, &names)?
    };
    remove_cache();
    let _ = std::fs::remove_dir(&scratch);
    let (stats, out) = last.expect("at least one rep");
    let json = serde_json::json!({
        "files": stats.files,
        "cold_ms": (median(cold) * 10.0).round() / 10.0,
        "warm_ms": (median(warm) * 10.0).round() / 10.0,
        "defs_total": out.defs_total,
        "defs_shown": out.defs_shown,
        "map_tokens": out.tokens,
        "token_budget": tokens,
        "reps": reps,
    });
    println!("{json}");
    if print {
        println!("{}", out.text);
    }
    print!("{ranks}");
    Ok(())
}

/// Where each definition named in `names` stands in the ranking (1-based),
/// one line per definition: `rank path: signature`.
fn ranks(
    root: &std::path::Path,
    cache: &std::path::Path,
    names: &[String],
) -> anyhow::Result<String> {
    let mut map = RepoMap::open(root, cache);
    map.refresh()?;
    let files: Vec<(&str, &agent_repomap::FileTags)> = map.files().collect();
    let ranking = agent_repomap::rank::rank(&files, &agent_repomap::rank::Seeds::default());
    let mut out = String::new();
    for (pos, d) in ranking.defs.iter().enumerate() {
        let (rel, tags) = files[d.file as usize];
        let def = &tags.defs[d.def as usize];
        if names.contains(&def.name) {
            out.push_str(&format!("{:5} {rel}: {}\n", pos + 1, def.signature));
        }
    }
    Ok(out)
}

/// A private scratch folder for the cache (no tempfile dependency outside tests).
fn tempfile_dir() -> anyhow::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("bench_map.{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}
