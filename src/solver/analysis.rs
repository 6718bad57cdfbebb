//! Everything beyond the one probability: whether a deal can be won at all, the odds of every
//! move, a winning line, and the probability as an exact fraction.
//!
//! [`Solver::solve`] leaves the probability of every position it evaluated in its table, and a
//! position it did not evaluate below one it did is one the pruning knew to be lost. So the move
//! odds are table lookups, and the line and the exact fraction walk only the winning positions
//! (those with a probability above 0), which the table already lists. Nothing here runs unless a
//! caller asks for it, so plain solving keeps its speed; this part allocates freely.

use std::collections::HashMap;

use num_bigint::BigUint;
use num_rational::Ratio;
use num_traits::{One as _, ToPrimitive as _, Zero as _};

use super::{MAX_MOVES, POW5, Solver};
use crate::deal::{Deal, Rank};

/// What to work out beyond the probability. Each costs extra time only when set.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// The probability as a fraction in lowest terms (big-number arithmetic: the slowest part).
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
    pub exact: Option<Ratio<BigUint>>,
    /// Every legal move, the best first (ties in pile order), when asked.
    pub moves: Vec<MoveOdds>,
    /// A winning line, when asked and winnable: moves that clear the table, in order.
    pub line: Vec<Move>,
}

/// A legal move in the solver's own terms: piles `a < b` (0-based) and the rank index.
type Legal = (usize, usize, usize);

impl Solver {
    /// Solves a deal or position and works out what `options` ask for.
    pub fn analyze(&mut self, deal: &Deal, options: Options) -> Analysis {
        let solution = self.solve(deal);
        let root = self.position();
        let mut analysis = Analysis {
            probability: solution.probability,
            states: solution.states,
            winnable: solution.probability > 0.0,
            exact: None,
            moves: Vec::new(),
            line: Vec::new(),
        };
        if options.moves {
            let (legal, n) = self.legal_moves();
            analysis.moves = legal[..n]
                .iter()
                .map(|&(a, b, r)| MoveOdds {
                    play: public_move(a, b, r),
                    probability: self.known(root - POW5[a] - POW5[b]),
                })
                .collect();
            // Best first; equal odds in pile order (the rank follows from the piles).
            analysis.moves.sort_by(|x, y| {
                y.probability
                    .total_cmp(&x.probability)
                    .then(x.play.piles.cmp(&y.play.piles))
            });
        }
        if options.exact {
            let mut memo = HashMap::new();
            analysis.exact = Some(self.exact(root, &mut memo));
        }
        if options.line && analysis.winnable {
            analysis.line = self.winning_line(root);
        }
        analysis
    }

    /// Every legal pair at the current position, in rank then pile order.
    fn legal_moves(&self) -> ([Legal; MAX_MOVES], usize) {
        let mut legal = [(0, 0, 0); MAX_MOVES];
        let mut n = 0;
        let mut ranks = self.multi;
        while ranks != 0 {
            let r = ranks.trailing_zeros() as usize;
            ranks &= ranks - 1;
            let piles = self.by_rank[r];
            for a in 0..9 {
                for b in a + 1..9 {
                    if piles & (1 << a) != 0 && piles & (1 << b) != 0 {
                        legal[n] = (a, b, r);
                        n += 1;
                    }
                }
            }
        }
        (legal, n)
    }

    /// The probability of a position reached from the last solve's start. Only meaningful for a
    /// child of a position the search evaluated: such a child is in the table unless the search
    /// skipped it as lost.
    fn known(&self, position: u32) -> f64 {
        if position == 0 {
            return 1.0;
        }
        let slot = if self.wide_in_use {
            self.wide[position as usize] as usize
        } else {
            usize::from(self.narrow[position as usize])
        };
        match self.entries.get(slot) {
            Some(e) if e.position == position => e.probability,
            _ => 0.0,
        }
    }

    /// The exact probability of the current position (`position`): the average over every legal
    /// move of the exact probability after it, where lost children contribute 0 and are not
    /// visited. The walk follows `play`/`undo`, so it leaves the solver as it found it.
    fn exact(&mut self, position: u32, memo: &mut HashMap<u32, Ratio<BigUint>>) -> Ratio<BigUint> {
        if position == 0 {
            return Ratio::one();
        }
        if let Some(known) = memo.get(&position) {
            return known.clone();
        }
        let (legal, n) = self.legal_moves();
        let mut sum = Ratio::<BigUint>::zero();
        for &(a, b, _) in &legal[..n] {
            let child = position - POW5[a] - POW5[b];
            if self.known(child) > 0.0 {
                let undo = self.play(a, b);
                sum += self.exact(child, memo);
                self.undo(a, b, undo);
            }
        }
        // A stuck position (no moves) is lost: its sum is 0 and there is nothing to divide by.
        let value = if n == 0 { sum } else { sum / BigUint::from(n) };
        memo.insert(position, value.clone());
        value
    }

    /// The winning line a random player is most likely to follow: among all sequences of moves
    /// that clear the table, the one whose product of 1/(legal moves) along the way is largest.
    fn winning_line(&mut self, root: u32) -> Vec<Move> {
        let mut best = HashMap::new();
        self.likeliest(root, &mut best);
        let mut line = Vec::new();
        let mut played = Vec::new();
        let mut position = root;
        while position != 0 {
            let Some(&(_, choice)) = best.get(&position) else {
                break;
            };
            let (legal, n) = self.legal_moves();
            let Some(&(a, b, r)) = legal[..n].get(usize::from(choice)) else {
                break;
            };
            line.push(public_move(a, b, r));
            played.push((a, b, self.play(a, b)));
            position -= POW5[a] + POW5[b];
        }
        while let Some((a, b, undo)) = played.pop() {
            self.undo(a, b, undo);
        }
        line
    }

    /// The largest chance of following one winning line from `position` (0 when lost); records
    /// the move that achieves it (index into `legal_moves`) per position in `best`.
    fn likeliest(&mut self, position: u32, best: &mut HashMap<u32, (f64, u8)>) -> f64 {
        if position == 0 {
            return 1.0;
        }
        if let Some(&(chance, _)) = best.get(&position) {
            return chance;
        }
        let (legal, n) = self.legal_moves();
        let mut top = (0.0, u8::MAX);
        for (i, &(a, b, _)) in legal[..n].iter().enumerate() {
            let child = position - POW5[a] - POW5[b];
            if self.known(child) > 0.0 {
                let undo = self.play(a, b);
                let chance = self.likeliest(child, best);
                self.undo(a, b, undo);
                // Strictly greater: ties go to the first move in rank and pile order.
                if chance > top.0 {
                    top = (chance, i as u8);
                }
            }
        }
        let chance = if n == 0 { 0.0 } else { top.0 / n as f64 };
        best.insert(position, (chance, top.1));
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
pub fn fraction_text(exact: &Ratio<BigUint>) -> String {
    format!("{}/{}", exact.numer(), exact.denom())
}

/// The nearest double to an exact probability.
pub fn fraction_value(exact: &Ratio<BigUint>) -> f64 {
    exact.to_f64().unwrap_or(f64::NAN)
}
