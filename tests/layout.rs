//! The shape of the source itself: each type name means one thing in the whole crate, and the
//! modules of the command line and of the client import one another one way only.

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

/// Every `.rs` file under `dir`, recursively, with its path relative to `src/`.
fn rust_files(dir: &Path, into: &mut Vec<(String, String)>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("read a source directory")
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, into);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let name = path
                .strip_prefix(src())
                .expect("under src/")
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
/// beside `tonic::Status`. Checked for the whole crate.
#[test]
fn each_type_name_means_one_thing_in_the_crate() {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
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

/// Rough edge 11: `cli/client.rs` and `cli/rps.rs` imported from each other. Within `cli` and
/// within `client`, the modules' imports must form no circle.
#[test]
fn the_modules_of_the_cli_and_the_client_import_one_way() {
    for parent in ["cli", "client"] {
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
        // Depth-first search for a circle.
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
        let mut done = BTreeSet::new();
        for node in graph.keys() {
            if let Some(circle) = visit(node, &graph, &mut Vec::new(), &mut done) {
                panic!("src/{parent}: {}", circle.join(" -> "));
            }
        }
    }
}
