//! `agent search`: query the code index.

use anyhow::Result;

use super::exit;
use agent_base::paths;
use agent_base::term::{cut, escape_line};
use agent_cli::{SearchArgs, SearchScope};
use agent_session::deps::Scope;
use agent_session::search::Query;

pub(crate) fn run(args: &SearchArgs) -> Result<i32> {
    let root = paths::repo_root(args.root.as_deref())?;
    let query = Query {
        text: args.query.join(" "),
        k: args.k,
        mode: args.mode,
        path_glob: args.path.clone(),
        lang: args.lang.clone(),
        scope: match (args.deps, args.scope) {
            (true, _) | (_, SearchScope::Deps) => Scope::Deps,
            (_, SearchScope::Project) => Scope::Project,
            (_, SearchScope::All) => Scope::All,
        },
        package: args.package.clone(),
    };
    let (results, notes) = agent_session::search::search(&root, query)?;
    for note in notes {
        eprintln!("note: {note}");
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&results)?);
        return Ok(exit::OK);
    }
    if results.is_empty() {
        eprintln!("no results");
    }
    // Text mode escapes the repository's control characters (escape
    // sequences in a file, a newline in its name); JSON keeps them exact.
    for r in &results {
        println!(
            "{}:{}-{}  {}  {:.3}",
            escape_line(&r.path),
            r.start_line,
            r.end_line,
            if r.symbol.is_empty() {
                "-".into()
            } else {
                escape_line(&r.symbol)
            },
            r.score
        );
        for line in r.text.lines().filter(|l| !l.trim().is_empty()).take(3) {
            println!("    {}", cut(&escape_line(line.trim_end()), 100));
        }
    }
    Ok(exit::OK)
}
