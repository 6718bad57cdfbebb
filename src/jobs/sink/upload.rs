//! `--output s3://BUCKET/KEY`: the answers as a multipart upload, which the store shows as the
//! object KEY only once it is complete; until then an earlier object of that key is removed, so
//! that nothing that looks complete is left behind.
//!
//! Whole lines gather in memory until they make a part of `--upload-part-size` bytes (once
//! compressed, for `KEY.gz` and `KEY.zst`: each part is then one gzip member or zstd frame). Each
//! part uploaded is recorded in `KEY.resume.json` beside it: the run's record (`run_record.rs`, as
//! `FILE.resume.json` holds it for a file) with the upload's id, and each part's tag, lines and
//! bytes. A run killed anywhere leaves those committed parts; `--resume` reads the record, checks
//! it against its flags and inputs, skips the inputs their lines answer and goes on with the next
//! part, so the object completed is byte for byte one uninterrupted run's (a plain one; a
//! compressed one decodes to it). Memory: about one part, whatever the object's size.

use std::io;

use object_store::multipart::PartId;

use super::run_record::{Checkpoint, Record, RunRecordError, UploadedPart};
use super::tail::Tail;
use crate::compressed::{Codec, Encoded};
use crate::jobs::store::location::Location;
use crate::jobs::store::multipart::Multipart;
use crate::jobs::store::object::{self, ObjectUrl};
use crate::jobs::store::record::{self, RecordError};

