//! The rules as the search sees them: a position small enough to copy into every stack frame, the
//! per-deal tables that turn a move into a few lookups and XORs, and the tests that prove a
//! position lost before it is explored.
//!
//! # Representation
//! - A position's index is the nine pile heights in base 5 (pile 0 lowest), below 5^9.
//! - Which piles show each rank on top is two words of 12-bit fields (ranks 0 to 4, then 5 to 8),
//!   each field holding a bit per pile. A move flips four bits (the two old tops off, the two new ones on), and the
//!   flips for "pile `p` goes from height `h` to `h - 1`" are computed once per deal, so playing a
//!   move is two loads and two XORs. Bit 11 of each field stays clear, which lets one subtraction
//!   find every rank showing on two or more tops at once (see [`multi_fields`]).
//! - The pairs a set of piles makes are read from a table of all 512 pile sets, in the order the
//!   search has always tried them (lower pile first, then upper), so the floating-point sums, and
//!   with them the answers, are bit for bit what they were.

use crate::deal::{Deal, PILE_HEIGHT, PILES};

/// Place value of each pile's height in a position index.
pub(super) const POW5: [u32; PILES] = [1, 5, 25, 125, 625, 3125, 15625, 78125, 390625];

/// Children of one position: at most 4 tops of one rank give 6 pairs, and nine tops give at most
/// 4 + 4 + 1, so 12 pairs.
pub(super) const MAX_MOVES: usize = 12;

/// Heights a pile can have: 0 to 4.
const LEVELS: usize = PILE_HEIGHT + 1;

/// Entries of the per-pile-and-height tables: 45 used, rounded up to a power of two so that an
/// index masked with `CELLS - 1` needs no bounds check in the hot loop.
const CELLS: usize = 64;

/// Rank code of an empty pile's "top": not a rank, so an empty pile never pairs.
const EMPTY: u8 = 9;

/// Bits of one rank's field in [`State::by_rank`]: nine piles, two spare, one guard.
const FIELD: u32 = 12;
/// Ranks in the first word of [`State::by_rank`]; the other four are in the second.
const LOW_RANKS: usize = 5;
/// Bit 0 of every rank's field in a word.
const LOW: u64 = 1 | 1 << 12 | 1 << 24 | 1 << 36 | 1 << 48;
/// Bit 11 of every rank's field: never set in a position, used as a borrow stop.
const GUARD: u64 = LOW << (FIELD - 1);

/// A child in a move list: its position index in the low 21 bits (5^9 < 2^21), the pair's number
/// (into [`PAIR_PILES`]) in the next 6, the rank in the top bits.
pub(super) const CHILD: u32 = (1 << 21) - 1;

/// The 36 pairs of piles `(a, b)`, `a < b`, numbered lower pile first, then upper pile.
pub(super) const PAIR_PILES: [(u8, u8); 64] = {
    let mut t = [(0u8, 0u8); 64];
    let (mut a, mut k) = (0, 0);
    while a < PILES {
        let mut b = a + 1;
        while b < PILES {
            t[k] = (a as u8, b as u8);
            k += 1;
            b += 1;
        }
        a += 1;
    }
    t
};

/// How much a pair's move lowers the position index.
const PAIR_DELTA: [u32; 64] = {
    let mut t = [0u32; 64];
    let mut k = 0;
    while k < 36 {
        let (a, b) = PAIR_PILES[k];
        t[k] = POW5[a as usize] + POW5[b as usize];
        k += 1;
    }
    t
};

/// The pairs a set of piles showing one rank makes, in search order. A rank has four cards, so at
/// most four piles show it and a set makes at most six pairs; larger sets cannot occur.
#[derive(Clone, Copy)]
struct PairList {
    count: u8,
    codes: [u8; 6],
}

const PAIRS_OF: [PairList; 512] = {
    let mut t = [PairList {
        count: 0,
        codes: [0; 6],
    }; 512];
    let mut set = 0;
    while set < 512 {
        let mut k = 0;
        while k < 36 {
            let (a, b) = PAIR_PILES[k];
            let n = t[set].count as usize;
            if set >> a & 1 == 1 && set >> b & 1 == 1 && n < 6 {
                t[set].codes[n] = k as u8;
                t[set].count += 1;
            }
            k += 1;
        }
        set += 1;
    }
    t
};

