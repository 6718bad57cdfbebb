//! `--output s3://BUCKET/KEY`: the answers as a multipart upload, which the store shows as the
//! object KEY only once it is complete; until then an earlier object of that key is removed, so
//! that nothing that looks complete is left behind.
//!
//! Whole lines gather in memory until they make a part of `--upload-part-size` bytes (once
//! compressed, for `KEY.gz` and `KEY.zst`: each part is then one gzip member or zstd frame). Each
//! part uploaded is recorded in `KEY.resume.json` beside it: the run's record (as `FILE.resume.json`
//! holds it for a file), the upload's id, and each part's tag, lines and bytes. A run killed
//! anywhere leaves those committed parts; `--resume` reads the record, checks it against its
//! flags and inputs, skips the inputs their lines answer and goes on with the next part, so the
//! object completed is byte for byte one uninterrupted run's (a plain one; a compressed one decodes
//! to it). Memory: about one part, whatever the object's size.

use std::io;

use anyhow::{Context as _, bail};
use object_store::aws::AmazonS3;
use object_store::multipart::{MultipartStore as _, PartId};
use object_store::{ObjectStoreExt as _, PutPayload};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

use super::compressed::{Codec, Encoded};
use super::object::{self, ObjectUrl, in_words, storage};

/// The record's layout; another version is refused rather than guessed at.
const VERSION: u32 = 1;

/// What `KEY.resume.json` holds.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct UploadRecord {
    version: u32,
    /// The run's record, as `FILE.resume.json` holds it (`resume.rs`).
    record: serde_json::Value,
    /// The multipart upload going on (none once complete).
    upload: Option<String>,
    parts: Vec<UploadedPart>,
    complete: bool,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct UploadedPart {
    tag: String,
    lines: u64,
    bytes: u64,
}

/// The answers on their way to an object.
pub struct ObjectAnswers {
    url: ObjectUrl,
    store: Arc<AmazonS3>,
    state: UploadRecord,
    /// Bytes of a line not complete yet.
    pending: Vec<u8>,
    /// The next part: complete lines, compressed as asked.
    part: Encoded<Vec<u8>>,
    part_lines: u64,
    /// Bytes of lines given to the part since the compressor last handed on all it holds.
    unflushed: usize,
    part_size: usize,
}

/// Opens `url` for this run's answers: a new upload, or with `resume` the one its record names,
/// once `check` has found that record's run the same as this one (`record`); with the answers
/// the committed parts hold.
pub fn open(
    url: &ObjectUrl,
    resume: bool,
    record: serde_json::Value,
    check: &dyn Fn(serde_json::Value) -> anyhow::Result<()>,
    part_size: usize,
) -> anyhow::Result<(ObjectAnswers, u64)> {
    let storage = storage()?;
    let store = storage.store(url)?;
    let record_url = url.beside(".resume.json");
    let held = object::read_small(&record_url)
        .with_context(|| format!("cannot read {record_url}"))?
        .map(|bytes| {
            serde_json::from_slice::<UploadRecord>(&bytes)
                .with_context(|| format!("{record_url} is not a record patience wrote"))
        })
        .transpose()?;
    // A shard's completion record goes before anything changes (`part.rs`), once the run is sure
    // to go on (a refused resume leaves it): the object is then incomplete until this run records
    // it complete again.
    let forget = || {
        let done = url.beside(".done.json");
        object::remove(&done).with_context(|| format!("cannot remove {done} before writing {url}"))
    };
    let codec = Codec::for_name(&url.key);
    let mut answers = ObjectAnswers {
        url: url.clone(),
        store: store.clone(),
        state: UploadRecord {
            version: VERSION,
            record,
            upload: None,
            parts: Vec::new(),
            complete: false,
        },
        pending: Vec::new(),
        part: Encoded::new(codec, Vec::new()),
        part_lines: 0,
        unflushed: 0,
        part_size,
    };
    match held {
        Some(held) if resume => {
            if held.version != VERSION {
                bail!(
                    "cannot resume {url}: {record_url} is of version {} (this patience writes \
                     version {VERSION})",
                    held.version
                );
            }
            check(held.record.clone())?;
            forget()?;
            answers.state = held;
        }
        held => {
            forget()?;
            // A new run: the upload of an earlier one, if any, is dropped, and an earlier object
            // of this key goes before anything else happens.
            if let Some(id) = held.and_then(|held| held.upload) {
                let (client, path) = (store.clone(), url.path());
                let _ = storage.wait(async move { client.abort_multipart(&path, &id).await });
            }
            let (client, path) = (store.clone(), url.path());
            match storage.wait(async move { client.delete(&path).await })? {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(in_words(&e, url)).context(format!("cannot write {url}")),
            }
            let (client, path) = (store.clone(), url.path());
            let id = storage
                .wait(async move { client.create_multipart(&path).await })?
                .map_err(|e| in_words(&e, url))
                .with_context(|| format!("cannot write {url}"))?;
            answers.state.upload = Some(id);
            answers.save()?;
        }
    }
    let kept = answers.state.parts.iter().map(|p| p.lines).sum();
    Ok((answers, kept))
}

