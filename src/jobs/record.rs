//! The records patience keeps beside what it writes, read and written one way: one JSON object
//! with its layout's `version` and a newline, put whole or not at all ([`Location::put_small`]),
//! read back and refused in words when it is not one patience wrote or is of another version.
//!
//! The records themselves: how an output's answers were written and, for an object, its upload
//! so far (`run_record::Record`, the run's record, in `NAME.resume.json` beside a file or an
//! object), a part's completion (`part::Done`, in `NAME.done.json`) and a file's index
//! (`index::Index`, `NAME.index.json`).

use anyhow::{Context as _, bail};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::location::Location;

/// Where `output`'s run record sits (`NAME.resume.json`; an object's upload record).
pub fn resume_of(output: &Location) -> Location {
    output.beside(".resume.json")
}

/// Where `output`'s completion record sits (`NAME.done.json`, `part.rs`).
pub fn done_of(output: &Location) -> Location {
    output.beside(".done.json")
}

/// Removes `output`'s completion record, if any, before anything in `output` changes: it is then
/// incomplete until a run records it complete again.
pub fn forget(output: &Location) -> anyhow::Result<()> {
    let done = done_of(output);
    done.remove()
        .with_context(|| format!("cannot remove {done} before writing {output}"))
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
pub fn read<T: Versioned>(at: &Location) -> anyhow::Result<Option<T>> {
    let Some(bytes) = at
        .read_small()
        .with_context(|| format!("cannot read {at}"))?
    else {
        return Ok(None);
    };
    let not_ours = || format!("{at} is not {} patience wrote", T::WHAT);
    let value: serde_json::Value = serde_json::from_slice(&bytes).with_context(not_ours)?;
    let version = value.get("version").and_then(serde_json::Value::as_u64);
    let value = match version {
        Some(v) if v == u64::from(T::VERSION) => value,
        Some(v) => match u32::try_from(v).ok().and_then(|v| T::upgrade(v, value)) {
            Some(upgraded) => upgraded,
            None => bail!(
                "{at} is of version {v} (this patience reads version {}); finish it with the \
                 patience that wrote it",
                T::VERSION
            ),
        },
        None => bail!(not_ours()),
    };
    let record: T = serde_json::from_value(value).with_context(not_ours)?;
    Ok(Some(record))
}

/// Writes `record` at `at`, whole or not at all.
pub fn write<T: Versioned>(at: &Location, record: &T) -> anyhow::Result<()> {
    let mut bytes =
        serde_json::to_vec(record).with_context(|| format!("cannot write {}", T::WHAT))?;
    bytes.push(b'\n');
    at.put_small(bytes)
        .with_context(|| format!("cannot write {at}"))
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;
    use crate::jobs::object::ObjectUrl;

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
        let e = read::<Note>(&at).unwrap_err().to_string();
        assert!(
            e.contains("is of version 1 (this patience reads version 2)"),
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
