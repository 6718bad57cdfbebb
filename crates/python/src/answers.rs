//! The answers as Python sees them: an Arrow table that any Arrow library reads through
//! `__arrow_c_stream__`, and `to_pydict` for those who have none.

use arrow_array::cast::AsArray as _;
use arrow_array::types::{Float64Type, Int32Type, Int64Type, UInt64Type};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, SchemaRef};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict, PyList};

use crate::capsule;

/// One row per input row: `index`, `id` (when the input had one), `probability`, `error`, and
/// `exact` when asked. Holds the answers' Arrow buffers; reading it copies nothing.
#[pyclass(module = "patience", frozen)]
#[derive(Debug)]
pub struct Answers {
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
}

impl Answers {
    pub fn new(schema: SchemaRef, batches: Vec<RecordBatch>) -> Answers {
        Answers { schema, batches }
    }
}

/// Row `i` of `array` as a Python value, for the types the answers' columns and common ids have.
fn value<'py>(py: Python<'py>, array: &ArrayRef, i: usize) -> PyResult<Bound<'py, PyAny>> {
    if array.is_null(i) {
        return Ok(py.None().into_bound(py));
    }
    Ok(match array.data_type() {
        DataType::UInt64 => array
            .as_primitive::<UInt64Type>()
            .value(i)
            .into_pyobject(py)?
            .into_any(),
        DataType::Int64 => array
            .as_primitive::<Int64Type>()
            .value(i)
            .into_pyobject(py)?
            .into_any(),
        DataType::Int32 => array
            .as_primitive::<Int32Type>()
            .value(i)
            .into_pyobject(py)?
            .into_any(),
        DataType::Float64 => array
            .as_primitive::<Float64Type>()
            .value(i)
            .into_pyobject(py)?
            .into_any(),
        DataType::Utf8 => array
            .as_string::<i32>()
            .value(i)
            .into_pyobject(py)?
            .into_any(),
        DataType::LargeUtf8 => array
            .as_string::<i64>()
            .value(i)
            .into_pyobject(py)?
            .into_any(),
        DataType::Utf8View => array
            .as_string_view()
            .value(i)
            .into_pyobject(py)?
            .into_any(),
        other => {
            return Err(PyTypeError::new_err(format!(
                "to_pydict does not read {other} columns: read the answers with an Arrow library \
                 (pyarrow.table(answers), polars.DataFrame(answers))"
            )));
        }
    })
}

#[pymethods]
impl Answers {
    /// The answers as a stream of Arrow batches. `requested_schema` is not honoured (the
    /// interface lets a producer give its own), so what is asked for is what comes.
    #[pyo3(signature = (requested_schema = None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        capsule::export(py, self.schema.clone(), &self.batches)
    }

    fn __arrow_c_schema__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        capsule::export_schema(py, &self.schema)
    }

    fn __len__(&self) -> usize {
        self.num_rows()
    }

    #[getter]
    fn num_rows(&self) -> usize {
        self.batches.iter().map(RecordBatch::num_rows).sum()
    }

    #[getter]
    fn column_names(&self) -> Vec<String> {
        self.schema
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect()
    }

    /// The columns as lists of Python values, by name (no Arrow library needed).
    fn to_pydict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let dict = PyDict::new(py);
        for (at, field) in self.schema.fields().iter().enumerate() {
            let list = PyList::empty(py);
            for batch in &self.batches {
                let array = batch.column(at);
                for i in 0..array.len() {
                    list.append(value(py, array, i)?)?;
                }
            }
            dict.set_item(field.name(), list)?;
        }
        Ok(dict)
    }

    fn __repr__(&self) -> String {
        format!(
            "patience.Answers({} rows; columns: {})",
            self.num_rows(),
            self.column_names().join(", ")
        )
    }
}
