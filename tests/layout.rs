//! The shape of the source itself: each type name means one thing in the whole crate, its files
//! import one another one way only (no circle; the daemon never imports the client, the library
//! never the command line), docs/development.md's map names every file, and the fuzz targets'
//! workspace builds with the crate's release profile.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Type names of other crates that this crate's code uses beside its own: a type of ours by the
/// same name would be read for the other one (`Status` beside `tonic::Status`).
const FOREIGN: &[&str] = &[
    "Status",
    "Request",
    "Response",
    "Streaming",
    "Channel",
    "Code",
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The engine crate's source (crates/engine/src), a crate root of its own.
fn engine_src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/engine/src")
}

/// Every `.rs` file under `dir`, recursively, with its path relative to `src/`.
fn rust_files(dir: &Path, into: &mut Vec<(String, String)>) {
    rust_files_of(&src(), dir, into);
}

/// Every `.rs` file under `dir`, recursively, with its path relative to the crate root `root`.
fn rust_files_of(root: &Path, dir: &Path, into: &mut Vec<(String, String)>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("read a source directory")
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files_of(root, &path, into);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let name = path
                .strip_prefix(root)
                .expect("under the crate root")
                .display()
                .to_string();
            into.push((
                name,
                std::fs::read_to_string(&path).expect("read a source file"),
            ));
        }
    }
}

/// The type names a file declares at its top level (`struct`, `enum`, `trait`, `type`): lines at
/// column 0, so associated types and test modules' helpers do not count.
fn declared(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| {
            let line = line.strip_prefix("pub ").unwrap_or(line);
            let line = match line.strip_prefix("pub(") {
                Some(rest) => rest.split_once(") ")?.1,
                None => line,
            };
            let (_, rest) = ["struct ", "enum ", "trait ", "type "]
                .iter()
                .find_map(|kw| line.strip_prefix(kw).map(|rest| (kw, rest)))?;
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            (!name.is_empty()).then_some(name)
        })
        .collect()
}

/// Rough edge 11: `Game`, `Deals`, `Rps`, `Outgoing`, `Submission`, `Progress`, `Event`, `Answer`
/// meant one thing in the client or the command line and another elsewhere, and `cli::Status` sat
/// beside `tonic::Status`. Checked for the whole crate and the engine's crate, which it re-exports.
#[test]
fn each_type_name_means_one_thing_in_the_crate() {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut engine = Vec::new();
    rust_files_of(&engine_src(), &engine_src(), &mut engine);
    assert!(engine.len() > 10, "the engine's files were not found");
    files.extend(
        engine
            .into_iter()
            .map(|(f, text)| (format!("crates/engine/src/{f}"), text)),
    );
    let mut by_name: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (file, text) in &files {
        for name in declared(text) {
            by_name.entry(name).or_default().push(file.clone());
        }
    }
    let mut clashes = Vec::new();
    for (name, files) in &by_name {
        if files.len() > 1 {
            clashes.push(format!("{name}: declared in {}", files.join(", ")));
        }
        if FOREIGN.contains(&name.as_str()) {
            clashes.push(format!(
                "{name} ({}): also a type of tonic",
                files.join(", ")
            ));
        }
    }
    assert!(clashes.is_empty(), "{}", clashes.join("\n"));
}

