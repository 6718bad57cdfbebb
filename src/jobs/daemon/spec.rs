//! What a job the daemon runs reads and writes ([`JobSpec`]), and its check against the daemon's
//! `--jobs-dir` before it starts: a spec that cannot be a job is refused in words, naming the
//! field ([`Refusal`]), and nothing is started.

use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::jobs::report::progress::Unit;
use crate::jobs::source::shard::{Shard, parse_shard};
use crate::jobs::store::beneath::{self, How};
use crate::jobs::store::location::Location;
use crate::render::{OutputFormat, Render};
use crate::solver::Options;

/// The most decimals a text answer may have (`--precision`'s bound).
const MAX_PRECISION: u8 = 17;

/// The folder of `--jobs-dir` where the daemon keeps its jobs' records: never a job's input or
/// output.
pub const RECORDS: &str = ".patience-jobs";

/// What the inputs hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JobGame {
    /// Double Patience deals, as `solve` reads them.
    Deals,
    /// FZU 2145 case files, as `rps` reads them.
    Rps,
}

/// A job: its inputs and output as the caller named them, and how its answers are written.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobSpec {
    pub inputs: Vec<String>,
    pub output: String,
    pub game: JobGame,
    /// `text` or `json`.
    pub format: String,
    pub precision: u8,
    /// `K/N`, for a part.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<String>,
}

/// Why a spec is not started, with the field it is about. `Invalid`: no daemon would run it
/// (INVALID_ARGUMENT); `Unmet`: this one cannot now (FAILED_PRECONDITION).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Refusal {
    #[error("{field}: {message}")]
    Invalid { field: String, message: String },
    #[error("{field}: {message}")]
    Unmet { field: String, message: String },
    /// `--max-queued-jobs` jobs already wait, or the tenant's own `max_queued_jobs` of its jobs.
    #[error("{limit} jobs already wait ({})", tenant.as_ref().map_or("--max-queued-jobs".to_string(), |t| format!("tenant {t}'s max_queued_jobs")))]
    QueueFull {
        limit: usize,
        tenant: Option<String>,
    },
}

impl Refusal {
    fn invalid(field: impl Into<String>, message: impl Into<String>) -> Refusal {
        Refusal::Invalid {
            field: field.into(),
            message: message.into(),
        }
    }

    fn unmet(field: impl Into<String>, message: impl Into<String>) -> Refusal {
        Refusal::Unmet {
            field: field.into(),
            message: message.into(),
        }
    }
}

/// A spec checked and placed: what its run is given.
#[derive(Clone, Debug)]
pub struct Placed {
    /// The inputs, parsed once: files under the jobs' directory (absolute paths), or objects.
    pub inputs: Vec<Location>,
    pub output: Location,
    pub shard: Option<Shard>,
    pub render: Render,
    pub unit: Unit,
    /// The inputs' bytes as they are now (a FIFO's count as none): the work a job has waiting.
    pub bytes: u64,
}

