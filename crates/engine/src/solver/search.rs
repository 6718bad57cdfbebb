//! The depth-first search over one deal, on an explicit stack.
//!
//! A position's value is the average over all its legal moves of its children's values, where a
//! child known to be lost counts 0 without being visited. Each frame of the stack holds a copy of
//! its position's [`State`] and the set of its legal pairs not taken yet, so going back up is just
//! popping a frame. A frame takes its pairs strictly in order, one per step of the loop: the next
//! pair is the lowest bit of a word, the child and its pruning test are a few loads from per-deal
//! tables, and the memo is asked about the child only then. Which child comes next never waits on
//! a memory load: the branches on the pruning test and on the memo's answer are predicted, and the
//! processor runs ahead into the child's own moves while its index-table entry is on its way.
//! Measured against the alternatives (in-process A/B, 20,000 random deals): listing all children
//! first and then visiting them is 1.09x slower (one more loop, one more exit to mispredict per
//! position); asking the memo about all children up front and picking the next from the answers
//! made each step wait for the slowest of those loads; deciding "skip or go down" with one
//! branch-free test for both the pruning and the memo was no faster than two branches.
//!
//! On its way down to a new position, the search asks for the cache line of that position's
//! index entry (a prefetch, which waits for nothing). The entry is written when the position is
//! finished, and it is almost never in cache: the table is 1.9 MiB a parity against 1 MiB of L2
//! here, a deal's positions fall on 0.8 distinct lines each (measured over 5,000 deals), and the
//! lines one deal writes are not the last deal's. Without the prefetch the store waits for the line
//! at the end of the position, with the position's whole subtree already done; with it, the line
//! is on its way while the subtree is worked out. Measured in `cargo bench --bench engine`, which
//! runs the engine with and without it in turn: 1.07x-1.12x on one thread (docs/performance.md).
//!
//! A value is the sum of the children's values, added in pair order (`Frame::sum`), divided by
//! the number of moves; the order is fixed by the position alone, whichever children were found
//! in the memo, so the answer does not depend on what the memo happened to know.
//!
//! With `EXACT` (a compile-time switch, so plain solving pays nothing for it) the search also
//! keeps each position's exact value as an integer `N` (see `exact.rs`) beside its probability,
//! computed from the children's the moment the frame is done.

use ruint::aliases::U320;

use super::exact::{self, LCM, Limbs};
use super::memo::{IndexTable, Memo};
use super::rules::{CHILD, State, Tables};

/// Frames a search can need: one per move, 18 at most (36 cards, two per move), plus the start.
const DEPTH: usize = 19;

/// One position being evaluated.
#[derive(Clone, Copy, Debug, Default)]
struct Frame {
    state: State,
    /// Legal pairs not taken yet.
    pairs: u64,
    /// The sum of the values of the children so far, in order.
    sum: f64,
    /// Legal moves taken so far, hopeless ones included: what the sum is divided by.
    moves: u32,
    /// The sum of the children's exact `N` so far (exact searches only): each is added the
    /// moment it is known, found in the memo or just finished, while it is at hand.
    exact: Limbs,
}

impl Frame {
    /// Starts evaluating the frame's state.
    #[inline(always)]
    fn start<const EXACT: bool>(&mut self, tables: &Tables) {
        self.pairs = tables.pairs(&self.state);
        self.sum = 0.0;
        self.moves = 0;
        if EXACT {
            self.exact = [0; 5];
        }
    }

    /// The position's value once every child is known: their sum over the number of moves (0
    /// for a position with no move left, which is stuck).
    #[inline(always)]
    fn value(&self) -> f64 {
        self.sum / f64::from(self.moves.max(1))
    }

    /// The position's exact `N` once every child is known, `width` limbs wide.
    #[inline(always)]
    fn numerator(&self, width: usize) -> Limbs {
        exact::scale(&self.exact, LCM / u64::from(self.moves.max(1)), width)
    }
}

/// The limbs a position `d` frames below a start with `top` pairs needs (see [`exact::WIDTH`]).
#[inline(always)]
fn width(top: usize, d: usize) -> usize {
    usize::from(exact::WIDTH[top.saturating_sub(d).min(exact::WIDTH.len() - 1)])
}

/// The stack of a search, kept by the solver so that a search allocates nothing.
pub(super) struct Search {
    frames: [Frame; DEPTH],
    /// The start position's `N`, after an exact search.
    pub exact: U320,
}

impl Search {
    pub fn new() -> Search {
        Search {
            frames: [Frame::default(); DEPTH],
            exact: U320::ZERO,
        }
    }

    /// The probability of winning from `start`, remembering every position it evaluates in
    /// `memo` through index table `I`. `None` when `I` ran out of slots: search again with a
    /// wider table.
    pub fn run<I: IndexTable, const EXACT: bool, const PREFETCH: bool>(
        &mut self,
        tables: &Tables,
        memo: &mut Memo,
        start: State,
    ) -> Option<f64> {
        memo.start::<I>();
        self.exact = U320::ZERO;
        let top = start.cards() as usize / 2;
        self.frames[0].state = start;
        self.frames[0].start::<EXACT>(tables);
        let mut d = 0;
        loop {
            let frame = self.frames.get_mut(d)?;
            if frame.pairs != 0 {
                let code = frame.pairs.trailing_zeros() as usize;
                frame.pairs &= frame.pairs - 1;
                frame.moves += 1;
                let (kid, hopeless) = tables.kid(&frame.state, code);
                let child = kid & CHILD;
                if hopeless {
                    continue;
                }
                if let Some((slot, value)) = memo.find::<I>(child) {
                    frame.sum += value;
                    if EXACT {
                        exact::add(&mut frame.exact, &memo.exact(slot), width(top, d));
                    }
                    continue;
                }
                if child == 0 {
                    // The table is cleared: won.
                    let slot = memo.remember::<I>(0, 1.0)?;
                    frame.sum += 1.0;
                    if EXACT {
                        let one = [1, 0, 0, 0, 0];
                        memo.set_exact(slot, one);
                        exact::add(&mut frame.exact, &one, width(top, d));
                    }
                    continue;
                }
                if PREFETCH {
                    memo.prefetch::<I>(child);
                }
                let (above, below) = self.frames.split_at_mut(d + 1);
                let (frame, next) = (above.last_mut()?, below.first_mut()?);
                tables.play_into(&frame.state, kid, &mut next.state);
                next.start::<EXACT>(tables);
                d += 1;
            } else {
                let value = frame.value();
                let exact = if EXACT {
                    frame.numerator(width(top, d))
                } else {
                    [0; 5]
                };
                if d == 0 {
                    // The start is evaluated but not remembered.
                    self.exact = U320::from_limbs(exact);
                    return Some(value);
                }
                let slot = memo.remember::<I>(frame.state.key, value)?;
                d -= 1;
                let parent = &mut self.frames[d];
                parent.sum += value;
                if EXACT {
                    memo.set_exact(slot, exact);
                    exact::add(&mut parent.exact, &exact, width(top, d));
                }
            }
        }
    }
}
