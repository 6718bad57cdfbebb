//! What an answer's line looks like, wherever it is printed: `solve`, `client` and `rps` on
//! standard output, the daemon's plain HTTP API in a response body. One place, so that the same
//! answers are the same bytes whoever computed them and whoever asked.
//!
//! A probability is printed as Rust's `{:.N}` prints an `f64`: the exact binary value rounded to
//! N decimals, half to even (as C's printf does), not the half-up rounding of JavaScript's
//! `toFixed`.
//!
//! A Parquet output and the HTTP API's Arrow streams take columns instead (`columns`).

pub mod columns;

/// Decimals printed per deal's probability unless asked otherwise (6 matches the UVa judge).
pub const DEAL_PRECISION: u8 = 6;
/// Decimals per rps case's probability unless asked otherwise (FZU 2145's judge wants 1e-6).
pub const RPS_PRECISION: u8 = 10;
/// The most decimals anyone may ask for: 17 significant digits tell every `f64` apart.
pub const MAX_PRECISION: u8 = 17;

/// How `solve`, `client` and `rps` print each answer (to standard output).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    /// One probability per line, as the judges expect.
    #[default]
    Text,
    /// One JSON object per deal or case and line: index, probability or error, and for deals the
    /// analysis asked for.
    Json,
    /// One row per deal or case in a Parquet file (with --output NAME.parquet): index, id,
    /// probability (null when bad) and error (null when solved).
    Parquet,
}

/// One output line (without its newline) for a probability.
pub fn probability_line(p: f64, precision: u8) -> String {
    Probability(p, precision).to_string()
}

/// A probability as its line shows it, with `.1` decimals: written straight into an output by
/// [`Render::write_solved`], or made a line by [`probability_line`].
struct Probability(f64, u8);

impl std::fmt::Display for Probability {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut digits = [0u8; FAST_LEN];
        match self.fast(&mut digits) {
            // ASCII digits and a point only.
            Some(len) => {
                f.write_str(std::str::from_utf8(&digits[..len]).map_err(|_| std::fmt::Error)?)
            }
            None => write!(f, "{:.*}", usize::from(self.1), self.0),
        }
    }
}

/// Room for the longest [`Probability::fast`] line ("1." and [`FAST_MAX_PRECISION`] decimals)
/// and a newline.
const FAST_LEN: usize = 3 + FAST_MAX_PRECISION as usize;
/// The most decimals [`Probability::fast`] prints: with p <= 1, p * 10^9 is at most 1e9, which
/// an `f64` holds with an error under 2^-53 * 1e9 (about 1.1e-7), far inside [`TIE_MARGIN`].
const FAST_MAX_PRECISION: u8 = 9;
/// How far from a half the scaled value must be for its rounding to be the exact value's.
const TIE_MARGIN: f64 = 1e-6;

impl Probability {
    /// The line `{:.N}` prints, without `core::fmt`'s exact float formatting (a few per cent of
    /// `patience client`'s CPU): p * 10^N rounded to an integer, whose digits are the line's.
    /// The product is within 1.1e-7 of the exact p * 10^N, so the rounding is the exact value's
    /// whenever the product is not within [`TIE_MARGIN`] of a half; `None` then (and outside
    /// 0..=1, or past [`FAST_MAX_PRECISION`] decimals), for `core::fmt` to decide.
    fn fast(&self, out: &mut [u8; FAST_LEN]) -> Option<usize> {
        let (p, precision) = (self.0, self.1);
        if !(0.0..=1.0).contains(&p) || p.is_sign_negative() || precision > FAST_MAX_PRECISION {
            return None;
        }
        let scale = 10u64.pow(u32::from(precision));
        let scaled = p * scale as f64;
        let rounded = scaled.round();
        if ((scaled - rounded).abs() - 0.5).abs() < TIE_MARGIN {
            return None;
        }
        // An integer from 0 to 10^9: the cast is exact.
        let mut fraction = rounded as u64;
        let whole = fraction / scale;
        fraction %= scale;
        out[0] = b'0' + whole as u8;
        if precision == 0 {
            return Some(1);
        }
        out[1] = b'.';
        let len = 2 + usize::from(precision);
        for at in (2..len).rev() {
            out[at] = b'0' + (fraction % 10) as u8;
            fraction /= 10;
        }
        Some(len)
    }
}