/// Uploads `bytes` as part `index` of upload `id` of the object at `url`; its tag, for the
/// completion.
fn put_part(
    store: &Arc<AmazonS3>,
    url: &ObjectUrl,
    id: String,
    index: usize,
    bytes: Vec<u8>,
) -> io::Result<PartId> {
    let (store, path) = (store.clone(), url.path());
    storage()?
        .wait(async move {
            store
                .put_part(&path, &id, index, PutPayload::from(bytes))
                .await
        })?
        .map_err(|e| in_words(&e, url))
}

/// The run's record that `url`'s upload record holds (`KEY.resume.json`), for its completion
/// record.
pub fn record_of(url: &ObjectUrl) -> anyhow::Result<serde_json::Value> {
    let record_url = url.beside(".resume.json");
    let Some(bytes) =
        object::read_small(&record_url).with_context(|| format!("cannot read {record_url}"))?
    else {
        bail!("{record_url} is missing: {url} was not written by `patience --output`");
    };
    let held: UploadRecord = serde_json::from_slice(&bytes)
        .with_context(|| format!("{record_url} is not a record patience wrote"))?;
    Ok(held.record)
}

impl ObjectAnswers {
    /// Writes the record beside the object.
    fn save(&self) -> io::Result<()> {
        let mut text = serde_json::to_vec(&self.state).map_err(io::Error::other)?;
        text.push(b'\n');
        object::put_small(&self.url.beside(".resume.json"), text)
    }

    /// Takes `buf` in; uploads a part once the complete lines make one.
    pub fn write(&mut self, buf: &[u8]) -> io::Result<()> {
        if self.state.complete && !buf.is_empty() {
            return Err(io::Error::other(format!(
                "{} is complete already: the input has more than its answers (was it written for \
                 other inputs?)",
                self.url
            )));
        }
        self.pending.extend_from_slice(buf);
        if let Some(end) = memchr::memrchr(b'\n', &self.pending) {
            let complete: Vec<u8> = self.pending.drain(..=end).collect();
            self.part_lines += memchr::memchr_iter(b'\n', &complete).count() as u64;
            self.part.write_all(&complete)?;
            self.unflushed += complete.len();
        }
        // A compressor may hold a part's worth of lines (zstd's blocks are 128 KiB): flushed
        // after each part's size of them, the part's size is known for sure.
        if self.unflushed >= self.part_size {
            self.part.flush_member()?;
            self.unflushed = 0;
        }
        if self
            .part
            .inner()
            .is_some_and(|part| part.len() >= self.part_size)
        {
            self.upload_part()?;
        }
        Ok(())
    }

