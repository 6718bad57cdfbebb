//! The engine: the exact probability that a player who picks uniformly among all legal pairs clears
//! the table. Plain Rust, no async and no I/O, so that any front end can own one.
//!
//! # How it is fast
//! A position is the nine pile heights (0 to 4), so it has an index below 5^9 = 1,953,125. A random
//! deal reaches only about a thousand of those positions, so the work per deal is tiny and what
//! costs is memory traffic (see `notes/performance.md`). Hence:
//! - One [`Solver`] owns its index table for life and never clears it. The table maps a position to
//!   a slot in a small dense array of `(position, probability)` entries that is filled in visiting
//!   order; a slot is valid only if it is below the dense length *and* its entry names the same
//!   position (a "sparse set"). Starting a new deal just truncates the dense array, so no stale
//!   slot can ever be believed and nothing is cleared.
//! - The dense array's capacity is reserved once and is enough for every position of the right
//!   parity, so solving never allocates.
//! - Before descending, the index-table entries of all children are loaded together, so their cache
//!   misses overlap instead of following each other.
//! - Positions that can no longer be won are not explored: a rank with more cards left in one pile
//!   than in all the others together can never be paired off. They still count as moves when the
//!   player picks among pairs, so the probability is unchanged.

use crate::deal::{Deal, PILE_HEIGHT, PILES};

/// Positions in the index table: every combination of nine heights 0..=4.
pub const STATES: usize = 5usize.pow(PILES as u32);

/// Positions whose height sum has a given parity: a bound on the positions one deal can reach,
/// since every move removes two cards.
const SAME_PARITY_STATES: usize = STATES.div_ceil(2);

/// Place value of each pile's height in a position index.
const POW5: [u32; PILES] = [1, 5, 25, 125, 625, 3125, 15625, 78125, 390625];

/// Children of one position: at most 4 tops of one rank give 6 pairs, and nine tops give at most
/// 4 + 4 + 1, so 12 pairs.
const MAX_MOVES: usize = 16;

/// Rank code of an empty pile's "top": distinct per pile so that empty piles never pair.
const EMPTY: u8 = 16;

/// What one solve found.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Solution {
    /// Probability that the random player clears the table, in `[0, 1]`.
    pub probability: f64,
    /// Distinct positions the search evaluated (the cost of this deal).
    pub states: u32,
}

#[derive(Clone, Copy)]
struct Entry {
    position: u32,
    probability: f64,
}

