//! Solving a column's rows on N threads, each with its own engine, the answers kept in row order;
//! then the answers as Arrow batches beside the input's ids. No Python here: this runs with the
//! GIL released.

use std::sync::{Arc, Mutex};

use arrow_array::{ArrayRef, Float64Array, RecordBatch, StringArray, UInt64Array};
use arrow_schema::{ArrowError, DataType, Field, Schema, SchemaRef};
use patience_engine::deal::Deal;
use patience_engine::rps::RpsSolver;
use patience_engine::solver::Solver;

use crate::column::Column;

/// Rows a thread takes at a time: enough that taking them costs nothing beside solving them
/// (a deal is tens of microseconds), few enough that threads finish together.
pub const BLOCK: usize = 256;

/// One row's answer.
#[derive(Debug, Default)]
pub enum Answer {
    /// Not reached by any thread: only if one panicked, and then the scope re-raises the panic
    /// (pyo3 turns it into a `PanicException`), so no caller sees it in the answers.
    #[default]
    Unsolved,
    Solved {
        probability: f64,
        /// The fraction, when asked for.
        exact: Option<String>,
    },
    /// The words `patience solve` prints for the same row of a Parquet input, after `row N: `
    /// (for a case, `patience rps`'s after `case K (line L): `).
    Bad(String),
}

/// A game's engine, as the threads use it: one per thread, reused for every row it takes.
pub trait Engine: Send {
    /// What a row holds, in the words for a row that holds nothing: "deal", "case".
    const ROW: &'static str;
    fn new() -> Self;
    /// The answer for one row's text (or for a row that has none: its error).
    fn answer(&mut self, text: Result<&str, Option<&str>>, exact: bool) -> Answer;
}

/// Double Patience: a row is a deal or a position, as `Deal::parse` reads it.
impl Engine for Solver {
    const ROW: &'static str = "deal";
    fn new() -> Self {
        Solver::new()
    }

    fn answer(&mut self, text: Result<&str, Option<&str>>, exact: bool) -> Answer {
        let deal = match text.map(Deal::parse) {
            Ok(Ok(deal)) => deal,
            Ok(Err(e)) => return Answer::Bad(e.to_string()),
            Err(said) => return unread::<Self>(said),
        };
        if exact {
            let (solution, fraction) = self.solve_exact(&deal);
            return Answer::Solved {
                probability: solution.probability,
                exact: Some(fraction.to_string()),
            };
        }
        Answer::Solved {
            probability: self.solve(&deal).probability,
            exact: None,
        }
    }
}

/// FZU 2145: a row is one case (`rps.rs`); there is no exact form.
impl Engine for RpsSolver {
    const ROW: &'static str = "case";
    fn new() -> Self {
        RpsSolver::new()
    }

    fn answer(&mut self, text: Result<&str, Option<&str>>, _exact: bool) -> Answer {
        match text.map(crate::rps::case) {
            Ok(Ok(case)) => Answer::Solved {
                probability: self.solve(&case),
                exact: None,
            },
            Ok(Err(why)) => Answer::Bad(why),
            Err(said) => unread::<Self>(said),
        }
    }
}

/// The answer for a row with no text to read: a null, as the command line words a null Parquet
/// cell ("no deal (null)"), or what was found instead of a string.
pub fn unread<E: Engine>(said: Option<&str>) -> Answer {
    Answer::Bad(said.map_or_else(|| format!("no {} (null)", E::ROW), str::to_string))
}

/// Every row's answer, in row order, solved by `solvers` (one thread each; the calling thread
/// is one of them). Rows are dealt out in blocks as threads ask, so a thread that met hard deals
/// does not hold the others up; each block is written in its own place.
pub fn solve_rows<E: Engine>(column: &Column, solvers: &mut [E], exact: bool) -> Vec<Answer> {
    let mut answers: Vec<Answer> = std::iter::repeat_with(Answer::default)
        .take(column.len())
        .collect();
    let blocks = Mutex::new(answers.chunks_mut(BLOCK).enumerate());
    let work = |solver: &mut E| {
        loop {
            // A poisoned lock only means another thread panicked: its block stays unsolved and
            // the rest still are.
            let next = blocks.lock().unwrap_or_else(|p| p.into_inner()).next();
            let Some((block, slots)) = next else { return };
            for (i, slot) in slots.iter_mut().enumerate() {
                *slot = solver.answer(column.text(block * BLOCK + i), exact);
            }
        }
    };
    match solvers {
        [] => {}
        [only] => work(only),
        [first, rest @ ..] => std::thread::scope(|scope| {
            for solver in rest {
                scope.spawn(|| work(solver));
            }
            work(first);
        }),
    }
    answers
}

/// The answers' schema: `index`, the input's `id` field, `probability`, `error`, and `exact`
/// when asked.
pub fn schema(id: Option<&Arc<Field>>, exact: bool) -> SchemaRef {
    let mut fields = vec![Arc::new(Field::new("index", DataType::UInt64, false))];
    fields.extend(id.cloned());
    fields.push(Arc::new(Field::new("probability", DataType::Float64, true)));
    fields.push(Arc::new(Field::new("error", DataType::Utf8, true)));
    if exact {
        fields.push(Arc::new(Field::new("exact", DataType::Utf8, true)));
    }
    Arc::new(Schema::new(fields))
}

/// The answers as batches cut where the input's were, each beside its ids.
pub fn batches(
    column: &Column,
    answers: &[Answer],
    exact: bool,
) -> Result<(SchemaRef, Vec<RecordBatch>), ArrowError> {
    let schema = schema(column.ids.as_ref().map(|(field, _)| field), exact);
    let mut out = Vec::new();
    let mut start = 0;
    for (chunk, len) in column.chunk_lens().enumerate() {
        let rows = &answers[start..start + len];
        let mut columns: Vec<ArrayRef> = vec![Arc::new(UInt64Array::from_iter_values(
            (start as u64)..(start + len) as u64,
        ))];
        if let Some((_, ids)) = &column.ids {
            columns.push(ids[chunk].clone());
        }
        columns.push(Arc::new(Float64Array::from_iter(rows.iter().map(
            |a| match a {
                Answer::Solved { probability, .. } => Some(*probability),
                _ => None,
            },
        ))));
        columns.push(Arc::new(StringArray::from_iter(rows.iter().map(
            |a| match a {
                Answer::Bad(why) => Some(why.as_str()),
                Answer::Unsolved => {
                    Some("not solved: the solver stopped (a bug; please report it)")
                }
                Answer::Solved { .. } => None,
            },
        ))));
        if exact {
            columns.push(Arc::new(StringArray::from_iter(rows.iter().map(
                |a| match a {
                    Answer::Solved { exact, .. } => exact.as_deref(),
                    _ => None,
                },
            ))));
        }
        out.push(RecordBatch::try_new(schema.clone(), columns)?);
        start += len;
    }
    Ok((schema, out))
}
