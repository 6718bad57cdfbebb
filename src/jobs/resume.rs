//! `--output FILE` and `--resume`: opening the file for a new run or to go on with one.
//!
//! The run record (`run_record.rs`), `FILE.resume.json`, is written (atomically: a temporary file renamed) before a new
//! run empties FILE, and holds what decides the bytes of each answer line: the game, the format,
//! the precision, the analysis asked for, and the inputs as named on the command line. A resume
//! reads it back and refuses (exit status 2, FILE untouched) to append answers written any other
//! way. It keeps FILE's complete lines, one per input already answered; how many inputs that is
//! the reader finds out by reading them again, the usual way, and the printer refuses once the
//! input turns out shorter ([`Resume`]).

use std::fs::File;
use std::io;
use std::path::Path;

use anyhow::{Context as _, bail};

use super::input::{Input, read_through};
use super::location::Location;
use super::record;
use super::run_record::{Record, Resume, read_record};
use super::signals::Tell;
use super::sink::{AnswerFile, Sink};
use crate::compressed::{self, Codec};

/// Opens `output` for this run: created anew with its record, or, with `resume` and a file that
/// holds answers, checked against its record and kept. Its completion record, if any, is removed
/// once the run is sure to go on, before anything in it changes; a refused resume leaves both.
pub fn open(
    output: &Path,
    resume: bool,
    record: &Record,
    inputs: &[Input],
    tell: Tell,
) -> anyhow::Result<(Sink, Resume)> {
    refuse_an_input(output, inputs)?;
    let kept = if resume {
        complete_lines(output)?
    } else {
        None
    };
    let shown = output.display();
    let place = Location::File(output.to_path_buf());
    let Some((len, lines)) = kept else {
        record::forget(&place)?;
        record::write(&record::resume_of(&place), record)?;
        let file =
            AnswerFile::create(output, tell).with_context(|| format!("cannot create {shown}"))?;
        let resume = Resume {
            path: output.to_path_buf(),
            kept: 0,
        };
        return Ok((Sink::File(file), resume));
    };
    let held = read_record(&place)?;
    record.same_run(&held, &shown)?;
    record::forget(&place)?;
    let file = AnswerFile::resume(output, len, lines, tell)
        .with_context(|| format!("cannot open {shown}"))?;
    let resume = Resume {
        path: output.to_path_buf(),
        kept: lines,
    };
    Ok((Sink::File(file), resume))
}

/// Writing the answers over one of the inputs would destroy it before it is read.
pub(super) fn refuse_an_input(output: &Path, inputs: &[Input]) -> anyhow::Result<()> {
    let Ok(ours) = output.canonicalize() else {
        return Ok(());
    };
    for input in inputs {
        if let Some(path) = input.location().and_then(Location::file)
            && path.canonicalize().is_ok_and(|p| p == ours)
        {
            bail!(
                "--output {} is also an input: the answers would overwrite it",
                output.display()
            );
        }
    }
    Ok(())
}

/// The length in bytes and the number of FILE's complete lines; `None` when there is no FILE or
/// nothing in it (a new run).
/// A compressed FILE (`NAME.gz`, `NAME.zst`) keeps its complete members.
fn complete_lines(output: &Path) -> anyhow::Result<Option<(u64, u64)>> {
    let shown = output.display();
    let file = match File::open(output) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(anyhow::Error::new(e).context(format!("cannot read {shown}"))),
    };
    if let Some(codec) = Codec::for_name(&output.to_string_lossy()) {
        return compressed::complete_members(file, codec)
            .with_context(|| format!("cannot read {shown}"));
    }
    let (mut len, mut lines) = (0u64, 0u64);
    let mut at = 0u64;
    let read = read_through(file, &shown, |chunk| {
        if let Some(last) = chunk.iter().rposition(|&b| b == b'\n') {
            len = at + last as u64 + 1;
            lines += memchr::memchr_iter(b'\n', chunk).count() as u64;
        }
        at += chunk.len() as u64;
        Ok::<(), anyhow::Error>(())
    })?;
    Ok((read > 0).then_some((len, lines)))
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("patience-resume-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn complete_lines_leave_out_a_partial_last_one() {
        let dir = scratch("lines");
        let file = dir.join("out");
        assert_eq!(complete_lines(&file).unwrap(), None);
        std::fs::write(&file, "").unwrap();
        assert_eq!(complete_lines(&file).unwrap(), None);
        std::fs::write(&file, "0.5").unwrap();
        assert_eq!(complete_lines(&file).unwrap(), Some((0, 0)));
        std::fs::write(&file, "0.5\nerror: x\n0.2").unwrap();
        assert_eq!(complete_lines(&file).unwrap(), Some((13, 2)));
        std::fs::write(&file, "0.5\n\n").unwrap();
        assert_eq!(complete_lines(&file).unwrap(), Some((5, 2)));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