/// A reusable solver. Allocates its tables once (about 8 MiB of index table, plus a dense array
/// that is only touched as far as the largest deal so far needs) and never again.
pub struct Solver {
    /// Position index -> slot in `entries`. Stale values are harmless (see the module docs).
    slots: Box<[u32]>,
    /// Positions evaluated for the current deal, in the order they were finished.
    entries: Vec<Entry>,
    /// `tops[pile][height]`: rank code of the top card when the pile has that height.
    tops: [[u8; PILE_HEIGHT + 1]; PILES],
    /// For each pile and height, the rank's card number (0..4) of that card, to look up `dead`.
    which: [[u8; PILE_HEIGHT + 1]; PILES],
    /// `dead[rank][a][b]`: removing cards `a` and `b` of this rank first leaves its other two cards
    /// in one pile, which can never be paired.
    dead: [[[bool; 4]; 4]; 9],
    /// Cards of each rank still on the table in the position being expanded.
    left: [u8; 9],
    heights: [u8; PILES],
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
            slots: vec![0u32; STATES].into_boxed_slice(),
            entries: Vec::with_capacity(SAME_PARITY_STATES),
            tops: [[EMPTY; PILE_HEIGHT + 1]; PILES],
            which: [[0; PILE_HEIGHT + 1]; PILES],
            dead: [[[false; 4]; 4]; 9],
            left: [0; 9],
            heights: [0; PILES],
        }
    }

    /// Solves one deal. Allocates nothing.
    pub fn solve(&mut self, deal: &Deal) -> Solution {
        self.load(deal);
        self.entries.clear();
        if !self.winnable_by_counts() {
            return Solution {
                probability: 0.0,
                states: 1,
            };
        }
        let start = self
            .heights
            .iter()
            .zip(POW5)
            .map(|(&h, p)| u32::from(h) * p)
            .sum();
        let probability = self.value(start);
        Solution {
            probability,
            // The start position is evaluated but not remembered.
            states: self.entries.len() as u32 + 1,
        }
    }

    fn load(&mut self, deal: &Deal) {
        let mut seen = [0u8; 9];
        let mut piles_of = [[0u8; 4]; 9];
        for (p, pile) in deal.piles().iter().enumerate() {
            // Height 0 is the empty pile: give it a code no other pile's top can have.
            self.tops[p][0] = EMPTY + p as u8;
            for (i, card) in pile.iter().enumerate() {
                let r = card.rank.index();
                self.tops[p][i + 1] = r as u8;
                self.which[p][i + 1] = seen[r];
                piles_of[r][usize::from(seen[r])] = p as u8;
                seen[r] += 1;
            }
            self.heights[p] = PILE_HEIGHT as u8;
        }
        self.left = seen;
        for r in 0..9 {
            for a in 0..4 {
                for b in 0..4 {
                    let mut rest = (0..4).filter(|&c| c != a && c != b);
                    self.dead[r][a][b] = match (rest.next(), rest.next()) {
                        (Some(c), Some(d)) if a != b => piles_of[r][c] == piles_of[r][d],
                        _ => false,
                    };
                }
            }
        }
    }

    /// False when some rank has more cards in one pile than elsewhere: such a deal is lost before
    /// the first move, whatever the player does.
    fn winnable_by_counts(&self) -> bool {
        (0..9u8).all(|r| {
            let total = self.left[usize::from(r)];
            total % 2 == 0
                && (0..PILES).all(|p| {
                    let here = self.tops[p][1..=usize::from(self.heights[p])]
                        .iter()
                        .filter(|&&t| t == r)
                        .count() as u8;
                    2 * here <= total
                })
        })
    }

    /// Probability of winning from `position`, whose heights are `self.heights`.
    fn value(&mut self, position: u32) -> f64 {
        if position == 0 {
            return 1.0;
        }
        // Which piles show each rank on top. Empty piles land in slots >= EMPTY and never pair.
        let mut by_rank = [0u16; EMPTY as usize + PILES];
        for p in 0..PILES {
            by_rank[usize::from(self.tops[p][usize::from(self.heights[p])])] |= 1 << p;
        }

        // Enumerate every legal pair; keep the ones that can still lead to a win.
        let mut moves = 0u32;
        let mut kids = [(0u32, 0u8, 0u8); MAX_MOVES];
        let mut n = 0;
        for (r, &mask) in by_rank[..9].iter().enumerate() {
            if mask.count_ones() < 2 {
                continue;
            }
            let first_pair = self.left[r] == 4;
            let mut rest = mask;
            while rest != 0 {
                let a = rest.trailing_zeros() as usize;
                rest &= rest - 1;
                let mut others = rest;
                while others != 0 {
                    let b = others.trailing_zeros() as usize;
                    others &= others - 1;
                    moves += 1;
                    if first_pair {
                        let ca = usize::from(self.which[a][usize::from(self.heights[a])]);
                        let cb = usize::from(self.which[b][usize::from(self.heights[b])]);
                        if self.dead[r][ca][cb] {
                            continue;
                        }
                    }
                    kids[n] = (position - POW5[a] - POW5[b], a as u8, b as u8);
                    n += 1;
                }
            }
        }
        if n == 0 {
            return 0.0;
        }

        // Issue every child's index-table load before using any, so the misses overlap.
        let mut slots = [0u32; MAX_MOVES];
        for (slot, kid) in slots.iter_mut().zip(&kids[..n]) {
            *slot = self.slots[kid.0 as usize];
        }

        let mut sum = 0.0;
        for (&slot, &(child, a, b)) in slots.iter().zip(&kids[..n]) {
            if let Some(e) = self.entries.get(slot as usize)
                && e.position == child
            {
                sum += e.probability;
                continue;
            }
            let (a, b) = (usize::from(a), usize::from(b));
            let r = usize::from(self.tops[a][usize::from(self.heights[a])]);
            self.heights[a] -= 1;
            self.heights[b] -= 1;
            self.left[r] -= 2;
            let p = self.value(child);
            self.heights[a] += 1;
            self.heights[b] += 1;
            self.left[r] += 2;
            self.remember(child, p);
            sum += p;
        }
        sum / f64::from(moves)
    }

    fn remember(&mut self, position: u32, probability: f64) {
        self.slots[position as usize] = self.entries.len() as u32;
        // Within the capacity reserved in `new`: a deal reaches at most SAME_PARITY_STATES.
        self.entries.push(Entry {
            position,
            probability,
        });
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
    fn capacity_covers_every_reachable_position() {
        let solver = Solver::new();
        assert!(solver.entries.capacity() >= SAME_PARITY_STATES);
        assert_eq!(SAME_PARITY_STATES * 2 - 1, STATES);
    }
}
