//! `Solver::solve` allocates nothing, nor does `RpsSolver::solve`, nor reading well-formed rps
//! cases once the reader's line buffer has grown: a counting global allocator watches the heap
//! while the solvers work through thousands of deals and hundreds of cases of every size.
//!
//! Counting is per thread and switched on only inside [`counted`], so the test harness, other tests
//! of this binary running at the same time, and the set-up (building the solver, reading and
//! generating deals) cannot add to the count. The controls at the end prove that the counter does
//! see allocations, reallocations and frees made inside the counted region, and only those of the
//! counting thread.
#![allow(
    unsafe_code,
    reason = "a global allocator implements an unsafe trait; this one forwards every call to System"
)]

// The tests' reference data (the workspace's tests/common/data.rs), under the name the tests give
// this crate.
extern crate patience_engine as patience;
#[allow(dead_code, reason = "this test reads some of the reference data only")]
#[path = "../../../tests/common/data.rs"]
mod data;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::hint::black_box;
use std::sync::{Arc, Barrier};

use data::{answers as read_answers, deals as read_deals, rps_answers, rps_cases, text};
use patience::deal::Deal;
use patience::rps::{Case, CaseReader, MAX_OTHERS, RpsSolver};
use patience::solver::{Solution, Solver};

struct Counting;

thread_local! {
    // `const` initialisers without destructors: touching these never allocates, so the allocator
    // can use them.
    static ACTIVE: Cell<bool> = const { Cell::new(false) };
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
    static FREES: Cell<u64> = const { Cell::new(0) };
}

fn note(counter: &'static std::thread::LocalKey<Cell<u64>>) {
    // `try_with`: an allocation during thread teardown must not panic inside the allocator.
    let _ = ACTIVE.try_with(|active| {
        if active.get() {
            let _ = counter.try_with(|c| c.set(c.get() + 1));
        }
    });
}

// SAFETY: every call is forwarded unchanged to the system allocator; the bookkeeping only touches
// thread-local cells and never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(&ALLOCS);
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(&ALLOCS);
        // SAFETY: same contract as ours.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(&ALLOCS);
        // SAFETY: same contract as ours.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        note(&FREES);
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Heap calls made by this thread while `f` ran.
#[derive(Debug, PartialEq, Eq)]
struct Heap {
    /// `alloc`, `alloc_zeroed` and `realloc` calls.
    allocs: u64,
    /// `dealloc` calls.
    frees: u64,
}

/// No heap call at all.
const NONE: Heap = Heap {
    allocs: 0,
    frees: 0,
};

fn counted<T>(f: impl FnOnce() -> T) -> (T, Heap) {
    ALLOCS.with(|c| c.set(0));
    FREES.with(|c| c.set(0));
    ACTIVE.with(|a| a.set(true));
    let out = f();
    ACTIVE.with(|a| a.set(false));
    let heap = Heap {
        allocs: ALLOCS.with(Cell::get),
        frees: FREES.with(Cell::get),
    };
    (out, heap)
}

#[test]
fn solving_allocates_nothing() {
    // Everything that may allocate happens first.
    let special = read_deals("extra12.in");
    let judged = read_deals("random1000.in");
    // Deals at a 6-decimal tie, which a plain solve settles with an exact search.
    let ties = read_deals("ties.in");
    let mut rng = fastrand::Rng::with_seed(20_251_129);
    let random: Vec<Deal> = (0..2_000).map(|_| Deal::shuffled(&mut rng)).collect();
    let deals: Vec<&Deal> = special
        .iter()
        .chain(&judged)
        .chain(&ties)
        .chain(&random)
        .collect();
    let mut solutions: Vec<Solution> = Vec::with_capacity(deals.len());
    // A fresh solver, never used: its very first solve must not allocate either.
    let mut solver = Solver::new();

    let ((), heap) = counted(|| {
        for deal in &deals {
            // Within the capacity reserved above: this push does not allocate.
            solutions.push(solver.solve(black_box(deal)));
        }
    });

    assert_eq!(heap, NONE, "solving {} deals touched the heap", deals.len());
    // The measured work was the real thing, not something optimised away.
    assert_eq!(solutions.len(), deals.len());
    let expected = read_answers("extra12.out9")
        .into_iter()
        .chain(read_answers("random1000.out9"));
    for (i, (got, want)) in solutions.iter().zip(expected).enumerate() {
        assert!(
            (got.probability - want).abs() <= 1.5e-9,
            "deal {i}: {got:?}, reference {want}"
        );
    }
    assert!(solutions.iter().all(|s| s.states >= 1));
}

/// Exact values live in an array allocated with the solver (zeroed, so resident only as far as
/// used): exact solving allocates nothing, from the first deal on.
#[test]
fn exact_solving_allocates_nothing() {
    let deals = read_deals("random1000.in");
    let mut solver = Solver::new();
    let (fractions, heap) = counted(|| {
        let mut nonzero = 0;
        for deal in &deals {
            let (solution, fraction) = solver.solve_exact(black_box(deal));
            nonzero += usize::from(solution.probability > 0.0);
            black_box(fraction);
        }
        nonzero
    });
    assert_eq!(
        heap,
        Heap {
            allocs: 0,
            frees: 0
        }
    );
    assert!(fractions > 100, "{fractions} deals with a nonzero answer");
}

