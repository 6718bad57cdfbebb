//! `patience._patience`: the engine (crates/engine) as a Python extension module, the native part
//! of the `patience` package (`python/patience` holds the rest, and the stub).
//!
//! # Layout
//! - [`capsule`]: Arrow in and out through the PyCapsule interface, over arrow's C data interface
//!   (the only unsafe code);
//! - [`column`]: an input's deal texts, read in place, and its ids;
//! - [`rps`]: an FZU 2145 case from one row's text;
//! - [`remote`]: the rows a daemon answers for `patience.remote`, and its answers as the same table;
//! - [`work`]: the rows solved on threads in order by either game's engines, and the answers as
//!   Arrow batches;
//! - here: what Python sees, [`Solver`], [`Answers`] and `solve`.
//!
//! A solve reads its input with the GIL held (a producer's stream may call into Python), then
//! releases it for all the solving and for building the answers: other Python threads run
//! meanwhile.
#![forbid(clippy::unwrap_used, clippy::expect_used)]

mod answers;
mod capsule;
mod column;
mod remote;
mod rps;
mod work;

use std::sync::{Mutex, OnceLock};

use patience_engine::rps::RpsSolver;
use patience_engine::solver::Solver as DealSolver;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString, PyTuple, PyType};

use answers::Answers;
use column::Column;

/// The thread count when none is given: one per core the process may use.
fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Engines kept between calls, with the thread count they were made for. Each engine owns
/// megabytes of tables that cost milliseconds to allocate: a `Solver` keeps them, so that many
/// small calls (a Ray actor's batches, a Spark partition's) pay for them once. Each game has its
/// own, made only when that game is first solved.
#[derive(Debug)]
struct Pool {
    threads: Option<usize>,
    deals: Mutex<Vec<DealSolver>>,
    cases: Mutex<Vec<RpsSolver>>,
}

/// The games `solve` knows, by their `game=` names.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Game {
    Deals,
    Rps,
}

impl Game {
    fn named(game: &str, exact: bool) -> PyResult<Game> {
        match (game, exact) {
            ("deals", _) => Ok(Game::Deals),
            ("rps", false) => Ok(Game::Rps),
            ("rps", true) => Err(PyValueError::new_err(
                "exact=True is for deals: FZU 2145's answers have no exact form here",
            )),
            _ => Err(PyValueError::new_err(format!(
                "game {game:?} is not one this package solves: \"deals\" (Double Patience, UVa \
                 1637) or \"rps\" (FZU 2145)"
            ))),
        }
    }
}

impl Pool {
    fn new(threads: Option<usize>) -> PyResult<Pool> {
        if threads == Some(0) {
            return Err(PyValueError::new_err("threads must be at least 1"));
        }
        Ok(Pool {
            threads,
            deals: Mutex::new(Vec::new()),
            cases: Mutex::new(Vec::new()),
        })
    }

    /// Solves `data`'s rows: the whole of `solve`, for both the module's function and the class.
    fn solve(
        &self,
        py: Python<'_>,
        data: &Bound<'_, PyAny>,
        column: &str,
        game: &str,
        threads: Option<usize>,
        exact: bool,
    ) -> PyResult<Answers> {
        let game = Game::named(game, exact)?;
        if threads == Some(0) {
            return Err(PyValueError::new_err("threads must be at least 1"));
        }
        let rows = read(data, column)?;
        let wanted = threads.or(self.threads).unwrap_or_else(default_threads);
        // No more threads than blocks of rows to hand them.
        let threads = wanted.min(rows.len().div_ceil(work::BLOCK)).max(1);
        py.detach(|| {
            let answers = match game {
                Game::Deals => self.run(&self.deals, &rows, threads, exact),
                Game::Rps => self.run(&self.cases, &rows, threads, exact),
            };
            work::batches(&rows, &answers, exact)
        })
        .map(|(schema, batches)| Answers::new(schema, batches))
        .map_err(|e| PyValueError::new_err(format!("the answers cannot be made into Arrow: {e}")))
    }

    /// The rows solved on `threads` engines from `idle` (new ones where too few are idle), which
    /// are kept there afterwards, as many as a call may use.
    fn run<E: work::Engine>(
        &self,
        idle: &Mutex<Vec<E>>,
        rows: &Column,
        threads: usize,
        exact: bool,
    ) -> Vec<work::Answer> {
        let mut engines: Vec<E> = {
            let mut idle = idle.lock().unwrap_or_else(|p| p.into_inner());
            let keep = idle.len().saturating_sub(threads);
            idle.drain(keep..).collect()
        };
        engines.resize_with(threads, E::new);
        let answers = work::solve_rows(rows, &mut engines, exact);
        let mut idle = idle.lock().unwrap_or_else(|p| p.into_inner());
        idle.extend(engines);
        idle.truncate(self.threads.unwrap_or_else(default_threads));
        answers
    }
}

