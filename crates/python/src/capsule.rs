//! Arrow across the boundary with Python, through the Arrow PyCapsule interface: the C data
//! interface's structs handed over in capsules named `arrow_array_stream`, `arrow_schema` and
//! `arrow_array`. That is how pyarrow, polars, DuckDB and arro3 exchange tables without
//! depending on each other, and so the package needs none of them.
//!
//! arrow's own `pyarrow` feature would do this, but at arrow 60 it wants another pyo3 than the
//! package's (and pyo3-arrow another arrow): the hand-off is arrow's `ffi` module plus the few
//! lines here, the only unsafe code of the package.
#![allow(
    unsafe_code,
    reason = "the C data interface is raw pointers in capsules; each use says why it is sound"
)]

use std::ffi::CStr;

use arrow_array::ffi::{FFI_ArrowArray, from_ffi};
use arrow_array::ffi_stream::{FFI_ArrowArrayStream, RecordBatchStreamReader};
use arrow_array::{Array, RecordBatch, RecordBatchIterator, StructArray, make_array};
use arrow_schema::ffi::FFI_ArrowSchema;
use arrow_schema::{ArrowError, DataType, SchemaRef};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyTuple};

const STREAM: &CStr = c"arrow_array_stream";
const SCHEMA: &CStr = c"arrow_schema";
const ARRAY: &CStr = c"arrow_array";

/// What an object gave through the interface: a table as batches, or one array that is not a
/// table (a pyarrow `Array` or polars `Series` of deals).
#[derive(Debug)]
pub enum Imported {
    Table(SchemaRef, Vec<RecordBatch>),
    Column(arrow_array::ArrayRef),
}

/// Why an object's Arrow data could not be taken.
fn arrow_error(e: ArrowError) -> PyErr {
    PyValueError::new_err(format!("its Arrow data cannot be read: {e}"))
}

/// The object's data, if it offers Arrow through the PyCapsule interface (`None` if it offers
/// neither method). A stream is read to its end here, with the GIL held: a producer's stream may
/// call back into Python, and the batches are its buffers, shared, not copied.
pub fn import(data: &Bound<'_, PyAny>) -> PyResult<Option<Imported>> {
    if data.hasattr("__arrow_c_stream__")? {
        let capsule = data.call_method0("__arrow_c_stream__")?;
        let capsule = capsule.cast::<PyCapsule>()?;
        let pointer = capsule.pointer_checked(Some(STREAM))?;
        // SAFETY: the capsule is named `arrow_array_stream`, so by the interface it holds an
        // `ArrowArrayStream`; `from_raw` moves it out and leaves a released one behind, which the
        // capsule's destructor then leaves alone, as the interface asks of a consumer.
        let stream = unsafe { FFI_ArrowArrayStream::from_raw(pointer.as_ptr().cast()) };
        let reader = RecordBatchStreamReader::try_new(stream).map_err(arrow_error)?;
        let schema = arrow_array::RecordBatchReader::schema(&reader);
        let batches = reader.collect::<Result<Vec<_>, _>>().map_err(arrow_error)?;
        return Ok(Some(Imported::Table(schema, batches)));
    }
    if data.hasattr("__arrow_c_array__")? {
        let pair = data.call_method0("__arrow_c_array__")?;
        let pair = pair.cast::<PyTuple>()?;
        if pair.len() != 2 {
            return Err(PyTypeError::new_err(
                "__arrow_c_array__ did not return (schema, array) capsules",
            ));
        }
        let schema = pair.get_item(0)?;
        let schema = schema.cast::<PyCapsule>()?;
        let array = pair.get_item(1)?;
        let array = array.cast::<PyCapsule>()?;
        let schema_pointer = schema.pointer_checked(Some(SCHEMA))?;
        let array_pointer = array.pointer_checked(Some(ARRAY))?;
        // SAFETY: named `arrow_schema` and `arrow_array`, the capsules hold an `ArrowSchema` and
        // an `ArrowArray`. The schema is only borrowed (its capsule keeps it, and releases it);
        // the array is moved out, leaving a released one for its capsule's destructor.
        let data = unsafe {
            let schema = &*schema_pointer.as_ptr().cast::<FFI_ArrowSchema>();
            let array = FFI_ArrowArray::from_raw(array_pointer.as_ptr().cast());
            from_ffi(array, schema)
        }
        .map_err(arrow_error)?;
        let array = make_array(data);
        return Ok(Some(match array.data_type() {
            DataType::Struct(_) => {
                let batch = RecordBatch::from(StructArray::from(array.to_data()));
                Imported::Table(batch.schema(), vec![batch])
            }
            _ => Imported::Column(array),
        }));
    }
    Ok(None)
}

/// A capsule holding a fresh stream of `batches`, as `__arrow_c_stream__` returns it. Each call
/// makes a new stream over the same buffers, so a result can be read any number of times.
pub fn export<'py>(
    py: Python<'py>,
    schema: SchemaRef,
    batches: &[RecordBatch],
) -> PyResult<Bound<'py, PyCapsule>> {
    let batches: Vec<RecordBatch> = batches.to_vec();
    let reader = RecordBatchIterator::new(batches.into_iter().map(Ok), schema);
    let stream = FFI_ArrowArrayStream::new(Box::new(reader));
    // The capsule owns the stream; a consumer moves it out and leaves a released one, and one
    // never consumed is released when the capsule is dropped (FFI_ArrowArrayStream's Drop).
    PyCapsule::new_with_value(py, stream, STREAM)
}

/// A capsule holding the schema, as `__arrow_c_schema__` returns it.
pub fn export_schema<'py>(py: Python<'py>, schema: &SchemaRef) -> PyResult<Bound<'py, PyCapsule>> {
    let ffi = FFI_ArrowSchema::try_from(schema.as_ref()).map_err(arrow_error)?;
    PyCapsule::new_with_value(py, ffi, SCHEMA)
}
