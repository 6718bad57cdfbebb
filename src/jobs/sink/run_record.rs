//! The run record: how an output's answers were written, what a resume checks before it goes on,
//! for Parquet the row groups written so far, and for an object its multipart upload so far. One
//! layout at `NAME.resume.json` beside a file or an object alike; read and written as every
//! record is (`record.rs`), and a record of version 1 (which had two layouts: a file's, and an
//! object's that held it as `record` beside the upload) is read as this one.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::jobs::source::input::Input;
use crate::jobs::store::location::Location;
use crate::jobs::store::record::{self, RecordError, Versioned};
use crate::render::OutputFormat;
use crate::solver::Options;

/// The record's layout; version 1 is read as this one (`Versioned::upgrade`), any other is
/// refused rather than guessed at.
const VERSION: u32 = 2;

/// Why a run does not go on from an output's run record: it cannot be read, there is none, or it
/// is another run's. Each says `cannot resume` and the output, once.
#[derive(Debug, thiserror::Error)]
pub enum RunRecordError {
    #[error("cannot resume {output}")]
    Unreadable {
        output: Location,
        #[source]
        source: Box<RecordError>,
    },
    #[error(
        "cannot resume {output}: {at} is missing, so how its answers were written is unknown \
         (was it written by `patience --output`?); leave out --resume to start again"
    )]
    Missing { output: Location, at: Location },
    /// Written with other flags or inputs: what they were, and what this run has instead.
    #[error(
        "cannot resume {output}: it was written with {theirs}, where this run has {ours}; give \
         the same flags and inputs to go on with it, or another --output (or leave out \
         --resume) to start again"
    )]
    AnotherRun {
        output: String,
        theirs: String,
        ours: String,
    },
}

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
    /// An object's multipart upload going on (`upload.rs`): none beside a file, nor once the
    /// object is complete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upload: Option<String>,
    /// The parts of an object uploaded so far, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<UploadedPart>,
    /// The object's upload is complete: the object holds every answer.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub complete: bool,
}