/// For each set of piles, the pairs among them as bits numbered like [`PAIR_PILES`]. A move list
/// is the OR of this over the nine ranks' sets: no branch depends on how many ranks can pair.
const PAIR_MASK: [u64; 512] = {
    let mut t = [0u64; 512];
    let mut set = 0;
    while set < 512 {
        let mut k = 0;
        while k < 36 {
            let (a, b) = PAIR_PILES[k];
            if set >> a & 1 == 1 && set >> b & 1 == 1 {
                t[set] |= 1 << k;
            }
            k += 1;
        }
        set += 1;
    }
    t
};

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

/// For each rank's field of a word, the bits of `f & (f - 1)`: nonzero exactly for the ranks that
/// show on two or more tops. The guard bits stop each field's borrow from reaching the next.
#[inline(always)]
fn multi_fields(word: u64) -> u64 {
    ((word | GUARD) - LOW) & word
}

/// The word and bit of rank `rank` on pile `pile` in [`State::by_rank`].
const fn rank_bit(rank: usize, pile: usize) -> (usize, u64) {
    let word = rank / LOW_RANKS;
    (
        word,
        1 << (FIELD as usize * (rank - LOW_RANKS * word) + pile),
    )
}

impl State {
    /// Cards left on pile `p`.
    pub fn height(&self, p: usize) -> u8 {
        self.cells
            .get(p)
            .map_or(0, |&c| c.saturating_sub((LEVELS * p) as u8))
    }

    /// Cards left on the table.
    pub fn cards(&self) -> u32 {
        (0..PILES).map(|p| u32::from(self.height(p))).sum()
    }
}

/// Bit 63 of `remaining` is always set, so a prune entry with it set prunes whatever is left.
const ALWAYS: u64 = 1 << 63;

/// A position as the search carries it: everything a move changes, copied into each frame so that
/// going back up needs no undo.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct State {
    /// For each rank (a 12-bit field), the piles that show it on top: ranks 0 to 4 in the first
    /// word, 5 to 8 in the second.
    pub by_rank: [u64; 2],
    /// For each rank with two cards left, the bit `6 * rank + k`, `k` naming which two remain;
    /// and [`ALWAYS`].
    pub remaining: u64,
    /// The position index.
    pub position: u32,
    /// Ranks that still have all four cards: their next pair is their first.
    pub full: u16,
    /// For each pile, `5 * pile + height`: where its top card is in the per-deal tables. Sixteen
    /// entries (the last seven unused) so that an index masked with 15 needs no bounds check.
    pub cells: [u8; 16],
}

/// What the search needs to know about one deal, computed once when the deal is loaded.
pub(super) struct Tables {
    /// `top[5 * pile + height]`: rank code of the top card when the pile has that height.
    top: [u8; CELLS],
    /// The same card's number among its rank's four (0..4), to look up `prune`.
    which: [u8; CELLS],
    /// The `by_rank` bits that change when the pile goes from that height to one lower.
    flip: [[u64; 2]; CELLS],
    /// `prune[16 * rank + 4 * a + b]`: the `remaining` bits that make removing this rank's cards
    /// `a` and `b` as its first pair hopeless. [`ALWAYS`] when that leaves its other two cards in
    /// one pile, which can never be paired; otherwise the ranks whose last two cards would
    /// deadlock with its last two.
    prune: [u64; 256],
    /// `crossing[6 * rank + k]`: the `remaining` bits of the other ranks whose last two cards
    /// would deadlock with this rank's last two cards `k`.
    crossing: [u64; 54],
}

impl Tables {
    pub(super) fn new() -> Tables {
        Tables {
            top: [EMPTY; CELLS],
            which: [0; CELLS],
            flip: [[0; 2]; CELLS],
            prune: [0; 256],
            crossing: [0; 54],
        }
    }

