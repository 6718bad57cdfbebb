//! An answer as a row of columns, wherever answers leave as columns: a Parquet file
//! (`--format parquet`, `crate::jobs::sink::parquet_out`) and the plain HTTP API's Arrow IPC stream
//! (`Accept: application/vnd.apache.arrow.stream`). One schema, so that a data team reads the
//! same four columns whichever way it asked, and the same values as the text and JSON lines
//! (`crate::render`): the index counts every item from 0 in the whole input, bad ones included.

use std::sync::{Arc, LazyLock};

use arrow_array::RecordBatch;
use arrow_array::builder::{ArrayBuilder as _, Float64Builder, StringBuilder, UInt64Builder};
use arrow_ipc::writer::StreamWriter;
use arrow_schema::{ArrowError, DataType, Field, Schema, SchemaRef};

/// The media type of an Arrow IPC stream (IANA's registration), as `Accept` and `Content-Type`
/// name it.
pub const ARROW_STREAM: &str = "application/vnd.apache.arrow.stream";

/// The key of the file metadata that names the engine that wrote the answers, and its value.
pub const ENGINE_KEY: &str = "patience.engine";

/// "patience VERSION": the engine, in the file metadata and Parquet's `created_by`.
pub fn engine() -> String {
    format!("patience {}", env!("CARGO_PKG_VERSION"))
}

/// `index` (uint64), `id` (string, null when the input gave none), `probability` (float64,
/// null for a bad item) and `error` (string, null when solved).
pub fn schema() -> SchemaRef {
    static SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| {
        Arc::new(Schema::new(vec![
            Field::new("index", DataType::UInt64, false),
            Field::new("id", DataType::Utf8, true),
            Field::new("probability", DataType::Float64, true),
            Field::new("error", DataType::Utf8, true),
        ]))
    });
    SCHEMA.clone()
}

/// Answers gathered into columns until they are handed on as one [`RecordBatch`].
#[derive(Debug)]
pub struct Rows {
    index: UInt64Builder,
    id: StringBuilder,
    probability: Float64Builder,
    error: StringBuilder,
}

impl Rows {
    /// Room for `rows` answers without growing.
    pub fn with_capacity(rows: usize) -> Rows {
        Rows {
            index: UInt64Builder::with_capacity(rows),
            id: StringBuilder::with_capacity(rows, 0),
            probability: Float64Builder::with_capacity(rows),
            error: StringBuilder::with_capacity(rows, 0),
        }
    }

    /// Item `index`, solved with probability `p`.
    pub fn solved(&mut self, index: u64, id: Option<&str>, p: f64) {
        self.index.append_value(index);
        self.id.append_option(id);
        self.probability.append_value(p);
        self.error.append_null();
    }

    /// Item `index`, which has no probability: `message` says why.
    pub fn failed(&mut self, index: u64, id: Option<&str>, message: &str) {
        self.index.append_value(index);
        self.id.append_option(id);
        self.probability.append_null();
        self.error.append_value(message);
    }

    /// Answers gathered since the last batch.
    pub fn len(&self) -> usize {
        self.index.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The answers gathered, as one batch of [`schema`]'s columns; the builders start again.
    pub fn batch(&mut self) -> Result<RecordBatch, ArrowError> {
        RecordBatch::try_new(
            schema(),
            vec![
                Arc::new(self.index.finish()),
                Arc::new(self.id.finish()),
                Arc::new(self.probability.finish()),
                Arc::new(self.error.finish()),
            ],
        )
    }
}

/// Answers as an Arrow IPC stream, handed on in pieces: the schema, then a batch per piece of
/// rows gathered, then the stream's end.
pub struct ArrowStream {
    pub rows: Rows,
    writer: StreamWriter<Vec<u8>>,
}

impl std::fmt::Debug for ArrowStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArrowStream")
            .field("rows", &self.rows.len())
            .finish()
    }
}

impl ArrowStream {
    /// A stream whose first piece is the schema; pieces of about `rows` rows.
    pub fn new(rows: usize) -> Result<ArrowStream, ArrowError> {
        Ok(ArrowStream {
            rows: Rows::with_capacity(rows),
            writer: StreamWriter::try_new(Vec::new(), &schema())?,
        })
    }

    /// The stream's bytes not handed on yet, the rows gathered made a batch first.
    pub fn piece(&mut self) -> Result<Vec<u8>, ArrowError> {
        if !self.rows.is_empty() {
            let batch = self.rows.batch()?;
            self.writer.write(&batch)?;
        }
        Ok(std::mem::take(self.writer.get_mut()))
    }

    /// The last piece: the rows left, and the stream's end.
    pub fn end(&mut self) -> Result<Vec<u8>, ArrowError> {
        let mut piece = self.piece()?;
        self.writer.finish()?;
        piece.append(self.writer.get_mut());
        Ok(piece)
    }
}

#[cfg(test)]
mod tests {
    use arrow_array::{Array, Float64Array, StringArray, UInt64Array};

    use super::*;

    #[test]
    fn a_batch_holds_each_answer_in_its_columns_with_nulls_where_none() {
        let mut rows = Rows::with_capacity(2);
        rows.solved(7, Some("first"), 0.5);
        rows.failed(8, None, "pile 3 has 5 cards");
        let batch = rows.batch().unwrap();
        assert!(rows.is_empty());
        assert_eq!(batch.num_rows(), 2);
        let column = |name: &str| batch.column_by_name(name).unwrap().clone();
        let index = column("index");
        let index = index.as_any().downcast_ref::<UInt64Array>().unwrap();
        assert_eq!(index.values().to_vec(), vec![7, 8]);
        let id = column("id");
        let id = id.as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!((id.value(0), id.is_null(1)), ("first", true));
        let p = column("probability");
        let p = p.as_any().downcast_ref::<Float64Array>().unwrap();
        assert_eq!((p.value(0), p.is_null(1)), (0.5, true));
        let error = column("error");
        let error = error.as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!(
            (error.is_null(0), error.value(1)),
            (true, "pile 3 has 5 cards")
        );
    }

    /// The pieces, put together, are one stream that Arrow's own reader reads back whole.
    #[test]
    fn a_stream_s_pieces_read_back_as_one_arrow_stream() {
        let mut stream = ArrowStream::new(4).unwrap();
        let mut bytes = Vec::new();
        stream.rows.solved(0, None, 0.25);
        bytes.extend(stream.piece().unwrap());
        assert!(stream.piece().unwrap().is_empty());
        stream.rows.failed(1, Some("b"), "bad");
        stream.rows.solved(2, None, 1.0);
        bytes.extend(stream.end().unwrap());
        let reader = arrow_ipc::reader::StreamReader::try_new(&bytes[..], None).unwrap();
        assert_eq!(reader.schema(), schema());
        let batches: Vec<RecordBatch> = reader.map(Result::unwrap).collect();
        assert_eq!(
            batches
                .iter()
                .map(RecordBatch::num_rows)
                .collect::<Vec<_>>(),
            [1, 2]
        );
        let p = batches[1]
            .column(2)
            .as_any()
            .downcast_ref::<Float64Array>()
            .unwrap();
        assert_eq!((p.is_null(0), p.value(1)), (true, 1.0));
    }
}
