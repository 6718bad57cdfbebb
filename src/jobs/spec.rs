//! What a job the daemon runs reads and writes ([`JobSpec`]), and its check against the daemon's
//! `--jobs-dir` before it starts: a spec that cannot be a job is refused in words, naming the
//! field ([`Refusal`]), and nothing is started.

use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::location::Location;
use super::progress::Unit;
use super::shard::{Shard, parse_shard};
use crate::render::{OutputFormat, Render};
use crate::solver::Options;

/// The most decimals a text answer may have (`--precision`'s bound).
const MAX_PRECISION: u8 = 17;

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
    /// The inputs as a command line would name them: absolute paths under the jobs' directory,
    /// or `s3://` URLs.
    pub inputs: Vec<PathBuf>,
    pub output: PathBuf,
    pub shard: Option<Shard>,
    pub render: Render,
    pub unit: Unit,
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
        for (i, name) in self.inputs.iter().enumerate() {
            let field = format!("spec.inputs[{i}]");
            let place = under(dir, name, &field)?;
            let location = Location::parse(&place).map_err(|m| Refusal::invalid(&field, m))?;
            if let Location::File(path) = &location {
                inside(dir, path, &field)?;
                let cannot =
                    |e: std::io::Error| Refusal::unmet(&field, format!("cannot read {name}: {e}"));
                let meta = std::fs::metadata(path).map_err(cannot)?;
                if meta.is_dir() {
                    return Err(Refusal::invalid(
                        &field,
                        format!("{name} is a folder: an input is a file"),
                    ));
                }
                // A regular file is opened to see that it can be read; a FIFO is not (opening it
                // waits for a writer, and the job reads it once, when it runs).
                if meta.is_file() {
                    std::fs::File::open(path).map_err(cannot)?;
                }
            } else {
                location
                    .size()
                    .map_err(|e| Refusal::unmet(&field, format!("cannot read {name}: {e}")))?;
            }
            inputs.push(place);
        }
        let output = under(dir, &self.output, "spec.output")?;
        if let Location::File(path) =
            Location::parse(&output).map_err(|m| Refusal::invalid("spec.output", m))?
        {
            let parent = path.parent().unwrap_or(dir);
            std::fs::create_dir_all(parent).map_err(|e| {
                Refusal::unmet("spec.output", format!("cannot make its folder: {e}"))
            })?;
            inside(dir, parent, "spec.output")?;
        }
        if inputs.contains(&output) {
            return Err(Refusal::invalid(
                "spec.output",
                format!(
                    "{} is also an input: the answers would overwrite it",
                    self.output
                ),
            ));
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
        assert_eq!(placed.inputs, vec![dir.join("in/deals.in")]);
        assert_eq!(placed.output, dir.join("out/answers.txt"));
        assert!(dir.join("out").is_dir(), "the output's folder is made");

        let field = |r: Refusal| match r {
            Refusal::Invalid { field, .. } => format!("invalid {field}"),
            Refusal::Unmet { field, .. } => format!("unmet {field}"),
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
}
