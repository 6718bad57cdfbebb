//! The second game: FZU 2145 "Rock-Paper-Scissors Game", the probability that Maze wins when Fat
//! brother helps her as well as he can.
//!
//! # The rules as implemented
//! The original statement is lost; these rules are the ones seed 004 implements, checked against
//! an independent brute force (see `tests/rps.rs`).
//! - Maze, Fat brother and `n` other players. Each round everyone still in shows a gesture at once.
//!   Maze and the others pick at random, each with their own fixed probabilities of rock, paper
//!   and scissors (the input order). Fat brother chooses, to maximise the probability that Maze
//!   wins.
//! - Paper beats rock, scissors beats paper, rock beats scissors: gesture `g + 1` (mod 3) beats `g`.
//! - When exactly two distinct gestures show, everyone showing the beaten one is out: Maze, Fat
//!   brother and any number of others alike. One gesture or all three is a draw and the round is
//!   replayed.
//! - Maze wins when she is the only one left, Fat brother included. Once she is out she has lost.
//! - In each situation (who is still in) Fat brother keeps one gesture through the draws, which is
//!   optimal here, so a situation's value is the best over his gesture `g` of
//!   `P(not a draw, and then a win | g) / P(not a draw | g)`.
//!
//! # A game that never ends is never won
//! Some situations can only draw: a round with Maze always showing rock, one other always paper and
//! another always scissors shows all three gestures whatever Fat brother does. Such a situation is
//! never won, so its value is 0, and a gesture of Fat brother's that can only draw is worth 0 to
//! him. The seed divides by `1 - P(draw)` there and prints `nan` (also where a better gesture
//! exists: with `n = 0` and Maze always showing rock he shows scissors and she wins surely). The
//! solver never divides by zero: it adds up the probabilities of the rounds that are not draws,
//! rather than subtracting the draws from 1, so "only draws" is an exact test for 0.
//!
//! # Limits, and what larger ones would cost
//! A case has at most [`MAX_OTHERS`] = 15 other players, as the seed's arrays allow. The state of
//! the game is the set of players still in, so everything is indexed by subsets: with `N` the
//! limit, an [`RpsSolver`] holds `192 * 2^N` bytes of tables (24 `f64`s per subset; 6 MiB for
//! `N = 15`, 192 MiB for 20) and solves an `n`-player case in time `O(n * 2^n)` (the seed's
//! enumeration of subsets of subsets is `O(3^n)`). A [`Case`] keeps its players inline, in
//! `24 * (N + 1) + 8` bytes, so reading one allocates nothing per case. Raising the limit is a
//! matter of this constant only, paid for in memory by every solver.
//!
//! # Probabilities
//! Each probability must be a finite number in `[0, 1]`, and each player's three must sum to 1
//! within [`SUM_TOLERANCE`]. The numbers are used as written, never rescaled, and yet a triple
//! that sums to 0.999 is answered exactly as if it had been rescaled to sum to 1: a situation's
//! value is a ratio of two sums over rounds of the same players, and scaling one player's triple
//! scales every term of both alike. The seed divides by `1 - P(draw)` instead, so it agrees only
//! where every triple sums to exactly 1 (Maze alone with 0.333 0.333 0.333: 0.5 here, 0.49925
//! from the seed).

use std::fmt;

pub mod reader;
pub mod solver;

pub use reader::{BadCase, CaseFileError, CaseReader, Expected};
pub use solver::RpsSolver;

/// Most other players a case may have (`n`); the seed's arrays allow 15. Every solver's tables
/// grow with `2^MAX_OTHERS` (see the module docs).
pub const MAX_OTHERS: usize = 15;

/// How far a player's three probabilities may sum from 1.
///
/// Inputs are written with three decimals, so each number may be 0.0005 from the probability it
/// stands for and a triple may sum to anywhere in `1 ± 0.0015` (0.333 0.333 0.333 sums to 0.999);
/// every triple of the corpus sums to exactly 1.000. 0.005 accepts all of those with room to
/// spare, yet rejects a slip of 0.01 in any one number, the smallest mistake in a second decimal.
/// Triples rounded to two decimals (0.33 0.33 0.33, off by 0.01) are rejected with them: at that
/// size a rounding can no longer be told from a slip.
pub const SUM_TOLERANCE: f64 = 0.005;

/// A gesture, in the order of the input's three numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Gesture {
    Rock,
    Paper,
    Scissors,
}

impl Gesture {
    /// All gestures in input order; each beats the one before it, and rock beats scissors.
    pub const ALL: [Gesture; 3] = [Gesture::Rock, Gesture::Paper, Gesture::Scissors];

    /// The gesture's place in a probability triple.
    pub fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for Gesture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Gesture::Rock => "rock",
            Gesture::Paper => "paper",
            Gesture::Scissors => "scissors",
        })
    }
}

/// Whose probabilities an error is about, as the input lists them: Maze first, then the others
/// numbered from 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Who {
    Maze,
    /// The k-th other player, 1-based (the k-th line after Maze's). A `u64` because a case that
    /// claims more players than [`MAX_OTHERS`] is still read line by line.
    Player(u64),
}

