//! The engine for rock-paper-scissors cases: plain Rust, no I/O, no allocation per case.
//!
//! # The recurrences
//! A situation is the set `S` of other players still in, with Fat brother either in or out (Maze
//! is in, or the game is lost). Write `a` for Maze's probabilities, `p_i` for player `i`'s, gestures
//! mod 3 (`g + 1` beats `g`) and `m_k(X)` for `Π_{i∈X} p_i(k)`, the chance that everyone in `X`
//! shows `k`. With Fat brother out, the value `f(S)` has `f(∅) = 1` and
//!
//! ```text
//! f(S) = Σ_k a(k) Σ_{T⊊S} m_{k-1}(S∖T) m_k(T) f(T)  /  P(not a draw)
//! ```
//!
//! (Maze shows `k`, the others in `T` show `k` too and those in `S∖T`, at least one, show `k - 1`
//! and leave.) With him in, `d(S)` is the best over his gesture `g` of
//!
//! ```text
//! [ a(g+1) Σ_{T⊆S} m_g(S∖T) m_{g+1}(T) f(T)  +  a(g) Σ_{T⊊S} m_{g-1}(S∖T) m_g(T) d(T) ]  /  P(not a draw | g)
//! ```
//!
//! (Maze beats him and the players who showed his gesture; or she shows his gesture and they beat
//! some others.) The answer is `d` of everyone. Every other way a round can end, Maze is out.
//!
//! # How it is fast
//! Each inner sum has the form `h(S) = Σ_{T⊆S} Π_{i∈S∖T} w_i · v(T)`: a subset sum weighted by a
//! product over the players who left. The seed evaluates it term by term, `3^n` terms in all. A
//! product weight factors one player at a time, which is what the `O(n 2^n)` zeta transform is
//! made of; the catch is that `v(T)` is only known once `h(T)` is, so the transform must run
//! *online*. It does, by divide and conquer on the highest player of a block of subsets: solve the
//! lower half (without that player) completely, then add `w_player * (h - h_before)` of each lower
//! subset to the subset with that player added, and solve the upper half. `h_before` is the lower
//! half as it was when the block started, so only the contributions of subsets inside the block
//! are added again. Unrolled, that is one pass over the subsets in increasing order:
//! - at subset `x`, save the lower halves of the blocks that start at `x`;
//! - finish `x`: its sums now hold exactly the proper subsets, which give `f(x)` and `d(x)`;
//! - push the lower half of the block that `x` closes into its upper half.
//!
//! Six sums run side by side in one row per subset (`f` and `d` for each gesture), so the pushes
//! are short, straight loops. The chances of a draw and of each kind of round come from products
//! over the players, built per subset from the subset without its lowest player, each as a sum of
//! non-negative terms: nothing is subtracted, so "no round can end" comes out as an exact 0, and
//! the value of such a situation is 0 instead of `0 / 0`.
//!
//! # Accuracy
//! `h - h_before` is the one subtraction. Its rounding error is a fraction `ε` of `h`, and `w * h`
//! is itself part of the sum it is added to, so the error stays a small multiple of `ε` relative
//! to each sum. On the corpus the answers are within 3e-16 of the seed's recurrence evaluated in
//! `long double`, closer than the seed itself in `double` (8e-14, from its `1 - P(draw)`).

use super::{Case, MAX_OTHERS};

/// Sums per subset: `f`-sums for gestures 0..3, then `d`-sums for gestures 0..3.
const LANES: usize = 6;
type Row = [f64; LANES];

/// The products over a subset that the chances of a round are made of.
#[derive(Clone, Copy, Debug, Default)]
struct Products {
    /// `all[k]`: everyone shows `k`.
    all: [f64; 3],
    /// `pair[k]`: everyone shows `k` or `k + 1`.
    pair: [f64; 3],
    /// `up[k]`: everyone shows `k` or `k + 1`, at least one `k + 1`.
    up: [f64; 3],
    /// `down[k]`: everyone shows `k` or `k + 1`, at least one `k`.
    down: [f64; 3],
}

