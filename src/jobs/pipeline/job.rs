//! What `solve`, `client` and `rps` share around their answers, one mechanism for the three:
//! where the answers go (standard output, or `--output FILE`, perhaps resumed), the progress on
//! standard error, and the summary at the end.

use std::path::Path;
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex, OnceLock};

use super::plan::JobPlan;
use crate::jobs::outcome::ExitStatus;
use crate::jobs::parts::part::{self, PartError};
use crate::jobs::report::progress::{Progress, Setup, Unit};
use crate::jobs::sink::lines::{AnswerLines, Sink};
use crate::jobs::sink::output::{Printer, Render};
use crate::jobs::sink::parquet_out::{self, ParquetOutError};
use crate::jobs::sink::resume::{self, ResumeError};
use crate::jobs::sink::run_record::{Record, Resume, RunRecordError};
use crate::jobs::sink::upload::{self, UploadError};
use crate::jobs::source::batches::{Ids, Items, ToRead};
use crate::jobs::source::input::{Input, Reader};
use crate::jobs::source::parquet_in::{self, InputFormat};
use crate::jobs::source::shard::{self, ShardError, ShardPlan};
use crate::jobs::store::location::Location;
use crate::render::OutputFormat;

/// Why a run's output could not be opened (or its inputs planned): the flags' own refusals, and
/// each step's error as it says itself.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// `--output`'s name, refused as [`Location::parse`] says it.
    #[error("{0}")]
    Output(String),
    #[error("--format parquet writes a file, not standard output: add --output NAME.parquet")]
    ParquetToStandardOutput,
    #[error(transparent)]
    Shard(#[from] ShardError),
    #[error(transparent)]
    Part(#[from] PartError),
    #[error(transparent)]
    Resume(#[from] ResumeError),
    #[error(transparent)]
    Upload(#[from] UploadError),
    #[error(transparent)]
    ParquetOut(#[from] ParquetOutError),
}

/// A run's inputs, progress and resume, once its output is open.
pub struct JobRun {
    pub inputs: Vec<Input>,
    pub progress: Progress,
    /// The output file resumed (`None` without `--output`).
    pub resume: Option<Resume>,
    /// What `--shard` reads and where its part sits in the whole.
    pub plan: Option<ShardPlan>,
    /// How the inputs are read.
    format: InputFormat,
    /// Each item's id, from the reader to the printer: with a Parquet input only.
    ids: Option<IdChannel>,
    /// The lock on `--output` that keeps a second run of it waiting (released on exit).
    _lock: Option<std::fs::File>,
}

impl std::fmt::Debug for JobRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobRun").finish_non_exhaustive()
    }
}

impl JobRun {
    /// Opens the output the plan names (refusing a resume that does not fit: a usage error) and
    /// starts the progress. `unit` names what the lines answer (`deals`, `cases`), for the
    /// output file's record.
    ///
    /// With a shard, the inputs are framed with the game's reader `R` up to the end of the
    /// shard's range first. With an output, the file is locked (a second run of it waits for the
    /// first to end) before anything in it, or its completion record, changes.
    pub fn start<R: Items<Reader>>(plan: &JobPlan, unit: Unit) -> Result<(JobRun, Sink), JobError> {
        plan.storage.configure();
        let inputs = plan.inputs.clone();
        let render = &plan.render;
        let parquet_inputs: Vec<String> = inputs
            .iter()
            .filter(|input| {
                input
                    .location()
                    .is_some_and(|at| parquet_in::is_parquet(at, plan.input_format))
            })
            .map(Input::name)
            .collect();
        let shard_plan = plan
            .shard
            .map(|shard| shard::plan::<R>(&inputs, shard, unit.noun, plan.input_format))
            .transpose()?;
        // The output's keeper may have to speak (on a signal) before the progress exists.
        let speaker: Arc<OnceLock<Progress>> = Arc::default();
        let mut lock = None;
        // What the output's resume record says about the run, checked by a resumed run.
        let mut record = Record::new(
            unit.noun,
            render.format,
            render.precision,
            render.asked,
            &inputs,
        );
        record.shard = plan.shard.map(|shard| shard.to_string());

        let place = &plan.output;
        let parquet = render.format == OutputFormat::Parquet;
        let (sink, resume) = match place {
            None if parquet => return Err(JobError::ParquetToStandardOutput),
            None => (Sink::stdout(), None),
            Some(Location::Object(url)) => {
                let shown = url.to_string();
                resume::refuse_an_input(&Location::Object(url.clone()), &inputs)?;
                let check =
                    |held: &Record| -> Result<(), RunRecordError> { record.same_run(held, &shown) };
                let (answers, kept) = upload::open(
                    url,
                    plan.resume,
                    record.clone(),
                    &check,
                    plan.storage.upload_part_size,
                )?;
                let speaker = speaker.clone();
                let tell = Box::new(move |message: String| say(speaker.get(), &message));
                if parquet {
                    let (table, resume) = parquet_out::into_object(answers, kept, &record, tell)?;
                    (Sink::Columns(Box::new(table)), Some(resume))
                } else {
                    let resume = Resume {
                        path: shown.clone().into(),
                        kept,
                    };
                    let lines = AnswerLines::start(Box::new(answers), tell).map_err(|source| {
                        UploadError::Write {
                            url: url.clone(),
                            source,
                        }
                    })?;
                    (Sink::Lines(lines), Some(resume))
                }
            }
            // `--output -` is a file named so, as it always was.
            Some(Location::File(_) | Location::Stdin) => {
                let path = match place {
                    Some(Location::File(path)) => path.as_path(),
                    _ => Path::new("-"),
                };
                lock = Some(part::lock(path, &|message| say(speaker.get(), message))?);
                let speaker = speaker.clone();
                let tell = Box::new(move |message: String| say(speaker.get(), &message));
                let (sink, resume) = match parquet {
                    true => {
                        resume::refuse_an_input(&Location::File(path.to_path_buf()), &inputs)?;
                        let (table, resume) = parquet_out::open(path, plan.resume, &record, tell)?;
                        (Sink::Columns(Box::new(table)), resume)
                    }
                    false => resume::open(path, plan.resume, &record, &inputs, tell)?,
                };
                (sink, Some(resume))
            }
        };
        let setup = Setup {
            unit,
            mode: plan.progress,
            summary: plan.summary,
            to_stdout: plan.output.is_none(),
            every: plan.progress_every,
            kept: resume.as_ref().map_or(0, |r| r.kept),
            file: plan.output.as_ref().map(Location::to_string),
        };
        // A shard's progress counts its own range's bytes.
        let bytes = match &shard_plan {
            Some(plan) => Some(plan.range.end - plan.range.start),
            None => inputs.iter().map(Input::size).sum::<Option<u64>>(),
        };
        let progress = Progress::new(setup, bytes);
        let _ = speaker.set(progress.clone());
        let ids = (!parquet_inputs.is_empty()).then(|| {
            let (ids, to_printer) = std::sync::mpsc::channel();
            IdChannel {
                ids,
                to_printer: Mutex::new(Some(to_printer)),
            }
        });
        let job = JobRun {
            inputs,
            progress,
            resume,
            plan: shard_plan,
            format: plan.input_format,
            ids,
            _lock: lock,
        };
        Ok((job, sink))
    }

    /// Inputs to read again without answering them: the answers the output file holds.
    pub fn skip(&self) -> u64 {
        self.resume.as_ref().map_or(0, |r| r.kept)
    }

    /// What the run reads: the inputs (a shard's segments of them), past the answers kept.
    pub fn reading(&self) -> ToRead {
        ToRead {
            inputs: self.inputs.clone(),
            segments: self.plan.as_ref().map(|plan| plan.segments.clone()),
            skip: self.skip(),
            format: self.format,
            ids: self.ids.as_ref().map(|channel| channel.ids.clone()),
        }
    }

    /// The printer of this run's answers into `sink`, numbering them from the shard's first
    /// item's index in the whole input.
    pub fn printer(&self, sink: Sink, render: Render) -> Printer<'_> {
        let first = self.plan.as_ref().map_or(0, |plan| plan.range.first);
        let ids = self.ids.as_ref().and_then(|channel| {
            channel
                .to_printer
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take()
        });
        Printer::new(sink, render, &self.progress, self.resume.clone(), first).with_ids(ids)
    }

    /// Ends the run's reporting: the summary (with `more` at its end) after a run that ended
    /// with a status; nothing but the bar cleared after one that stopped with an error, whose
    /// message is the last word.
    ///
    /// The run's own error `E` is whoever ran it's (the pipeline's, the client's); a part that
    /// cannot be recorded complete fails as one of them.
    pub fn end<E: From<PartError>>(
        &self,
        ended: Result<ExitStatus, E>,
        more: Option<String>,
    ) -> Result<ExitStatus, E> {
        let ended = match (ended, &self.plan, &self.resume) {
            // A shard's part that ended as a whole run ends (every item answered, some perhaps
            // bad) is recorded complete.
            (Ok(status @ (ExitStatus::Ok | ExitStatus::BadInput)), Some(plan), Some(resume)) => {
                let counts = self.progress.counts();
                part::place(&resume.path)
                    .and_then(|place| {
                        part::complete(
                            &place,
                            plan,
                            counts.done + counts.skipped,
                            counts.bad + counts.skipped_bad,
                            status,
                        )
                    })
                    .map(|()| status)
                    .map_err(E::from)
            }
            (ended, _, _) => ended,
        };
        match &ended {
            Ok(_) => self.progress.summarize(more),
            Err(_) => self.progress.finish(),
        }
        ended
    }
}

/// Each item's id from the reader to the printer (a run with a Parquet input); the printer's end
/// is taken once.
struct IdChannel {
    ids: Ids,
    to_printer: Mutex<Option<Receiver<Option<String>>>>,
}

/// Says `message` past the bar, or straight to standard error before there is one.
#[allow(
    clippy::print_stderr,
    reason = "the output's last words on a signal, before the progress exists"
)]
fn say(progress: Option<&Progress>, message: &str) {
    match progress {
        Some(progress) => progress.eprintln(message),
        None => eprintln!("{message}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The flags' own refusals in the words they have always had (written out here by hand, as
    /// the format strings before the errors were typed said them).
    #[test]
    fn refused_flags_say_what_they_always_said() {
        let cases: Vec<(JobError, &str)> = vec![
            (
                JobError::ParquetToStandardOutput,
                "--format parquet writes a file, not standard output: add --output NAME.parquet",
            ),
            (
                JobError::Output("s3://deals is not s3://BUCKET/KEY".into()),
                "s3://deals is not s3://BUCKET/KEY",
            ),
        ];
        for (error, said) in cases {
            assert_eq!(error.to_string(), said);
        }
    }
}