/// One output line (without its newline) for a deal that could not be solved.
pub fn error_line(message: &str) -> String {
    format!("error: {message}")
}

/// One deal's line in `--format json`. Fields are printed in this order; absent ones are left out.
#[derive(Debug, serde::Serialize)]
pub struct JsonLine<'a> {
    /// Position of the deal in the whole run, from 0, bad deals included (as the API counts).
    pub index: u64,
    /// The item's id, when its input gave one (a Parquet input's `id`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub probability: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<&'a str>,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub analysis: Option<JsonAnalysis>,
}

/// The analysis fields of a JSON line; the optional ones only when asked for.
#[derive(Debug, serde::Serialize)]
pub struct JsonAnalysis {
    pub winnable: bool,
    pub states: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exact: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moves: Option<Vec<JsonMoveOdds>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<Vec<JsonMove>>,
}

/// A move as JSON: the two piles (1 to 9, lower first) and the rank removed.
#[derive(Debug, serde::Serialize)]
pub struct JsonMove {
    pub piles: [u32; 2],
    pub rank: String,
}

#[derive(Debug, serde::Serialize)]
pub struct JsonMoveOdds {
    pub piles: [u32; 2],
    pub rank: String,
    pub probability: f64,
}

impl JsonAnalysis {
    /// The fields `asked` for, from the engine's analysis: `solve`'s own, or the one `client` read
    /// from a daemon (`crate::wire`), so both commands print the same line. An exact fraction
    /// asked for but absent prints as empty text, as the wire has it.
    pub fn from_engine(a: &crate::solver::Analysis, asked: crate::solver::Options) -> JsonAnalysis {
        let piles = |m: &crate::solver::Move| m.piles.map(u32::from);
        JsonAnalysis {
            winnable: a.winnable,
            states: u64::from(a.states),
            exact: asked.exact.then(|| {
                a.exact
                    .as_ref()
                    .map(crate::solver::fraction_text)
                    .unwrap_or_default()
            }),
            moves: asked.moves.then(|| {
                a.moves
                    .iter()
                    .map(|m| JsonMoveOdds {
                        piles: piles(&m.play),
                        rank: m.play.rank.symbol().to_string(),
                        probability: m.probability,
                    })
                    .collect()
            }),
            line: asked.line.then(|| {
                a.line
                    .iter()
                    .map(|m| JsonMove {
                        piles: piles(m),
                        rank: m.rank.symbol().to_string(),
                    })
                    .collect()
            }),
        }
    }
}

/// One output line (without its newline) in `--format json`.
pub fn json_line(line: &JsonLine<'_>) -> String {
    // Serialising plain structs of numbers and strings cannot fail; keep a valid line if it did.
    serde_json::to_string(line)
        .unwrap_or_else(|e| format!("{{\"index\":{},\"error\":\"{e}\"}}", line.index))
}

/// Formats each deal's line for `solve` and `client` alike, so the two print the same bytes.
#[derive(Clone, Copy, Debug)]
pub struct Render {
    pub format: OutputFormat,
    pub precision: u8,
    /// What the user asked for, to tell an empty list from one not asked for.
    pub asked: crate::solver::Options,
}

/// A Parquet output takes rows (`crate::render::columns`), not lines; where a line is wanted all the same
/// (a message), it is the JSON line, which carries the same fields.
impl Render {
    /// The line of a solved deal; `analysis` is used in JSON only.
    pub fn solved(&self, index: u64, p: f64, analysis: Option<JsonAnalysis>) -> String {
        match self.format {
            OutputFormat::Text => probability_line(p, self.precision),
            OutputFormat::Json | OutputFormat::Parquet => json_line(&JsonLine {
                index,
                id: None,
                probability: Some(p),
                error: None,
                analysis,
            }),
        }
    }

