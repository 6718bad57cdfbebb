//! The run record: how an output's answers were written (`NAME.resume.json` beside a file, held
//! in the upload record of an object), what a resume checks before it goes on, and for Parquet
//! the row groups written so far. Read and written as every record is (`record.rs`).

use std::path::PathBuf;

use anyhow::{Context as _, bail};
use serde::{Deserialize, Serialize};

use super::input::Input;
use super::location::Location;
use super::record::{self, Versioned};
use super::upload;
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

/// What a Parquet output holds so far, kept in its run record (`parquet_out.rs`; its footer read
/// back in `parquet_out/layout.rs`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// Answers in the row groups recorded.
    pub rows: u64,
    /// The byte where the last recorded row group ends: where the footer goes.
    pub end: u64,
    /// The footer (metadata, its length and the magic) for those row groups, in base64.
    pub footer: String,
}

/// What a run with `--output` goes on from.
#[derive(Clone, Debug)]
pub struct Resume {
    /// FILE, for messages.
    pub path: PathBuf,
    /// Answers already in FILE: that many inputs are read and not answered again.
    pub kept: u64,
}

/// The run's record of `output`, checked to be one this patience reads: beside a file, the
/// record itself; beside an object, the one its upload record holds (`upload.rs`).
pub fn read_record(output: &Location) -> anyhow::Result<Record> {
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
