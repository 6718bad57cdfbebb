//! A call's deadline, from the `grpc-timeout` header its client sent.
//!
//! tonic enforces `grpc-timeout` only until a handler returns, not on a streaming body, so the
//! service reads the header itself and each call enforces its own deadline. The header is
//! `<digits><unit>`: at most 8 digits, and a unit of H, M, S, m, u or n (hours down to
//! nanoseconds), as the gRPC spec has it.

use std::time::Duration;

use tonic::Status;

use crate::proto::reason::Reason;
use tonic::metadata::{AsciiMetadataValue, MetadataMap};

/// Stands in for "no deadline": far enough never to fire, near enough not to overflow.
pub(super) const FOREVER: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// The spec's limit on the digits of a `grpc-timeout`, which also keeps every value in a `u64`.
const MAX_DIGITS: usize = 8;

/// Why a `grpc-timeout` header cannot be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("grpc-timeout is not <digits><H|M|S|m|u|n>")]
pub(super) struct BadTimeout;

impl From<BadTimeout> for Status {
    fn from(_: BadTimeout) -> Status {
        Reason::BadTimeout.status()
    }
}

/// The deadline of a call that arrived now with `metadata`, or `None` without a `grpc-timeout`.
pub(super) fn deadline(metadata: &MetadataMap) -> Result<Option<tokio::time::Instant>, BadTimeout> {
    let Some(value) = metadata.get("grpc-timeout") else {
        return Ok(None);
    };
    let timeout = header_timeout(value)?;
    Ok(Some(tokio::time::Instant::now() + timeout))
}

/// A `grpc-timeout` header's duration; a value with bytes that are not visible ASCII is bad.
fn header_timeout(value: &AsciiMetadataValue) -> Result<Duration, BadTimeout> {
    timeout(value.to_str().map_err(|_| BadTimeout)?)
}

/// The duration `<digits><unit>` stands for, capped at [`FOREVER`] so that adding it to now
/// cannot overflow.
pub(super) fn timeout(text: &str) -> Result<Duration, BadTimeout> {
    let split = text.len().checked_sub(1).ok_or(BadTimeout)?;
    // `None` when the last character is not one byte: no unit is.
    let (digits, unit) = text.split_at_checked(split).ok_or(BadTimeout)?;
    if digits.is_empty() || digits.len() > MAX_DIGITS {
        return Err(BadTimeout);
    }
    let n: u64 = digits.parse().map_err(|_| BadTimeout)?;
    let timeout = match unit {
        "H" => Duration::from_secs(n * 3600),
        "M" => Duration::from_secs(n * 60),
        "S" => Duration::from_secs(n),
        "m" => Duration::from_millis(n),
        "u" => Duration::from_micros(n),
        "n" => Duration::from_nanos(n),
        _ => return Err(BadTimeout),
    };
    Ok(timeout.min(FOREVER))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_unit_is_read() {
        assert_eq!(timeout("2H"), Ok(Duration::from_secs(7200)));
        assert_eq!(timeout("3M"), Ok(Duration::from_secs(180)));
        assert_eq!(timeout("5S"), Ok(Duration::from_secs(5)));
        assert_eq!(timeout("250m"), Ok(Duration::from_millis(250)));
        assert_eq!(timeout("7u"), Ok(Duration::from_micros(7)));
        assert_eq!(timeout("9n"), Ok(Duration::from_nanos(9)));
        assert_eq!(timeout("0S"), Ok(Duration::ZERO));
        assert_eq!(timeout("00000010m"), Ok(Duration::from_millis(10)));
    }

    #[test]
    fn at_most_eight_digits() {
        assert_eq!(timeout("99999999S"), Ok(Duration::from_secs(99_999_999)));
        assert_eq!(timeout("123456789S"), Err(BadTimeout));
        assert_eq!(timeout("000000001S"), Err(BadTimeout));
    }

    #[test]
    fn a_unit_needs_digits_and_digits_need_a_unit() {
        assert_eq!(timeout(""), Err(BadTimeout));
        assert_eq!(timeout("S"), Err(BadTimeout));
        assert_eq!(timeout("10"), Err(BadTimeout));
        assert_eq!(timeout("1 S"), Err(BadTimeout));
        assert_eq!(timeout("1.5S"), Err(BadTimeout));
        assert_eq!(timeout("-1S"), Err(BadTimeout));
    }

    #[test]
    fn only_the_six_units_are_units() {
        for bad in ["5s", "5h", "5U", "5N", "5x", "5ms", "5SS"] {
            assert_eq!(timeout(bad), Err(BadTimeout), "{bad}");
        }
    }

    #[test]
    fn non_ascii_text_is_bad_and_does_not_panic() {
        // The last character is two bytes: splitting off one byte must not cut it.
        assert_eq!(timeout("5é"), Err(BadTimeout));
        assert_eq!(timeout("é"), Err(BadTimeout));
        assert_eq!(timeout("٣S"), Err(BadTimeout));
        // On the wire such bytes are not visible ASCII, which the header reader refuses first.
        let value = AsciiMetadataValue::try_from(&b"5\xc3\xa9"[..]);
        assert!(value.is_ok_and(|v| header_timeout(&v) == Err(BadTimeout)));
    }

    #[test]
    fn very_large_values_are_capped_at_forever() {
        assert_eq!(timeout("99999999H"), Ok(FOREVER));
        assert_eq!(timeout("99999999M"), Ok(FOREVER));
        assert!(timeout("99999999S").is_ok_and(|t| t < FOREVER));
        // Capped, the deadline is a time the clock can hold.
        let mut metadata = MetadataMap::new();
        metadata.insert("grpc-timeout", AsciiMetadataValue::from_static("99999999H"));
        assert!(deadline(&metadata).is_ok_and(|d| d.is_some()));
    }

    #[test]
    fn no_header_is_no_deadline_and_a_bad_one_is_invalid_argument() {
        assert_eq!(deadline(&MetadataMap::new()), Ok(None));
        let mut metadata = MetadataMap::new();
        metadata.insert("grpc-timeout", AsciiMetadataValue::from_static("soon"));
        assert_eq!(deadline(&metadata), Err(BadTimeout));
        assert_eq!(
            Status::from(BadTimeout).code(),
            tonic::Code::InvalidArgument
        );
    }
}