    /// Writes [`Render::solved`]'s line and its newline into `out`: in plain text, without making
    /// a `String` of each line first (a printer writes one per item, in the hot loop of `solve`
    /// and `client`).
    pub fn write_solved(
        &self,
        out: &mut impl std::io::Write,
        index: u64,
        p: f64,
        analysis: Option<JsonAnalysis>,
    ) -> std::io::Result<()> {
        match self.format {
            OutputFormat::Text => {
                let probability = Probability(p, self.precision);
                let mut line = [0u8; FAST_LEN];
                match probability.fast(&mut line) {
                    Some(len) => {
                        line[len] = b'\n';
                        out.write_all(&line[..=len])
                    }
                    None => writeln!(out, "{probability}"),
                }
            }
            OutputFormat::Json | OutputFormat::Parquet => {
                writeln!(out, "{}", self.solved(index, p, analysis))
            }
        }
    }

    /// [`Render::solved`]'s line for an item with an id (in JSON; a text line has no room).
    pub fn solved_with_id(
        &self,
        index: u64,
        id: &str,
        p: f64,
        analysis: Option<JsonAnalysis>,
    ) -> String {
        match self.format {
            OutputFormat::Text => probability_line(p, self.precision),
            OutputFormat::Json | OutputFormat::Parquet => json_line(&JsonLine {
                index,
                id: Some(id),
                probability: Some(p),
                error: None,
                analysis,
            }),
        }
    }

    /// [`Render::failed`]'s line for an item that may have an id.
    pub fn failed_with_id(&self, index: u64, id: Option<&str>, message: &str) -> String {
        match self.format {
            OutputFormat::Text => error_line(message),
            OutputFormat::Json | OutputFormat::Parquet => json_line(&JsonLine {
                index,
                id,
                probability: None,
                error: Some(message),
                analysis: None,
            }),
        }
    }

    /// The line of a deal that has no probability.
    pub fn failed(&self, index: u64, message: &str) -> String {
        match self.format {
            OutputFormat::Text => error_line(message),
            OutputFormat::Json | OutputFormat::Parquet => json_line(&JsonLine {
                index,
                id: None,
                probability: None,
                error: Some(message),
                analysis: None,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rule the README states, on exact ties (k/2^7 has 7 decimals): half to even, as printf
    /// prints them (`printf '%.6f' 0.0078125` is 0.007812), where JavaScript's `toFixed` rounds
    /// up (0.007813).
    #[test]
    fn ties_round_half_to_even_like_printf() {
        assert_eq!(probability_line(0.0078125, 6), "0.007812");
        assert_eq!(probability_line(0.0234375, 6), "0.023438");
        assert_eq!(probability_line(0.0390625, 6), "0.039062");
        assert_eq!(probability_line(2.5, 0), "2");
        assert_eq!(probability_line(0.589_314_186_412_779_6, 6), "0.589314");
    }

    /// What `core::fmt` prints, the reference the fast path must match.
    fn by_core(p: f64, precision: u8) -> String {
        format!("{p:.*}", usize::from(precision))
    }

    /// The fast path against `core::fmt`'s exact formatting on every precision up to its last:
    /// random probabilities, ones a hair either side of every rounding boundary of the short
    /// precisions, the ends, and what it leaves to `core::fmt` (ties, outside 0..=1, NaN).
    #[test]
    fn the_fast_path_prints_what_core_fmt_prints() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut cases: Vec<f64> = vec![0.0, 1.0, f64::MIN_POSITIVE, 1.0 - f64::EPSILON, 0.5, 0.25];
        cases.extend((0..200_000).map(|_| (next() >> 11) as f64 / (1u64 << 53) as f64));
        for precision in 0..=3 {
            let scale = 10u64.pow(precision) as f64;
            for k in 0..=10u64.pow(precision) {
                let boundary = (k as f64 + 0.5) / scale;
                cases.extend([boundary, boundary.next_up(), boundary.next_down()]);
            }
        }
        for &p in &cases {
            for precision in 0..=MAX_PRECISION {
                assert_eq!(
                    probability_line(p, precision),
                    by_core(p, precision),
                    "{p:e} at {precision} decimals"
                );
                let mut written = Vec::new();
                Render {
                    format: OutputFormat::Text,
                    precision,
                    asked: Default::default(),
                }
                .write_solved(&mut written, 0, p, None)
                .unwrap();
                assert_eq!(written, format!("{}\n", by_core(p, precision)).into_bytes());
            }
        }
        for p in [-0.0, -0.25, 1.5, 2.5, f64::NAN, f64::INFINITY] {
            assert_eq!(probability_line(p, 6), by_core(p, 6), "{p}");
        }
    }
}
