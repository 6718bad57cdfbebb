//! Text from a client or a file, quoted in an error message and made safe to print: control and
//! invisible characters are escaped and long text is cut, so a hostile megabyte-long token costs a
//! short line, not a flooded log. Both games' errors quote their input this way.

use std::fmt;

/// A quoted token; each game decides how much of its input is worth showing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Token(String);

impl Token {
    /// `raw`, cut to `max_chars` characters (and `…` when it was longer).
    pub fn cut(raw: &str, max_chars: usize) -> Token {
        let mut shown: String = raw.chars().take(max_chars).collect();
        if raw.chars().nth(max_chars).is_some() {
            shown.push('…');
        }
        Token(shown)
    }
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Debug formatting quotes the text and escapes control and invisible characters.
        write!(f, "{:?}", self.0)
    }
}
