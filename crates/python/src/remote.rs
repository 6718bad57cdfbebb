//! The native half of `patience.remote`'s `solve`: an input's rows read exactly as a local solve
//! reads them, what can go to a daemon handed to Python (which owns the gRPC call), the rows that
//! cannot answered here in `solve`'s words, and the daemon's answers put back in their rows as the
//! same Arrow table a local solve returns. So a table answered by a daemon and one answered in
//! this process differ in nothing but where the work was done.

use patience_engine::rps::RpsSolver;
use patience_engine::solver::Solver as DealSolver;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString, PyTuple};

use crate::answers::Answers;
use crate::column::Column;
use crate::work::{self, Answer};
use crate::{Game, read};

/// Rows waiting for a daemon's answers: which were sent, in order, and the answers of those
/// that were not. `finish` makes the answers' table once.
#[pyclass(module = "patience")]
#[derive(Debug)]
pub struct Outgoing {
    column: Column,
    exact: bool,
    /// One per row: the local answers, and `Unsolved` where a row was sent.
    answers: Vec<Answer>,
    /// The rows sent, in the order their payloads were given.
    sent: Vec<usize>,
    finished: bool,
}

/// One row, for the daemon or answered here.
enum Row<'py> {
    Send(Bound<'py, PyAny>),
    Answered(Answer),
}

/// A deal row goes as its text: the daemon reads it with the same reader and words a bad deal
/// the same way, so its error is the one a local solve gives.
fn deal_row<'py>(py: Python<'py>, text: Result<&str, Option<&str>>) -> Row<'py> {
    match text {
        Ok(text) => Row::Send(PyString::new(py, text).into_any()),
        Err(said) => Row::Answered(work::unread::<DealSolver>(said)),
    }
}

/// An FZU 2145 row goes as its case's numbers, `((rock, paper, scissors), [(r, p, s), ...])`
/// for Maze and the others, once it reads as a case; one that does not is answered here, as
/// `patience rps` words it.
fn case_row<'py>(py: Python<'py>, text: Result<&str, Option<&str>>) -> PyResult<Row<'py>> {
    let case = match text.map(crate::rps::case) {
        Ok(Ok(case)) => case,
        Ok(Err(why)) => return Ok(Row::Answered(Answer::Bad(why))),
        Err(said) => return Ok(Row::Answered(work::unread::<RpsSolver>(said))),
    };
    let maze = PyTuple::new(py, case.maze())?;
    let others = PyList::new(
        py,
        case.others()
            .iter()
            .map(|triple| PyTuple::new(py, triple))
            .collect::<PyResult<Vec<_>>>()?,
    )?;
    Ok(Row::Send(
        PyTuple::new(py, [maze.into_any(), others.into_any()])?.into_any(),
    ))
}

/// `data`'s rows for a daemon: the `Outgoing` record and the payloads to send, in row order.
#[pyfunction]
#[pyo3(signature = (data, column = "deal", *, game = "deals", exact = false))]
pub fn outgoing<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    column: &str,
    game: &str,
    exact: bool,
) -> PyResult<(Outgoing, Bound<'py, PyList>)> {
    let game = Game::named(game, exact)?;
    let column = read(data, column)?;
    let payloads = PyList::empty(py);
    let mut answers = Vec::with_capacity(column.len());
    let mut sent = Vec::new();
    for at in 0..column.len() {
        let row = match game {
            Game::Deals => deal_row(py, column.text(at)),
            Game::Rps => case_row(py, column.text(at))?,
        };
        match row {
            Row::Send(payload) => {
                payloads.append(payload)?;
                sent.push(at);
                answers.push(Answer::Unsolved);
            }
            Row::Answered(answer) => answers.push(answer),
        }
    }
    let outgoing = Outgoing {
        column,
        exact,
        answers,
        sent,
        finished: false,
    };
    Ok((outgoing, payloads))
}

/// The daemon's answers must be one per row sent: anything else is a client bug, said plainly.
fn one_each<T>(what: &str, values: &[T], sent: usize) -> PyResult<()> {
    if values.len() == sent {
        return Ok(());
    }
    Err(PyValueError::new_err(format!(
        "{} {what} for {sent} rows sent",
        values.len()
    )))
}

#[pymethods]
impl Outgoing {
    /// Rows sent.
    fn __len__(&self) -> usize {
        self.sent.len()
    }

    /// The answers' table: each row sent gets its `probability` or its `error` (and `exact`
    /// when asked), in the order the payloads were given; the others keep their own.
    #[pyo3(signature = (probabilities, errors, exact = None))]
    fn finish(
        &mut self,
        py: Python<'_>,
        probabilities: Vec<Option<f64>>,
        errors: Vec<Option<String>>,
        exact: Option<Vec<Option<String>>>,
    ) -> PyResult<Answers> {
        if std::mem::replace(&mut self.finished, true) {
            return Err(PyRuntimeError::new_err(
                "these rows' answers were already made",
            ));
        }
        one_each("probabilities", &probabilities, self.sent.len())?;
        one_each("errors", &errors, self.sent.len())?;
        let mut exact = exact.map(Vec::into_iter);
        for ((&row, probability), error) in self.sent.iter().zip(probabilities).zip(errors) {
            let fraction = exact.as_mut().and_then(Iterator::next).flatten();
            self.answers[row] = match (probability, error) {
                (_, Some(why)) => Answer::Bad(why),
                (Some(probability), None) => Answer::Solved {
                    probability,
                    exact: fraction,
                },
                (None, None) => Answer::Bad("the daemon sent no answer for this row".to_string()),
            };
        }
        let (column, answers, exact) = (&self.column, &self.answers, self.exact);
        py.detach(|| work::batches(column, answers, exact))
            .map(|(schema, batches)| Answers::new(schema, batches))
            .map_err(|e| {
                PyValueError::new_err(format!("the answers cannot be made into Arrow: {e}"))
            })
    }
}