impl Products {
    /// The products over no one.
    const EMPTY: Products = Products {
        all: [1.0; 3],
        pair: [1.0; 3],
        up: [0.0; 3],
        down: [0.0; 3],
    };

    /// The products over `self`'s subset and one more player with probabilities `p`.
    fn with(&self, p: [f64; 3]) -> Products {
        let mut out = Products::default();
        for k in 0..3 {
            let (lo, hi) = (p[k], p[(k + 1) % 3]);
            out.all[k] = self.all[k] * lo;
            out.pair[k] = self.pair[k] * (lo + hi);
            // Either the new player shows the rarer gesture, or someone before did.
            out.up[k] = self.up[k] * lo + self.pair[k] * hi;
            out.down[k] = self.down[k] * hi + self.pair[k] * lo;
        }
        out
    }
}

/// `won / progress`, or 0 when no round can end: a game that never ends is never won.
fn ratio(won: f64, progress: f64) -> f64 {
    if progress > 0.0 { won / progress } else { 0.0 }
}

/// A reusable solver. Allocates its tables once, for [`MAX_OTHERS`] players, and never again:
/// three arrays of `2^MAX_OTHERS` entries, 6 MiB in all.
pub struct RpsSolver {
    /// Per subset, the six sums: over its proper subsets while it waits, then over all of them.
    sums: Box<[Row]>,
    /// Lower halves of the open blocks as they were when each began; level `l` (a block of
    /// `2^l` subsets) keeps `2^(l-1)` rows starting at `2^(l-1)`.
    saved: Box<[Row]>,
    products: Box<[Products]>,
}

/// The tables are megabytes of numbers, worth printing only as their sizes.
impl std::fmt::Debug for RpsSolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RpsSolver")
            .field("subsets", &self.sums.len())
            .finish_non_exhaustive()
    }
}

impl Default for RpsSolver {
    fn default() -> Self {
        RpsSolver::new()
    }
}

impl RpsSolver {
    /// Allocates the tables. Costs a few milliseconds; keep the solver and reuse it.
    pub fn new() -> RpsSolver {
        let subsets = 1 << MAX_OTHERS;
        RpsSolver {
            sums: vec![[0.0; LANES]; subsets].into_boxed_slice(),
            saved: vec![[0.0; LANES]; subsets].into_boxed_slice(),
            products: vec![Products::EMPTY; subsets].into_boxed_slice(),
        }
    }

    /// The probability that Maze wins when Fat brother plays his best. Allocates nothing.
    pub fn solve(&mut self, case: &Case) -> f64 {
        let players = case.others();
        let n = players.len();
        let a = case.maze();
        // A case never has more than MAX_OTHERS players, so these fit the tables.
        let subsets = 1usize << n;
        let sums = &mut self.sums[..subsets];
        let saved = &mut self.saved[..subsets];
        let products = &mut self.products[..subsets];
        sums.fill([0.0; LANES]);

        let mut answer = 0.0;
        for x in 0..subsets {
            let here = match x {
                0 => Products::EMPTY,
                _ => products[x & (x - 1)].with(players[x.trailing_zeros() as usize]),
            };
            products[x] = here;

            // The blocks starting at x: sizes 2^1 ..= 2^levels.
            let levels = if x == 0 {
                n
            } else {
                x.trailing_zeros() as usize
            };
            for level in 1..=levels {
                let half = 1 << (level - 1);
                saved[half..2 * half].copy_from_slice(&sums[x..x + half]);
            }

            let row = &mut sums[x];
            let (f, d) = values(a, &here, row, x == 0);
            for k in 0..3 {
                row[k] += here.all[k] * f;
                row[3 + k] += here.all[k] * d;
            }
            answer = d;

            // x closes the lower half of the block of 2^(j+1) subsets split on player j.
            if x + 1 < subsets {
                let j = (x + 1).trailing_zeros() as usize;
                let half = 1 << j;
                let p = players[j];
                // The f- and d-sums for gesture k weigh a leaver by his chance of showing k - 1.
                let w = [p[2], p[0], p[1], p[2], p[0], p[1]];
                let (lower, upper) = sums.split_at_mut(x + 1);
                let lower = &lower[x + 1 - half..];
                let before = &saved[half..2 * half];
                for ((up, low), old) in upper[..half].iter_mut().zip(lower).zip(before) {
                    for t in 0..LANES {
                        up[t] += w[t] * (low[t] - old[t]);
                    }
                }
            }
        }
        answer
    }
}