    /// Fills the tables for `deal` and returns its start, or `None` when the deal is lost before
    /// the first move: some rank has an odd number of cards or more in one pile than in all the
    /// others, or a position starts with two ranks' last pairs crossed.
    pub(super) fn load(&mut self, deal: &Deal) -> (State, bool) {
        let mut seen = [0u8; 9];
        let mut piles_of = [[0u8; 4]; 9];
        let mut levels_of = [[0u8; 4]; 9];
        let mut state = State::default();
        for (p, pile) in deal.piles().enumerate() {
            self.top[LEVELS * p] = EMPTY;
            for (i, card) in pile.iter().enumerate() {
                let r = card.rank.index();
                let at = LEVELS * p + i + 1;
                self.top[at] = r as u8;
                // A deal holds each card once, so no rank has more than four.
                self.which[at] = seen[r] & 3;
                piles_of[r][usize::from(seen[r] & 3)] = p as u8;
                levels_of[r][usize::from(seen[r] & 3)] = i as u8 + 1;
                seen[r] += 1;
            }
            let height = pile.len().min(PILE_HEIGHT);
            // Heights only ever go down, so nothing above a short pile is ever read.
            for h in 1..=height {
                let at = LEVELS * p + h;
                let (old, new) = (bits(self.top[at], p), bits(self.top[at - 1], p));
                self.flip[at] = [old[0] ^ new[0], old[1] ^ new[1]];
            }
            state.cells[p] = (LEVELS * p + height) as u8;
            state.position += height as u32 * POW5[p];
            let top = bits(self.top[LEVELS * p + height], p);
            state.by_rank = [state.by_rank[0] | top[0], state.by_rank[1] | top[1]];
        }
        state.full = (0..9).filter(|&r| seen[r] == 4).fold(0, |m, r| m | 1 << r);
        self.find_crossings(&seen, &piles_of, &levels_of);
        for (r, piles) in piles_of.iter().enumerate() {
            for a in 0..4 {
                for b in 0..4 {
                    let (c, d) = PAIRS[OTHER_PAIR[a][b]];
                    self.prune[16 * r + 4 * a + b] = if a != b && piles[c] == piles[d] {
                        ALWAYS
                    } else {
                        self.crossing[6 * r + OTHER_PAIR[a][b]]
                    };
                }
            }
        }
        // A full deal starts with four cards of every rank; a position may start with a rank's
        // last two, which are its cards 0 and 1 (pair number 0).
        state.remaining = (0..9)
            .filter(|&r| seen[r] == 2)
            .fold(ALWAYS, |m, r| m | 1 << (6 * r));
        let winnable = self.winnable_by_counts(&state, &seen);
        (state, winnable)
    }

    /// Fills `crossing`. Two ranks whose last two cards lie in the same two piles, one rank above
    /// the other in one pile and below it in the other, wait on each other forever: each pair can
    /// only go once the other has. Only pairs of cards in the same two piles can cross, so the
    /// candidates are first chained into one list per pair of piles (no sorting: this runs once
    /// per deal, and a sort cost as much as a tenth of a solve).
    fn find_crossings(&mut self, count: &[u8; 9], piles: &[[u8; 4]; 9], levels: &[[u8; 4]; 9]) {
        const NONE: u8 = u8::MAX;
        self.crossing = [0; 54];
        // For every way a rank can have two cards left apart: (rank, which two, the two levels
        // ordered by pile), chained per pair of piles.
        let mut candidates = [(0u8, 0u8, 0u8, 0u8); 54];
        let mut next = [NONE; 54];
        let mut head = [NONE; 81];
        let mut n = 0;
        for (r, rank_piles) in piles.iter().enumerate() {
            // A position may start with fewer than four cards of a rank: only real cards count.
            let count = usize::from(count[r]);
            for (k, &(c, d)) in PAIRS.iter().enumerate() {
                let (pc, pd) = (rank_piles[c], rank_piles[d]);
                if d >= count || pc == pd || n >= candidates.len() {
                    continue;
                }
                let (lc, ld) = (levels[r][c], levels[r][d]);
                let (low, high) = if pc < pd { (lc, ld) } else { (ld, lc) };
                candidates[n] = (r as u8, k as u8, low, high);
                let bucket = usize::from(pc.min(pd)) * 9 + usize::from(pc.max(pd));
                next[n] = head[bucket];
                head[bucket] = n as u8;
                n += 1;
            }
        }
        for &first in &head {
            let mut i = first;
            while let Some(&(r, k, x1, x2)) = candidates.get(usize::from(i)) {
                let mut j = next[usize::from(i)];
                while let Some(&(y, ky, y1, y2)) = candidates.get(usize::from(j)) {
                    if r != y && (x1 > y1) != (x2 > y2) {
                        let (a, b) = (
                            6 * usize::from(r) + usize::from(k),
                            6 * usize::from(y) + usize::from(ky),
                        );
                        self.crossing[a] |= 1 << b;
                        self.crossing[b] |= 1 << a;
                    }
                    j = next[usize::from(j)];
                }
                i = next[usize::from(i)];
            }
        }
    }

