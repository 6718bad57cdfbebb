//! `RpsSolver::solve` allocates nothing, and neither does reading a well-formed case once the
//! reader's line buffer has grown: a counting global allocator watches the heap while a solver
//! works through cases of every size.
//!
//! The allocator is the one of `tests/no_alloc.rs`, in a binary of its own because a binary has
//! one global allocator. Counting is per thread and switched on only inside [`counted`], so the
//! test harness, other tests of this binary and the set-up cannot add to the count. The control
//! at the end proves that the counter does see allocations made inside the counted region.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::hint::black_box;
use std::path::Path;

use patience::rps::{Case, CaseReader, MAX_OTHERS, RpsSolver};

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

fn data(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name);
    std::fs::read_to_string(&path).expect("reference data")
}

fn random_triple(rng: &mut fastrand::Rng) -> [f64; 3] {
    let (a, b) = (rng.f64(), rng.f64());
    let (lo, hi) = (a.min(b), a.max(b));
    [lo, hi - lo, 1.0 - hi]
}

#[test]
fn solving_allocates_nothing() {
    // Everything that may allocate happens first.
    let corpus: Vec<Case> = CaseReader::new(data("rps-random120.in").as_bytes())
        .map(|r| r.expect("a reference case"))
        .collect();
    let expected: Vec<f64> = data("rps-random120.out15")
        .lines()
        .map(|l| l.trim().parse().expect("a number"))
        .collect();
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
    let text = data("rps-random120.in");
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

    // Building a solver is where its memory comes from, and the counter sees it.
    let (solver, heap) = counted(RpsSolver::new);
    assert!(heap.allocs >= 3, "{heap:?}");
    drop(black_box(solver));

    // Nothing counted outside the region.
    let _unseen = black_box(vec![0u8; 10]);
    assert_eq!(ALLOCS.with(Cell::get), heap.allocs);
}
