//! The depth-first search over one deal, on an explicit stack.
//!
//! A position's value is the average over all its legal moves of its children's values, where a
//! child known to be lost counts 0 without being visited. Each frame of the stack holds a copy of
//! its position's [`State`] and its children, so going back up is just popping a frame. A frame's
//! children are taken strictly in order, and the memo is asked about each only when its turn
//! comes. Which child comes next then never waits on a memory load: the branch on the memo's answer
//! is predicted, and the processor runs ahead into the child's own moves while the index-table
//! entry is still on its way. (Asking about all children up front, and picking the next from the
//! answers, made every step wait for the slowest of those loads.)
//!
//! A value is the sum of the children's values, added in child order (`Frame::sum`), divided by
//! the number of moves; the order is fixed by the position alone, whichever children were found
//! in the memo, so the answer does not depend on what the memo happened to know.
//!
//! With `EXACT` (a compile-time switch, so plain solving pays nothing for it) the search also
//! keeps each position's exact value as an integer `N` (see `exact.rs`) beside its probability,
//! computed from the children's the moment the frame is done.

use ruint::aliases::U320;

use super::exact::LCM;
use super::memo::{IndexTable, Memo};
use super::rules::{CHILD, MAX_MOVES, State, Tables};

/// Frames a search can need: one per move, 18 at most (36 cards, two per move), plus the start.
const DEPTH: usize = 19;

/// One position being evaluated.
#[derive(Clone, Copy, Debug, Default)]
struct Frame {
    state: State,
    kids: [u32; MAX_MOVES],
    /// The sum of the values of the children so far, in order.
    sum: f64,
    /// Each child's slot in the dense array once known (kept by exact searches only).
    slots: [u32; MAX_MOVES],
    /// Legal moves, pruned ones included: what the sum is divided by.
    moves: u32,
    /// Children listed.
    n: u8,
    /// The child being evaluated below this frame.
    current: u8,
    /// The next child to consider.
    next: u8,
}

impl Frame {
    /// Lists the children of the frame's state. False when no child can be won.
    #[inline(always)]
    fn expand(&mut self, tables: &Tables) -> bool {
        let (n, moves) = tables.expand(&self.state, &mut self.kids);
        self.moves = moves;
        self.n = n as u8;
        self.next = 0;
        self.sum = 0.0;
        n > 0
    }

    /// The position's value once every child is known: their sum over the number of moves.
    #[inline(always)]
    fn value(&self) -> f64 {
        self.sum / f64::from(self.moves)
    }

    /// The position's exact `N` from its children's, all known by now.
    fn numerator(&self, exact: &[U320]) -> U320 {
        let n = usize::from(self.n);
        let sum = self.slots[..n].iter().fold(U320::ZERO, |sum, &slot| {
            sum + exact.get(slot as usize).copied().unwrap_or(U320::ZERO)
        });
        sum * U320::from(LCM / u64::from(self.moves.max(1)))
    }
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
    pub fn run<I: IndexTable, const EXACT: bool>(
        &mut self,
        tables: &Tables,
        memo: &mut Memo,
        start: State,
    ) -> Option<f64> {
        memo.start::<I>();
        self.exact = U320::ZERO;
        self.frames[0].state = start;
        if !self.frames[0].expand(tables) {
            return Some(0.0);
        }
        let mut d = 0;
        loop {
            let frame = self.frames.get_mut(d)?;
            if frame.next < frame.n {
                let i = usize::from(frame.next);
                frame.next += 1;
                let kid = frame.kids[i];
                let child = kid & CHILD;
                if let Some((slot, value)) = memo.find::<I>(child) {
                    frame.sum += value;
                    if EXACT {
                        frame.slots[i] = slot;
                    }
                    continue;
                }
                frame.current = i as u8;
                if child == 0 {
                    // The table is cleared: won.
                    let slot = memo.remember::<I>(0, 1.0)?;
                    frame.sum += 1.0;
                    if EXACT {
                        frame.slots[i] = slot as u32;
                        memo.set_exact(slot, U320::from(1u64));
                    }
                    continue;
                }
                let (above, below) = self.frames.split_at_mut(d + 1);
                let (frame, next) = (above.last_mut()?, below.first_mut()?);
                tables.play_into(&frame.state, kid, &mut next.state);
                if next.expand(tables) {
                    d += 1;
                    continue;
                }
                // Stuck, or every move is known lost: worth 0, nothing to add.
                let slot = memo.remember::<I>(child, 0.0)?;
                if EXACT {
                    frame.slots[i] = slot as u32;
                    memo.set_exact(slot, U320::ZERO);
                }
            } else {
                let value = frame.value();
                let exact = if EXACT {
                    frame.numerator(memo.exact())
                } else {
                    U320::ZERO
                };
                if d == 0 {
                    // The start is evaluated but not remembered.
                    self.exact = exact;
                    return Some(value);
                }
                let slot = memo.remember::<I>(frame.state.key, value)?;
                d -= 1;
                let parent = &mut self.frames[d];
                parent.sum += value;
                if EXACT {
                    parent.slots[usize::from(parent.current)] = slot as u32;
                    memo.set_exact(slot, exact);
                }
            }
        }
    }
}
