//! The records patience keeps beside what it writes, read and written one way: one JSON object
//! with its layout's `version` and a newline, put whole or not at all ([`Location::put_small`]),
//! read back and refused in words when it is not one patience wrote or is of another version.
//!
//! The records themselves: how an output's answers were written and, for an object, its upload
//! so far (`run_record::Record`, the run's record, in `NAME.resume.json` beside a file or an
//! object), a part's completion (`part::Done`, in `NAME.done.json`) and a file's index
//! (`index::Index`, `NAME.index.json`).

use std::io;

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::location::Location;

/// Why a record could not be read, written or removed: the record's place named once, the cause
/// (the storage's, or JSON's) as its source.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("cannot read {at}")]
    Read {
        at: Location,
        #[source]
        source: io::Error,
    },
    /// Not JSON, not of the record's shape, or without a `version`.
    #[error("{at} is not {what} patience wrote")]
    NotOurs {
        at: Location,
        what: &'static str,
        #[source]
        source: Option<serde_json::Error>,
    },
    /// Of a layout this patience neither reads nor upgrades from.
    #[error(
        "{at} is of version {found} (this patience reads version {reads}); finish it with the \
         patience that wrote it"
    )]
    Version {
        at: Location,
        found: u64,
        reads: u32,
    },
    #[error("cannot write {what}")]
    Encode {
        what: &'static str,
        #[source]
        source: serde_json::Error,
    },
    #[error("cannot write {at}")]
    Write {
        at: Location,
        #[source]
        source: io::Error,
    },
    #[error("cannot remove {done} before writing {output}")]
    Forget {
        done: Location,
        output: Location,
        #[source]
        source: io::Error,
    },
}

/// Where `output`'s run record sits (`NAME.resume.json`, beside a file or an object alike).
pub fn resume_of(output: &Location) -> Location {
    output.beside(".resume.json")
}

/// Where `output`'s completion record sits (`NAME.done.json`, `part.rs`).
pub fn done_of(output: &Location) -> Location {
    output.beside(".done.json")
}

/// Removes `output`'s completion record, if any, before anything in `output` changes: it is then
/// incomplete until a run records it complete again.
pub fn forget(output: &Location) -> Result<(), RecordError> {
    let done = done_of(output);
    done.remove().map_err(|source| RecordError::Forget {
        done,
        output: output.clone(),
        source,
    })
}

/// A record's layout, as its file says it.
pub trait Versioned: Serialize + DeserializeOwned {
    /// The layout this patience reads and writes; a record of another is refused rather than
    /// guessed at.
    const VERSION: u32;
    /// What it is, for messages: "a completion record".
    const WHAT: &'static str;

    /// A record of an earlier layout `version`, rewritten in this one; `None` (the default)
    /// where there is no way from it, which is then refused.
    fn upgrade(_version: u32, _value: serde_json::Value) -> Option<serde_json::Value> {
        None
    }
}

/// The record at `at`; `None` when there is none.
pub fn read<T: Versioned>(at: &Location) -> Result<Option<T>, RecordError> {
    let bytes = match at.read_small() {
        Ok(Some(bytes)) => bytes,
        Ok(None) => return Ok(None),
        Err(source) => {
            return Err(RecordError::Read {
                at: at.clone(),
                source,
            });
        }
    };
    let not_ours = |source| RecordError::NotOurs {
        at: at.clone(),
        what: T::WHAT,
        source,
    };
    let value: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| not_ours(Some(e)))?;
    let value = match value.get("version").and_then(serde_json::Value::as_u64) {
        Some(v) if v == u64::from(T::VERSION) => value,
        Some(v) => u32::try_from(v)
            .ok()
            .and_then(|v| T::upgrade(v, value))
            .ok_or_else(|| RecordError::Version {
                at: at.clone(),
                found: v,
                reads: T::VERSION,
            })?,
        None => return Err(not_ours(None)),
    };
    serde_json::from_value(value)
        .map(Some)
        .map_err(|e| not_ours(Some(e)))
}

/// Writes `record` at `at`, whole or not at all.
pub fn write<T: Versioned>(at: &Location, record: &T) -> Result<(), RecordError> {
    let mut bytes = serde_json::to_vec(record).map_err(|source| RecordError::Encode {
        what: T::WHAT,
        source,
    })?;
    bytes.push(b'\n');
    at.put_small(bytes).map_err(|source| RecordError::Write {
        at: at.clone(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;
    use crate::jobs::store::object::ObjectUrl;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Note {
        version: u32,
        said: String,
    }

    impl Versioned for Note {
        const VERSION: u32 = 2;
        const WHAT: &'static str = "a note";
    }

    #[test]
    fn a_record_reads_back_as_written_and_another_is_refused_in_words() {
        let at = Location::Object(ObjectUrl::in_memory("records", "notes/a.json"));
        assert_eq!(read::<Note>(&at).unwrap(), None);
        let note = Note {
            version: 2,
            said: "hello".into(),
        };
        write(&at, &note).unwrap();
        assert_eq!(read::<Note>(&at).unwrap(), Some(note));
        assert_eq!(at.read_small().unwrap().unwrap().last(), Some(&b'\n'));

        at.put_small(br#"{"version":1,"said":"old"}"#.to_vec())
            .unwrap();
        let e = read::<Note>(&at).unwrap_err();
        assert!(
            matches!(
                e,
                RecordError::Version {
                    found: 1,
                    reads: 2,
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(
            e.to_string()
                .contains("is of version 1 (this patience reads version 2)"),
            "{e}"
        );
        at.put_small(b"not json".to_vec()).unwrap();
        let e = read::<Note>(&at).unwrap_err().to_string();
        assert_eq!(
            e,
            "memory://records/notes/a.json is not a note patience wrote"
        );
    }
}
