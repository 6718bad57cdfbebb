//! Objects in S3 and S3-compatible stores as inputs and outputs, named `s3://BUCKET/KEY` on the
//! command line and configured as AWS tools are: `AWS_ENDPOINT_URL` (a plain `http://` endpoint is
//! allowed when it says so), `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`,
//! `AWS_REGION`. The signing, retries with backoff (throttling, 5xx, an endpoint that does not
//! answer) and multipart calls are `object_store`'s; this module gives the synchronous reading
//! side of the command line a [`Read`] over a streamed GET, and says every failure in words.
//!
//! The store's calls run on a small runtime of their own (one worker thread), so that they can be
//! waited for from anywhere: the solve path's plain threads and the client's runtime alike.

use std::collections::HashMap;
use std::future::Future;
use std::io::{self, Read};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt as _;
use object_store::aws::AmazonS3Builder;
use object_store::memory::InMemory;
use object_store::multipart::MultipartStore;
use object_store::path::Path as ObjectPath;
use object_store::{
    ClientOptions, GetOptions, GetRange, ObjectStore, ObjectStoreExt as _, PutPayload, RetryConfig,
};

mod words;

pub use words::in_words;

/// How long a call is retried (with exponential backoff from 100 ms to 15 s) before the run gives
/// up on it, unless `--storage-retry-timeout` says otherwise.
pub const RETRY_TIMEOUT: Duration = Duration::from_secs(60);
/// How long the store may send nothing while a response is read before the read fails (and is
/// retried within the retry timeout), unless `--storage-stall-timeout` says otherwise. It bounds
/// a stalled connection, not a whole call: the
/// client's default 30 s bound on a whole request cut every GET of an object that takes longer
/// to solve than that (a body is read as fast as the solving goes), measured by
/// `benches/storage.rs` on a 500 MB object.
const STALL_TIMEOUT: Duration = Duration::from_secs(30);
/// `--upload-part-size`'s default: S3's 5 MiB minimum and some room.
pub const PART_SIZE: usize = 8 << 20;
/// Chunks of a GET held ahead of the reader: the download runs ahead of the solving by this much
/// (and the socket's buffers), and no further.
const AHEAD: usize = 8;

/// `s3://BUCKET/KEY`, or an object of this process's memory (`memory://BUCKET/KEY`, which only
/// the tests name: resume, parts and merge run on it as on S3, without a server).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectUrl {
    pub scheme: Scheme,
    pub bucket: String,
    pub key: String,
}

/// Which store holds an object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scheme {
    S3,
    Memory,
}

/// What every store the jobs use can do: objects and their multipart uploads (object_store's S3
/// and in-memory stores both can).
pub trait Store: ObjectStore + MultipartStore {}

impl<T: ObjectStore + MultipartStore> Store for T {}

impl ObjectUrl {
    /// The URL `text` names, if it is one (`None`: a local path); an `s3://` name with no bucket
    /// or key is refused in words.
    pub fn parse(text: &str) -> Option<Result<ObjectUrl, String>> {
        // The tests name objects of memory as the command line names S3's.
        #[cfg(test)]
        let (scheme, rest) = match text.strip_prefix("memory://") {
            Some(rest) => (Scheme::Memory, rest),
            None => (Scheme::S3, text.strip_prefix("s3://")?),
        };
        #[cfg(not(test))]
        let (scheme, rest) = (Scheme::S3, text.strip_prefix("s3://")?);
        Some(match rest.split_once('/') {
            Some((bucket, key)) if bucket.len() >= 3 && !key.is_empty() => Ok(ObjectUrl {
                scheme,
                bucket: bucket.to_string(),
                key: key.to_string(),
            }),
            _ => Err(format!(
                "{text} is not s3://BUCKET/KEY (a bucket's name has 3 characters or more, and \
                 the key is the object's name in it)"
            )),
        })
    }

    /// An object of this process's memory (for tests).
    #[cfg(test)]
    pub fn in_memory(bucket: &str, key: &str) -> ObjectUrl {
        ObjectUrl {
            scheme: Scheme::Memory,
            bucket: bucket.to_string(),
            key: key.to_string(),
        }
    }

    /// The object beside this one whose key ends with `suffix` (its records).
    pub fn beside(&self, suffix: &str) -> ObjectUrl {
        ObjectUrl {
            scheme: self.scheme,
            bucket: self.bucket.clone(),
            key: format!("{}{suffix}", self.key),
        }
    }