/// A part of an object's multipart upload, as the record holds it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UploadedPart {
    /// The store's tag for it (S3's ETag), which completing the upload names.
    pub tag: String,
    /// The answers it holds (a Parquet part's rows).
    pub lines: u64,
    pub bytes: u64,
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
            upload: None,
            parts: Vec::new(),
            complete: false,
        }
    }

    /// How the answers are written, without where an upload of them stands: what a completion
    /// record names as the job.
    pub fn job(&self) -> Record {
        Record {
            upload: None,
            parts: Vec::new(),
            complete: false,
            ..self.clone()
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
    fn differences(&self, held: &Record) -> Option<(String, String)> {
        // A record written with an input's whole path names the same input as this run's name
        // for it relative to where it runs: a daemon's job records its inputs relative to its
        // jobs folder, which may have been mounted elsewhere when the record was written.
        let same_inputs = held.inputs.len() == self.inputs.len()
            && held
                .inputs
                .iter()
                .zip(&self.inputs)
                .all(|(theirs, ours)| same_input(theirs, ours));
        let mut held = held.clone();
        if same_inputs {
            held.inputs.clone_from(&self.inputs);
        }
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

    /// Refuses to go on with `output` (as the command line names it) when `held`, its record, is
    /// of a run other than this one.
    pub(in crate::jobs) fn same_run(
        &self,
        held: &Record,
        output: &dyn std::fmt::Display,
    ) -> Result<(), RunRecordError> {
        match self.differences(held) {
            None => Ok(()),
            Some((theirs, ours)) => Err(RunRecordError::AnotherRun {
                output: output.to_string(),
                theirs,
                ours,
            }),
        }
    }
}

/// Whether a record's input `theirs` names this run's input `ours`: the same name, or `theirs` a
/// whole path that ends in `ours`, a relative one, at a folder boundary (`/old/jobs/in/a.in` and
/// `in/a.in`).
fn same_input(theirs: &str, ours: &str) -> bool {
    theirs == ours
        || (Path::new(theirs).is_absolute()
            && Path::new(ours).is_relative()
            && !ours.starts_with("s3://")
            && Path::new(theirs).ends_with(ours))
}

impl Versioned for Record {
    const VERSION: u32 = VERSION;
    const WHAT: &'static str = "a record";

    /// Version 1 beside a file is this layout without an upload; beside an object it held the
    /// run's record as `record`, with the upload's `upload`, `parts` and `complete` beside it.
    fn upgrade(version: u32, mut value: serde_json::Value) -> Option<serde_json::Value> {
        if version != 1 {
            return None;
        }
        let object = value.as_object_mut()?;
        let mut record = match object.remove("record") {
            Some(serde_json::Value::Object(run)) => {
                let mut run = run;
                for field in ["upload", "parts", "complete"] {
                    if let Some(held) = object.remove(field) {
                        run.insert(field.to_string(), held);
                    }
                }
                run
            }
            Some(_) => return None,
            None => std::mem::take(object),
        };
        record.insert("version".to_string(), VERSION.into());
        Some(serde_json::Value::Object(record))
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

/// The run's record of `output`, a file or an object, checked to be one this patience reads.
pub fn read_record(output: &Location) -> Result<Record, RunRecordError> {
    let at = record::resume_of(output);
    match record::read(&at) {
        Ok(Some(record)) => Ok(record),
        Ok(None) => Err(RunRecordError::Missing {
            output: output.clone(),
            at,
        }),
        Err(source) => Err(RunRecordError::Unreadable {
            output: output.clone(),
            source: Box::new(source),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::store::object::ObjectUrl;

    /// A run's record of deals to text lines at six decimals, from `input`.
    fn text_of(input: &str) -> Record {
        Record {
            version: VERSION,
            answers: "deals".into(),
            format: "text".into(),
            precision: Some(6),
            exact: false,
            moves: false,
            line: false,
            inputs: vec![input.into()],
            shard: None,
            checkpoint: None,
            upload: None,
            parts: Vec::new(),
            complete: false,
        }
    }

    /// A daemon's job names its inputs within its folder; a record written with whole paths (by
    /// an earlier version, or the folder mounted elsewhere since) names the same inputs where its
    /// paths end in those names at a folder boundary, and no others.
    #[test]
    fn a_record_with_whole_paths_is_of_the_run_that_names_them_within_the_folder() {
        let ours = text_of("in/a.in");
        for (theirs, same) in [
            ("in/a.in", true),
            ("/old/jobs/in/a.in", true),
            ("/mnt/B/in/a.in", true),
            ("/old/jobs/in/b.in", false),
            ("/old/jobs/xin/a.in", false),
            ("in/b.in", false),
            ("a.in", false),
        ] {
            let held = text_of(theirs);
            assert_eq!(ours.same_run(&held, &"out.txt").is_ok(), same, "{theirs}");
        }
        // A whole path of ours is compared as it is.
        assert!(
            text_of("/jobs/in/a.in")
                .same_run(&text_of("in/a.in"), &"o")
                .is_err()
        );
    }

    /// A run record of version 1 as the patience of then wrote it beside a file, and the
    /// upload record it wrote beside an object, holding the same run's record.
    const FILE_V1: &str = r#"{"version":1,"answers":"deals","format":"text","precision":6,"exact":false,"moves":false,"line":false,"inputs":["deals.in"],"shard":"0/2"}"#;
    const OBJECT_V1: &str = r#"{"version":1,"record":{"version":1,"answers":"deals","format":"text","precision":6,"exact":false,"moves":false,"line":false,"inputs":["deals.in"],"shard":"0/2"},"upload":"upload-7","parts":[{"tag":"e1","lines":3,"bytes":27}],"complete":false}"#;

    #[test]
    fn records_of_version_1_beside_a_file_and_an_object_read_as_this_layout() {
        let run = Record {
            shard: Some("0/2".into()),
            ..text_of("deals.in")
        };
        let output = Location::Object(ObjectUrl::in_memory("records", "v1/answers.txt"));
        let at = record::resume_of(&output);
        at.put_small(FILE_V1.as_bytes().to_vec()).unwrap();
        assert_eq!(read_record(&output).unwrap(), run);

        at.put_small(OBJECT_V1.as_bytes().to_vec()).unwrap();
        let uploading = Record {
            upload: Some("upload-7".into()),
            parts: vec![UploadedPart {
                tag: "e1".into(),
                lines: 3,
                bytes: 27,
            }],
            ..run.clone()
        };
        assert_eq!(read_record(&output).unwrap(), uploading);
        assert_eq!(uploading.job(), run);

        // Written again, it is of this version, and reads back the same.
        record::write(&at, &uploading).unwrap();
        let written = String::from_utf8(at.read_small().unwrap().unwrap()).unwrap();
        assert!(written.starts_with(r#"{"version":2,"#), "{written}");
        assert_eq!(read_record(&output).unwrap(), uploading);

        at.put_small(br#"{"version":1,"record":7}"#.to_vec())
            .unwrap();
        let e = crate::jobs::in_full(&read_record(&output).unwrap_err());
        assert!(
            e.contains("is of version 1 (this patience reads version 2)"),
            "{e}"
        );
    }

    #[test]
    fn differences_name_each_flag_once() {
        let text = text_of("deals.in");
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

    /// Each refusal to go on in the words it has always said (written out here by hand, as the
    /// format strings before the errors were typed said them).
    #[test]
    fn refusals_to_resume_say_what_they_always_said() {
        let at = |name: &str| Location::File(PathBuf::from(name));
        let cases: Vec<(RunRecordError, &str)> = vec![
            (
                RunRecordError::Missing {
                    output: at("out.txt"),
                    at: at("out.txt.resume.json"),
                },
                "cannot resume out.txt: out.txt.resume.json is missing, so how its answers were \
                 written is unknown (was it written by `patience --output`?); leave out --resume \
                 to start again",
            ),
            (
                RunRecordError::AnotherRun {
                    output: "out.txt".into(),
                    theirs: "--precision 6".into(),
                    ours: "--precision 9".into(),
                },
                "cannot resume out.txt: it was written with --precision 6, where this run has \
                 --precision 9; give the same flags and inputs to go on with it, or another \
                 --output (or leave out --resume) to start again",
            ),
            (
                RunRecordError::Unreadable {
                    output: at("out.txt"),
                    source: Box::new(RecordError::Read {
                        at: at("out.txt.resume.json"),
                        source: std::io::Error::from(std::io::ErrorKind::PermissionDenied),
                    }),
                },
                "cannot resume out.txt: cannot read out.txt.resume.json: permission denied",
            ),
        ];
        for (error, said) in cases {
            assert_eq!(crate::jobs::in_full(&error), said);
        }
    }
}