impl JobSpec {
    /// Checks the spec and places its names under `dir` (the daemon's `--jobs-dir`): a path must
    /// be relative, without `..`, and stay in `dir` once its links are followed; an input must be
    /// there to read now (a file opened, an object's size asked for).
    pub fn place(&self, dir: &Path) -> Result<Placed, Refusal> {
        if self.inputs.is_empty() {
            return Err(Refusal::invalid(
                "spec.inputs",
                "a job reads at least one input",
            ));
        }
        let format = match self.format.as_str() {
            "text" => OutputFormat::Text,
            "json" => OutputFormat::Json,
            "parquet" => OutputFormat::Parquet,
            other => {
                return Err(Refusal::invalid(
                    "spec.format",
                    format!("{other:?} is not a format: text, json or parquet"),
                ));
            }
        };
        if self.precision > MAX_PRECISION {
            return Err(Refusal::invalid(
                "spec.precision",
                format!("{} decimals: at most {MAX_PRECISION}", self.precision),
            ));
        }
        let shard = self
            .shard
            .as_deref()
            .map(parse_shard)
            .transpose()
            .map_err(|message| Refusal::invalid("spec.shard", message))?;
        let mut inputs = Vec::with_capacity(self.inputs.len());
        let mut bytes = 0u64;
        for (i, name) in self.inputs.iter().enumerate() {
            let field = format!("spec.inputs[{i}]");
            let place = under(dir, name, &field)?;
            let location = Location::parse(&place).map_err(|m| Refusal::invalid(&field, m))?;
            if let Location::File(path) = &location {
                inside(dir, path, &field)?;
                let cannot =
                    |e: std::io::Error| Refusal::unmet(&field, format!("cannot read {name}: {e}"));
                let meta = beneath::metadata(path).map_err(cannot)?;
                if meta.is_dir() {
                    return Err(Refusal::invalid(
                        &field,
                        format!("{name} is a folder: an input is a file"),
                    ));
                }
                // A regular file is opened to see that it can be read; a FIFO is not (opening it
                // waits for a writer, and the job reads it once, when it runs).
                if meta.is_file() {
                    beneath::open(path, How::Read).map_err(cannot)?;
                    bytes = bytes.saturating_add(meta.len());
                }
            } else {
                let size = location
                    .size()
                    .map_err(|e| Refusal::unmet(&field, format!("cannot read {name}: {e}")))?;
                bytes = bytes.saturating_add(size);
            }
            inputs.push(location);
        }
        let output = under(dir, &self.output, "spec.output")?;
        let output = Location::parse(&output).map_err(|m| Refusal::invalid("spec.output", m))?;
        // The output's folder, made once every check has passed: a refused spec leaves nothing.
        let mut to_make = None;
        if let Location::File(path) = &output {
            let refused = |why: &str| {
                Err(Refusal::invalid(
                    "spec.output",
                    format!("{} is {why}", self.output),
                ))
            };
            match std::fs::symlink_metadata(path) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    return refused("a link: a job writes its answers to a file of its folder");
                }
                Ok(meta) if meta.is_dir() => return refused("a folder: the output is a file"),
                _ => {}
            }
            let parent = path.parent().unwrap_or(dir);
            // The part of its folder that is there already must be inside (the rest is made).
            if let Some(there) = parent.ancestors().find(|at| at.exists()) {
                inside(dir, there, "spec.output")?;
            }
            to_make = Some(parent.to_path_buf());
        }
        if inputs.iter().any(|input| input.same_place(&output)) {
            return Err(Refusal::invalid(
                "spec.output",
                format!(
                    "{} is also an input: the answers would overwrite it",
                    self.output
                ),
            ));
        }
        if let Some(parent) = to_make {
            beneath::create_dir_all(&parent).map_err(|e| {
                Refusal::unmet("spec.output", format!("cannot make its folder: {e}"))
            })?;
            inside(dir, &parent, "spec.output")?;
        }
        let (unit, asked) = match self.game {
            JobGame::Deals => (Unit::DEALS, Options::default()),
            JobGame::Rps => (Unit::CASES, Options::default()),
        };
        Ok(Placed {
            inputs,
            output,
            shard,
            render: Render {
                format,
                precision: self.precision,
                asked,
            },
            unit,
            bytes,
        })
    }
}

/// `name` placed under `dir`: an `s3://` URL as it is; a relative path without `..` joined to it.
fn under(dir: &Path, name: &str, field: &str) -> Result<PathBuf, Refusal> {
    if name.is_empty() {
        return Err(Refusal::invalid(
            field,
            "empty: name a file or an s3:// object",
        ));
    }
    if name.starts_with("s3://") {
        return Ok(PathBuf::from(name));
    }
    let path = Path::new(name);
    let plain = path
        .components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    let first = path.components().find(|c| *c != Component::CurDir);
    if first == Some(Component::Normal(RECORDS.as_ref())) {
        return Err(Refusal::invalid(
            field,
            format!(
                "{name} is among the daemon's own records ({RECORDS}/): a job neither reads nor \
                 writes them"
            ),
        ));
    }
    if !plain {
        return Err(Refusal::invalid(
            field,
            format!(
                "{name} is not a path inside the daemon's --jobs-dir: give it relative to that \
                 folder, without `..`"
            ),
        ));
    }
    Ok(dir.join(path))
}

