//! Conversions between the engine's types and the wire's, in one place, so that the service, the
//! client and the JSON output agree on what every field means.
//!
//! Engine to wire cannot fail. Wire to engine can: the client reads what a daemon sent, and a
//! daemon may be older, newer or broken, so every field is checked, and [`MalformedAnalysis`]
//! names the first one that does not fit rather than printing a line `solve` never would.

mod rps;
pub use rps::WireCaseError;

use crate::deal::{Deal, DealError, DealErrorKind, Rank};
use crate::proto;
use crate::solver::{Analysis, Fraction, FractionError, Move, MoveOdds, Options};

/// The response header of a stream that tells what its requests may carry beyond the first
/// version of the API, comma-separated; an older server sends none and ignores those fields.
pub const FEATURES_HEADER: &str = "patience-features";

/// In [`FEATURES_HEADER`]: the server reads `SolveRequest.packed_deals`.
pub const PACKED_DEALS: &str = "packed-deals";

/// A deal (or position) as its cards' text, which the service reads back with the same parser.
impl From<&Deal> for proto::Deal {
    fn from(deal: &Deal) -> proto::Deal {
        proto::Deal {
            id: String::new(),
            cards: deal.to_string(),
        }
    }
}

impl From<&Move> for proto::Move {
    fn from(m: &Move) -> proto::Move {
        proto::Move {
            pile_a: u32::from(m.piles[0]),
            pile_b: u32::from(m.piles[1]),
            rank: m.rank.symbol().to_string(),
        }
    }
}

impl From<&MoveOdds> for proto::MoveOdds {
    fn from(m: &MoveOdds) -> proto::MoveOdds {
        proto::MoveOdds {
            r#move: Some(proto::Move::from(&m.play)),
            probability: m.probability,
        }
    }
}

/// Fields not asked for are empty, as the proto documents. The probability is not part of it: on
/// the wire it is the `Result`'s outcome.
impl From<&Analysis> for proto::Analysis {
    fn from(a: &Analysis) -> proto::Analysis {
        proto::Analysis {
            winnable: a.winnable,
            exact: a
                .exact
                .as_ref()
                .map(Fraction::to_string)
                .unwrap_or_default(),
            moves: a.moves.iter().map(proto::MoveOdds::from).collect(),
            line: a.line.iter().map(proto::Move::from).collect(),
            states: u64::from(a.states),
        }
    }
}

impl From<&DealError> for proto::DealError {
    fn from(e: &DealError) -> proto::DealError {
        let code = match e.kind() {
            DealErrorKind::BadCard => proto::ErrorCode::BadCard,
            DealErrorKind::CardCount => proto::ErrorCode::CardCount,
            DealErrorKind::DuplicateCard => proto::ErrorCode::DuplicateCard,
        };
        proto::DealError {
            code: code as i32,
            message: e.to_string(),
        }
    }
}

impl From<proto::AnalysisOptions> for Options {
    fn from(o: proto::AnalysisOptions) -> Options {
        Options {
            exact: o.exact,
            moves: o.moves,
            line: o.line,
        }
    }
}

impl From<Options> for proto::AnalysisOptions {
    fn from(o: Options) -> proto::AnalysisOptions {
        proto::AnalysisOptions {
            exact: o.exact,
            moves: o.moves,
            line: o.line,
        }
    }
}

/// What is wrong with an analysis a daemon sent. The messages complete "it sent a malformed
/// answer: ...", which the client prints.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MalformedAnalysis {
    #[error("a move's odds came without the move")]
    OddsWithoutMove,
    #[error("a move's rank {0:?} is not one of 6789TJQKA")]
    Rank(String),
    #[error("a move's pile {0} is not one of 1 to 9")]
    Pile(u32),
    #[error("the exact probability {text:?} is not n/d with d > 0")]
    Exact {
        text: String,
        #[source]
        source: FractionError,
    },
    #[error("{0} states is more than a solver counts")]
    States(u64),
}

impl TryFrom<&proto::Move> for Move {
    type Error = MalformedAnalysis;

