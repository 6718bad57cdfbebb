//! FZU 2145 cases, one per row: a row holds what a case file holds for one case (its `n` line,
//! Maze's line, then the other players' lines), read by the engine's own case reader, so a case
//! is read, and a bad one worded, as `patience rps` reads and words it.

use patience_engine::rps::{Case, CaseFileError, CaseReader};

/// The case `text` holds, or what is wrong with it: a bad case in the words `patience rps` prints
/// after `case K (line L): `; a row that ends before its case does, or goes on after it, says so.
pub fn case(text: &str) -> Result<Case, String> {
    // The reader reads files, which start with their count of cases: this row is a file of one.
    let file = format!("1\n{text}");
    let mut found = None;
    for step in CaseReader::new(file.as_bytes()) {
        match step {
            Ok(case) if found.is_none() => found = Some(case),
            Ok(_) => return Err(more()),
            Err(CaseFileError::Case(bad)) => return Err(bad.error.to_string()),
            Err(CaseFileError::Truncated { expected, .. }) => {
                return Err(format!("the case ends before {expected}"));
            }
            Err(CaseFileError::Trailing { .. }) => return Err(more()),
            Err(e) => return Err(e.to_string()),
        }
    }
    found.ok_or_else(|| "no case (empty)".to_string())
}

fn more() -> String {
    "more lines after the case (a row holds one case: its n, Maze's line and n players' lines)"
        .to_string()
}
