//! Everything beyond the one probability: whether a deal can be won at all, the odds of every
//! move, a winning line, and the probability as an exact fraction.
//!
//! [`Solver::solve`] leaves the probability of every position it evaluated in its table, and a
//! position it did not evaluate below one it did is one the pruning knew to be lost. So the move
//! odds are table lookups, the exact fraction comes from the search itself (`exact.rs`), and the
//! line walks only the winning positions (those with a probability above 0), which the table
//! already lists. Nothing here runs unless a caller asks for it, so plain solving keeps its speed;
//! the line allocates freely.

use std::collections::HashMap;

use super::Solver;
use super::exact::Fraction;
use super::rules::State;
use crate::deal::{Deal, Rank};

/// What to work out beyond the probability. Each costs extra time only when set.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// The probability as a fraction in lowest terms.
    pub exact: bool,
    /// Every legal move with the probability after making it.
    pub moves: bool,
    /// One full winning line, the one a random player is most likely to follow.
    pub line: bool,
}

/// One move: the top cards of two piles, of the same rank, are removed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Move {
    /// The two piles, numbered 1 to 9 as in the input, lower first.
    pub piles: [u8; 2],
    /// The rank of the two cards removed.
    pub rank: Rank,
}

/// A legal move and the random player's chance of winning after making it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MoveOdds {
    pub play: Move,
    pub probability: f64,
}

/// Everything known about one deal or position.
#[derive(Clone, Debug, PartialEq)]
pub struct Analysis {
    /// Probability that the random player clears the table (the plain answer).
    pub probability: f64,
    /// Positions the search evaluated.
    pub states: u32,
    /// Whether some sequence of moves clears the table. A player who chooses well then wins for
    /// sure, and exactly then the random player's probability is above 0.
    pub winnable: bool,
    /// The probability as a fraction in lowest terms, when asked.
    pub exact: Option<Fraction>,
    /// Every legal move, the best first (ties in pile order), when asked.
    pub moves: Vec<MoveOdds>,
    /// A winning line, when asked and winnable: moves that clear the table, in order.
    pub line: Vec<Move>,
}

impl Solver {
    /// Solves a deal or position and works out what `options` ask for.
    pub fn analyze(&mut self, deal: &Deal, options: Options) -> Analysis {
        let (solution, exact) = if options.exact {
            let (solution, exact) = self.solve_exact(deal);
            (solution, Some(exact))
        } else {
            (self.solve(deal), None)
        };
        let root = self.root;
        let mut analysis = Analysis {
            probability: solution.probability,
            states: solution.states,
            winnable: solution.probability > 0.0,
            exact,
            moves: Vec::new(),
            line: Vec::new(),
        };
        if options.moves {
            let (legal, n) = self.tables.legal(&root);
            analysis.moves = legal[..n]
                .iter()
                .map(|&(a, b, r)| MoveOdds {
                    play: public_move(a, b, r),
                    probability: self.known(root.child_key(a, b)),
                })
                .collect();
            // Best first; equal odds in pile order (the rank follows from the piles).
            analysis.moves.sort_by(|x, y| {
                y.probability
                    .total_cmp(&x.probability)
                    .then(x.play.piles.cmp(&y.play.piles))
            });
        }
        if options.line && analysis.winnable {
            analysis.line = self.winning_line(root);
        }
        analysis
    }

    /// The probability of a position reached from the last solve's start. Only meaningful for a
    /// child of a position the search evaluated: such a child is in the table unless the search
    /// skipped it as lost.
    fn known(&self, key: u32) -> f64 {
        if key == 0 {
            return 1.0;
        }
        self.memo.known(self.wide_in_use, key).unwrap_or(0.0)
    }

    /// The winning line a random player is most likely to follow: among all sequences of moves
    /// that clear the table, the one whose product of 1/(legal moves) along the way is largest.
    fn winning_line(&self, root: State) -> Vec<Move> {
        let mut best = HashMap::new();
        self.likeliest(&root, &mut best);
        let mut line = Vec::new();
        let mut state = root;
        while state.key != 0 {
            let Some(&(_, choice)) = best.get(&state.key) else {
                break;
            };
            let (legal, n) = self.tables.legal(&state);
            let Some(&(a, b, r)) = legal[..n].get(usize::from(choice)) else {
                break;
            };
            line.push(public_move(a, b, r));
            state = self.tables.play_piles(&state, a, b, r);
        }
        line
    }

    /// The largest chance of following one winning line from `state` (0 when lost); records the
    /// move that achieves it (index into the legal moves) per position in `best`.
    fn likeliest(&self, state: &State, best: &mut HashMap<u32, (f64, u8)>) -> f64 {
        if state.key == 0 {
            return 1.0;
        }
        if let Some(&(chance, _)) = best.get(&state.key) {
            return chance;
        }
        let (legal, n) = self.tables.legal(state);
        let mut top = (0.0, u8::MAX);
        for (i, &(a, b, r)) in legal[..n].iter().enumerate() {
            let child = state.child_key(a, b);
            if self.known(child) > 0.0 {
                let chance = self.likeliest(&self.tables.play_piles(state, a, b, r), best);
                // Strictly greater: ties go to the first move in rank and pile order.
                if chance > top.0 {
                    top = (chance, i as u8);
                }
            }
        }
        let chance = if n == 0 { 0.0 } else { top.0 / n as f64 };
        best.insert(state.key, (chance, top.1));
        chance
    }
}

fn public_move(a: usize, b: usize, rank: usize) -> Move {
    Move {
        piles: [a as u8 + 1, b as u8 + 1],
        rank: Rank::ALL[rank],
    }
}

/// An exact probability as `numerator/denominator` in lowest terms (`1/1` and `0/1` included).
pub fn fraction_text(exact: &Fraction) -> String {
    exact.to_string()
}

/// The nearest double to an exact probability.
pub fn fraction_value(exact: &Fraction) -> f64 {
    exact.value()
}