    pub fn path(&self) -> ObjectPath {
        ObjectPath::from(self.key.as_str())
    }
}

impl std::fmt::Display for ObjectUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let scheme = match self.scheme {
            Scheme::S3 => "s3",
            Scheme::Memory => "memory",
        };
        write!(f, "{scheme}://{}/{}", self.bucket, self.key)
    }
}

/// Object storage's limits, the same for every run that reads or writes objects (`solve`,
/// `client`, `rps`, `merge`, a daemon's jobs): set once for the process before anything is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StorageSettings {
    /// With an `s3://` output: the size of each uploaded part, in bytes (S3 refuses parts under
    /// 5 MiB but the last); about this much memory holds the answers not yet uploaded.
    pub upload_part_size: usize,
    /// How long a call to the store is retried, with backoff, when it does not answer, throttles
    /// or fails on its side.
    pub retry_timeout: Duration,
    /// How long the store may send nothing while a response is read (`--storage-stall-timeout`).
    pub stall_timeout: Duration,
}

impl Default for StorageSettings {
    fn default() -> StorageSettings {
        StorageSettings {
            upload_part_size: PART_SIZE,
            retry_timeout: RETRY_TIMEOUT,
            stall_timeout: STALL_TIMEOUT,
        }
    }
}

impl StorageSettings {
    /// Sets this process's limits, before anything is read (the first setting holds).
    pub fn configure(&self) {
        let _ = SETTINGS.set(*self);
    }
}

static SETTINGS: OnceLock<StorageSettings> = OnceLock::new();

/// The runtime the store's calls run on, and a client per bucket.
pub struct Storage {
    runtime: tokio::runtime::Runtime,
    stores: Mutex<HashMap<(Scheme, String), Arc<dyn Store>>>,
}

impl std::fmt::Debug for Storage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Storage").finish_non_exhaustive()
    }
}

/// The process's [`Storage`], started on first use.
pub fn storage() -> io::Result<&'static Storage> {
    static STORAGE: OnceLock<Storage> = OnceLock::new();
    if let Some(storage) = STORAGE.get() {
        return Ok(storage);
    }
    // The store's HTTP client takes its TLS from the process's rustls provider: ring, as
    // tonic's. Installed already (by another caller) is as good.
    let _ = tokio_rustls::rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("storage")
        .enable_all()
        .build()?;
    let _ = STORAGE.set(Storage {
        runtime,
        stores: Mutex::default(),
    });
    STORAGE
        .get()
        .ok_or_else(|| io::Error::other("the storage runtime did not start"))
}

impl Storage {
    /// The client of `url`'s bucket, built from the environment on first use (a bucket of
    /// memory: empty, and kept for the process's life).
    pub fn store(&self, url: &ObjectUrl) -> io::Result<Arc<dyn Store>> {
        let mut stores = self.stores.lock().unwrap_or_else(PoisonError::into_inner);
        let bucket = (url.scheme, url.bucket.clone());
        if let Some(store) = stores.get(&bucket) {
            return Ok(store.clone());
        }
        if url.scheme == Scheme::Memory {
            let store: Arc<dyn Store> = Arc::new(InMemory::new());
            stores.insert(bucket, store.clone());
            return Ok(store);
        }
        let settings = SETTINGS.get().copied().unwrap_or_default();
        let plain_http = std::env::var("AWS_ENDPOINT_URL")
            .or_else(|_| std::env::var("AWS_ENDPOINT"))
            .is_ok_and(|endpoint| endpoint.starts_with("http://"));
        let retry = RetryConfig {
            retry_timeout: settings.retry_timeout,
            // The time bounds the retries; the count only keeps a fast failure from looping.
            max_retries: 100,
            ..RetryConfig::default()
        };
        // As `AmazonS3Builder::from_env` does, over our timeouts: the environment's `AWS_*`
        // settings (`AWS_TIMEOUT`, `AWS_PROXY_URL`, ...) win.
        let options = ClientOptions::new()
            .with_timeout_disabled()
            .with_read_timeout(settings.stall_timeout);
        let mut builder = AmazonS3Builder::new().with_client_options(options);
        for (key, value) in std::env::vars_os() {
            let (Some(key), Some(value)) = (key.to_str(), value.to_str()) else {
                continue;
            };
            if let Some(config) = key
                .strip_prefix("AWS_")
                .and_then(|_| key.to_ascii_lowercase().parse().ok())
            {
                builder = builder.with_config(config, value);
            }
        }
        let mut builder = builder
            .with_bucket_name(&url.bucket)
            .with_allow_http(plain_http)
            .with_retry(retry);
        if let Ok(region) = std::env::var("AWS_REGION") {
            builder = builder.with_region(region);
        }
        let store: Arc<dyn Store> = Arc::new(builder.build().map_err(|e| in_words(&e, url))?);
        stores.insert(bucket, store.clone());
        Ok(store)
    }

