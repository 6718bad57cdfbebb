//! A Parquet output written from answers given, with no run around it: what
//! `benches/parquet_record.rs` measures the resume bookkeeping of (no solving, so the figures are
//! the bookkeeping's own).

use std::path::Path;

use super::open;
use crate::jobs::in_full;
use crate::jobs::sink::run_record::Record;
use crate::jobs::source::input::Input;

/// Writes `probabilities` as the answers of the deals of `deals.in`, in order, into the Parquet
/// file `output`, as `solve --format parquet --output` writes a run that ends; why not, in words.
pub fn write_answers(
    output: &Path,
    probabilities: impl IntoIterator<Item = f64>,
) -> Result<(), String> {
    let record = Record::new(
        "deals",
        crate::render::OutputFormat::Parquet,
        6,
        crate::solver::Options::default(),
        &Input::from_args(&["deals.in".into()]),
    );
    let (mut answers, _) =
        open(output, false, &record, Box::new(|_| {})).map_err(|e| in_full(&e))?;
    for (index, p) in probabilities.into_iter().enumerate() {
        answers
            .solved(index as u64, None, p)
            .map_err(|e| e.to_string())?;
    }
    answers.finish().map_err(|e| e.to_string())
}
