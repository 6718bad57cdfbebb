//! `--output FILE` and `--resume`: opening the file for a new run or to go on with one, and the
//! record beside it that says how it was written.
//!
//! The record, `FILE.resume.json`, is written (atomically: a temporary file renamed) before a new
//! run empties FILE, and holds what decides the bytes of each answer line: the game, the format,
//! the precision, the analysis asked for, and the inputs as named on the command line. A resume
//! reads it back and refuses (exit status 2, FILE untouched) to append answers written any other
//! way. It keeps FILE's complete lines, one per input already answered; how many inputs that is
//! the reader finds out by reading them again, the usual way, and the printer refuses once the
//! input turns out shorter ([`Resume`]).

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use serde::{Deserialize, Serialize};

use super::input::{Input, read_through};
use super::location::Location;
use super::parquet_out::Checkpoint;
use super::record::{self, Versioned};
use super::sink::{AnswerFile, Sink, Tell};
use super::upload;
use crate::compressed::{self, Codec};
use crate::render::OutputFormat;
use crate::solver::Options;

/// The record's layout; a record of another version is refused rather than guessed at.
const VERSION: u32 = 1;

/// Everything that decides an answer line's bytes, as the record holds it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    pub version: u32,
    /// `deals` or `cases`: `solve` and `client` write the same lines for the same deals, so
    /// either may go on with the other's file; `rps` with or without `--addr` likewise.
    pub answers: String,
    pub format: String,
    /// The decimals of text lines; none in JSON or Parquet, which carry every digit whatever
    /// `--precision` says.
    pub precision: Option<u8>,
    pub exact: bool,
    pub moves: bool,
    pub line: bool,
    /// The inputs as the command line named them (`-` for standard input). Their content is not
    /// recorded: a resume counts the inputs again, which is what the answers depend on.
    pub inputs: Vec<String>,
    /// `--shard K/N`, when the file is a shard's part (a resume must be of the same shard).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<String>,
    /// A Parquet output's row groups so far, rewritten as each is written (`parquet_out.rs`);
    /// what the answers are, not how they were written, so no resume compares it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<Checkpoint>,
}

impl Record {
    /// The record of a run answering `answers` (`deals`, `cases`) for `inputs`, in `format`,
    /// with `precision` (text only) and the analysis `asked`: the parts of the printer's `Render`
    /// (taken apart so that this module, which the printer uses, does not use the printer's).
    pub fn new(
        answers: &str,
        format: OutputFormat,
        precision: u8,
        asked: Options,
        inputs: &[Input],
    ) -> Record {
        let name = match format {
            OutputFormat::Text => "text",
            OutputFormat::Json => "json",
            OutputFormat::Parquet => "parquet",
        };
        Record {
            version: VERSION,
            answers: answers.to_string(),
            format: name.to_string(),
            precision: (format == OutputFormat::Text).then_some(precision),
            exact: asked.exact,
            moves: asked.moves,
            line: asked.line,
            inputs: inputs.iter().map(Input::name).collect(),
            shard: None,
            checkpoint: None,
        }
    }

    /// What decides the lines, each as a command line would say it; `None` for the precision
    /// of JSON lines, which carry every digit whatever it says.
    fn said(&self) -> [Option<String>; 8] {
        let flag = |on: bool, flag: &str| match on {
            true => flag.to_string(),
            false => format!("no {flag}"),
        };
        [
            Some(format!("answers for {}", self.answers)),
            Some(format!("--format {}", self.format)),
            self.precision
                .map(|precision| format!("--precision {precision}")),
            Some(flag(self.exact, "--exact")),
            Some(flag(self.moves, "--moves")),
            Some(flag(self.line, "--line")),
            Some(format!("the inputs {}", self.inputs.join(" "))),
            Some(match &self.shard {
                Some(shard) => format!("--shard {shard}"),
                None => "no --shard".to_string(),
            }),
        ]
    }

    /// Where `held` (the file's record) and this run differ: what the file was written with,
    /// and what this run has instead. A precision on one side only goes unsaid: the formats
    /// differ then, which says it all.
    pub(super) fn differences(&self, held: &Record) -> Option<(String, String)> {
        let (theirs, ours): (Vec<String>, Vec<String>) = held
            .said()
            .into_iter()
            .zip(self.said())
            .filter_map(|pair| match pair {
                (Some(theirs), Some(ours)) if theirs != ours => Some((theirs, ours)),
                _ => None,
            })
            .unzip();
        (!theirs.is_empty()).then(|| (theirs.join(", "), ours.join(", ")))
    }
}

impl Versioned for Record {
    const VERSION: u32 = VERSION;
    const WHAT: &'static str = "a record";
    fn version(&self) -> u32 {
        self.version
    }
}

/// What a run with `--output` goes on from.
#[derive(Clone, Debug)]
pub struct Resume {
    /// FILE, for messages.
    pub path: PathBuf,
    /// Answers already in FILE: that many inputs are read and not answered again.
    pub kept: u64,
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
    if let Some((theirs, ours)) = record.differences(&held) {
        bail!(
            "cannot resume {shown}: it was written with {theirs}, where this run has {ours}; give \
             the same flags and inputs to go on with it, or another --output (or leave out \
             --resume) to start again"
        );
    }
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
        Ok(())
    })?;
    Ok((read > 0).then_some((len, lines)))
}

/// The run's record of `output`, checked to be one this patience reads: beside a file, the
/// record itself; beside an object, the one its upload record holds (`upload.rs`).
pub(super) fn read_record(output: &Location) -> anyhow::Result<Record> {
    if let Some(url) = output.object() {
        return serde_json::from_value(upload::record_of(url)?)
            .with_context(|| format!("cannot resume {url}: its record is not one patience wrote"));
    }
    let at = record::resume_of(output);
    match record::read(&at).with_context(|| format!("cannot resume {output}"))? {
        Some(record) => Ok(record),
        None => bail!(
            "cannot resume {output}: {at} is missing, so how its answers were written is \
             unknown (was it written by `patience --output`?); leave out --resume to start again"
        ),
    }
}

#[cfg(test)]
mod tests {
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

    #[test]
    fn differences_name_each_flag_once() {
        let text = Record {
            version: VERSION,
            answers: "deals".into(),
            format: "text".into(),
            precision: Some(6),
            exact: false,
            moves: false,
            line: false,
            inputs: vec!["deals.in".into()],
            shard: None,
            checkpoint: None,
        };
        assert_eq!(text.differences(&text.clone()), None);
        let nine = Record {
            precision: Some(9),
            ..text.clone()
        };
        assert_eq!(
            nine.differences(&text),
            Some(("--precision 6".into(), "--precision 9".into()))
        );
        let json = Record {
            format: "json".into(),
            precision: None,
            exact: true,
            ..text.clone()
        };
        assert_eq!(
            json.differences(&text),
            Some((
                "--format text, no --exact".into(),
                "--format json, --exact".into()
            ))
        );
    }
}