    fn try_from(m: &proto::Move) -> Result<Move, MalformedAnalysis> {
        Ok(Move {
            piles: [pile(m.pile_a)?, pile(m.pile_b)?],
            rank: rank(&m.rank)?,
        })
    }
}

impl TryFrom<&proto::MoveOdds> for MoveOdds {
    type Error = MalformedAnalysis;

    fn try_from(m: &proto::MoveOdds) -> Result<MoveOdds, MalformedAnalysis> {
        let play = m
            .r#move
            .as_ref()
            .ok_or(MalformedAnalysis::OddsWithoutMove)?;
        Ok(MoveOdds {
            play: Move::try_from(play)?,
            probability: m.probability,
        })
    }
}

/// The wire carries a deal's probability beside its analysis (as the `Result`'s outcome), so the
/// engine's [`Analysis`] is made from both (a function, not a `TryFrom`: the engine's crate owns
/// `Analysis`, and a tuple is nobody's). An empty `exact` is one not asked for.
pub fn analysis(probability: f64, a: &proto::Analysis) -> Result<Analysis, MalformedAnalysis> {
    let exact = match a.exact.as_str() {
        "" => None,
        text => Some(
            text.parse::<Fraction>()
                .map_err(|source| MalformedAnalysis::Exact {
                    text: text.to_string(),
                    source,
                })?,
        ),
    };
    Ok(Analysis {
        probability,
        states: u32::try_from(a.states).map_err(|_| MalformedAnalysis::States(a.states))?,
        winnable: a.winnable,
        exact,
        moves: a
            .moves
            .iter()
            .map(MoveOdds::try_from)
            .collect::<Result<_, _>>()?,
        line: a
            .line
            .iter()
            .map(Move::try_from)
            .collect::<Result<_, _>>()?,
    })
}

/// A pile as the engine numbers it, 1 to 9.
fn pile(n: u32) -> Result<u8, MalformedAnalysis> {
    u8::try_from(n)
        .ok()
        .filter(|p| (1..=9).contains(p))
        .ok_or(MalformedAnalysis::Pile(n))
}