    fn winnable_by_counts(&self, state: &State, count: &[u8; 9]) -> bool {
        let mut crossed = false;
        let mut rest = state.remaining & !ALWAYS;
        while rest != 0 {
            let bit = rest.trailing_zeros() as usize;
            rest &= rest - 1;
            crossed |= self.crossing[bit] & state.remaining & !ALWAYS != 0;
        }
        !crossed
            && (0..9u8).all(|r| {
                let total = count[usize::from(r)];
                total.is_multiple_of(2)
                    && (0..PILES).all(|p| {
                        let h = usize::from(state.height(p));
                        let here = self.top[LEVELS * p + 1..=LEVELS * p + h]
                            .iter()
                            .filter(|&&t| t == r)
                            .count() as u8;
                        2 * here <= total
                    })
            })
    }

    /// Lists the children of `state` that can still be won into `kids`, and returns how many it
    /// listed and how many legal moves there are in all (the random player picks among all of
    /// them, so a pruned move still counts, as a child worth 0).
    #[inline(always)]
    pub(super) fn expand(&self, state: &State, kids: &mut [u32; MAX_MOVES]) -> (usize, u32) {
        let mut legal = legal_mask(&state.by_rank);
        // Counted in the loop: without a popcnt instruction in the baseline x86-64 target,
        // `count_ones` is a dozen instructions.
        let mut moves = 0;
        let mut n = 0;
        while legal != 0 {
            let code = legal.trailing_zeros() as usize;
            legal &= legal - 1;
            moves += 1;
            let (a, b) = PAIR_PILES[code & 63];
            let (ia, ib) = (self.at(state, a), self.at(state, b));
            let r = usize::from(self.top[ia]) & 15;
            let (ca, cb) = (
                usize::from(self.which[ia] & 3),
                usize::from(self.which[ib] & 3),
            );
            // Only a rank's first pair can be hopeless; the test is branch-free.
            let first = state.full >> r & 1 != 0;
            let hopeless =
                first & (self.prune[(16 * r + 4 * ca + cb) & 0xFF] & state.remaining != 0);
            kids[n.min(MAX_MOVES - 1)] =
                (state.position - PAIR_DELTA[code & 63]) | (code as u32) << 21 | (r as u32) << 27;
            n += usize::from(!hopeless);
        }
        (n, moves)
    }

    /// Every legal move of `state`, pruned or not, as `(pile a, pile b, rank)` in search order.
    pub(super) fn legal(&self, state: &State) -> ([(usize, usize, usize); MAX_MOVES], usize) {
        let mut legal = [(0, 0, 0); MAX_MOVES];
        let mut n = 0;
        for (w, &word) in state.by_rank.iter().enumerate() {
            let mut multi = multi_fields(word);
            while multi != 0 {
                let f = multi.trailing_zeros() / FIELD;
                let shift = FIELD * f;
                multi &= !(0xFFF << shift);
                let list = &PAIRS_OF[(word >> shift) as usize & 0x1FF];
                for &code in &list.codes[..usize::from(list.count)] {
                    let (a, b) = PAIR_PILES[usize::from(code)];
                    if let Some(slot) = legal.get_mut(n) {
                        *slot = (usize::from(a), usize::from(b), LOW_RANKS * w + f as usize);
                        n += 1;
                    }
                }
            }
        }
        (legal, n)
    }

    /// The state after the move that `kid` (from [`Tables::expand`]) describes.
    #[inline(always)]
    pub(super) fn play(&self, state: &State, kid: u32) -> State {
        let mut next = State::default();
        self.play_into(state, kid, &mut next);
        next
    }

