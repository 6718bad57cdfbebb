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
//!   than in all the others together can never be paired off, and two ranks whose last two cards
//!   cross in the same two piles wait on each other forever. Such moves still count when the
//!   player picks among pairs, so the probability is unchanged; they are just known to be worth 0.

use crate::deal::{Deal, PILE_HEIGHT, PILES};

mod analysis;

pub use analysis::{Analysis, Move, MoveOdds, Options, fraction_text, fraction_value};

/// Positions in the index table: every combination of nine heights 0..=4.
pub const STATES: usize = 5usize.pow(PILES as u32);

/// Positions whose height sum has a given parity: a bound on the positions one deal can reach,
/// since every move removes two cards.
const SAME_PARITY_STATES: usize = STATES.div_ceil(2);

/// Place value of each pile's height in a position index.
const POW5: [u32; PILES] = [1, 5, 25, 125, 625, 3125, 15625, 78125, 390625];

/// Children of one position: at most 4 tops of one rank give 6 pairs, and nine tops give at most
/// 4 + 4 + 1, so 12 pairs.
const MAX_MOVES: usize = 12;

/// Rank code of an empty pile's "top": not a rank, so an empty pile never pairs.
const EMPTY: u8 = 9;

/// A child in the move list: its position index in the low 21 bits (5^9 < 2^21), then the two
/// piles, four bits each.
const CHILD: u32 = (1 << 21) - 1;

fn pack(child: u32, a: usize, b: usize) -> u32 {
    child | (a as u32) << 21 | (b as u32) << 25
}

fn unpack_piles(kid: u32) -> (usize, usize) {
    (((kid >> 21) & 15) as usize, ((kid >> 25) & 15) as usize)
}

/// The ranks that show on two or more tops, as a bit set.
fn multi(by_rank: &[u16; 9]) -> u16 {
    by_rank.iter().enumerate().fold(0, |m, (r, &piles)| {
        m | u16::from(piles & piles.wrapping_sub(1) != 0) << r
    })
}

/// How the search finds a position's slot; monomorphised so the hot loop has no extra branch.
trait IndexTable {
    fn get(solver: &Solver, position: u32) -> u32;
    /// Records the slot, or returns false when it does not fit this table.
    fn set(solver: &mut Solver, position: u32, slot: usize) -> bool;
}

struct Narrow;
struct Wide;

impl IndexTable for Narrow {
    fn get(solver: &Solver, position: u32) -> u32 {
        u32::from(solver.narrow[position as usize])
    }
    fn set(solver: &mut Solver, position: u32, slot: usize) -> bool {
        match u16::try_from(slot) {
            Ok(narrow) if slot < solver.narrow_limit => {
                solver.narrow[position as usize] = narrow;
                true
            }
            _ => false,
        }
    }
}

impl IndexTable for Wide {
    fn get(solver: &Solver, position: u32) -> u32 {
        solver.wide[position as usize]
    }
    fn set(solver: &mut Solver, position: u32, slot: usize) -> bool {
        // `entries` never holds more than SAME_PARITY_STATES < 2^32 positions.
        solver.wide[position as usize] = slot as u32;
        true
    }
}

/// What `play` changed that `undo` cannot recompute cheaply.
struct Undo {
    by_rank: [u16; 9],
    multi: u16,
    remaining: u64,
}

/// The six ways to choose two of a rank's four cards, numbered as `OTHER_PAIR` numbers them.
const PAIRS: [(usize, usize); 6] = [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)];

/// `OTHER_PAIR[a][b]`: the number (index into `PAIRS`) of the two cards other than `a` and `b`.
const OTHER_PAIR: [[usize; 4]; 4] = {
    let mut t = [[0; 4]; 4];
    let mut a = 0;
    while a < 4 {
        let mut b = 0;
        while b < 4 {
            let mut k = 0;
            while k < 6 {
                let (c, d) = PAIRS[k];
                if c != a && c != b && d != a && d != b {
                    t[a][b] = k;
                }
                k += 1;
            }
            b += 1;
        }
        a += 1;
    }
    t
};

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