/// `f` and `d` of a subset from its sums over proper subsets. `empty`: no other player is in,
/// so Maze has already won once Fat brother is out.
fn values(a: [f64; 3], pr: &Products, proper: &Row, empty: bool) -> (f64, f64) {
    let f = if empty {
        1.0
    } else {
        // Maze shows k: the others show k - 1 and k (she stays) or k and k + 1 (she leaves).
        let (mut won, mut progress) = (0.0, 0.0);
        for k in 0..3 {
            won += a[k] * proper[k];
            progress += a[k] * (pr.down[(k + 2) % 3] + pr.up[k]);
        }
        ratio(won, progress)
    };
    let mut d: f64 = 0.0;
    for g in 0..3 {
        let (beats, beaten) = ((g + 1) % 3, (g + 2) % 3);
        // Maze shows what beats him: he is out, and so is everyone who showed his gesture.
        let past_him = proper[beats] + pr.all[beats] * f;
        let won = a[beats] * past_him + a[g] * proper[3 + g];
        let progress = a[beats] * pr.pair[g]
            + a[g] * (pr.down[beaten] + pr.up[g])
            + a[beaten] * pr.pair[beaten];
        d = d.max(ratio(won, progress));
    }
    (f, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn solve(maze: [f64; 3], others: &[[f64; 3]]) -> f64 {
        RpsSolver::new().solve(&Case::new(maze, others).unwrap())
    }

    #[test]
    fn alone_with_fat_brother_she_wins_against_his_best_gesture() {
        // n = 0: with his gesture g she wins on g + 1 and loses on g - 1, so max a(g+1) / (a(g+1)
        // + a(g-1)): for (0.5, 0.3, 0.2), scissors gives 0.5 / 0.8.
        assert!((solve([0.5, 0.3, 0.2], &[]) - 0.625).abs() < 1e-15);
        assert_eq!(solve([1.0, 0.0, 0.0], &[]), 1.0);
    }

    #[test]
    fn a_round_that_can_only_draw_is_worth_zero_not_nan() {
        let never = solve([1.0, 0.0, 0.0], &[[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]);
        assert_eq!(never, 0.0);
    }

    #[test]
    fn a_situation_where_no_round_can_end_is_worth_zero_not_nan() {
        // Maze and one other always show rock. Fat brother out, every round draws; in, his rock
        // draws forever too.
        let rock = [1.0, 0.0, 0.0];
        let products = Products::EMPTY.with(rock);
        assert_eq!(values(rock, &products, &[0.0; LANES], false), (0.0, 0.0));
    }

    #[test]
    fn the_tables_are_reused_across_cases_of_different_sizes() {
        let mut solver = RpsSolver::new();
        let third = [1.0 / 3.0; 3];
        let big = Case::new([0.2, 0.3, 0.5], &[[0.4, 0.4, 0.2]; MAX_OTHERS]).unwrap();
        let small = Case::new(third, &[third]).unwrap();
        let first = solver.solve(&small);
        let big_value = solver.solve(&big);
        assert_eq!(solver.solve(&small), first);
        assert!((0.0..=1.0).contains(&big_value));
    }
}