    /// [`Tables::play`] written straight into `next` (a child frame's state). Building the state
    /// elsewhere and copying it in made the copy's wide loads wait on the narrow stores just made
    /// to the same bytes, a store-forwarding stall that cost several percent of a solve.
    #[inline(always)]
    pub(super) fn play_into(&self, state: &State, kid: u32, next: &mut State) {
        let (a, b) = PAIR_PILES[(kid >> 21 & 63) as usize];
        let r = (kid >> 27) as usize;
        let (ia, ib) = (self.at(state, a), self.at(state, b));
        let (fa, fb) = (self.flip[ia], self.flip[ib]);
        // A rank's first pair leaves two cards, which `remaining` names; its second leaves none.
        let first = u64::from(state.full >> r & 1);
        let (ca, cb) = (
            usize::from(self.which[ia] & 3),
            usize::from(self.which[ib] & 3),
        );
        let named = (1 << (6 * r + OTHER_PAIR[ca][cb])) & first.wrapping_neg();
        let gone = (0b11_1111 << (6 * r)) & first.wrapping_sub(1);
        next.cells = state.cells;
        next.cells[usize::from(a) & 15] -= 1;
        next.cells[usize::from(b) & 15] -= 1;
        next.by_rank = [
            state.by_rank[0] ^ fa[0] ^ fb[0],
            state.by_rank[1] ^ fa[1] ^ fb[1],
        ];
        next.remaining = (state.remaining | named) & !gone;
        next.position = kid & CHILD;
        next.full = state.full & !(1 << r);
    }

    /// The state after removing the tops of piles `a < b`, which show rank `r`.
    pub(super) fn play_piles(&self, state: &State, a: usize, b: usize, r: usize) -> State {
        let code = PAIR_PILES
            .iter()
            .position(|&(x, y)| usize::from(x) == a && usize::from(y) == b)
            .unwrap_or(0);
        let kid = (state.position - POW5[a] - POW5[b]) | (code as u32) << 21 | (r as u32) << 27;
        self.play(state, kid)
    }

    #[inline(always)]
    fn at(&self, state: &State, pile: u8) -> usize {
        usize::from(state.cells[usize::from(pile) & 15]) & (CELLS - 1)
    }
}

/// Every legal pair, as bits numbered like [`PAIR_PILES`]: the OR of each rank's pairs.
#[inline(always)]
fn legal_mask(by_rank: &[u64; 2]) -> u64 {
    let [w0, w1] = *by_rank;
    let pairs = |w: u64, f: u32| PAIR_MASK[(w >> (FIELD * f)) as usize & 0x1FF];
    pairs(w0, 0)
        | pairs(w0, 1)
        | pairs(w0, 2)
        | pairs(w0, 3)
        | pairs(w0, 4)
        | pairs(w1, 0)
        | pairs(w1, 1)
        | pairs(w1, 2)
        | pairs(w1, 3)
}

/// The `by_rank` bit of rank code `rank` on pile `p`; none for an empty pile.
fn bits(rank: u8, p: usize) -> [u64; 2] {
    let mut words = [0; 2];
    if rank < 9 {
        let (w, bit) = rank_bit(usize::from(rank), p);
        words[w] = bit;
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pair_lists_follow_search_order() {
        let list = PAIRS_OF[0b1_0000_1011];
        let pairs: Vec<_> = list.codes[..usize::from(list.count)]
            .iter()
            .map(|&c| PAIR_PILES[usize::from(c)])
            .collect();
        assert_eq!(pairs, [(0, 1), (0, 3), (0, 8), (1, 3), (1, 8), (3, 8)]);
        assert_eq!(PAIRS_OF[0b100].count, 0);
    }

    #[test]
    fn multi_fields_finds_ranks_on_two_or_more_tops() {
        // Rank 0 on piles 0 and 1, rank 2 on pile 5 only, rank 4 on piles 2, 3 and 8.
        let word = 0b11 | 1 << (2 * FIELD + 5) | 0b1_0000_1100 << (4 * FIELD);
        let m = multi_fields(word);
        let ranks: Vec<u32> = (0..5).filter(|&r| m >> (FIELD * r) & 0xFFF != 0).collect();
        assert_eq!(ranks, [0, 4]);
        assert_eq!(multi_fields(0x1FF << (4 * FIELD)) >> (4 * FIELD), 0x1FE);
        assert_eq!(rank_bit(8, 8), (1, 1 << (3 * FIELD + 8)));
    }
}