/// Why an object cannot be opened for this run's answers: its record cannot be read or is another
/// run's, or the store refuses the upload; the object named once, the store's error as the cause.
#[derive(Debug, thiserror::Error)]
pub enum UploadError {
    #[error("cannot resume {url}")]
    Resume {
        url: ObjectUrl,
        #[source]
        source: Box<RecordError>,
    },
    #[error(transparent)]
    AnotherRun(#[from] RunRecordError),
    #[error(transparent)]
    Record(#[from] RecordError),
    #[error("cannot write {url}")]
    Write {
        url: ObjectUrl,
        #[source]
        source: io::Error,
    },
    /// The new upload's record could not be written (said in the record's words).
    #[error(transparent)]
    Save(#[from] io::Error),
}

/// The answers on their way to an object: the object [`Tail`].
pub struct ObjectTail {
    url: ObjectUrl,
    /// The run's record with the upload so far, as `KEY.resume.json` holds it.
    state: Record,
    /// The next part: complete lines, compressed as asked.
    part: Encoded<Vec<u8>>,
    part_lines: u64,
    /// Bytes of lines given to the part since the compressor last handed on all it holds.
    unflushed: usize,
    part_size: usize,
    /// A Parquet output's checkpoint once the part gathered is uploaded (it moves with the row
    /// groups), for the record then.
    next_checkpoint: Option<Checkpoint>,
}

/// Opens `url` for this run's answers: a new upload, or with `resume` the one its record names,
/// once `check` has found that record's run the same as this one (`record`); with the answers
/// the committed parts hold.
pub fn open(
    url: &ObjectUrl,
    resume: bool,
    record: Record,
    check: &dyn Fn(&Record) -> Result<(), RunRecordError>,
    part_size: usize,
) -> Result<(ObjectTail, u64), UploadError> {
    let record_at = record::resume_of(&Location::Object(url.clone()));
    let held: Option<Record> = match resume {
        true => record::read(&record_at).map_err(|source| UploadError::Resume {
            url: url.clone(),
            source: Box::new(source),
        })?,
        // A new run only needs the upload an earlier one left, to abort it.
        false => record::read(&record_at).ok().flatten(),
    };
    // A shard's completion record goes before anything changes (`part.rs`), once the run is sure
    // to go on (a refused resume leaves it): the object is then incomplete until this run records
    // it complete again.
    let codec = Codec::for_name(&url.key);
    let mut answers = ObjectTail {
        url: url.clone(),
        state: Record {
            upload: None,
            parts: Vec::new(),
            complete: false,
            ..record
        },
        part: Encoded::new(codec, Vec::new()),
        part_lines: 0,
        unflushed: 0,
        part_size,
        next_checkpoint: None,
    };
    match held {
        Some(held) if resume => {
            check(&held)?;
            record::forget(&Location::Object(url.clone()))?;
            answers.state = held;
        }
        held => {
            record::forget(&Location::Object(url.clone()))?;
            // A new run: the upload of an earlier one, if any, is dropped, and an earlier object
            // of this key goes before anything else happens.
            if let Some(id) = held.and_then(|held| held.upload) {
                let _ = Multipart::resume(url, id).abort();
            }
            let unwritable = |source| UploadError::Write {
                url: url.clone(),
                source,
            };
            object::remove(url).map_err(unwritable)?;
            let upload = Multipart::create(url).map_err(unwritable)?;
            answers.state.upload = Some(upload.id().to_string());
            answers.save()?;
        }
    }
    let kept = answers.state.parts.iter().map(|p| p.lines).sum();
    Ok((answers, kept))
}

impl ObjectTail {
    /// Writes the record beside the object.
    fn save(&self) -> io::Result<()> {
        let at = record::resume_of(&Location::Object(self.url.clone()));
        record::write(&at, &self.state).map_err(io::Error::other)
    }

    /// More answers for an object that is complete: the input has more items than it has answers.
    fn refuse_more(&self, bytes: &[u8]) -> io::Result<()> {
        if self.state.complete && !bytes.is_empty() {
            return Err(io::Error::other(format!(
                "{} is complete already: the input has more than its answers (was it written for \
                 other inputs?)",
                self.url
            )));
        }
        Ok(())
    }

    /// Uploads the part gathered once it has the part's size.
    fn upload_when_whole(&mut self) -> io::Result<()> {
        if self
            .part
            .inner()
            .is_some_and(|part| part.len() >= self.part_size)
        {
            self.upload_part()?;
        }
        Ok(())
    }

    /// Where the answers go.
    pub fn url(&self) -> &ObjectUrl {
        &self.url
    }

    /// The run's record, with the upload so far.
    pub fn record(&self) -> &Record {
        &self.state
    }

    /// Uploads the lines gathered as the next part, and records it.
    fn upload_part(&mut self) -> io::Result<()> {
        let bytes = std::mem::take(self.part.end_member()?);
        self.unflushed = 0;
        let Some(id) = self.state.upload.clone() else {
            return Err(io::Error::other("no upload is going on"));
        };
        let len = bytes.len() as u64;
        let part = Multipart::resume(&self.url, id).put(self.state.parts.len(), bytes)?;
        self.state.parts.push(UploadedPart {
            tag: part.content_id,
            lines: std::mem::take(&mut self.part_lines),
            bytes: len,
        });
        if let Some(checkpoint) = self.next_checkpoint.take() {
            self.state.checkpoint = Some(checkpoint);
        }
        self.save()
    }
}

impl Tail for ObjectTail {
    fn append(&mut self, bytes: &[u8], items: u64) -> io::Result<()> {
        self.refuse_more(bytes)?;
        self.part.write_all(bytes)?;
        self.part_lines += items;
        self.unflushed += bytes.len();
        // A compressor may hold a part's worth of lines (zstd's blocks are 128 KiB): flushed
        // after each part's size of them, the part's size is known for sure.
        if self.unflushed >= self.part_size {
            self.part.flush_member()?;
            self.unflushed = 0;
        }
        self.upload_when_whole()
    }

    /// Recorded with the part that holds the bytes appended next.
    fn checkpoint(&mut self, checkpoint: Checkpoint) {
        self.next_checkpoint = Some(checkpoint);
    }

    /// Parts go as they fill, each recorded beside the object: nothing more to keep.
    fn keep(&mut self) -> io::Result<()> {
        Ok(())
    }

    fn items(&self) -> u64 {
        self.state.parts.iter().map(|p| p.lines).sum::<u64>() + self.part_lines
    }

    /// Uploads what is left as the last part and completes the object, then records it complete.
    fn finish(mut self: Box<Self>) -> io::Result<()> {
        if self.state.complete {
            return Ok(());
        }
        let last = self.part.end_member()?.len();
        if last > 0 || self.state.parts.is_empty() {
            self.upload_part()?;
        }
        let Some(id) = self.state.upload.clone() else {
            return Err(io::Error::other("no upload is going on"));
        };
        let parts = self
            .state
            .parts
            .iter()
            .map(|part| PartId {
                content_id: part.tag.clone(),
            })
            .collect();
        Multipart::resume(&self.url, id).complete(parts)?;
        if let Some(checkpoint) = self.next_checkpoint.take() {
            self.state.checkpoint = Some(checkpoint);
        }
        self.state.upload = None;
        self.state.complete = true;
        self.save()
    }

    fn line_by_line(&self) -> bool {
        true
    }

    fn name(&self) -> String {
        self.url.to_string()
    }

    fn answers_signals(&self) -> bool {
        false
    }
}

impl std::fmt::Debug for ObjectTail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectTail")
            .field("url", &self.url)
            .field("parts", &self.state.parts.len())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::in_full;

    /// An object's failures in the words they have always had (written out here by hand, as the
    /// format strings before the errors were typed said them), the cause after them once.
    #[test]
    fn upload_errors_say_what_they_always_said() {
        let url = ObjectUrl::in_memory("jobs", "out.txt");
        let denied = || io::Error::from(io::ErrorKind::PermissionDenied);
        let unreadable = UploadError::Resume {
            url: url.clone(),
            source: Box::new(RecordError::Read {
                at: record::resume_of(&Location::Object(url.clone())),
                source: denied(),
            }),
        };
        assert_eq!(
            in_full(&unreadable),
            "cannot resume memory://jobs/out.txt: cannot read memory://jobs/out.txt.resume.json: \
             permission denied"
        );
        let refused = UploadError::Write {
            url,
            source: denied(),
        };
        assert_eq!(
            in_full(&refused),
            "cannot write memory://jobs/out.txt: permission denied"
        );
    }
}