/// A reusable solver. Allocates its tables once and never again: a 4 MiB index table, plus a wide
/// one and a dense array that are only touched as far as the largest deal so far needed them.
pub struct Solver {
    /// Position index -> slot in `entries`. Stale values are harmless (see the module docs). Two
    /// bytes per entry keep it half the size, which measurably cuts cache misses; it serves every
    /// deal that reaches fewer than 65,536 positions (random deals reach a few thousand at most).
    narrow: Box<[u16]>,
    /// The same with four bytes, for a deal that overflows `narrow`. Allocated zeroed, so it costs
    /// no memory until such a deal arrives.
    wide: Box<[u32]>,
    /// Set when `narrow` could not hold a slot: the search is abandoned and redone with `wide`.
    overflow: bool,
    /// Whether the last deal's slots are in `wide`, for reading its results back afterwards.
    wide_in_use: bool,
    /// Slots `narrow` may hold: 65,536, lowered by tests to exercise the `wide` path.
    narrow_limit: usize,
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
    /// For each rank with two cards left, the bit `6 * rank + k`, `k` naming which two remain.
    remaining: u64,
    /// `crossing[6 * rank + k]`: the `remaining` bits of the other ranks whose last two cards
    /// would deadlock with this rank's last two cards `k`.
    crossing: [u64; 54],
    heights: [u8; PILES],
    /// For each rank, the piles that show it on top.
    by_rank: [u16; 9],
    /// The ranks that show on two or more tops: the only ones that can be paired.
    multi: u16,
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
            narrow: vec![0u16; STATES].into_boxed_slice(),
            wide: vec![0u32; STATES].into_boxed_slice(),
            overflow: false,
            wide_in_use: false,
            narrow_limit: 1 << 16,
            entries: Vec::with_capacity(SAME_PARITY_STATES),
            tops: [[EMPTY; PILE_HEIGHT + 1]; PILES],
            which: [[0; PILE_HEIGHT + 1]; PILES],
            dead: [[[false; 4]; 4]; 9],
            left: [0; 9],
            remaining: 0,
            crossing: [0; 54],
            heights: [0; PILES],
            by_rank: [0; 9],
            multi: 0,
        }
    }

    /// Solves one deal or position. Allocates nothing.
    pub fn solve(&mut self, deal: &Deal) -> Solution {
        self.load(deal);
        self.entries.clear();
        self.wide_in_use = false;
        self.by_rank = [0; 9];
        for p in 0..PILES {
            let t = usize::from(self.tops[p][usize::from(self.heights[p])]);
            if let Some(mask) = self.by_rank.get_mut(t) {
                *mask |= 1 << p;
            }
        }
        self.multi = multi(&self.by_rank);
        if !self.winnable_by_counts() {
            return Solution {
                probability: 0.0,
                states: 1,
            };
        }
        let start = self.position();
        self.overflow = false;
        let mut probability = self.value::<Narrow>(start);
        if self.overflow {
            self.overflow = false;
            self.entries.clear();
            self.wide_in_use = true;
            probability = self.value::<Wide>(start);
        }
        Solution {
            probability,
            // The start position is evaluated but not remembered.
            states: self.entries.len() as u32 + 1,
        }
    }

    /// The index of the position in `heights`.
    fn position(&self) -> u32 {
        self.heights
            .iter()
            .zip(POW5)
            .map(|(&h, p)| u32::from(h) * p)
            .sum()
    }

    fn load(&mut self, deal: &Deal) {
        let mut seen = [0u8; 9];
        let mut piles_of = [[0u8; 4]; 9];
        let mut levels_of = [[0u8; 4]; 9];
        for (p, pile) in deal.piles().enumerate() {
            self.tops[p][0] = EMPTY;
            for (i, card) in pile.iter().enumerate() {
                let r = card.rank.index();
                self.tops[p][i + 1] = r as u8;
                self.which[p][i + 1] = seen[r];
                // A deal holds each card once, so no rank has more than four.
                piles_of[r][usize::from(seen[r])] = p as u8;
                levels_of[r][usize::from(seen[r])] = i as u8 + 1;
                seen[r] += 1;
            }
            // Heights only ever go down, so the `tops` above a short pile are never read.
            self.heights[p] = pile.len() as u8;
        }
        self.left = seen;
        self.find_crossings(&piles_of, &levels_of);
        for (dead, piles) in self.dead.iter_mut().zip(&piles_of) {
            for (a, row) in dead.iter_mut().enumerate() {
                for (b, cell) in row.iter_mut().enumerate() {
                    let mut rest = (0..4).filter(|&c| c != a && c != b);
                    *cell = match (rest.next(), rest.next()) {
                        (Some(c), Some(d)) if a != b => piles[c] == piles[d],
                        _ => false,
                    };
                }
            }
        }
    }

    /// Fills `crossing`. Two ranks whose last two cards lie in the same two piles, one rank above
    /// the other in one pile and below it in the other, wait on each other forever: each pair can
    /// only go once the other has. Only pairs of cards in the same two piles can cross, so the
    /// candidates are grouped by their piles first.
    fn find_crossings(&mut self, piles: &[[u8; 4]; 9], levels: &[[u8; 4]; 9]) {
        self.crossing = [0; 54];
        // (pile pair, rank, which two) for every way a rank can have two cards left apart.
        let mut candidates = [(0u8, 0u8, 0u8); 54];
        let mut n = 0;
        for (r, rank_piles) in piles.iter().enumerate() {
            // A position may start with fewer than four cards of a rank: only real cards count.
            let count = usize::from(self.left[r]);
            for (k, &(c, d)) in PAIRS.iter().enumerate() {
                if d >= count {
                    continue;
                }
                let (pc, pd) = (rank_piles[c], rank_piles[d]);
                if pc != pd {
                    candidates[n] = (pc.min(pd) * 9 + pc.max(pd), r as u8, k as u8);
                    n += 1;
                }
            }
        }
        let candidates = &mut candidates[..n];
        candidates.sort_unstable();
        for group in candidates.chunk_by(|x, y| x.0 == y.0) {
            for (i, &(_, r, k)) in group.iter().enumerate() {
                for &(_, y, ky) in &group[i + 1..] {
                    if r == y {
                        continue;
                    }
                    let (r, k, y, ky) = (
                        usize::from(r),
                        usize::from(k),
                        usize::from(y),
                        usize::from(ky),
                    );
                    // Levels of both ranks' cards, ordered by pile.
                    let level_in = |rank: usize, k: usize| {
                        let (c, d) = PAIRS[k];
                        if piles[rank][c] < piles[rank][d] {
                            (levels[rank][c], levels[rank][d])
                        } else {
                            (levels[rank][d], levels[rank][c])
                        }
                    };
                    let (x1, x2) = level_in(r, k);
                    let (y1, y2) = level_in(y, ky);
                    if (x1 > y1) != (x2 > y2) {
                        self.crossing[6 * r + k] |= 1 << (6 * y + ky);
                        self.crossing[6 * y + ky] |= 1 << (6 * r + k);
                    }
                }
            }
        }
        // A full deal starts with four cards of every rank; a position may start with a rank's
        // last two, which are its cards 0 and 1 (pair number 0).
        self.remaining = (0..9)
            .filter(|&r| self.left[r] == 2)
            .fold(0, |m, r| m | 1 << (6 * r));
    }

    /// False when some rank has an odd number of cards or more cards in one pile than elsewhere, or
    /// when a position starts with two ranks' last pairs crossed: such a deal is lost before the
    /// first move, whatever the player does.
    fn winnable_by_counts(&self) -> bool {
        let mut crossed = false;
        let mut rest = self.remaining;
        while rest != 0 {
            let bit = rest.trailing_zeros() as usize;
            rest &= rest - 1;
            crossed |= self.crossing[bit] & self.remaining != 0;
        }
        !crossed
            && (0..9u8).all(|r| {
                let total = self.left[usize::from(r)];
                total.is_multiple_of(2)
                    && (0..PILES).all(|p| {
                        let here = self.tops[p][1..=usize::from(self.heights[p])]
                            .iter()
                            .filter(|&&t| t == r)
                            .count() as u8;
                        2 * here <= total
                    })
            })
    }

    /// Probability of winning from `position`, whose heights are `self.heights` and whose tops
    /// are described by `self.by_rank` and `self.multi`.
    fn value<I: IndexTable>(&mut self, position: u32) -> f64 {
        if position == 0 || self.overflow {
            return 1.0;
        }
        // Enumerate every legal pair; keep the ones that can still lead to a win. Only ranks that
        // show on two or more tops (`multi`) can pair, so the loop touches nothing else.
        let mut moves = 0u32;
        let mut kids = [0u32; MAX_MOVES];
        let mut n = 0;
        let mut ranks = self.multi;
        while ranks != 0 {
            let r = ranks.trailing_zeros() as usize;
            ranks &= ranks - 1;
            let first_pair = self.left[r] == 4;
            let mut rest = self.by_rank[r];
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
                        if self.dead[r][ca][cb]
                            || self.crossing[6 * r + OTHER_PAIR[ca][cb]] & self.remaining != 0
                        {
                            continue;
                        }
                    }
                    kids[n] = pack(position - POW5[a] - POW5[b], a, b);
                    n += 1;
                }
            }
        }
        if n == 0 {
            return 0.0;
        }

        // Issue every child's index-table load before using any, so the misses overlap.
        let mut slots = [0u32; MAX_MOVES];
        for (slot, &kid) in slots.iter_mut().zip(&kids[..n]) {
            *slot = I::get(self, kid & CHILD);
        }

        let mut sum = 0.0;
        for (&slot, &kid) in slots.iter().zip(&kids[..n]) {
            let child = kid & CHILD;
            if let Some(e) = self.entries.get(slot as usize)
                && e.position == child
            {
                sum += e.probability;
                continue;
            }
            let (a, b) = unpack_piles(kid);
            let undo = self.play(a, b);
            let p = self.value::<I>(child);
            self.undo(a, b, undo);
            self.remember::<I>(child, p);
            sum += p;
        }
        sum / f64::from(moves)
    }

    /// Removes the tops of piles `a` and `b` (same rank) and updates the top bookkeeping.
    #[inline(always)]
    fn play(&mut self, a: usize, b: usize) -> Undo {
        let undo = Undo {
            by_rank: self.by_rank,
            multi: self.multi,
            remaining: self.remaining,
        };
        let r = usize::from(self.tops[a][usize::from(self.heights[a])]);
        self.left[r] -= 2;
        if self.left[r] == 2 {
            let ca = usize::from(self.which[a][usize::from(self.heights[a])]);
            let cb = usize::from(self.which[b][usize::from(self.heights[b])]);
            self.remaining |= 1 << (6 * r + OTHER_PAIR[ca][cb]);
        } else {
            self.remaining &= !(0b11_1111 << (6 * r));
        }
        self.by_rank[r] &= !((1 << a) | (1 << b));
        let mut touched = 1u16 << r;
        for p in [a, b] {
            self.heights[p] -= 1;
            let t = usize::from(self.tops[p][usize::from(self.heights[p])]);
            // An emptied pile's code is EMPTY, past the ranks, and shows nowhere.
            if let Some(mask) = self.by_rank.get_mut(t) {
                *mask |= 1 << p;
                touched |= 1 << t;
            }
        }
        // Only the ranks whose tops changed can change their membership in `multi`.
        while touched != 0 {
            let t = touched.trailing_zeros() as usize;
            touched &= touched - 1;
            let piles = self.by_rank[t];
            let bit = 1u16 << t;
            self.multi = (self.multi & !bit)
                | if piles & piles.wrapping_sub(1) != 0 {
                    bit
                } else {
                    0
                };
        }
        undo
    }

    #[inline(always)]
    fn undo(&mut self, a: usize, b: usize, undo: Undo) {
        self.heights[a] += 1;
        self.heights[b] += 1;
        let r = usize::from(self.tops[a][usize::from(self.heights[a])]);
        self.left[r] += 2;
        self.by_rank = undo.by_rank;
        self.multi = undo.multi;
        self.remaining = undo.remaining;
    }

    fn remember<I: IndexTable>(&mut self, position: u32, probability: f64) {
        if !I::set(self, position, self.entries.len()) {
            self.overflow = true;
            return;
        }
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
    fn a_deal_too_big_for_the_narrow_table_is_solved_with_the_wide_one() {
        let mut small = Solver::new();
        small.narrow_limit = 40;
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
        small.narrow_limit = 40;
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
    fn capacity_covers_every_reachable_position() {
        let solver = Solver::new();
        assert!(solver.entries.capacity() >= SAME_PARITY_STATES);
        assert_eq!(SAME_PARITY_STATES * 2 - 1, STATES);
    }
}