impl fmt::Display for Who {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Who::Maze => f.write_str("Maze"),
            Who::Player(k) => write!(f, "player {k}"),
        }
    }
}

pub use crate::token::Token;

/// Long enough for a whole line of three probabilities with some slack.
const TOKEN_CHARS: usize = 24;

pub(crate) fn quote(raw: &str) -> Token {
    Token::cut(raw, TOKEN_CHARS)
}

/// A sum shown in an error: rounded to nine decimals, so that 0.1 + 0.2 + 0.6 reads as 0.9 and
/// not as the float noise around it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sum(pub f64);

impl fmt::Display for Sum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", (self.0 * 1e9).round() / 1e9)
    }
}

/// Everything that can be wrong with one case. Each variant says whose numbers and which token;
/// the reader adds the case and line numbers (see [`BadCase`]).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum CaseError {
    /// The line where a case should start does not hold a whole number alone. How many lines of
    /// the case follow is then unknown, so the reader skipped to the next line holding a single
    /// token.
    #[error(
        "{token} is not a number of other players (want a whole number alone on its line); \
         skipped {skipped} {} to the next line holding a single number",
        lines(*skipped)
    )]
    Others { token: Token, skipped: u64 },
    /// More other players than the tables are built for.
    #[error("{n} other players; at most {MAX_OTHERS} are supported")]
    TooManyOthers { n: u64 },
    /// A player's line without exactly three tokens.
    #[error(
        "{who}'s line has {found} tokens, {line}; it needs 3 probabilities (rock, paper, scissors)"
    )]
    Tokens { who: Who, found: usize, line: Token },
    #[error("{who}'s {gesture}: {token} is not a number")]
    NotANumber {
        who: Who,
        gesture: Gesture,
        token: Token,
    },
    #[error("{who}'s {gesture}: {token} is not a probability (want a number from 0 to 1)")]
    NotAProbability {
        who: Who,
        gesture: Gesture,
        token: Token,
    },
    #[error("{who}'s probabilities sum to {sum}; they must sum to 1 (within {SUM_TOLERANCE})")]
    Sum { who: Who, sum: Sum },
    /// A line holding a single number where this player's line was due: the case is short, and
    /// that line is taken for the start of the next case.
    #[error(
        "{who}'s line is missing: this line holds a single number, so the next case starts here"
    )]
    Missing { who: Who },
    /// A line of three after the `n + 1` of a case that is not the last, alone before the next
    /// case's start: the case has a line too many, or its `n` is one too small.
    #[error(
        "a line more than its {n} other players and Maze, where the next case's number of other \
         players was due (a line too many, or n too small); the next case starts at the next line \
         holding a single number"
    )]
    Extra { n: u64 },
}

fn lines(n: u64) -> &'static str {
    if n == 1 { "line" } else { "lines" }
}

/// One validated case: Maze's probabilities and those of up to [`MAX_OTHERS`] other players,
/// each a triple (rock, paper, scissors) of numbers in `[0, 1]` summing to 1 within
/// [`SUM_TOLERANCE`]. The players live in a fixed array, so a case is `Copy` and costs no heap.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Case {
    others: usize,
    maze: [f64; 3],
    /// Rows past `others` are zero, so equal cases compare equal.
    players: [[f64; 3]; MAX_OTHERS],
}

impl Case {
    /// Checks every triple and builds the case.
    pub fn new(maze: [f64; 3], others: &[[f64; 3]]) -> Result<Case, CaseError> {
        if others.len() > MAX_OTHERS {
            return Err(CaseError::TooManyOthers {
                n: others.len() as u64,
            });
        }
        check_triple(Who::Maze, maze)?;
        let mut players = [[0.0; 3]; MAX_OTHERS];
        for (k, (row, &triple)) in players.iter_mut().zip(others).enumerate() {
            check_triple(Who::Player(k as u64 + 1), triple)?;
            *row = triple;
        }
        Ok(Case {
            others: others.len(),
            maze,
            players,
        })
    }

    /// Maze's probabilities of rock, paper and scissors.
    pub fn maze(&self) -> [f64; 3] {
        self.maze
    }

    /// The other players' probabilities, in input order; `others().len()` is the input's `n`.
    pub fn others(&self) -> &[[f64; 3]] {
        &self.players[..self.others]
    }
}

impl fmt::Display for Case {
    /// The case in the input format (`n`, Maze's line, one line per other player), with every
    /// number written so that it reads back exactly.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.others)?;
        for [r, p, s] in std::iter::once(&self.maze).chain(self.others()) {
            writeln!(f, "{r} {p} {s}")?;
        }
        Ok(())
    }
}

/// Reads one probability token: a finite number in `[0, 1]`.
fn probability(who: Who, gesture: Gesture, token: &str) -> Result<f64, CaseError> {
    let value: f64 = token.parse().map_err(|_| CaseError::NotANumber {
        who,
        gesture,
        token: quote(token),
    })?;
    // `contains` is false for NaN and the infinities too.
    if !(0.0..=1.0).contains(&value) {
        return Err(CaseError::NotAProbability {
            who,
            gesture,
            token: quote(token),
        });
    }
    Ok(value)
}