/// The rows of `data`: an Arrow table or array through the PyCapsule interface, or a sequence
/// of `str` (a `None` or a non-string is a bad row, not an exception).
pub(crate) fn read(data: &Bound<'_, PyAny>, column: &str) -> PyResult<Column> {
    if let Some(imported) = capsule::import(data)? {
        return Column::from_arrow(imported, column)
            .map_err(|e| PyValueError::new_err(e.to_string()));
    }
    if data.is_instance_of::<PyString>() || data.is_instance_of::<PyBytes>() {
        return Err(PyTypeError::new_err(
            "solve takes many deals: a sequence of str (a list of one for a single deal) or an \
             Arrow table, not one str",
        ));
    }
    let items = data.try_iter().map_err(|_| {
        PyTypeError::new_err(format!(
            "solve takes an object with __arrow_c_stream__ or __arrow_c_array__ (a pyarrow \
             Table, a polars DataFrame...) or a sequence of str, not {}",
            data.get_type()
                .name()
                .map_or_else(|_| "that".into(), |n| n.to_string())
        ))
    })?;
    let mut texts = Vec::new();
    for item in items {
        let item = item?;
        texts.push(if item.is_none() {
            None
        } else if let Ok(text) = item.cast::<PyString>() {
            Some(
                text.to_cow()
                    .map(|t| t.into_owned())
                    .map_err(|_| "a str that is not valid Unicode text".to_string()),
            )
        } else {
            let name = item
                .get_type()
                .name()
                .map_or_else(|_| "?".into(), |n| n.to_string());
            Some(Err(format!("a value of type {name}, not a str")))
        });
    }
    Ok(Column::from_texts(texts))
}

/// The module's `solve` shares one pool of engines, made on its first call.
fn shared() -> PyResult<&'static Pool> {
    static SHARED: OnceLock<Pool> = OnceLock::new();
    if let Some(pool) = SHARED.get() {
        return Ok(pool);
    }
    let pool = Pool::new(None)?;
    Ok(SHARED.get_or_init(|| pool))
}

/// Solves every row of `data`; see `patience.solve` in the stub.
#[pyfunction]
#[pyo3(signature = (data, column = "deal", *, game = "deals", threads = None, exact = false))]
fn solve(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    column: &str,
    game: &str,
    threads: Option<usize>,
    exact: bool,
) -> PyResult<Answers> {
    shared()?.solve(py, data, column, game, threads, exact)
}

/// Engines kept for reuse. Pickles as its settings (the thread count): the tables are made again
/// where it is unpickled, which is what shipping it to a Ray actor or a Spark executor wants.
#[pyclass(module = "patience", frozen)]
#[derive(Debug)]
struct Solver {
    pool: Pool,
}

#[pymethods]
impl Solver {
    #[new]
    #[pyo3(signature = (threads = None))]
    fn new(threads: Option<usize>) -> PyResult<Solver> {
        Ok(Solver {
            pool: Pool::new(threads)?,
        })
    }

    #[pyo3(signature = (data, column = "deal", *, game = "deals", threads = None, exact = false))]
    fn solve(
        &self,
        py: Python<'_>,
        data: &Bound<'_, PyAny>,
        column: &str,
        game: &str,
        threads: Option<usize>,
        exact: bool,
    ) -> PyResult<Answers> {
        self.pool.solve(py, data, column, game, threads, exact)
    }

    /// The thread count it was made with (`None`: one per core).
    #[getter]
    fn threads(&self) -> Option<usize> {
        self.pool.threads
    }

    fn __getnewargs__(&self) -> (Option<usize>,) {
        (self.pool.threads,)
    }

    /// Pickled as `Solver(threads)`: on every protocol, and without the tables.
    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyType>, Bound<'py, PyTuple>)> {
        let args = PyTuple::new(slf.py(), [slf.get().pool.threads])?;
        Ok((slf.get_type(), args))
    }

    fn __repr__(&self) -> String {
        match self.pool.threads {
            Some(n) => format!("patience.Solver(threads={n})"),
            None => "patience.Solver(threads=None)".to_string(),
        }
    }
}

#[pymodule]
fn _patience(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(solve, module)?)?;
    module.add_class::<Solver>()?;
    module.add_class::<Answers>()?;
    module.add_function(wrap_pyfunction!(remote::outgoing, module)?)?;
    module.add_class::<remote::Outgoing>()?;
    // The gRPC API this build speaks, as an encoded FileDescriptorSet (build.rs).
    let descriptors = include_bytes!(concat!(env!("OUT_DIR"), "/descriptors.bin"));
    module.add("DESCRIPTORS", PyBytes::new(module.py(), descriptors))?;
    Ok(())
}