    /// Uploads the lines gathered as the next part, and records it.
    fn upload_part(&mut self) -> io::Result<()> {
        let bytes = std::mem::take(self.part.end_member()?);
        self.unflushed = 0;
        let Some(id) = self.state.upload.clone() else {
            return Err(io::Error::other("no upload is going on"));
        };
        let len = bytes.len() as u64;
        let part = put_part(&self.store, &self.url, id, self.state.parts.len(), bytes)?;
        self.state.parts.push(UploadedPart {
            tag: part.content_id,
            lines: std::mem::take(&mut self.part_lines),
            bytes: len,
        });
        self.save()
    }

    /// Uploads what is left as the last part and completes the object, then records it complete.
    pub fn finish(mut self) -> io::Result<()> {
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
        let (store, path) = (self.store.clone(), self.url.path());
        storage()?
            .wait(async move { store.complete_multipart(&path, &id, parts).await })?
            .map_err(|e| in_words(&e, &self.url))?;
        self.state.upload = None;
        self.state.complete = true;
        self.save()
    }
}

impl std::fmt::Debug for ObjectAnswers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectAnswers")
            .field("url", &self.url)
            .field("parts", &self.state.parts.len())
            .finish_non_exhaustive()
    }
}

/// An object written from bytes as they come, in parts of `part_size` (`patience merge`'s
/// output, already whole lines): it shows only once [`RawUpload::finish`] completes it, and an
/// earlier object of its key stays until then. Dropped unfinished (a failed merge), its upload
/// is aborted, so nothing is left behind. Memory: one part.
pub struct RawUpload {
    url: ObjectUrl,
    store: Arc<AmazonS3>,
    /// The multipart upload going on (none once complete or aborted).
    id: Option<String>,
    parts: Vec<PartId>,
    buffer: Vec<u8>,
    part_size: usize,
}

impl RawUpload {
    /// Starts the upload of `url`.
    pub fn create(url: &ObjectUrl, part_size: usize) -> io::Result<RawUpload> {
        let store = storage()?.store(url)?;
        let (client, path) = (store.clone(), url.path());
        let id = storage()?
            .wait(async move { client.create_multipart(&path).await })?
            .map_err(|e| in_words(&e, url))?;
        Ok(RawUpload {
            url: url.clone(),
            store,
            id: Some(id),
            parts: Vec::new(),
            buffer: Vec::with_capacity(part_size),
            part_size,
        })
    }

    /// Uploads what the buffer holds as the next part.
    fn put(&mut self) -> io::Result<()> {
        let Some(id) = self.id.clone() else {
            return Err(io::Error::other("no upload is going on"));
        };
        let bytes = std::mem::replace(&mut self.buffer, Vec::with_capacity(self.part_size));
        let part = put_part(&self.store, &self.url, id, self.parts.len(), bytes)?;
        self.parts.push(part);
        Ok(())
    }

    /// Uploads the rest and completes the object: only now does it show.
    pub fn finish(mut self) -> io::Result<()> {
        if !self.buffer.is_empty() || self.parts.is_empty() {
            self.put()?;
        }
        let Some(id) = self.id.clone() else {
            return Err(io::Error::other("no upload is going on"));
        };
        let (store, path, parts) = (self.store.clone(), self.url.path(), self.parts.clone());
        storage()?
            .wait(async move { store.complete_multipart(&path, &id, parts).await })?
            .map_err(|e| in_words(&e, &self.url))?;
        self.id = None;
        Ok(())
    }
}

impl io::Write for RawUpload {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        // Filled to a part's size and no further, so that the buffer never grows past one part.
        let n = buf.len().min(self.part_size - self.buffer.len());
        self.buffer.extend_from_slice(&buf[..n]);
        if self.buffer.len() >= self.part_size {
            self.put()?;
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for RawUpload {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            let (store, path) = (self.store.clone(), self.url.path());
            if let Ok(storage) = storage() {
                let _ = storage.wait(async move { store.abort_multipart(&path, &id).await });
            }
        }
    }
}
