//! The engine: the exact probability that a player who picks uniformly among all legal pairs clears
//! the table. Plain Rust, no async and no I/O, so that any front end can own one.
//!
//! # How it is fast
//! A position is the nine pile heights (0 to 4), so it has an index below 5^9 = 1,953,125. A random
//! deal reaches only a few hundred of those positions, so the work per deal is tiny and what costs
//! is instructions per position and memory latency (docs/performance.md has the figures). Hence:
//! - One [`Solver`] owns its index table for life and never clears it: the table maps a position
//!   to a slot of a small dense array, and a slot is believed only when that array names the same
//!   position there (`memo.rs`). Nothing is allocated or cleared per deal.
//! - A position is three machine words (`rules.rs`): the set of cards on top is one 36-bit word,
//!   so every legal pair of every rank is found with a few shifts and ANDs, and a move is one XOR
//!   of a mask worked out once per deal. The search runs on an explicit stack of such states
//!   (`search.rs`), taking each position's children in order, so the next step never waits on a
//!   memory load.
//! - A deal's index-table entries sit in one half of the table (positions of one parity), and a
//!   4 KiB filter of the positions this deal has seen answers "new" without touching the table at
//!   all, so the probes that would miss the cache are mostly never made (`memo.rs`). The entry a
//!   new position will write is prefetched on the way down to it, so the store at its end does not
//!   wait for the line (`search.rs`).
//! - Positions that can no longer be won are not explored: a rank with more cards left in one pile
//!   than in all the others together can never be paired off, and two ranks whose last two cards
//!   cross in the same two piles wait on each other forever. Such moves still count when the
//!   player picks among pairs, so the probability is unchanged; they are just known to be worth 0.

use crate::deal::Deal;

mod analysis;
mod exact;
mod memo;
mod rules;
mod search;

pub use analysis::{Analysis, Move, MoveOdds, Options, fraction_text, fraction_value};
pub use exact::{Fraction, FractionError};
pub use memo::STATES;

use memo::{Memo, Narrow, Wide};
use ruint::aliases::U320;
use rules::{State, Tables};
use search::Search;

/// What one solve found.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Solution {
    /// Probability that the random player clears the table, in `[0, 1]`.
    pub probability: f64,
    /// Distinct positions the search evaluated (the cost of this deal).
    pub states: u32,
}

/// How near a tie at the 6th decimal a computed probability must be to be settled exactly: far
/// wider than the error of the sums (about 1e-16), narrow enough that only ties and 1 deal in
/// about 500,000 besides pay for an exact solve.
const TIE_WINDOW: f64 = 1e-6;

/// Whether `p` is within [`TIE_WINDOW`] (in units of the 6th decimal) of halfway between two
/// 6-decimal numbers.
fn near_a_tie(p: f64) -> bool {
    let millionths = p * 1e6;
    (millionths - millionths.floor() - 0.5).abs() < TIE_WINDOW
}

/// A reusable solver. Allocates its tables once and never again: a 4 MiB index table, plus a wide
/// one, a dense array and its exact values that are only touched as far as the largest deal so
/// far needed them.
pub struct Solver {
    memo: Memo,
    tables: Tables,
    search: Search,
    /// The last deal's start and table width, for reading its results back afterwards.
    root: State,
    wide_in_use: bool,
    /// Whether the search prefetches each new position's index entry (`search.rs`): always,
    /// but for the benchmark that sets the engine with and without it side by side.
    prefetch: bool,
}

/// The tables are megabytes of numbers: only what the last solve left behind is worth printing.
impl std::fmt::Debug for Solver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Solver")
            .field("positions", &self.memo.len())
            .field("wide_in_use", &self.wide_in_use)
            .finish_non_exhaustive()
    }
}

impl Default for Solver {
    fn default() -> Self {
        Solver::new()
    }
}

impl Solver {
    /// Allocates the tables. Costs a few milliseconds; keep the solver and reuse it.
    pub fn new() -> Solver {
        Solver {
            memo: Memo::new(),
            tables: Tables::new(),
            search: Search::new(),
            root: State::default(),
            wide_in_use: false,
            prefetch: true,
        }
    }

    /// Turns the search's prefetch off or on: for the benchmark, which prints the engine with and
    /// without it in one run. Answers are the same either way.
    #[doc(hidden)]
    pub fn set_prefetch(&mut self, on: bool) {
        self.prefetch = on;
    }

    /// Solves one deal or position. Allocates nothing.
    ///
    /// A probability within a hair of a tie at the 6th decimal (the problem's output) is worked
    /// out exactly and returned as the double nearest the exact value: otherwise the last bits of
    /// a floating-point sum would decide how it prints. Ties are real (about 1 random deal in
    /// 3,500 is exactly, say, 3/128 = 0.0234375), and a solve near one costs about 1.5 solves.
    pub fn solve(&mut self, deal: &Deal) -> Solution {
        let (solution, _) = self.search::<false>(deal);
        if near_a_tie(solution.probability) {
            return self.solve_exact(deal).0;
        }
        solution
    }

