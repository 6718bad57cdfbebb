//! The rules as the search sees them: a position small enough to copy into every stack frame, the
//! per-deal tables that turn a move into a few lookups and XORs, and the tests that prove a
//! position lost before it is explored.
//!
//! # Representation
//! - A position's index is the nine pile heights in base 5 (pile 0 lowest), below 5^9; the search
//!   names it by its key (`memo::key`, the index folded by parity), which a move lowers by a
//!   per-deal constant.
//! - The search does not look at piles at all. Each rank's cards are numbered 0 to 3 in deal
//!   order, and card `k` of rank `r` is bit `6 * r + k` of a word: a position carries the set of
//!   cards on top. A move is a pair of a rank's cards, numbered `6 * r + k` for the `k`-th of
//!   [`PAIRS`], and it is legal exactly when both its cards are on top: a handful of shifts and
//!   ANDs find every legal pair of every rank at once, as one word whose bit numbers are the pair
//!   numbers ([`legal_pairs`]), so listing moves is one loop with no arithmetic on the numbers.
//! - Everything a move changes is worked out once per deal and per pair: which top bits flip (the
//!   two cards go, the cards under them show), how much the key drops, and which pruning bits
//!   it sets. Playing a move is a few loads and XORs, with no branch; taking a position's next
//!   move is one load besides the pruning test. With the keys and the filter of `memo.rs`, the
//!   search costs about 174 instructions per position (callgrind), and those instructions, not
//!   cache misses, are most of its time.
//! - Piles come back only where a person reads moves (the analysis), through [`Tables::legal`]
//!   and [`Tables::play_piles`], which list moves in rank order and then pile order.

use super::memo;
use crate::deal::{Deal, PILES};

/// Place value of each pile's height in a position index.
pub(super) const POW5: [u32; PILES] = [1, 5, 25, 125, 625, 3125, 15625, 78125, 390625];

/// Children of one position: at most 4 tops of one rank give 6 pairs, and nine tops give at most
/// 4 + 4 + 1, so 12 pairs.
pub(super) const MAX_MOVES: usize = 12;

/// Ranks, and the cards of a rank.
const RANKS: usize = 9;
const PER_RANK: usize = 4;

/// Bits per rank in a set of cards and in a set of pairs: six, one per pair of its four cards.
const FIELD: usize = 6;

/// Entries of the per-pair tables: pair numbers are `6 * rank + k` with `k < 6`, so below 54;
/// rounded up to a power of two so that a number masked with `PAIR_CODES - 1` needs no bounds
/// check in the hot loop.
const PAIR_CODES: usize = 64;

/// A child in a move list: its position index in the low 21 bits (5^9 < 2^21), its pair's number
/// in the bits above.
pub(super) const CHILD: u32 = (1 << 21) - 1;
const PAIR_SHIFT: u32 = 21;

/// The six ways to choose two of a rank's four cards. The two cards other than pair `k` are pair
/// `5 - k`.
const PAIRS: [(usize, usize); 6] = [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)];

/// Bit 0 of each rank's field in a set of cards.
const FIELDS: u64 = {
    let mut m = 0;
    let mut r = 0;
    while r < RANKS {
        m |= 1 << (FIELD * r);
        r += 1;
    }
    m
};

