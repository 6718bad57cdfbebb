//! `--output FILE` and `--resume`: opening the file for a new run or to go on with one.
//!
//! The run record (`run_record.rs`), `FILE.resume.json`, is written (atomically: a temporary file renamed) before a new
//! run empties FILE, and holds what decides the bytes of each answer line: the game, the format,
//! the precision, the analysis asked for, and the inputs as named on the command line. A resume
//! reads it back and refuses (exit status 2, FILE untouched) to append answers written any other
//! way. It keeps FILE's complete lines, one per input already answered; how many inputs that is
//! the reader finds out by reading them again, the usual way, and the printer refuses once the
//! input turns out shorter ([`Resume`]).

use std::io;
use std::path::Path;

use super::lines::{AnswerLines, Sink};
use super::run_record::{Record, Resume, RunRecordError, read_record};
use super::signals::Tell;
use super::tail::FileTail;
use crate::compressed::{self, Codec};
use crate::jobs::source::input::{Input, ReadThroughError, read_through};
use crate::jobs::store::beneath::{self, How};
use crate::jobs::store::location::Location;
use crate::jobs::store::record::{self, RecordError};
use crate::jobs::store::{FileError, FileOp};

/// Why `--output FILE` cannot be opened for this run, new or resumed: FILE named once, the
/// storage's error as the cause.
#[derive(Debug, thiserror::Error)]
pub enum ResumeError {
    /// A local file the operation failed on.
    #[error(transparent)]
    File(#[from] FileError),
    /// The output is one of the inputs (a file, or an object of the same URL).
    #[error("--output {output} is also an input: the answers would overwrite it")]
    IsAnInput { output: String },
    #[error(transparent)]
    ReadThrough(#[from] ReadThroughError),
    #[error(transparent)]
    RunRecord(#[from] RunRecordError),
    #[error(transparent)]
    Record(#[from] RecordError),
}

/// Opens `output` for this run: created anew with its record, or, with `resume` and a file that
/// holds answers, checked against its record and kept. Its completion record, if any, is removed
/// once the run is sure to go on, before anything in it changes; a refused resume leaves both.
pub fn open(
    output: &Path,
    resume: bool,
    record: &Record,
    inputs: &[Input],
    tell: Tell,
) -> Result<(Sink, Resume), ResumeError> {
    refuse_an_input(&Location::File(output.to_path_buf()), inputs)?;
    let kept = if resume {
        complete_lines(output)?
    } else {
        None
    };
    let place = Location::File(output.to_path_buf());
    let Some((len, lines)) = kept else {
        record::forget(&place)?;
        record::write(&record::resume_of(&place), record)?;
        let codec = place.codec_by_name();
        let file = FileTail::create(output, codec)
            .and_then(|tail| AnswerLines::start(Box::new(tail), tell))
            .map_err(|source| {
                ResumeError::File(FileError {
                    op: FileOp::Create,
                    path: output.to_path_buf(),
                    source,
                })
            })?;
        let resume = Resume {
            path: output.to_path_buf(),
            kept: 0,
        };
        return Ok((Sink::Lines(file), resume));
    };
    let held = read_record(&place)?;
    record.same_run(&held, &output.display())?;
    record::forget(&place)?;
    let codec = place.codec_by_name();
    let file = beneath::open(output, How::Write)
        .map(|file| FileTail::open(file, output, codec, Some((len, lines))))
        .and_then(|tail| AnswerLines::start(Box::new(tail), tell))
        .map_err(|source| {
            ResumeError::File(FileError {
                op: FileOp::Open,
                path: output.to_path_buf(),
                source,
            })
        })?;
    let resume = Resume {
        path: output.to_path_buf(),
        kept: lines,
    };
    Ok((Sink::Lines(file), resume))
}

/// Writing the answers over one of the inputs would destroy it before it is read.
pub(in crate::jobs) fn refuse_an_input(
    output: &Location,
    inputs: &[Input],
) -> Result<(), ResumeError> {
    match inputs
        .iter()
        .filter_map(Input::location)
        .any(|input| input.same_place(output))
    {
        true => Err(ResumeError::IsAnInput {
            output: output.to_string(),
        }),
        false => Ok(()),
    }
}

/// The length in bytes and the number of FILE's complete lines; `None` when there is no FILE or
/// nothing in it (a new run).
/// A compressed FILE (`NAME.gz`, `NAME.zst`) keeps its complete members.
fn complete_lines(output: &Path) -> Result<Option<(u64, u64)>, ResumeError> {
    let unreadable = |source| {
        ResumeError::File(FileError {
            op: FileOp::Read,
            path: output.to_path_buf(),
            source,
        })
    };
    let file = match beneath::open(output, How::Read) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(unreadable(e)),
    };
    if let Some(codec) = Codec::for_name(&output.to_string_lossy()) {
        return compressed::complete_members(file, codec).map_err(unreadable);
    }
    let (mut len, mut lines) = (0u64, 0u64);
    let mut at = 0u64;
    let read = read_through(file, &output.display(), |chunk| {
        if let Some(last) = chunk.iter().rposition(|&b| b == b'\n') {
            len = at + last as u64 + 1;
            lines += memchr::memchr_iter(b'\n', chunk).count() as u64;
        }
        at += chunk.len() as u64;
        Ok::<(), ResumeError>(())
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

    /// Each failure in the words `--output` and `--resume` have always said it in (written out
    /// here by hand, as the format strings before the errors were typed said them).
    #[test]
    fn resume_errors_say_what_they_always_said() {
        let denied = || io::Error::from(io::ErrorKind::PermissionDenied);
        let cases: Vec<(ResumeError, &str)> = vec![
            (
                ResumeError::IsAnInput {
                    output: "deals.in".into(),
                },
                "--output deals.in is also an input: the answers would overwrite it",
            ),
            (
                ResumeError::File(FileError {
                    op: FileOp::Create,
                    path: "out.txt".into(),
                    source: denied(),
                }),
                "cannot create out.txt: permission denied",
            ),
            (
                ResumeError::File(FileError {
                    op: FileOp::Open,
                    path: "out.txt".into(),
                    source: denied(),
                }),
                "cannot open out.txt: permission denied",
            ),
            (
                ResumeError::File(FileError {
                    op: FileOp::Read,
                    path: "out.txt".into(),
                    source: denied(),
                }),
                "cannot read out.txt: permission denied",
            ),
        ];
        for (error, said) in cases {
            assert_eq!(crate::jobs::in_full(&error), said);
        }
    }
}