/// The sibling modules a file of `parent` names with `super::NAME`.
fn siblings_used(text: &str, modules: &BTreeSet<String>) -> BTreeSet<String> {
    let mut used = BTreeSet::new();
    for (at, _) in text.match_indices("super::") {
        let name: String = text[at + "super::".len()..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if modules.contains(&name) {
            used.insert(name);
        }
    }
    // `use super::{a, b::C}` names several at once.
    for (at, _) in text.match_indices("super::{") {
        let list = &text[at + "super::{".len()..];
        let list = &list[..list.find('}').unwrap_or(list.len())];
        for item in list.split(',') {
            let name = item.trim().split("::").next().unwrap_or("").trim();
            if modules.contains(name) {
                used.insert(name.to_string());
            }
        }
    }
    used
}

/// Rough edge 11: `cli/client.rs` and `cli/rps.rs` imported from each other. Within `cli`,
/// `client` and `jobs`, the modules' imports must form no circle.
#[test]
fn the_modules_of_the_cli_and_the_client_import_one_way() {
    for parent in [
        "cli",
        "client",
        "jobs/store",
        "jobs/source",
        "jobs/sink",
        "jobs/parts",
    ] {
        let dir = src().join(parent);
        let mut files = Vec::new();
        rust_files(&dir, &mut files);
        let module = |file: &str| {
            file.trim_start_matches(&format!("{parent}/"))
                .trim_end_matches(".rs")
                .to_string()
        };
        let modules: BTreeSet<String> = files.iter().map(|(f, _)| module(f)).collect();
        let graph: BTreeMap<String, BTreeSet<String>> = files
            .iter()
            .map(|(f, text)| {
                let mut used = siblings_used(text, &modules);
                used.remove(&module(f));
                (module(f), used)
            })
            .collect();
        let mut done = BTreeSet::new();
        for node in graph.keys() {
            if let Some(circle) = visit(node, &graph, &mut Vec::new(), &mut done) {
                panic!("src/{parent}: {}", circle.join(" -> "));
            }
        }
    }
}

/// Depth-first search from `node` for a circle in `graph`; `done`, the nodes already cleared.
fn visit(
    node: &str,
    graph: &BTreeMap<String, BTreeSet<String>>,
    path: &mut Vec<String>,
    done: &mut BTreeSet<String>,
) -> Option<Vec<String>> {
    if let Some(at) = path.iter().position(|n| n == node) {
        let mut circle = path[at..].to_vec();
        circle.push(node.to_string());
        return Some(circle);
    }
    if done.contains(node) {
        return None;
    }
    path.push(node.to_string());
    for next in graph.get(node).into_iter().flatten() {
        if let Some(circle) = visit(next, graph, path, done) {
            return Some(circle);
        }
    }
    path.pop();
    done.insert(node.to_string());
    None
}

/// The files of `src/` that a file names with `crate::` paths (in `use` lines or inline, or from a
/// top-level module brought in by name), each
/// path taken to the deepest file it reaches (`crate::server::api::X` is `server/api.rs`, or
/// `server/api/x.rs` where that exists); a file's own ancestors are left out (a child naming its
/// parent's items is how Rust modules are built, not an arrow between rooms).
fn crate_imports(file: &str, text: &str, files: &BTreeSet<String>) -> BTreeSet<String> {
    let resolve = |segments: &[&str]| -> Option<String> {
        (1..=segments.len()).rev().find_map(|n| {
            let stem = segments[..n].join("/");
            [format!("{stem}.rs"), format!("{stem}/mod.rs")]
                .into_iter()
                .find(|f| files.contains(f))
        })
    };
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    // Where a path starts: `crate::`, or a top-level module's name used bare (as after
    // `use crate::deal::{self, ...}`: `deal::frame::frame(...)`), not inside another path.
    let top: BTreeSet<String> = files
        .iter()
        .filter_map(|f| {
            let stem = f.trim_end_matches(".rs").trim_end_matches("/mod");
            (!stem.contains('/') && stem != "lib" && stem != "main").then(|| stem.to_string())
        })
        .collect();
    let mut starts = Vec::new();
    for (at, _) in text.match_indices("::") {
        let before = &text[..at];
        let name: String = before
            .chars()
            .rev()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        let head = &before[..before.len() - name.len()];
        let inside = head
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':');
        if name == "crate" && !inside {
            starts.push(at + 2);
        } else if top.contains(&name) && !inside {
            starts.push(at - name.len());
        }
    }
    let mut used = BTreeSet::new();
    for at in starts {
        let mut segments = Vec::new();
        let mut rest = &text[at..];
        loop {
            let name = ident(rest);
            if name.is_empty() {
                break;
            }
            rest = &rest[name.len()..];
            segments.push(name);
            match rest.strip_prefix("::") {
                Some(more) if !more.starts_with('{') => rest = more,
                Some(more) => {
                    // `crate::a::{b, c::D}`: each entry of the list, after the prefix.
                    let list = &more[1..more.find('}').unwrap_or(more.len())];
                    for entry in list.split(',') {
                        let mut path: Vec<&str> = segments.iter().map(String::as_str).collect();
                        path.extend(entry.trim().split("::").map(str::trim));
                        if let Some(f) = resolve(&path) {
                            used.insert(f);
                        }
                    }
                    break;
                }
                None => break,
            }
        }
        let path: Vec<&str> = segments.iter().map(String::as_str).collect();
        if let Some(f) = resolve(&path) {
            used.insert(f);
        }
    }
    let module = file.trim_end_matches(".rs").trim_end_matches("/mod");
    used.retain(|f| {
        let target = f.trim_end_matches(".rs").trim_end_matches("/mod");
        target != module && !module.starts_with(&format!("{target}/"))
    });
    used
}