/// The 36 pairs of piles `(a, b)`, `a < b`, lower pile first, then upper pile: the order in which
/// moves are listed to people.
const PAIR_PILES: [(u8, u8); 36] = {
    let mut t = [(0u8, 0u8); 36];
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

/// The pairs a set of piles showing one rank makes, in pile order. A rank has four cards, so at
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

/// Every legal pair of `tops` (a set of cards, bit `6 * rank + k`), as a set of pair numbers:
/// each of the six pairs is one AND of two shifted copies of the word, for all nine ranks at once.
#[inline(always)]
fn legal_pairs(tops: u64) -> u64 {
    let c = [
        tops & FIELDS,
        tops >> 1 & FIELDS,
        tops >> 2 & FIELDS,
        tops >> 3 & FIELDS,
    ];
    (c[0] & c[1])
        | (c[0] & c[2]) << 1
        | (c[0] & c[3]) << 2
        | (c[1] & c[2]) << 3
        | (c[1] & c[3]) << 4
        | (c[2] & c[3]) << 5
}

/// How much removing a card from each of piles `a` and `b` lowers a key: half the drop in the
/// index, which is even (two odd powers of 5), so the key keeps its parity half.
fn pair_drop(a: usize, b: usize) -> u32 {
    (POW5.get(a).copied().unwrap_or(0) + POW5.get(b).copied().unwrap_or(0)) / 2
}

/// Per pair, when it is its rank's first: the `remaining` bit naming the two cards it leaves.
const NAMED: [u64; PAIR_CODES] = {
    let mut t = [0; PAIR_CODES];
    let mut code = 0;
    while code < FIELD * RANKS {
        let (r, k) = (code / FIELD, code % FIELD);
        t[code] = 1 << (FIELD * r + 5 - k);
        code += 1;
    }
    t
};

/// Per pair: its rank's bits in `remaining`. None is set while the rank has all four cards, so a
/// pair is its rank's first exactly when `remaining` has none of them.
const OWN: [u64; PAIR_CODES] = {
    let mut t = [0; PAIR_CODES];
    let mut code = 0;
    while code < FIELD * RANKS {
        t[code] = 0b11_1111 << (FIELD * (code / FIELD));
        code += 1;
    }
    t
};

/// Bit 63 of `remaining` is always set, so a prune entry with it set prunes whatever is left.
const ALWAYS: u64 = 1 << 63;

/// A position as the search carries it: everything a move changes, copied into each frame so that
/// going back up needs no undo.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct State {
    /// The cards on top of their piles, bit `6 * rank + k` for the rank's card `k`.
    pub tops: u64,
    /// For each rank with two cards left, the bit `6 * rank + k`, `k` naming which two remain;
    /// and [`ALWAYS`].
    pub remaining: u64,
    /// The position's key (`memo::key`): its index, folded by parity.
    pub key: u32,
}

impl State {
    /// Cards left on pile `p`.
    pub fn height(&self, p: usize) -> u8 {
        POW5.get(p)
            .map_or(0, |&place| (memo::position(self.key) / place % 5) as u8)
    }

    /// The key of the child that removes the tops of piles `a` and `b`.
    pub fn child_key(&self, a: usize, b: usize) -> u32 {
        self.key.wrapping_sub(pair_drop(a, b))
    }

    /// Cards left on the table.
    pub fn cards(&self) -> u32 {
        (0..PILES).map(|p| u32::from(self.height(p))).sum()
    }
}

/// What the search needs to know about one deal, computed once when the deal is loaded.
pub(super) struct Tables {
    /// Per pair: what turns a position index into the entry for its child in a move list (the
    /// child's index, the pair's number above it), added with one instruction. A legal pair's
    /// piles both have a card, so the child's index never wraps below 0.
    kid: [u32; PAIR_CODES],
    /// Per pair: the top bits it flips (its two cards off, the cards under them on).
    flip: [u64; PAIR_CODES],
    /// Per pair, when it is its rank's first: the `remaining` bits that make it hopeless.
    /// [`ALWAYS`] when it leaves the rank's other two cards in one pile, which can never be
    /// paired; otherwise the ranks whose last two cards would deadlock with the two it leaves.
    prune: [u64; PAIR_CODES],
    /// The pile of each card, `6 * rank + k`, for listing moves by pile.
    pile_of: [u8; PAIR_CODES],
    /// `crossing[6 * rank + k]`: the `remaining` bits of the other ranks whose last two cards
    /// would deadlock with this rank's last two cards `k`.
    crossing: [u64; 54],
}

impl Tables {
    pub(super) fn new() -> Tables {
        Tables {
            kid: [0; PAIR_CODES],
            flip: [0; PAIR_CODES],
            prune: [0; PAIR_CODES],
            pile_of: [0; PAIR_CODES],
            crossing: [0; 54],
        }
    }

