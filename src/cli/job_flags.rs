//! The flags of a job, the same on `solve`, `client` and `rps`, and of `merge` and `index`: parsed
//! here and turned into the jobs library's plans (`JobPlan`, `MergePlan`, `IndexPlan`), which
//! know nothing of flags. Places are parsed once, here.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};

use super::values::{NO_MAX, parse_duration, whole};
use crate::jobs::parts::merge::MergePlan;
use crate::jobs::pipeline::job::JobError;
use crate::jobs::pipeline::plan::JobPlan;
use crate::jobs::report::progress::ProgressMode;
use crate::jobs::sink::output::Render;
use crate::jobs::source::index::IndexPlan;
use crate::jobs::source::input::Input;
use crate::jobs::source::parquet_in::InputFormat;
use crate::jobs::source::shard::{Shard, parse_shard};
use crate::jobs::store::location::Location;
use crate::jobs::store::object::{PART_SIZE, StorageSettings};

/// Where the answers go and what a long run says about itself, the same for `solve`, `client`
/// and `rps`.
#[derive(Debug, Args)]
pub struct JobFlags {
    /// Write the answers to FILE instead of standard output: whole lines, in input order, at
    /// least every second and on exit (SIGINT and SIGTERM too), so FILE always holds a correct
    /// prefix of the answers. How they are written is recorded beside it, in FILE.resume.json.
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Go on from FILE's answers: keep its complete lines, read and skip as many inputs, and
    /// append the rest, so that FILE ends as one uninterrupted run writes it. Refused (status 2,
    /// FILE untouched) when FILE was written with other flags or inputs, or holds more answers
    /// than the input has items. With no FILE yet, or an empty one, it is a new run.
    #[arg(long, requires = "output")]
    pub resume: bool,
    /// Progress on standard error.
    #[arg(long, value_enum, default_value_t = ProgressFlag::Auto)]
    pub progress: ProgressFlag,
    /// No progress (--progress off).
    #[arg(long, short, conflicts_with = "progress")]
    pub quiet: bool,
    /// One summary line on standard error at the end (--progress log prints it too): items,
    /// answered, bad, time, rate; for `client`, each daemon's share and the resends.
    #[arg(long, short)]
    pub verbose: bool,
    /// Answer only shard K of N (K from 0, as JOB_COMPLETION_INDEX counts): the items that begin
    /// in the K-th of N equal byte ranges of all the files given, numbered as in the whole input,
    /// so that the N outputs concatenated in K order are one whole run's. With --output, FILE is
    /// a part: FILE.done.json records it complete, for `patience merge`.
    #[arg(long, env = "PATIENCE_SHARD", value_name = "K/N", value_parser = parse_shard)]
    pub shard: Option<Shard>,
    /// How the inputs are read: Parquet (a string column `deal`, an optional string column `id`)
    /// or the game's text; auto tells each input by its first bytes.
    #[arg(long, value_enum, default_value_t = InputFormatFlag::Auto)]
    pub input_format: InputFormatFlag,
    /// Object storage's limits (s3:// inputs and outputs).
    #[command(flatten)]
    pub storage: StorageFlags,
    /// How often --progress log prints. Hidden: for tests, which would otherwise wait 10 s.
    #[arg(long, hide = true, default_value = "10s", value_parser = parse_duration)]
    pub progress_every: Duration,
}

impl JobFlags {
    /// The run these flags ask for, reading `files` and writing each answer as `render` says;
    /// `--output`'s name refused in words when it is not a place.
    pub(crate) fn plan(&self, files: &[PathBuf], render: Render) -> Result<JobPlan, JobError> {
        let output = self
            .output
            .as_deref()
            .map(Location::parse)
            .transpose()
            .map_err(JobError::Output)?;
        Ok(JobPlan {
            inputs: Input::from_args(files),
            output,
            resume: self.resume,
            progress: match self.quiet {
                true => ProgressMode::Off,
                false => self.progress.into(),
            },
            summary: self.verbose,
            shard: self.shard,
            input_format: self.input_format.into(),
            render,
            storage: self.storage.settings(),
            progress_every: self.progress_every,
        })
    }
}

/// What `solve`, `client` and `rps` say about a run's progress, on standard error.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ProgressFlag {
    /// A bar when standard error is a terminal and the answers do not print on it; else nothing.
    Auto,
    /// A bar whenever standard error is a terminal, even with the answers printing there too.
    Bar,
    /// A line about every 10 s (done, rate, bad, time left when the total is known), and a
    /// summary at the end: for the logs of jobs and CI.
    Log,
    /// Nothing.
    Off,
}