    /// Runs `call` on the storage runtime and waits for it, from any thread.
    fn wait<T: Send + 'static>(
        &self,
        call: impl Future<Output = T> + Send + 'static,
    ) -> io::Result<T> {
        // A plain channel, so that the caller may be anywhere: a plain thread, a task of the
        // client's runtime, or inside the printer's executor.
        let (send, receive) = std::sync::mpsc::sync_channel(1);
        self.runtime.spawn(async move {
            let _ = send.send(call.await);
        });
        receive
            .recv()
            .map_err(|_| io::Error::other("a storage call ended without an answer"))
    }
}

/// One call to `url`'s store (`make` gets the store and the object's path), run on the storage
/// runtime and waited for from any thread: the one bridge from the jobs' plain threads into the
/// store's async calls. The store's own error is handed back, for a caller to whom some are no
/// failure (a missing key).
pub fn call<T, F>(
    url: &ObjectUrl,
    make: impl FnOnce(Arc<dyn Store>, ObjectPath) -> F,
) -> io::Result<object_store::Result<T>>
where
    T: Send + 'static,
    F: Future<Output = object_store::Result<T>> + Send + 'static,
{
    let storage = storage()?;
    let store = storage.store(url)?;
    storage.wait(make(store, url.path()))
}

/// [`call`], with every failure said in words.
pub fn checked<T, F>(
    url: &ObjectUrl,
    make: impl FnOnce(Arc<dyn Store>, ObjectPath) -> F,
) -> io::Result<T>
where
    T: Send + 'static,
    F: Future<Output = object_store::Result<T>> + Send + 'static,
{
    call(url, make)?.map_err(|e| in_words(&e, url))
}

/// The size of the object at `url` (a HEAD, once per run: a failure is kept too, so that an
/// endpoint that does not answer costs the retries' time once, not at each look).
/// Sizes looked up, and failures to, by URL.
type Sizes = Mutex<HashMap<String, Result<u64, (io::ErrorKind, String)>>>;

fn sizes() -> &'static Sizes {
    static SIZES: OnceLock<Sizes> = OnceLock::new();
    SIZES.get_or_init(Sizes::default)
}

/// Forgets what [`size`] found at `url`: this process has just changed it.
pub fn changed(url: &ObjectUrl) {
    sizes()
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .remove(&url.to_string());
}

pub fn size(url: &ObjectUrl) -> io::Result<u64> {
    let sizes = sizes();
    let known = sizes
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(&url.to_string())
        .cloned();
    let size = match known {
        Some(size) => size,
        None => {
            let size = call(url, |store, path| async move {
                match store.head(&path).await {
                    // A HEAD's 404 or 403 has no body to say whether the bucket or the key
                    // is missing, or the credentials or the permissions are wrong: a GET's
                    // says.
                    Err(
                        object_store::Error::NotFound { .. }
                        | object_store::Error::PermissionDenied { .. }
                        | object_store::Error::Unauthenticated { .. },
                    ) => {
                        let first = GetOptions {
                            range: Some(GetRange::Bounded(0..1)),
                            ..GetOptions::default()
                        };
                        store.get_opts(&path, first).await.map(|got| got.meta)
                    }
                    head => head,
                }
            })?
            .map(|meta| meta.size)
            .map_err(|e| {
                let e = in_words(&e, url);
                (e.kind(), e.to_string())
            });
            sizes
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(url.to_string(), size.clone());
            size
        }
    };
    size.map_err(|(kind, said)| io::Error::new(kind, said))
}

