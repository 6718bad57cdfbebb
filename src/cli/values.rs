//! What a flag's value may be, parsed, and said in words when it is not: addresses, whole
//! numbers in a range, durations, durations that can be `off`.

use std::num::NonZeroUsize;

/// An address to listen on: an IP address and port, or a host name and port, resolved now.
pub(super) fn parse_listen_addr(text: &str) -> Result<std::net::SocketAddr, String> {
    use std::net::ToSocketAddrs as _;
    if let Ok(addr) = text.parse() {
        return Ok(addr);
    }
    let example = "use HOST:PORT or IP:PORT, such as localhost:50051, 0.0.0.0:50051 or [::]:50051";
    if !text.contains(':') {
        return Err(format!("{text:?} has no port; {example}"));
    }
    let found: Vec<std::net::SocketAddr> = text
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {text:?} ({e}); {example}"))?
        .collect();
    found
        .iter()
        .find(|a| a.is_ipv4())
        .or_else(|| found.first())
        .copied()
        .ok_or_else(|| format!("{text:?} resolves to no address; {example}"))
}

/// An unsigned integer type a number flag holds, with its largest value.
pub(super) trait Whole: TryFrom<u128> + Clone + Send + Sync + 'static {
    const MAX: u128;
}

impl Whole for u8 {
    const MAX: u128 = u8::MAX as u128;
}

impl Whole for u32 {
    const MAX: u128 = u32::MAX as u128;
}

impl Whole for u64 {
    const MAX: u128 = u64::MAX as u128;
}

impl Whole for usize {
    const MAX: u128 = usize::MAX as u128;
}

/// For [`whole`]: as large as the type holds.
pub(super) const NO_MAX: u128 = u128::MAX;

/// A number flag's parser: a whole number from `min` to `max`, and when the text is not one, what
/// would be, in words (clap's own parsers pass on Rust's, such as "number would be zero for
/// non-zero type" or "invalid digit found in string").
pub(super) fn whole<T: Whole>(min: u128, max: u128) -> impl Fn(&str) -> Result<T, String> + Clone {
    move |text| {
        let wanted = match (min, max) {
            (0, max) if max >= T::MAX => match text.trim().parse::<u128>() {
                // Only a number past the type's largest tells where the range ends.
                Ok(_) => format!("must be a whole number of at most {}", T::MAX),
                Err(_) => "must be a whole number".to_string(),
            },
            (min, max) if max >= T::MAX => format!("must be a whole number of at least {min}"),
            (min, max) => format!("must be a whole number from {min} to {max}"),
        };
        text.trim()
            .parse::<u128>()
            .ok()
            .filter(|n| (min..=max.min(T::MAX)).contains(n))
            .and_then(|n| T::try_from(n).ok())
            .ok_or(wanted)
    }
}

/// A count of threads or connections: a whole number of at least 1.
pub(super) fn at_least_one(text: &str) -> Result<NonZeroUsize, String> {
    whole::<usize>(1, NO_MAX)(text).and_then(|n| {
        NonZeroUsize::new(n).ok_or_else(|| "must be a whole number of at least 1".to_string())
    })
}

/// Reads a duration such as `30s`, `500ms`, `2m`, `12h`, `7d` or a plain number of seconds.
pub(super) fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    let text = text.trim();
    let (number, scale) = if let Some(n) = text.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = text.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = text.strip_suffix('m') {
        (n, 60.0)
    } else if let Some(n) = text.strip_suffix('h') {
        (n, 3600.0)
    } else if let Some(n) = text.strip_suffix('d') {
        (n, 86400.0)
    } else {
        (text, 1.0)
    };
    let value: f64 = number
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a duration (try 30s, 500ms or 2m)"))?;
    std::time::Duration::try_from_secs_f64(value * scale)
        .map_err(|_| format!("{text:?} is not a duration (try 30s, 500ms or 2m)"))
}

/// A duration flag that can be `off` (a plain `Option` would make clap treat the flag itself as
/// optional, with no way to spell "off").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MaybeDuration(pub Option<std::time::Duration>);

/// [`parse_duration`], or `off` (also `0`) for none.
pub(super) fn parse_optional_duration(text: &str) -> Result<MaybeDuration, String> {
    match text.trim() {
        "off" | "none" => Ok(MaybeDuration(None)),
        other => parse_duration(other).map(|d| MaybeDuration(Some(d).filter(|d| !d.is_zero()))),
    }
}

/// A byte count that can be `off` (see [`MaybeDuration`] for why not a plain `Option`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MaybeBytes(pub Option<usize>);

/// A whole number of bytes, or `off` for none.
pub(super) fn parse_optional_bytes(text: &str) -> Result<MaybeBytes, String> {
    match text.trim() {
        "off" | "none" => Ok(MaybeBytes(None)),
        other => whole::<usize>(0, NO_MAX)(other)
            .map(|n| MaybeBytes(Some(n)))
            .map_err(|e| format!("{e}, or off")),
    }
}