/// Reads a player's line: three probabilities that sum to 1.
fn parse_triple(who: Who, line: &str) -> Result<[f64; 3], CaseError> {
    let found = line.split_whitespace().count();
    if found != 3 {
        return Err(CaseError::Tokens {
            who,
            found,
            line: quote(line.trim()),
        });
    }
    let mut triple = [0.0; 3];
    for ((slot, token), gesture) in triple
        .iter_mut()
        .zip(line.split_whitespace())
        .zip(Gesture::ALL)
    {
        *slot = probability(who, gesture, token)?;
    }
    check_sum(who, triple)?;
    Ok(triple)
}

/// The checks of [`parse_triple`] for numbers that did not come as text.
fn check_triple(who: Who, triple: [f64; 3]) -> Result<(), CaseError> {
    for (value, gesture) in triple.into_iter().zip(Gesture::ALL) {
        if !(0.0..=1.0).contains(&value) {
            return Err(CaseError::NotAProbability {
                who,
                gesture,
                token: quote(&value.to_string()),
            });
        }
    }
    check_sum(who, triple)
}

fn check_sum(who: Who, triple: [f64; 3]) -> Result<(), CaseError> {
    let sum = triple.iter().sum::<f64>();
    if (sum - 1.0).abs() <= SUM_TOLERANCE {
        Ok(())
    } else {
        Err(CaseError::Sum { who, sum: Sum(sum) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_case_keeps_its_numbers_and_pads_with_zeros() {
        let case = Case::new([0.5, 0.25, 0.25], &[[1.0, 0.0, 0.0], [0.2, 0.3, 0.5]]).unwrap();
        assert_eq!(case.maze(), [0.5, 0.25, 0.25]);
        assert_eq!(case.others(), &[[1.0, 0.0, 0.0], [0.2, 0.3, 0.5]]);
        assert!(case.players[2..].iter().all(|row| *row == [0.0; 3]));
        assert_eq!(case.to_string(), "2\n0.5 0.25 0.25\n1 0 0\n0.2 0.3 0.5\n");
    }

    #[test]
    fn new_rejects_bad_numbers_naming_whose_and_which() {
        let good = [1.0 / 3.0; 3];
        assert_eq!(
            Case::new(good, &[good, [0.5, -0.5, 1.0]])
                .unwrap_err()
                .to_string(),
            "player 2's paper: \"-0.5\" is not a probability (want a number from 0 to 1)"
        );
        assert_eq!(
            Case::new([f64::NAN, 0.5, 0.5], &[])
                .unwrap_err()
                .to_string(),
            "Maze's rock: \"NaN\" is not a probability (want a number from 0 to 1)"
        );
        assert_eq!(
            Case::new(good, &[[0.1, 0.2, 0.6]]).unwrap_err().to_string(),
            "player 1's probabilities sum to 0.9; they must sum to 1 (within 0.005)"
        );
        assert_eq!(
            Case::new(good, &[good; MAX_OTHERS + 1]).unwrap_err(),
            CaseError::TooManyOthers { n: 16 }
        );
        assert!(Case::new(good, &[good; MAX_OTHERS]).is_ok());
    }

    #[test]
    fn sums_within_the_tolerance_pass_and_others_fail() {
        let sums = |t: [f64; 3]| check_sum(Who::Maze, t).is_ok();
        assert!(sums([0.333, 0.333, 0.333]));
        assert!(sums([0.334, 0.333, 0.334]));
        assert!(sums([0.143, 0.143, 0.714]));
        assert!(!sums([0.33, 0.33, 0.33]));
        assert!(!sums([0.34, 0.34, 0.33]));
        assert!(!sums([0.5, 0.5, 0.5]));
    }

    #[test]
    fn probability_tokens_must_be_finite_numbers_in_range() {
        let p = |t: &str| probability(Who::Player(3), Gesture::Scissors, t);
        assert_eq!(p("0.125"), Ok(0.125));
        assert_eq!(p("1"), Ok(1.0));
        assert_eq!(p(".5"), Ok(0.5));
        assert_eq!(p("5e-1"), Ok(0.5));
        for bad in ["1.0001", "-0.001", "inf", "nan"] {
            assert!(
                matches!(p(bad), Err(CaseError::NotAProbability { .. })),
                "{bad}"
            );
        }
        assert_eq!(
            p("0,5").unwrap_err().to_string(),
            "player 3's scissors: \"0,5\" is not a number"
        );
    }

    #[test]
    fn long_and_hostile_tokens_print_short_and_escaped() {
        let long = "9".repeat(1000);
        assert_eq!(quote(&long).to_string(), format!("\"{}…\"", "9".repeat(24)));
        assert_eq!(quote("a\u{1b}[2J").to_string(), "\"a\\u{1b}[2J\"");
    }
}