/// Refuses `path` when, its links followed, it is outside `dir`.
fn inside(dir: &Path, path: &Path, field: &str) -> Result<(), Refusal> {
    let (Ok(dir), Ok(real)) = (dir.canonicalize(), path.canonicalize()) else {
        // Not there: opening it says so.
        return Ok(());
    };
    match real.starts_with(&dir) {
        true => Ok(()),
        false => Err(Refusal::invalid(
            field,
            format!(
                "{} leads outside the daemon's --jobs-dir (through a link)",
                path.display()
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(inputs: &[&str], output: &str) -> JobSpec {
        JobSpec {
            inputs: inputs.iter().map(|s| s.to_string()).collect(),
            output: output.into(),
            game: JobGame::Deals,
            format: "text".into(),
            precision: 6,
            shard: None,
        }
    }

    #[test]
    fn names_stay_inside_the_jobs_folder_and_inputs_must_be_readable() {
        let dir = std::env::temp_dir().join(format!("patience-spec-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("in")).unwrap();
        std::fs::write(dir.join("in/deals.in"), "").unwrap();
        let placed = spec(&["in/deals.in"], "out/answers.txt")
            .place(&dir)
            .unwrap();
        assert_eq!(placed.inputs, vec![Location::File(dir.join("in/deals.in"))]);
        assert_eq!(placed.output, Location::File(dir.join("out/answers.txt")));
        assert!(dir.join("out").is_dir(), "the output's folder is made");

        let field = |r: Refusal| match r {
            Refusal::Invalid { field, .. } => format!("invalid {field}"),
            Refusal::Unmet { field, .. } => format!("unmet {field}"),
            Refusal::QueueFull { .. } => "queue full".to_string(),
        };
        let refused = |s: JobSpec| field(s.place(&dir).unwrap_err());
        assert_eq!(refused(spec(&[], "o")), "invalid spec.inputs");
        assert_eq!(
            refused(spec(&["../etc/passwd"], "o")),
            "invalid spec.inputs[0]"
        );
        assert_eq!(
            refused(spec(&["/etc/passwd"], "o")),
            "invalid spec.inputs[0]"
        );
        assert_eq!(
            refused(spec(&["in/deals.in", "missing.in"], "o")),
            "unmet spec.inputs[1]"
        );
        assert_eq!(
            refused(spec(&["in/deals.in"], "../o")),
            "invalid spec.output"
        );
        assert_eq!(
            refused(spec(&["in/deals.in"], "in/deals.in")),
            "invalid spec.output"
        );
        assert_eq!(
            refused(JobSpec {
                shard: Some("4/4".into()),
                ..spec(&["in/deals.in"], "o")
            }),
            "invalid spec.shard"
        );
        std::os::unix::fs::symlink("/etc", dir.join("etc")).unwrap();
        assert_eq!(
            refused(spec(&["etc/passwd"], "o")),
            "invalid spec.inputs[0]"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The daemon's records are never a job's input or output; a folder is neither; an output that
    /// is a link (to a file outside the folder, or inside) is refused, the file it leads to left
    /// as it was; and a spec refused for its inputs makes no folder for its output.
    #[test]
    fn records_folders_and_links_are_refused_and_a_refusal_leaves_nothing() {
        let dir = std::env::temp_dir().join(format!("patience-spec-links-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("in/sub")).unwrap();
        std::fs::create_dir_all(dir.join(RECORDS)).unwrap();
        std::fs::write(dir.join("in/deals.in"), "").unwrap();
        std::fs::write(dir.join(RECORDS).join("other.json"), "{}").unwrap();
        let outside = std::env::temp_dir().join(format!("patience-outside-{}", std::process::id()));
        std::fs::write(&outside, "kept").unwrap();
        std::os::unix::fs::symlink(&outside, dir.join("out-link.txt")).unwrap();
        std::os::unix::fs::symlink(dir.join("in/deals.in"), dir.join("in-link.txt")).unwrap();
        let words = |s: JobSpec| match s.place(&dir).unwrap_err() {
            Refusal::Invalid { field, message } | Refusal::Unmet { field, message } => {
                format!("{field}: {message}")
            }
            full @ Refusal::QueueFull { .. } => full.to_string(),
        };
        for (spec, said) in [
            (
                spec(&[".patience-jobs/other.json"], "o"),
                "spec.inputs[0]: .patience-jobs/other.json is among the daemon's own records",
            ),
            (
                spec(&["in/deals.in"], "./.patience-jobs/other.json"),
                "spec.output: ./.patience-jobs/other.json is among the daemon's own records",
            ),
            (spec(&["in/sub"], "o"), "spec.inputs[0]: in/sub is a folder"),
            (
                spec(&["in/deals.in"], "in/sub"),
                "spec.output: in/sub is a folder",
            ),
            (
                spec(&["in/deals.in"], "out-link.txt"),
                "spec.output: out-link.txt is a link",
            ),
            (
                spec(&["in/deals.in"], "in-link.txt"),
                "spec.output: in-link.txt is a link",
            ),
        ] {
            let got = words(spec);
            assert!(got.starts_with(said), "{got}");
        }
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "kept");
        let refused = spec(&["in/deals.in", "missing.in"], "made/for/nothing.txt").place(&dir);
        assert!(refused.is_err());
        assert!(!dir.join("made").exists(), "a refused spec made a folder");
        std::fs::remove_dir_all(&dir).unwrap();
        std::fs::remove_file(&outside).unwrap();
    }
}
