//! The jobs a page at a time, oldest first, those of one state when asked.
//!
//! A page goes on from a [`Cursor`]: the (created_ms, id) of the last job the page before gave,
//! not a position. So a job that exists from the first page to the last is listed exactly once
//! whatever is created, ended or forgotten meanwhile: the jobs are kept in that order, a new one
//! sorts after every job already listed (unless its clock went back) and a forgotten one takes
//! no place. The token a caller holds is the cursor with the filter it was made for, so a token
//! cannot be reused with another filter unnoticed.

use std::ops::Bound;

use super::{Board, JobState, JobView, view};

/// Where a page goes on from: the last job of the page before.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cursor {
    created_ms: i64,
    id: String,
}

/// One page: its jobs, and where the next begins (`None` after the last).
#[derive(Debug)]
pub struct Page {
    pub jobs: Vec<JobView>,
    pub next: Option<Cursor>,
}

/// A page token that is not one this daemon made for this filter.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PageError {
    #[error("the page token is not one a ListJobs response gave")]
    Malformed,
    #[error("the page token was made for the state filter {made}, not {given}")]
    OtherFilter { made: String, given: String },
}

/// The token's version, so its form may change later without old tokens being misread.
const FORM: &str = "p1";

fn filter_name(state: Option<JobState>) -> &'static str {
    state.map_or("all", JobState::name)
}

impl Cursor {
    /// The opaque token for this cursor under `state`'s filter: hex, so it is one word in a URL.
    pub fn token(&self, state: Option<JobState>) -> String {
        let plain = format!(
            "{FORM}|{}|{}|{}",
            filter_name(state),
            self.created_ms,
            self.id
        );
        plain.bytes().map(|b| format!("{b:02x}")).collect()
    }

    /// The cursor `token` holds, if it was made for `state`'s filter.
    pub fn from_token(token: &str, state: Option<JobState>) -> Result<Cursor, PageError> {
        let bytes = token.as_bytes();
        if !bytes.len().is_multiple_of(2) || bytes.len() > 512 {
            return Err(PageError::Malformed);
        }
        let plain: Vec<u8> = bytes
            .chunks(2)
            .map(|pair| {
                std::str::from_utf8(pair)
                    .ok()
                    .and_then(|hex| u8::from_str_radix(hex, 16).ok())
            })
            .collect::<Option<_>>()
            .ok_or(PageError::Malformed)?;
        let plain = String::from_utf8(plain).map_err(|_| PageError::Malformed)?;
        let mut parts = plain.splitn(4, '|');
        let (Some(FORM), Some(made), Some(created_ms), Some(id)) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(PageError::Malformed);
        };
        let created_ms = created_ms.parse().map_err(|_| PageError::Malformed)?;
        if made != filter_name(state) {
            return Err(PageError::OtherFilter {
                made: made.to_string(),
                given: filter_name(state).to_string(),
            });
        }
        Ok(Cursor {
            created_ms,
            id: id.to_string(),
        })
    }
}

impl Board {
    /// Up to `size` of `tenant`'s jobs (at least one) after `after`, oldest first, those in
    /// `state` when given.
    pub fn page(
        &self,
        tenant: &str,
        state: Option<JobState>,
        after: Option<&Cursor>,
        size: usize,
    ) -> Page {
        let table = self.table();
        let Some(table) = table.lane(tenant) else {
            return Page {
                jobs: Vec::new(),
                next: None,
            };
        };
        let start = after.map_or(Bound::Unbounded, |c| {
            Bound::Excluded((c.created_ms, c.id.clone()))
        });
        let mut jobs = Vec::new();
        let mut last = None;
        let mut more = false;
        for key in table.order.range((start, Bound::Unbounded)) {
            let Some(entry) = table.jobs.get(&key.1) else {
                continue;
            };
            if state.is_some_and(|s| s != entry.kept.state) {
                continue;
            }
            if jobs.len() == size.max(1) {
                more = true;
                break;
            }
            jobs.push(view(entry));
            last = Some(key);
        }
        let next = last.filter(|_| more).map(|(created_ms, id)| Cursor {
            created_ms: *created_ms,
            id: id.clone(),
        });
        Page { jobs, next }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_round_trips_for_its_filter_only() {
        let cursor = Cursor {
            created_ms: 1_765_000_000_123,
            id: "nightly-7.a_b".into(),
        };
        for state in [None, Some(JobState::Queued), Some(JobState::Cancelled)] {
            let token = cursor.token(state);
            assert!(token.bytes().all(|b| b.is_ascii_hexdigit()), "{token}");
            assert_eq!(Cursor::from_token(&token, state), Ok(cursor.clone()));
        }
        assert_eq!(
            Cursor::from_token(&cursor.token(None), Some(JobState::Running)),
            Err(PageError::OtherFilter {
                made: "all".into(),
                given: "running".into()
            })
        );
    }

    #[test]
    fn tokens_not_made_here_are_malformed() {
        let hex = |s: &str| s.bytes().map(|b| format!("{b:02x}")).collect::<String>();
        for token in [
            "z".to_string(),
            "abc".to_string(),
            "zz".to_string(),
            hex("p1|all|12"),
            hex("p2|all|12|x"),
            hex("p1|all|twelve|x"),
            "ff".repeat(300),
        ] {
            assert_eq!(
                Cursor::from_token(&token, None),
                Err(PageError::Malformed),
                "{token}"
            );
        }
    }
}