    /// [`Solver::solve`] that also works out the probability as a fraction in lowest terms.
    /// Allocates nothing either.
    pub fn solve_exact(&mut self, deal: &Deal) -> (Solution, Fraction) {
        let (mut solution, fraction) = self.search::<true>(deal);
        if near_a_tie(solution.probability) {
            solution.probability = fraction.value();
        }
        (solution, fraction)
    }

    fn search<const EXACT: bool>(&mut self, deal: &Deal) -> (Solution, Fraction) {
        let (start, winnable) = self.tables.load(deal);
        self.root = start;
        self.wide_in_use = false;
        self.memo.start::<Narrow>();
        let pairs = start.cards() / 2;
        if start.key == 0 {
            let won = Solution {
                probability: 1.0,
                states: 1,
            };
            return (won, Fraction::reduced(U320::from(1u64), 0));
        }
        if !winnable {
            let lost = Solution {
                probability: 0.0,
                states: 1,
            };
            return (lost, Fraction::reduced(U320::ZERO, pairs));
        }
        let (tables, memo) = (&self.tables, &mut self.memo);
        let narrow = if self.prefetch {
            self.search.run::<Narrow, EXACT, true>(tables, memo, start)
        } else {
            self.search.run::<Narrow, EXACT, false>(tables, memo, start)
        };
        let probability = match narrow {
            Some(p) => p,
            None => {
                self.wide_in_use = true;
                // The wide table names every slot of the dense array, which holds every position
                // of one parity, more than any deal can reach: this search cannot run out.
                self.search
                    .run::<Wide, EXACT, true>(tables, memo, start)
                    .unwrap_or(f64::NAN)
            }
        };
        let solution = Solution {
            probability,
            // The start position is evaluated but not remembered.
            states: self.memo.len() as u32 + 1,
        };
        (solution, Fraction::reduced(self.search.exact, pairs))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deal(text: &str) -> Deal {
        Deal::parse(text).unwrap()
    }

    const SAMPLE: &str = "AS 9S 6C KS JC QH AC KH 7S QD JD KD QS TS JS 9H 6D TD AD 8S \
                          QC TH KC 8D 8C 9D TC 7C 9C 7H JH 7D 8H 6S AH 6H";

    #[test]
    fn solves_the_sample_like_the_judge() {
        let s = Solver::new().solve(&deal(SAMPLE));
        assert!((s.probability - 0.589314).abs() < 5e-7, "{}", s.probability);
        assert!(s.states > 1);
    }

    #[test]
    fn a_pile_of_one_rank_is_lost_at_once() {
        let sorted = "6S 6C 6D 6H 7S 7C 7D 7H 8S 8C 8D 8H 9S 9C 9D 9H TS TC TD TH \
                      JS JC JD JH QS QC QD QH KS KC KD KH AS AC AD AH";
        let s = Solver::new().solve(&deal(sorted));
        assert_eq!(s.probability, 0.0);
    }

    #[test]
    fn a_deal_too_big_for_the_narrow_table_is_solved_with_the_wide_one() {
        let mut small = Solver::new();
        small.memo.narrow_limit = 40;
        let mut normal = Solver::new();
        let mut rng = fastrand::Rng::with_seed(7);
        let mut overflowed = 0;
        for _ in 0..300 {
            let d = Deal::shuffled(&mut rng);
            let (a, b) = (small.solve(&d), normal.solve(&d));
            assert_eq!(a.probability.to_bits(), b.probability.to_bits(), "{d}");
            assert_eq!(a.states, b.states);
            overflowed += usize::from(b.states > 40);
        }
        assert!(overflowed > 10, "too few deals exercised the wide table");
    }

    #[test]
    fn analysis_reads_the_wide_table_as_it_reads_the_narrow_one() {
        let all = Options {
            exact: true,
            moves: true,
            line: true,
        };
        let mut small = Solver::new();
        small.memo.narrow_limit = 40;
        let mut normal = Solver::new();
        let mut rng = fastrand::Rng::with_seed(11);
        let mut wide = 0;
        for _ in 0..100 {
            let d = Deal::shuffled(&mut rng);
            let a = small.analyze(&d, all);
            assert_eq!(a, normal.analyze(&d, all), "{d}");
            wide += usize::from(small.wide_in_use);
        }
        assert!(wide > 10, "too few deals read the wide table");
    }

    #[test]
    fn exact_and_plain_solving_give_the_same_probability_and_states() {
        let mut rng = fastrand::Rng::with_seed(5);
        let (mut plain, mut exact) = (Solver::new(), Solver::new());
        exact.memo.narrow_limit = 200;
        for _ in 0..200 {
            let d = Deal::shuffled(&mut rng);
            let (with, fraction) = exact.solve_exact(&d);
            let without = plain.solve(&d);
            assert_eq!(with, without, "{d}");
            assert!((fraction.value() - with.probability).abs() <= 1e-14, "{d}");
        }
    }

    #[test]
    fn capacity_covers_every_reachable_position() {
        let solver = Solver::new();
        assert!(solver.memo.capacity() >= memo::SAME_PARITY_STATES);
        assert_eq!(memo::SAME_PARITY_STATES * 2 - 1, STATES);
    }
}