impl From<ProgressFlag> for ProgressMode {
    fn from(flag: ProgressFlag) -> ProgressMode {
        match flag {
            ProgressFlag::Auto => ProgressMode::Auto,
            ProgressFlag::Bar => ProgressMode::Bar,
            ProgressFlag::Log => ProgressMode::Log,
            ProgressFlag::Off => ProgressMode::Off,
        }
    }
}

/// How a run reads its inputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum InputFormatFlag {
    /// Parquet when a file begins with Parquet's magic (PAR1), else text (gzip and zstd decoded).
    Auto,
    /// The game's text format.
    Text,
    /// Parquet, with a string column `deal` and an optional string column `id`.
    Parquet,
}

impl From<InputFormatFlag> for InputFormat {
    fn from(flag: InputFormatFlag) -> InputFormat {
        match flag {
            InputFormatFlag::Auto => InputFormat::Auto,
            InputFormatFlag::Text => InputFormat::Text,
            InputFormatFlag::Parquet => InputFormat::Parquet,
        }
    }
}

/// The flags of object storage's limits, the same on every command that reads or writes objects
/// (`solve`, `client`, `rps`, `merge`, `serve`'s jobs).
#[derive(Clone, Debug, Args)]
pub struct StorageFlags {
    /// With --output s3://BUCKET/KEY: the size of each uploaded part, in bytes (S3 refuses parts
    /// under 5 MiB but the last). About this much memory holds the answers not yet uploaded, and
    /// a run killed loses at most this much of them (--resume goes on from the parts uploaded).
    #[arg(long, env = "PATIENCE_UPLOAD_PART_SIZE", default_value_t = PART_SIZE,
          value_name = "BYTES", value_parser = whole::<usize>(1, NO_MAX))]
    pub upload_part_size: usize,
    /// How long a call to object storage (s3:// inputs and outputs) is retried, with backoff, when
    /// the store does not answer, is throttling (SlowDown, 503) or fails on its side (5xx); then
    /// the run gives up, with status 2.
    #[arg(long, env = "PATIENCE_STORAGE_RETRY_TIMEOUT", default_value = "60s",
          value_name = "DURATION", value_parser = parse_duration)]
    pub storage_retry_timeout: Duration,
    /// How long object storage may send nothing while a response is read before the read fails
    /// (and is retried, within --storage-retry-timeout of the call's start). A read as a whole is
    /// not bounded: an input object is read as fast as the solving goes.
    #[arg(long, env = "PATIENCE_STORAGE_STALL_TIMEOUT", default_value = "30s",
          value_name = "DURATION", value_parser = parse_duration)]
    pub storage_stall_timeout: Duration,
}

impl StorageFlags {
    pub(crate) fn settings(&self) -> StorageSettings {
        StorageSettings {
            upload_part_size: self.upload_part_size,
            retry_timeout: self.storage_retry_timeout,
            stall_timeout: self.storage_stall_timeout,
        }
    }
}

/// Flags of `patience merge`.
#[derive(Debug, Args)]
pub struct MergeFlags {
    /// Write the whole output to FILE (written beside it and renamed into place once whole; or
    /// an object, s3://BUCKET/KEY, which shows once its upload is complete) instead of standard
    /// output.
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// The parts, each the --output of one `--shard K/N` run (a file or an s3:// object), in any
    /// order.
    #[arg(required = true, value_name = "PART")]
    pub parts: Vec<PathBuf>,
    /// Object storage's limits (s3:// parts and output).
    #[command(flatten)]
    pub storage: StorageFlags,
}

impl MergeFlags {
    pub(crate) fn plan(&self) -> MergePlan {
        MergePlan {
            output: self.output.clone(),
            parts: self.parts.clone(),
            storage: self.storage.settings(),
        }
    }
}

/// Flags of `patience index`.
#[derive(Debug, Args)]
pub struct IndexFlags {
    /// The files are rock-paper-scissors case files (as `patience rps` reads), not deal files.
    #[arg(long)]
    pub cases: bool,
    /// Bytes between two marks: a shard reads at most this much past its share.
    #[arg(long, default_value_t = 8 << 20, value_parser = whole::<u64>(1, NO_MAX))]
    pub every: u64,
    /// The files to index; each gets FILE.index.json beside it.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
}

impl IndexFlags {
    pub(crate) fn plan(&self) -> IndexPlan {
        IndexPlan {
            cases: self.cases,
            every: self.every,
            files: self.files.clone(),
        }
    }
}
