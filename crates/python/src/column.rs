//! The input's rows: the texts of its deal column read where they lie (Arrow's string buffers,
//! any of the three string layouts), and its `id` column carried over untouched.

use arrow_array::cast::AsArray as _;
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, FieldRef};

use crate::capsule::Imported;

/// Why an input cannot be read at all (a bad row is no such thing: it gets its `error`).
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error(
        "the input has no column `{column}` (its columns: {names}): give the name of its string \
         column of deals as `column=`"
    )]
    NoColumn { column: String, names: String },
    #[error("the column `{column}` is {found}, not strings (utf8, large_utf8 or utf8_view)")]
    NotText { column: String, found: DataType },
}

/// One chunk of the deal column: an Arrow string array of any layout, read in place, or the
/// texts of a Python sequence (each taken once, under the GIL, before solving).
#[derive(Debug)]
enum Chunk {
    Arrow(ArrayRef),
    /// `None`: a null; `Err`: what the row's error says.
    Owned(Vec<Option<Result<String, String>>>),
}

/// The deal column, in chunks (a table's batches), with its `id` chunks beside when it has one.
#[derive(Debug)]
pub struct Column {
    chunks: Vec<Chunk>,
    /// Where each chunk starts, counted in rows; one entry more than `chunks`, the total last.
    starts: Vec<usize>,
    /// The `id` column's field and its chunks, one per deal chunk.
    pub ids: Option<(FieldRef, Vec<ArrayRef>)>,
}

fn is_text(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
    )
}

impl Column {
    fn new(chunks: Vec<Chunk>, ids: Option<(FieldRef, Vec<ArrayRef>)>) -> Column {
        let mut starts = vec![0];
        let mut total = 0;
        for chunk in &chunks {
            total += match chunk {
                Chunk::Arrow(array) => array.len(),
                Chunk::Owned(texts) => texts.len(),
            };
            starts.push(total);
        }
        Column {
            chunks,
            starts,
            ids,
        }
    }

    /// The deal column `name` of an Arrow input (and its `id` column, if any); a lone array is
    /// the column itself, whatever its name.
    pub fn from_arrow(imported: Imported, name: &str) -> Result<Column, InputError> {
        let (schema, batches) = match imported {
            Imported::Column(array) => {
                if !is_text(array.data_type()) {
                    return Err(InputError::NotText {
                        column: name.to_string(),
                        found: array.data_type().clone(),
                    });
                }
                return Ok(Column::new(vec![Chunk::Arrow(array)], None));
            }
            Imported::Table(schema, batches) => (schema, batches),
        };
        let Some((at, field)) = schema.column_with_name(name) else {
            let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
            return Err(InputError::NoColumn {
                column: name.to_string(),
                names: names.join(", "),
            });
        };
        if !is_text(field.data_type()) {
            return Err(InputError::NotText {
                column: name.to_string(),
                found: field.data_type().clone(),
            });
        }
        // Ids of any type are carried over as they are: the answers are matched to them, never
        // read from them.
        let ids = match schema.index_of("id") {
            Ok(id_at) if name != "id" => {
                let chunks = batches.iter().map(|b| b.column(id_at).clone()).collect();
                Some((schema.fields()[id_at].clone(), chunks))
            }
            _ => None,
        };
        let chunks = batches
            .iter()
            .map(|b: &RecordBatch| Chunk::Arrow(b.column(at).clone()))
            .collect();
        Ok(Column::new(chunks, ids))
    }

    /// A column of texts already taken from Python (`None`: a null; `Err`: what the row's error
    /// says).
    pub fn from_texts(texts: Vec<Option<Result<String, String>>>) -> Column {
        Column::new(vec![Chunk::Owned(texts)], None)
    }

    /// Rows in all.
    pub fn len(&self) -> usize {
        self.starts.last().copied().unwrap_or(0)
    }

    /// Rows in each chunk, in order (the answers are cut the same way, to sit beside the ids).
    pub fn chunk_lens(&self) -> impl Iterator<Item = usize> + '_ {
        self.starts.windows(2).map(|w| w[1] - w[0])
    }

    /// Row `row`'s text, read in place; `Err(None)` for a null (each game words it), or what the
    /// row's error says.
    pub fn text(&self, row: usize) -> Result<&str, Option<&str>> {
        // The chunk whose start is the last at or before `row`.
        let chunk = self.starts.partition_point(|&start| start <= row) - 1;
        let at = row - self.starts[chunk];
        match &self.chunks[chunk] {
            Chunk::Owned(texts) => match &texts[at] {
                None => Err(None),
                Some(text) => text.as_deref().map_err(|e| Some(e.as_str())),
            },
            Chunk::Arrow(array) if array.is_null(at) => Err(None),
            Chunk::Arrow(array) => Ok(match array.data_type() {
                DataType::Utf8 => array.as_string::<i32>().value(at),
                DataType::LargeUtf8 => array.as_string::<i64>().value(at),
                _ => array.as_string_view().value(at),
            }),
        }
    }
}
