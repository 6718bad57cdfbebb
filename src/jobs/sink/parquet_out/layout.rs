//! How a Parquet output is laid out: the writer's settings, the footer recorded at each
//! checkpoint and read back by a resume, the row groups moved to where a resumed run writes them,
//! and a whole file written at once (`merge`).

use std::io::Write;
use std::sync::Arc;

use crate::jobs::sink::run_record::Checkpoint;
use crate::render::columns;
use arrow_schema::ArrowError;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use parquet::arrow::arrow_reader::ParquetRecordBatchReader;
use parquet::arrow::{ArrowSchemaConverter, ArrowWriter, add_encoded_arrow_schema_to_metadata};
use parquet::basic::{Compression, ZstdLevel};
use parquet::errors::ParquetError;
use parquet::file::metadata::{
    FileMetaData, KeyValue, ParquetMetaData, ParquetMetaDataOptions, ParquetMetaDataReader,
    ParquetMetaDataWriter, RowGroupMetaData,
};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::schema::types::SchemaDescPtr;

/// Answers per row group: also what a SIGKILL loses at most. About a second of `solve` on two
/// cores, and DuckDB's own row group size (122,880) rounded up to a power of two.
pub const ROW_GROUP_ROWS: usize = 131_072;

/// Why a checkpoint's footer does not read back: not base64, or not a Parquet footer.
#[derive(Debug, thiserror::Error)]
pub enum FooterError {
    #[error(transparent)]
    Base64(#[from] base64::DecodeError),
    #[error("too short to be a Parquet footer")]
    Short,
    #[error(transparent)]
    Parquet(#[from] ParquetError),
}

/// A checkpoint's bytes: it is a field of the run record (`resume.rs`), read here.
impl Checkpoint {
    /// The footer's bytes.
    pub fn footer(&self) -> Result<Vec<u8>, FooterError> {
        Ok(BASE64.decode(&self.footer)?)
    }

    /// The recorded row groups, at their places in the output.
    pub fn row_groups(&self) -> Result<Vec<RowGroupMetaData>, FooterError> {
        groups_of(&self.footer()?)
    }
}

/// The row groups of a footer's bytes (a whole one, or a line of the groups' log).
pub fn groups_of(bytes: &[u8]) -> Result<Vec<RowGroupMetaData>, FooterError> {
    let Some(metadata) = bytes.len().checked_sub(8).map(|end| &bytes[..end]) else {
        return Err(FooterError::Short);
    };
    // Every field as it was (encoding statistics as a list, not the mask readers prefer), so
    // that the footer written again is the footer recorded.
    let options = ParquetMetaDataOptions::new().with_encoding_stats_as_mask(false);
    let metadata = ParquetMetaDataReader::decode_metadata_with_options(metadata, Some(&options))?;
    Ok(metadata.row_groups().to_vec())
}

/// The schema, settings and metadata every Parquet output of answers is written with.
#[derive(Debug)]
pub struct Layout {
    pub properties: WriterProperties,
    schema: SchemaDescPtr,
    key_values: Option<Vec<KeyValue>>,
    version: i32,
}

impl Layout {
    pub fn new() -> Result<Layout, ParquetError> {
        let arrow = columns::schema();
        let mut properties = properties();
        add_encoded_arrow_schema_to_metadata(&arrow, &mut properties);
        Ok(Layout {
            key_values: properties.key_value_metadata().cloned(),
            version: properties.writer_version().as_num(),
            schema: Arc::new(ArrowSchemaConverter::new().convert(&arrow)?),
            properties,
        })
    }

    /// The footer for `groups`, at their places in the output, and the rows they hold.
    pub fn footer(&self, groups: Vec<RowGroupMetaData>) -> Result<(Vec<u8>, u64), ParquetError> {
        let rows = groups.iter().map(RowGroupMetaData::num_rows).sum();
        let file = FileMetaData::new(
            self.version,
            rows,
            Some(columns::engine()),
            self.key_values.clone(),
            self.schema.clone(),
            None,
        );
        Self::encoded(file, groups, rows)
    }

    /// One row group's metadata as the groups' log keeps it (`groups.rs`): a footer of that group
    /// alone, without the file's key-value metadata (the Arrow schema, the engine), which the
    /// whole footer written at the end carries once.
    pub fn group_line(&self, group: &RowGroupMetaData) -> Result<Vec<u8>, ParquetError> {
        let rows = group.num_rows();
        let file = FileMetaData::new(self.version, rows, None, None, self.schema.clone(), None);
        Ok(Self::encoded(file, vec![group.clone()], rows)?.0)
    }

    fn encoded(
        file: FileMetaData,
        groups: Vec<RowGroupMetaData>,
        rows: i64,
    ) -> Result<(Vec<u8>, u64), ParquetError> {
        let metadata = ParquetMetaData::new(file, groups);
        let mut footer = Vec::new();
        ParquetMetaDataWriter::new(&mut footer, &metadata)
            .with_preserve_page_index_locations(false)
            .finish()?;
        Ok((footer, rows.max(0) as u64))
    }

    /// The checkpoint of `groups`, which end at byte `end`.
    pub fn checkpoint(
        &self,
        groups: Vec<RowGroupMetaData>,
        end: u64,
    ) -> Result<Checkpoint, ParquetError> {
        let (footer, rows) = self.footer(groups)?;
        Ok(Checkpoint {
            rows,
            end,
            footer: BASE64.encode(&footer),
        })
    }
}

/// The writer's settings: zstd (level 1: a few per cent of the answers' size, at memory speed),
/// no dictionaries for the numbers (each index and most probabilities are distinct), statistics
/// per column chunk only (page statistics would go in a page index, which the footer written
/// here does not carry), row groups of [`ROW_GROUP_ROWS`], and the engine in the metadata.
fn properties() -> WriterProperties {
    let zstd = ZstdLevel::try_new(1).map_or(Compression::SNAPPY, Compression::ZSTD);
    let engine = KeyValue::new(columns::ENGINE_KEY.to_string(), columns::engine());
    WriterProperties::builder()
        .set_compression(zstd)
        .set_created_by(columns::engine())
        .set_key_value_metadata(Some(vec![engine]))
        .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
        .set_statistics_enabled(EnabledStatistics::Chunk)
        .set_offset_index_disabled(true)
        .set_column_dictionary_enabled("index".into(), false)
        .set_column_dictionary_enabled("probability".into(), false)
        .build()
}

/// `group` with its offsets moved `shift` bytes on, as row group `ordinal`.
pub fn moved(
    group: &RowGroupMetaData,
    shift: i64,
    ordinal: i32,
) -> Result<RowGroupMetaData, ParquetError> {
    let mut builder = group.clone().into_builder();
    let columns = builder
        .take_columns()
        .into_iter()
        .map(|column| {
            let data = column.data_page_offset() + shift;
            let dictionary = column.dictionary_page_offset().map(|at| at + shift);
            let index = column.index_page_offset().map(|at| at + shift);
            column
                .into_builder()
                .set_data_page_offset(data)
                .set_dictionary_page_offset(dictionary)
                .set_index_page_offset(index)
                .build()
        })
        .collect::<Result<Vec<_>, _>>()?;
    builder = builder.set_column_metadata(columns).set_ordinal(ordinal);
    if let Some(at) = group.file_offset() {
        builder = builder.set_file_offset(at + shift);
    }
    builder.build()
}

/// Writes `parts`' answers, in order, as one Parquet file into `out` (`merge`), with the
/// settings and metadata of a run's own output; a part that cannot be opened fails with its
/// caller's error `E`, as Parquet's own failures do.
pub fn write_whole<W: Write + Send, E: From<ParquetError> + From<ArrowError>>(
    out: W,
    parts: impl IntoIterator<Item = Result<ParquetRecordBatchReader, E>>,
) -> Result<(), E> {
    let mut writer = ArrowWriter::try_new(out, columns::schema(), Some(properties()))?;
    for part in parts {
        for batch in part? {
            writer.write(&batch?)?;
        }
    }
    writer.close()?;
    Ok(())
}