/// The whole body of a small object (a record), or `None` when there is no such key.
pub fn read_small(url: &ObjectUrl) -> io::Result<Option<Bytes>> {
    let got = call(url, |store, path| async move {
        match store.get(&path).await {
            Ok(got) => got.bytes().await,
            Err(e) => Err(e),
        }
    })?;
    match got {
        Ok(bytes) => Ok(Some(bytes)),
        Err(object_store::Error::NotFound { .. }) => Ok(None),
        Err(e) => Err(in_words(&e, url)),
    }
}

/// Puts `bytes` as the whole object at `url` (a record: one PUT, which shows whole or not at all).
pub fn put_small(url: &ObjectUrl, bytes: Vec<u8>) -> io::Result<()> {
    changed(url);
    checked(url, |store, path| async move {
        store.put(&path, PutPayload::from(bytes)).await
    })
    .map(|_| ())
}

/// Removes the object at `url`, if there is one.
pub fn remove(url: &ObjectUrl) -> io::Result<()> {
    changed(url);
    match call(url, |store, path| async move { store.delete(&path).await })? {
        Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
        Err(e) => Err(in_words(&e, url)),
    }
}

/// A streamed GET of the object at `url` from byte `offset`, as a [`Read`]: the body is fetched
/// `AHEAD` chunks ahead of the reader, so memory stays flat whatever the object's size.
pub fn open(url: &ObjectUrl, offset: u64) -> io::Result<ObjectReader> {
    // Known missing or unreachable already: said at once, without the retries again.
    size(url)?;
    let options = GetOptions {
        range: (offset > 0).then_some(GetRange::Offset(offset)),
        ..GetOptions::default()
    };
    let got = checked(url, |store, path| async move {
        store.get_opts(&path, options).await
    })?;
    let mut stream = got.into_stream();
    let (send, receive) = std::sync::mpsc::sync_channel(AHEAD);
    let named = url.clone();
    let handle = storage()?.runtime.handle().clone();
    // A thread of its own pulls the body, so that a full channel holds it back without holding
    // up the runtime's other calls; it ends when the body does or the reader is dropped.
    std::thread::Builder::new()
        .name("storage-get".into())
        .spawn(move || {
            while let Some(chunk) = handle.block_on(stream.next()) {
                let chunk = chunk.map_err(|e| in_words(&e, &named));
                let failed = chunk.is_err();
                if send.send(chunk).is_err() || failed {
                    return;
                }
            }
        })?;
    Ok(ObjectReader {
        receive,
        chunk: Bytes::new(),
    })
}

/// The first bytes of the object at `url`, at most `len` (a ranged GET).
pub fn first_bytes(url: &ObjectUrl, len: u64) -> io::Result<Bytes> {
    let len = len.min(size(url)?);
    if len == 0 {
        return Ok(Bytes::new());
    }
    checked(url, |store, path| async move {
        store.get_range(&path, 0..len).await
    })
}

/// The reading end of a streamed GET.
pub struct ObjectReader {
    receive: std::sync::mpsc::Receiver<io::Result<Bytes>>,
    chunk: Bytes,
}

impl std::fmt::Debug for ObjectReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectReader").finish_non_exhaustive()
    }
}

impl Read for ObjectReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.chunk.is_empty() {
            match self.receive.recv() {
                Ok(chunk) => self.chunk = chunk?,
                Err(_) => return Ok(0),
            }
        }
        let n = buf.len().min(self.chunk.len());
        buf[..n].copy_from_slice(&self.chunk[..n]);
        self.chunk = self.chunk.slice(n..);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_a_bucket_and_a_key() {
        let url = ObjectUrl::parse("s3://deals/2026/deals.in.zst")
            .unwrap()
            .unwrap();
        assert_eq!(
            (url.bucket.as_str(), url.key.as_str()),
            ("deals", "2026/deals.in.zst")
        );
        assert_eq!(url.to_string(), "s3://deals/2026/deals.in.zst");
        assert_eq!(
            url.beside(".resume.json").key,
            "2026/deals.in.zst.resume.json"
        );
        assert!(ObjectUrl::parse("deals.in").is_none());
        assert!(ObjectUrl::parse("s3://deals").unwrap().is_err());
        assert!(ObjectUrl::parse("s3://ab/key").unwrap().is_err());
        assert!(ObjectUrl::parse("s3://deals/").unwrap().is_err());
    }
}