    /// Fills the tables for `deal` and returns its start, and false when the deal is lost before
    /// the first move: some rank has an odd number of cards or more in one pile than in all the
    /// others, or a position starts with two ranks' last pairs crossed.
    pub(super) fn load(&mut self, deal: &Deal) -> (State, bool) {
        let mut seen = [0u8; RANKS];
        let mut piles_of = [[0u8; PER_RANK]; RANKS];
        let mut levels_of = [[0u8; PER_RANK]; RANKS];
        // Per card: the bit of the card under it (0 at the bottom of its pile).
        let mut under = [0u64; PAIR_CODES];
        let mut in_pile = [[0u8; PILES]; RANKS];
        let mut state = State::default();
        let mut position = 0;
        for (p, pile) in deal.piles().enumerate() {
            let mut below = 0u64;
            for (i, card) in pile.iter().enumerate() {
                let r = card.rank.index();
                // A deal holds each card once, so no rank has more than four.
                let k = usize::from(seen[r] & 3);
                let id = FIELD * r + k;
                piles_of[r][k] = p as u8;
                levels_of[r][k] = i as u8 + 1;
                self.pile_of[id] = p as u8;
                under[id] = below;
                below = 1 << id;
                in_pile[r][p] += 1;
                seen[r] += 1;
            }
            state.tops |= below;
            position += pile.len().min(4) as u32 * POW5[p];
        }
        state.key = memo::key(position);
        self.find_crossings(&seen, &piles_of, &levels_of);
        for r in 0..RANKS {
            let count = usize::from(seen[r]);
            for (k, &(x, y)) in PAIRS.iter().enumerate() {
                let code = FIELD * r + k;
                let (cx, cy) = (FIELD * r + x, FIELD * r + y);
                let (px, py) = (usize::from(piles_of[r][x]), usize::from(piles_of[r][y]));
                self.kid[code] = ((code as u32) << PAIR_SHIFT).wrapping_sub(pair_drop(px, py));
                self.flip[code] = (1 << cx) | under[cx] | (1 << cy) | under[cy];
                let (ox, oy) = PAIRS[5 - k];
                // Only a rank with all four cards has a first pair to prune.
                self.prune[code] = if count < 4 {
                    0
                } else if piles_of[r][ox] == piles_of[r][oy] {
                    ALWAYS
                } else {
                    self.crossing[6 * r + 5 - k]
                };
            }
        }
        // A full deal starts with four cards of every rank; a position may start with a rank's
        // last two, which are its cards 0 and 1 (pair number 0).
        state.remaining = (0..RANKS)
            .filter(|&r| seen[r] == 2)
            .fold(ALWAYS, |m, r| m | 1 << (6 * r));
        let winnable = self.winnable_by_counts(&state, &seen, &in_pile);
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
        let mut head = [NONE; 36];
        // The pairs of piles that have a candidate: most of the 36 have none, and walking them
        // all was most of the time spent loading a deal.
        let mut used = 0u64;
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
                let (low_pile, high_pile) = (usize::from(pc.min(pd)), usize::from(pc.max(pd)));
                let bucket = high_pile * (high_pile - 1) / 2 + low_pile;
                next[n] = head[bucket];
                head[bucket] = n as u8;
                used |= 1 << bucket;
                n += 1;
            }
        }
        while used != 0 {
            let bucket = used.trailing_zeros() as usize;
            used &= used - 1;
            let mut i = head.get(bucket).copied().unwrap_or(NONE);
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

    fn winnable_by_counts(
        &self,
        state: &State,
        count: &[u8; RANKS],
        in_pile: &[[u8; PILES]; RANKS],
    ) -> bool {
        let mut crossed = false;
        let mut rest = state.remaining & !ALWAYS;
        while rest != 0 {
            let bit = rest.trailing_zeros() as usize;
            rest &= rest - 1;
            crossed |= self.crossing[bit] & state.remaining & !ALWAYS != 0;
        }
        !crossed
            && count.iter().zip(in_pile).all(|(&total, piles)| {
                total.is_multiple_of(2) && piles.iter().all(|&here| 2 * here <= total)
            })
    }

    /// The legal pairs of `state`, as a set of pair numbers, for [`Tables::kid`] to take one by
    /// one. The random player picks among all of them, so a hopeless one still counts, as a
    /// child worth 0.
    #[inline(always)]
    pub(super) fn pairs(&self, state: &State) -> u64 {
        legal_pairs(state.tops)
    }

    /// The move list entry for legal pair `code` of `state`, and whether the pair is hopeless
    /// (its child can never be won). Both without a branch.
    #[inline(always)]
    pub(super) fn kid(&self, state: &State, code: usize) -> (u32, bool) {
        let code = code & (PAIR_CODES - 1);
        // Only a rank's first pair can be hopeless.
        let first = state.remaining & OWN[code] == 0;
        let hopeless = first & (state.remaining & self.prune[code] != 0);
        (state.key.wrapping_add(self.kid[code]), hopeless)
    }

    /// Every legal move of `state`, pruned or not, as `(pile a, pile b, rank)`, `a < b`, in rank
    /// order and then pile order.
    pub(super) fn legal(&self, state: &State) -> ([(usize, usize, usize); MAX_MOVES], usize) {
        let mut legal = [(0, 0, 0); MAX_MOVES];
        let mut n = 0;
        for r in 0..RANKS {
            let piles = (0..PER_RANK)
                .filter(|&k| state.tops >> (FIELD * r + k) & 1 != 0)
                .fold(0, |set, k| set | 1 << self.pile_of[FIELD * r + k]);
            let list = &PAIRS_OF[piles & 0x1FF];
            for &code in &list.codes[..usize::from(list.count)] {
                let (a, b) = PAIR_PILES[usize::from(code)];
                if let Some(slot) = legal.get_mut(n) {
                    *slot = (usize::from(a), usize::from(b), r);
                    n += 1;
                }
            }
        }
        (legal, n)
    }

    /// The state after the move that `kid` (from [`Tables::kid`]) describes.
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
        let code = (kid >> PAIR_SHIFT) as usize & (PAIR_CODES - 1);
        let own = OWN[code];
        // A rank's first pair leaves two cards, which `remaining` names; its second leaves none.
        let first = u64::from(state.remaining & own == 0).wrapping_neg();
        next.tops = state.tops ^ self.flip[code];
        next.remaining = (state.remaining | (NAMED[code] & first)) & (!own | first);
        next.key = kid & CHILD;
    }

    /// The state after removing the tops of piles `a < b`, which show rank `r`.
    pub(super) fn play_piles(&self, state: &State, a: usize, b: usize, r: usize) -> State {
        let on_top = |pile: usize| {
            (0..PER_RANK).find(|&k| {
                let id = FIELD * r + k;
                state.tops >> id & 1 != 0 && usize::from(self.pile_of[id]) == pile
            })
        };
        let (Some(x), Some(y)) = (on_top(a), on_top(b)) else {
            return *state;
        };
        let pair = (x.min(y), x.max(y));
        let k = PAIRS.iter().position(|&p| p == pair).unwrap_or(0);
        let code = FIELD * r + k;
        let kid = (state.child_key(a, b) & CHILD) | (code as u32) << PAIR_SHIFT;
        self.play(state, kid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pair_lists_follow_pile_order() {
        let list = PAIRS_OF[0b1_0000_1011];
        let pairs: Vec<_> = list.codes[..usize::from(list.count)]
            .iter()
            .map(|&c| PAIR_PILES[usize::from(c)])
            .collect();
        assert_eq!(pairs, [(0, 1), (0, 3), (0, 8), (1, 3), (1, 8), (3, 8)]);
        assert_eq!(PAIRS_OF[0b100].count, 0);
    }

    /// Every set of top cards: the pairs `legal_pairs` finds are exactly the pairs of cards of
    /// one rank that are both on top, counted one by one.
    #[test]
    fn legal_pairs_are_the_pairs_of_one_rank_both_on_top() {
        let mut rng = fastrand::Rng::with_seed(3);
        for _ in 0..2000 {
            // Four cards per rank: the two spare bits of each field are never set.
            let tops = rng.u64(..) & (FIELDS * 0b1111);
            let word = legal_pairs(tops);
            let found: Vec<usize> = (0..64).filter(|b| word >> b & 1 != 0).collect();
            let mut expected = Vec::new();
            for r in 0..RANKS {
                for (k, &(x, y)) in PAIRS.iter().enumerate() {
                    if tops >> (FIELD * r + x) & 1 != 0 && tops >> (FIELD * r + y) & 1 != 0 {
                        expected.push(FIELD * r + k);
                    }
                }
            }
            assert_eq!(found, expected, "{tops:#x}");
        }
    }

    #[test]
    fn the_other_two_cards_of_pair_k_are_pair_5_minus_k() {
        for (k, &(x, y)) in PAIRS.iter().enumerate() {
            let (ox, oy) = PAIRS[5 - k];
            let mut all = [x, y, ox, oy];
            all.sort_unstable();
            assert_eq!(all, [0, 1, 2, 3]);
        }
    }
}