#[test]
fn the_counter_sees_allocations_and_frees() {
    let (len, heap) = counted(|| black_box(vec![1u8; 100]).len());
    assert_eq!(len, 100);
    assert_eq!(
        heap,
        Heap {
            allocs: 1,
            frees: 1
        }
    );

    let (_, heap) = counted(|| {
        let mut v: Vec<u64> = Vec::with_capacity(1);
        for i in 0..1_000 {
            v.push(black_box(i));
        }
        black_box(v)
    });
    assert!(heap.allocs >= 2, "{heap:?}");

    // Building a solver is where its memory comes from, and the counter sees it.
    let (solver, heap) = counted(Solver::new);
    assert!(heap.allocs >= 1, "{heap:?}");
    drop(black_box(solver));

    // Nothing counted outside the region.
    let _unseen = black_box(vec![0u8; 10]);
    assert_eq!(ALLOCS.with(Cell::get), heap.allocs);
}

#[test]
fn the_counter_ignores_other_threads() {
    let start = Arc::new(Barrier::new(2));
    let done = Arc::new(Barrier::new(2));
    let other = {
        let (start, done) = (start.clone(), done.clone());
        std::thread::spawn(move || {
            start.wait();
            let v = black_box(vec![7u8; 1_000]);
            done.wait();
            v.len()
        })
    };
    let ((), heap) = counted(|| {
        start.wait();
        done.wait();
    });
    assert_eq!(other.join().unwrap(), 1_000);
    assert_eq!(
        heap,
        Heap {
            allocs: 0,
            frees: 0
        }
    );
}

fn random_triple(rng: &mut fastrand::Rng) -> [f64; 3] {
    let (a, b) = (rng.f64(), rng.f64());
    let (lo, hi) = (a.min(b), a.max(b));
    [lo, hi - lo, 1.0 - hi]
}

#[test]
fn solving_rps_cases_allocates_nothing() {
    // Everything that may allocate happens first.
    let corpus = rps_cases("rps-random120.in");
    let expected = rps_answers("rps-random120.out15");
    let mut rng = fastrand::Rng::with_seed(20_251_201);
    let random: Vec<Case> = (0..200)
        .map(|i| {
            let others: Vec<[f64; 3]> = (0..i % (MAX_OTHERS + 1))
                .map(|_| random_triple(&mut rng))
                .collect();
            Case::new(random_triple(&mut rng), &others).expect("a valid case")
        })
        .collect();
    let cases: Vec<&Case> = corpus.iter().chain(&random).collect();
    let mut answers: Vec<f64> = Vec::with_capacity(cases.len());
    // A fresh solver, never used: its very first solve must not allocate either.
    let mut solver = RpsSolver::new();

    let ((), heap) = counted(|| {
        for case in &cases {
            // Within the capacity reserved above: this push does not allocate.
            answers.push(solver.solve(black_box(case)));
        }
    });

    assert_eq!(heap, NONE, "solving {} cases touched the heap", cases.len());
    // The measured work was the real thing, not something optimised away.
    assert_eq!(answers.len(), cases.len());
    for (i, (got, want)) in answers.iter().zip(&expected).enumerate() {
        assert!(
            (got - want).abs() <= 1e-12,
            "case {}: {got} vs {want}",
            i + 1
        );
    }
    assert!(answers.iter().all(|p| (0.0..=1.0).contains(p)));
}

#[test]
fn reading_cases_allocates_nothing_once_the_line_buffer_has_grown() {
    let text = text("rps-random120.in");
    let mut reader = CaseReader::new(text.as_bytes());
    // The first case grows the line buffer to the length of a player's line.
    assert!(reader.next().is_some_and(|r| r.is_ok()));
    let (read, heap) = counted(|| {
        let mut read = 0;
        for case in &mut reader {
            read += usize::from(black_box(case).is_ok());
        }
        read
    });
    assert_eq!(heap, NONE);
    assert_eq!(read, 119);
}

/// Building an rps solver is where its memory comes from, and the counter sees it.
#[test]
fn the_counter_sees_an_rps_solver_being_built() {
    let (solver, heap) = counted(RpsSolver::new);
    assert!(heap.allocs >= 3, "{heap:?}");
    drop(black_box(solver));
}

/// Parsing a position allocates nothing, whatever its text: four megabytes of slashes (as much
/// as one message may carry) are refused by their count, not collected first.
#[test]
fn parsing_a_position_allocates_nothing() {
    let slashes = "/".repeat(4 << 20);
    let position = "7S 6S / 6C 6H / / / / / / / 9D";
    let (results, heap) = counted(|| {
        (
            Deal::parse(black_box(&slashes)).map(|_| ()),
            Deal::parse(black_box(position)).map(|_| ()),
        )
    });
    assert_eq!(heap, NONE);
    assert_eq!(
        results.0.map_err(|e| e.to_string()),
        Err(format!(
            "the position has {} piles; a position has 9, separated by 8 slashes",
            (4 << 20) + 1
        ))
    );
    assert!(results.1.is_ok(), "{:?}", results.1);
}
