//! An object's multipart upload: the one place its calls are made (create, a part, complete,
//! abort), for the two writers that upload: `--output s3://...`'s answers, resumable part by part
//! (`upload.rs`), and a whole object written at once, `merge`'s ([`WholeUpload`]). An object shows
//! only once its upload completes.

use std::io;

use object_store::PutPayload;
use object_store::multipart::PartId;

use super::object::{self, ObjectUrl};

/// An upload going on.
#[derive(Debug)]
pub struct Multipart {
    url: ObjectUrl,
    id: String,
}

impl Multipart {
    /// Starts a new upload of `url`.
    pub fn create(url: &ObjectUrl) -> io::Result<Multipart> {
        let id = object::checked(url, |store, path| async move {
            store.create_multipart(&path).await
        })?;
        Ok(Multipart {
            url: url.clone(),
            id,
        })
    }

    /// The upload `id` of `url` that an earlier run started (its record names it).
    pub fn resume(url: &ObjectUrl, id: String) -> Multipart {
        Multipart {
            url: url.clone(),
            id,
        }
    }

    /// The store's name for the upload, for a record.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Uploads `bytes` as part `index` (from 0); its tag, for the completion.
    pub fn put(&self, index: usize, bytes: Vec<u8>) -> io::Result<PartId> {
        let id = self.id.clone();
        object::checked(&self.url, |store, path| async move {
            store
                .put_part(&path, &id, index, PutPayload::from(bytes))
                .await
        })
    }

    /// Completes the object from `parts`, in order: only now does it show.
    pub fn complete(&self, parts: Vec<PartId>) -> io::Result<()> {
        object::changed(&self.url);
        let id = self.id.clone();
        object::checked(&self.url, |store, path| async move {
            store.complete_multipart(&path, &id, parts).await
        })
        .map(|_| ())
    }

    /// Drops the upload and its parts (nothing shows).
    pub fn abort(&self) -> io::Result<()> {
        let id = self.id.clone();
        object::checked(&self.url, |store, path| async move {
            store.abort_multipart(&path, &id).await
        })
    }
}

/// An object written from bytes as they come, in parts of `part_size` (`patience merge`'s
/// output, already whole lines): it shows only once [`WholeUpload::finish`] completes it, and an
/// earlier object of its key stays until then. Dropped unfinished (a failed merge), its upload
/// is aborted, so nothing is left behind. Memory: one part.
pub struct WholeUpload {
    /// The upload going on (none once complete or aborted).
    upload: Option<Multipart>,
    parts: Vec<PartId>,
    buffer: Vec<u8>,
    part_size: usize,
}

impl std::fmt::Debug for WholeUpload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WholeUpload")
            .field("parts", &self.parts.len())
            .field("buffered", &self.buffer.len())
            .field("part_size", &self.part_size)
            .finish_non_exhaustive()
    }
}

impl WholeUpload {
    /// Starts the upload of `url`.
    pub fn create(url: &ObjectUrl, part_size: usize) -> io::Result<WholeUpload> {
        Ok(WholeUpload {
            upload: Some(Multipart::create(url)?),
            parts: Vec::new(),
            buffer: Vec::with_capacity(part_size),
            part_size,
        })
    }

    fn going_on(&self) -> io::Result<&Multipart> {
        self.upload
            .as_ref()
            .ok_or_else(|| io::Error::other("no upload is going on"))
    }

    /// Uploads what the buffer holds as the next part.
    fn put(&mut self) -> io::Result<()> {
        let bytes = std::mem::replace(&mut self.buffer, Vec::with_capacity(self.part_size));
        let part = self.going_on()?.put(self.parts.len(), bytes)?;
        self.parts.push(part);
        Ok(())
    }

    /// Uploads the rest and completes the object: only now does it show.
    pub fn finish(mut self) -> io::Result<()> {
        if !self.buffer.is_empty() || self.parts.is_empty() {
            self.put()?;
        }
        let parts = std::mem::take(&mut self.parts);
        self.going_on()?.complete(parts)?;
        self.upload = None;
        Ok(())
    }
}

impl io::Write for WholeUpload {
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

impl Drop for WholeUpload {
    fn drop(&mut self) {
        if let Some(upload) = self.upload.take() {
            let _ = upload.abort();
        }
    }
}