/// A file's code itself: no comments (doc links name modules too), no unit tests.
fn code(text: &str) -> String {
    let text = text.split("#[cfg(test)]").next().unwrap_or("");
    text.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Arrows (`file -> file it imports`) from the files `from` picks to those `to` picks.
fn arrows(from: impl Fn(&str) -> bool, to: impl Fn(&str) -> bool) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let names: BTreeSet<String> = files.iter().map(|(f, _)| f.clone()).collect();
    assert!(
        files.iter().filter(|(f, _)| from(f)).count() > 5,
        "the files to check were not found under src/"
    );
    files
        .iter()
        .filter(|(f, _)| from(f))
        .flat_map(|(f, text)| {
            crate_imports(f, &code(text), &names)
                .into_iter()
                .filter(|used| to(used))
                .map(move |used| format!("{f} -> {used}"))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Whether `file` is module `module` or one of its files.
fn within(file: &str, module: &str) -> bool {
    file == format!("{module}.rs") || file.starts_with(&format!("{module}/"))
}

/// The house issue: the daemon imported the client library (`server/api/translate.rs` took its
/// chunks and their checks from `client`), so a change to the client rebuilt and could break the
/// daemon. What both sides use lives below both (`exchange`); no file of the daemon (`server`,
/// `service`) names `client`.
#[test]
fn the_daemon_never_imports_the_client_library() {
    // The jobs library too: the daemon runs jobs with it (`JobService`).
    let wrong = arrows(
        |f| within(f, "server") || within(f, "service") || within(f, "jobs"),
        |f| within(f, "client"),
    );
    assert!(
        wrong.is_empty(),
        "the daemon imports the client library:\n{}",
        wrong.join("\n")
    );
}

/// The house issue: the jobs' files sat in `cli/` and 17 of their imports ran back up to the
/// command line's flags. The commands are thin over the library: nothing but the binary and the
/// crate root names `cli`, the jobs library included.
#[test]
fn the_library_never_imports_the_command_line() {
    let wrong = arrows(
        |f| !within(f, "cli") && f != "main.rs" && f != "lib.rs",
        |f| within(f, "cli"),
    );
    assert!(
        wrong.is_empty(),
        "the library imports the command line:\n{}",
        wrong.join("\n")
    );
}

/// The jobs library's stages, in pipeline order: a file of one stage imports only from its own
/// stage and those before it.
const JOB_STAGES: [&str; 8] = [
    "outcome", "store", "report", "source", "sink", "parts", "pipeline", "daemon",
];

/// The house issue, third pass: src/jobs was one flat room of 26 modules on 14 floors, in an
/// order that was not its pipeline. It is its stages, at most 10 entries, each folder's module
/// saying what comes in and what goes out, and no arrow runs from a stage to a later one.
#[test]
fn the_jobs_library_is_its_stages_in_pipeline_order() {
    let jobs = src().join("jobs");
    let mut entries: Vec<String> = std::fs::read_dir(&jobs)
        .expect("src/jobs")
        .map(|e| {
            e.expect("an entry")
                .file_name()
                .to_string_lossy()
                .to_string()
        })
        .collect();
    entries.sort();
    assert!(
        entries.len() <= 10,
        "src/jobs holds {} entries: {entries:?}",
        entries.len()
    );
    for entry in &entries {
        let stage = entry.trim_end_matches(".rs");
        assert!(
            JOB_STAGES.contains(&stage),
            "src/jobs/{entry} is not one of the stages {JOB_STAGES:?}"
        );
        if !entry.ends_with(".rs") {
            let doc =
                std::fs::read_to_string(jobs.join(entry).join("mod.rs")).expect("a stage's mod.rs");
            assert!(
                doc.contains("//! - Comes in:") && doc.contains("//! - Goes out:"),
                "src/jobs/{entry}/mod.rs does not say what comes in and what goes out"
            );
        }
    }
    let stage_of = |file: &str| -> Option<usize> {
        let rest = file.strip_prefix("jobs/")?;
        let stage = rest.split('/').next()?.trim_end_matches(".rs");
        JOB_STAGES.iter().position(|s| *s == stage)
    };
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let names: BTreeSet<String> = files.iter().map(|(f, _)| f.clone()).collect();
    let mut wrong = Vec::new();
    let mut seen = 0;
    for (file, text) in &files {
        let Some(from) = stage_of(file) else { continue };
        for used in crate_imports(file, &code(text), &names) {
            if let Some(to) = stage_of(&used) {
                seen += 1;
                if to > from {
                    wrong.push(format!(
                        "{file} ({}) -> {used} ({})",
                        JOB_STAGES[from], JOB_STAGES[to]
                    ));
                }
            }
        }
    }
    assert!(
        seen > 30,
        "too few imports between the stages were read: {seen}"
    );
    assert!(
        wrong.is_empty(),
        "imports from a stage to a later one:\n{}",
        wrong.join("\n")
    );
}

/// The house issue, third pass: six files of the jobs library derived clap's flags, and the
/// daemon ran a job by filling in the command line's `JobArgs`. The library takes a plan
/// (`jobs/plan.rs`, built from the flags in src/cli or from a job's spec); no file under
/// src/jobs names clap.
#[test]
fn the_jobs_library_knows_no_flags() {
    let mut files = Vec::new();
    rust_files(&src().join("jobs"), &mut files);
    assert!(files.len() > 10, "the jobs library's files were not found");
    let wrong: Vec<&String> = files
        .iter()
        .filter(|(_, text)| {
            let text = code(text);
            text.contains("clap::") || text.contains("#[arg(") || text.contains("#[command(")
        })
        .map(|(f, _)| f)
        .collect();
    assert!(
        wrong.is_empty(),
        "files of the jobs library use clap: {wrong:?}"
    );
}

/// The variants of each `enum` of `text` (its top-level arms: lines one indent deeper than the
/// `enum` line that start with a capital), by the enum's name.
fn enum_arms(text: &str) -> Vec<(String, Vec<String>)> {
    let mut enums = Vec::new();
    let lines: Vec<&str> = text.lines().collect();
    for (at, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        let Some(rest) = trimmed
            .strip_prefix("pub enum ")
            .or_else(|| trimmed.strip_prefix("enum "))
            .or_else(|| trimmed.strip_prefix("pub(crate) enum "))
            .or_else(|| trimmed.strip_prefix("pub(in crate::jobs) enum "))
        else {
            continue;
        };
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let mut arms = Vec::new();
        for inner in &lines[at + 1..] {
            let body = inner.trim_start();
            let depth = inner.len() - body.len();
            if depth <= indent && body.starts_with('}') {
                break;
            }
            if depth == indent + 4 && body.starts_with(|c: char| c.is_ascii_uppercase()) {
                let arm: String = body
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                arms.push(arm);
            }
        }
        enums.push((name, arms));
    }
    enums
}

/// The house issue, third pass: five enums carried a file-or-object arm (`Location`,
/// `WholeWriter`, `Sink`, `Dest`, `TailTo`), so each format chose between a file and an object
/// again. The place is chosen once, as a `Location`; the formats write to one tail
/// (`jobs/sink/tail.rs`) with a file and an object behind it.
#[test]
fn one_enum_has_a_file_and_an_object_arm() {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut both = Vec::new();
    for (file, text) in &files {
        for (name, arms) in enum_arms(&code(text)) {
            let file_arm = arms.iter().any(|a| a.starts_with("File"));
            let object_arm = arms
                .iter()
                .any(|a| a.starts_with("Object") || a.starts_with("Memory"));
            if file_arm && object_arm {
                both.push(format!("{file}: {name}"));
            }
        }
    }
    assert_eq!(
        both,
        ["jobs/store/location.rs: Location"],
        "enums with a file and an object arm"
    );
}

/// The house issue: `items.rs` and `deal/frame.rs` imported each other (through `deal.rs`, which
/// re-exports its files), and `server/front.rs` and `server/ui.rs`. Across the whole crate, the
/// files' `crate::` imports, their siblings (`super::NAME`) and their own children (`NAME::`)
/// form no circle.
#[test]
fn no_two_files_of_the_crate_import_each_other_even_through_others() {
    for root in [src(), engine_src()] {
        no_circle_among_the_files_of(&root);
    }
}

/// The import circles test for the crate whose root (`lib.rs`) is in `root`.
fn no_circle_among_the_files_of(root: &Path) {
    let mut files = Vec::new();
    rust_files_of(root, root, &mut files);
    let names: BTreeSet<String> = files.iter().map(|(f, _)| f.clone()).collect();
    let graph: BTreeMap<String, BTreeSet<String>> = files
        .iter()
        .map(|(f, text)| {
            let text = code(text);
            let text = text.as_str();
            let mut used = crate_imports(f, text, &names);
            // Siblings by `super::NAME`, as files beside this one.
            let dir = Path::new(f).parent().map_or(String::new(), |d| {
                d.to_string_lossy().trim_end_matches('/').to_string()
            });
            let parent_dir = Path::new(&dir)
                .parent()
                .map(|d| d.to_string_lossy().to_string())
                .unwrap_or_default();
            let prefix = |d: &str| {
                if d.is_empty() {
                    String::new()
                } else {
                    format!("{d}/")
                }
            };
            // A file `a/b.rs` is module `a::b`; its `super` is `a`, whose children live in `a/`.
            // `mod.rs` files and the crate root's children are one level up.
            let siblings_dir = if f.ends_with("/mod.rs") {
                parent_dir.clone()
            } else {
                dir.clone()
            };
            let modules: BTreeSet<String> = names
                .iter()
                .filter_map(|n| {
                    let n = n.strip_prefix(&prefix(&siblings_dir))?;
                    let stem = n.trim_end_matches(".rs").trim_end_matches("/mod");
                    (!stem.contains('/')).then(|| stem.to_string())
                })
                .collect();
            // Children named as `child::` (a module re-exporting or calling its own files).
            let own_dir = f.trim_end_matches(".rs").trim_end_matches("/mod");
            let own_dir = if f == "lib.rs" { "" } else { own_dir };
            for child in names.iter().filter_map(|n| {
                let n = n.strip_prefix(&prefix(own_dir))?;
                let stem = n.trim_end_matches(".rs").trim_end_matches("/mod");
                (!stem.contains('/')).then_some((stem.to_string(), n.to_string()))
            }) {
                let (stem, rest) = child;
                let named = text.match_indices(&format!("{stem}::")).any(|(at, _)| {
                    !text[..at]
                        .chars()
                        .next_back()
                        .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':')
                });
                if named {
                    used.insert(format!("{}{rest}", prefix(own_dir)));
                }
            }
            for sibling in siblings_used(text, &modules) {
                for candidate in [
                    format!("{}{sibling}.rs", prefix(&siblings_dir)),
                    format!("{}{sibling}/mod.rs", prefix(&siblings_dir)),
                ] {
                    if names.contains(&candidate) && &candidate != f {
                        used.insert(candidate);
                    }
                }
            }
            (f.clone(), used)
        })
        .collect();
    let mut done = BTreeSet::new();
    let mut circles = Vec::new();
    for node in graph.keys() {
        if let Some(circle) = visit(node, &graph, &mut Vec::new(), &mut done) {
            circles.push(circle.join(" -> "));
        }
    }
    assert!(
        circles.is_empty(),
        "import circles in {}:\n{}",
        root.display(),
        circles.join("\n")
    );
}

/// The house issue: docs/development.md's map of the source missed files as the tree grew. Each
/// file of `src/` is named in the map's table, as `src/PATH` or, in the row of its top folder
/// (`src/cli/*.rs`), by its path inside that folder; and each file the map names exists. The
/// same for the engine's crate, in rows of `crates/engine/src/`.
#[test]
fn the_map_in_docs_development_names_every_file_of_the_source_and_no_other() {
    let doc =
        std::fs::read_to_string(src().join("../docs/development.md")).expect("docs/development.md");
    for (root, prefix) in [(src(), "src/"), (engine_src(), "crates/engine/src/")] {
        the_map_names_every_file_of(&doc, &root, prefix);
    }
}

fn the_map_names_every_file_of(doc: &str, root: &Path, prefix: &str) {
    let rows: Vec<&str> = doc
        .lines()
        .filter(|l| l.starts_with(&format!("| `{prefix}")))
        .collect();
    let mut files = Vec::new();
    rust_files_of(root, root, &mut files);
    let names: BTreeSet<String> = files.iter().map(|(f, _)| f.clone()).collect();
    // The names in backquotes ending in `.rs` of a row, and the folder its glob covers.
    let quoted = |row: &str| -> Vec<String> {
        row.split('`')
            .skip(1)
            .step_by(2)
            .filter(|q| q.ends_with(".rs"))
            .map(str::to_string)
            .collect()
    };
    let folder = |row: &str| -> Option<String> {
        quoted(row).iter().find_map(|q| {
            q.strip_prefix(prefix)
                .and_then(|q| q.strip_suffix("/*.rs"))
                .map(str::to_string)
        })
    };
    let mut named = BTreeSet::new();
    let mut stale = Vec::new();
    for row in &rows {
        let folder = folder(row);
        for q in quoted(row) {
            let path = match (q.strip_prefix(prefix), &folder) {
                (Some(p), _) if p.ends_with("/*.rs") => continue,
                (Some(p), _) => p.to_string(),
                (None, Some(dir)) => format!("{dir}/{q}"),
                (None, None) => continue,
            };
            if names.contains(&path) {
                named.insert(path);
            } else {
                stale.push(path);
            }
        }
    }
    let missing: Vec<&String> = names.difference(&named).collect();
    assert!(
        rows.len() > 3,
        "no map of {prefix} found in docs/development.md"
    );
    assert!(
        missing.is_empty() && stale.is_empty(),
        "docs/development.md's map: files of {prefix} it does not name: {missing:?}; \
         files it names that are not there: {stale:?}"
    );
}

/// The packages `from` depend on in `Cargo.lock`, however deep: each `[[package]]`'s
/// `dependencies` entries are `NAME` or `NAME VERSION`. The lock names every platform's and every
/// feature's dependencies of a package, so this is never less than what is built.
fn lock_closure(lock: &str, from: &[String]) -> BTreeSet<String> {
    let mut deps: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for block in lock.split("[[package]]").skip(1) {
        let field = |key: &str| {
            block.lines().find_map(|l| {
                l.strip_prefix(&format!("{key} = \""))
                    .and_then(|v| v.strip_suffix('"'))
                    .map(str::to_string)
            })
        };
        let Some(name) = field("name") else { continue };
        let list = block
            .split_once("dependencies = [")
            .map(|(_, rest)| rest.split(']').next().unwrap_or(""))
            .unwrap_or("");
        let names = list
            .split(',')
            .filter_map(|e| {
                let e = e.trim().trim_matches('"');
                e.split_whitespace().next().map(str::to_string)
            })
            .collect();
        deps.entry(name).or_default().extend::<Vec<String>>(names);
    }
    let mut seen: BTreeSet<String> = from.iter().cloned().collect();
    let mut todo = from.to_vec();
    while let Some(p) = todo.pop() {
        for d in deps.get(&p).into_iter().flatten() {
            if seen.insert(d.clone()) {
                todo.push(d.clone());
            }
        }
    }
    seen
}

/// The house issue, third pass: the engine built with all of the daemon's crates, so the Python
/// package could not have it alone. Its crate (crates/engine) depends, however deeply, on no
/// async runtime, no gRPC, HTTP, protobuf, command line or object store crate: its
/// `[dependencies]` (its tests' are not built into it) and all they depend on in `Cargo.lock`, so
/// a dependency added anywhere under it fails here.
#[test]
fn the_engine_crate_builds_with_none_of_the_daemon_s_crates() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let lock = std::fs::read_to_string(root.join("Cargo.lock")).expect("Cargo.lock");
    let manifest = std::fs::read_to_string(root.join("crates/engine/Cargo.toml"))
        .expect("the engine's manifest");
    let mut table = String::new();
    let mut direct = Vec::new();
    for line in manifest.lines() {
        let line = line.split('#').next().unwrap_or_default().trim();
        if line.starts_with('[') {
            table = line.to_string();
        } else if let Some((name, _)) = line.split_once('=')
            && table == "[dependencies]"
        {
            direct.push(name.trim().to_string());
        }
    }
    let closure = lock_closure(&lock, &direct);
    assert!(
        closure.contains("ruint") && closure.contains("thiserror"),
        "the engine's dependencies were not read from Cargo.lock: {closure:?}"
    );
    let forbidden: Vec<&String> = closure
        .iter()
        .filter(|d| {
            let d = d.as_str();
            [
                "tokio",
                "tonic",
                "prost",
                "hyper",
                "clap",
                "object_store",
                "futures",
                "http",
                "tower",
                "serde_json",
                "parquet",
                "arrow",
            ]
            .iter()
            .any(|f| d == *f || d.starts_with(&format!("{f}-")) || d.starts_with(&format!("{f}_")))
        })
        .collect();
    assert!(
        forbidden.is_empty(),
        "the engine crate depends on the daemon's crates: {forbidden:?}"
    );
    let engine = std::fs::read_to_string(root.join("crates/engine/src/lib.rs")).expect("engine");
    assert!(
        !code(&engine).contains("patience::"),
        "the engine names the daemon's crate"
    );
}

/// The `[profile.release...]` tables of a manifest: each setting with its table, comments and
/// blank lines left out.
fn release_profile(manifest: &str) -> BTreeSet<(String, String)> {
    let mut table = String::new();
    let mut settings = BTreeSet::new();
    for line in manifest.lines() {
        let line = line.split('#').next().unwrap_or_default().trim();
        if line.starts_with('[') {
            table = line.to_string();
        } else if !line.is_empty() && table.starts_with("[profile.release") {
            settings.insert((table.clone(), line.to_string()));
        }
    }
    settings
}

/// The fuzz targets' own workspace builds with the main crate's release profile, overrides and
/// all: CI checks them in `target/`, and only then does that check reuse clippy's release check
/// of every dependency (with the two profiles apart, it checked them all again: 116 s in a fresh
/// clone instead of 31 s).
#[test]
fn the_fuzz_targets_build_with_the_main_crate_s_release_profile() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let read = |name: &str| std::fs::read_to_string(root.join(name)).expect("read a manifest");
    let main = release_profile(&read("Cargo.toml"));
    assert!(!main.is_empty(), "Cargo.toml has no [profile.release]");
    assert_eq!(
        release_profile(&read("fuzz/Cargo.toml")),
        main,
        "fuzz/Cargo.toml's release profile (left) is not Cargo.toml's (right)"
    );
}