/// A rank as [`Rank::symbol`] writes it: one character, upper case.
fn rank(text: &str) -> Result<Rank, MalformedAnalysis> {
    let mut chars = text.chars();
    let found = match (chars.next(), chars.next()) {
        (Some(c), None) => Rank::ALL.into_iter().find(|r| r.symbol() == c),
        _ => None,
    };
    found.ok_or_else(|| MalformedAnalysis::Rank(text.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deal::Deal;
    use crate::solver::Solver;

    const ALL: Options = Options {
        exact: true,
        moves: true,
        line: true,
    };

    fn round_trip(a: &Analysis) -> Result<Analysis, MalformedAnalysis> {
        analysis(a.probability, &proto::Analysis::from(a))
    }

    #[test]
    fn analyses_of_real_deals_come_back_from_the_wire_unchanged() {
        let mut solver = Solver::new();
        let mut rng = fastrand::Rng::with_seed(1637);
        let mut deals: Vec<Deal> = (0..60).map(|_| Deal::shuffled(&mut rng)).collect();
        for text in [
            // A won position, a lost one, and one a few moves from the end.
            "/ / / / / / / /",
            "6S 6C 6D 6H 7S 7C 7D 7H 8S 8C 8D 8H 9S 9C 9D 9H TS TC TD TH \
             JS JC JD JH QS QC QD QH KS KC KD KH AS AC AD AH",
            "7S 6S / 6C 6H / 7C 6D / / / / / /",
        ] {
            deals.extend(Deal::parse(text).ok());
        }
        assert_eq!(deals.len(), 63, "a fixed deal did not parse");
        let (mut moves, mut lines, mut lost) = (0, 0, 0);
        for deal in &deals {
            for options in [ALL, Options::default()] {
                let a = solver.analyze(deal, options);
                assert_eq!(round_trip(&a).as_ref(), Ok(&a), "{deal}");
                moves += a.moves.len();
                lines += usize::from(!a.line.is_empty());
                lost += usize::from(!a.winnable);
            }
        }
        // The deals exercised every field.
        assert!(
            moves > 100 && lines > 10 && lost > 2,
            "{moves} {lines} {lost}"
        );
    }

    #[test]
    fn deal_errors_keep_their_kind_and_message() {
        for (text, code) in [
            ("XX", proto::ErrorCode::BadCard),
            ("AS", proto::ErrorCode::CardCount),
            ("AS AS / / / / / / / /", proto::ErrorCode::DuplicateCard),
        ] {
            let Err(e) = Deal::parse(text) else {
                panic!("{text} parsed");
            };
            let wire = proto::DealError::from(&e);
            assert_eq!(wire.code, code as i32, "{text}");
            assert_eq!(wire.message, e.to_string());
        }
    }

    #[test]
    fn options_mean_the_same_on_both_sides() {
        let o = Options {
            exact: true,
            moves: false,
            line: true,
        };
        assert_eq!(Options::from(proto::AnalysisOptions::from(o)), o);
    }

    fn sample() -> proto::Analysis {
        let play = proto::Move {
            pile_a: 1,
            pile_b: 9,
            rank: "T".into(),
        };
        proto::Analysis {
            winnable: true,
            exact: "1/2".into(),
            moves: vec![proto::MoveOdds {
                r#move: Some(play.clone()),
                probability: 0.5,
            }],
            line: vec![play],
            states: 7,
        }
    }

    fn malformed(change: impl FnOnce(&mut proto::Analysis)) -> Option<MalformedAnalysis> {
        let mut a = sample();
        change(&mut a);
        analysis(0.5, &a).err()
    }

    #[test]
    fn the_sample_is_well_formed() {
        assert_eq!(malformed(|_| {}), None);
        assert_eq!(malformed(|a| a.exact.clear()), None);
        assert_eq!(malformed(|a| a.states = u64::from(u32::MAX)), None);
    }

    #[test]
    fn odds_without_their_move_are_malformed() {
        let e = malformed(|a| a.moves[0].r#move = None);
        assert_eq!(e, Some(MalformedAnalysis::OddsWithoutMove));
        // The client's message, which tests of the client look for.
        assert_eq!(
            MalformedAnalysis::OddsWithoutMove.to_string(),
            "a move's odds came without the move"
        );
    }

    #[test]
    fn ranks_are_the_nine_symbols_only() {
        for bad in ["", "X", "t", "10", "TT", "5", "é"] {
            let e = malformed(|a| a.line[0].rank = bad.into());
            assert_eq!(e, Some(MalformedAnalysis::Rank(bad.into())), "{bad:?}");
            let e = malformed(|a| {
                if let Some(m) = a.moves[0].r#move.as_mut() {
                    m.rank = bad.into();
                }
            });
            assert_eq!(e, Some(MalformedAnalysis::Rank(bad.into())), "{bad:?}");
        }
        for good in "6789TJQKA".chars() {
            assert_eq!(malformed(|a| a.line[0].rank = good.to_string()), None);
        }
    }

    #[test]
    fn piles_are_one_to_nine() {
        for bad in [0, 10, 256, 257, u32::MAX] {
            let e = malformed(|a| a.line[0].pile_a = bad);
            assert_eq!(e, Some(MalformedAnalysis::Pile(bad)), "{bad}");
            let e = malformed(|a| {
                if let Some(m) = a.moves[0].r#move.as_mut() {
                    m.pile_b = bad;
                }
            });
            assert_eq!(e, Some(MalformedAnalysis::Pile(bad)), "{bad}");
        }
    }

    #[test]
    fn exact_is_n_over_d_with_d_above_zero() {
        for (bad, source) in [
            ("1", FractionError::NoSlash),
            ("0.5", FractionError::NoSlash),
            ("a/2", FractionError::Numerator),
            ("1/", FractionError::Denominator),
            ("1/0", FractionError::ZeroDenominator),
        ] {
            let e = malformed(|a| a.exact = bad.into());
            let want = MalformedAnalysis::Exact {
                text: bad.into(),
                source,
            };
            assert_eq!(e, Some(want), "{bad:?}");
        }
    }

    #[test]
    fn states_must_fit_a_solver_count() {
        let over = u64::from(u32::MAX) + 1;
        assert_eq!(
            malformed(|a| a.states = over),
            Some(MalformedAnalysis::States(over))
        );
    }
}
