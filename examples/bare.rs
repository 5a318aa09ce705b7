//! The benchmark's reference: a bare parquet-rs rewrite with this repository's crate versions —
//! one thread, every input through `ParquetRecordBatchReader` into one `ArrowWriter`, the same
//! codec and level as gencompact, and nothing else (no byte bounds, no verify, no checks).
//! `npm run bench` reports gencompact's time as a ratio to it.
//!
//!   cargo run --release --example bare -- <out.parquet> <zstd|snappy|none> <input.parquet>...

use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;
use std::fs::File;
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [out, codec, inputs @ ..] = args.as_slice() else {
        return Err("usage: bare <out.parquet> <zstd|snappy|none> <input.parquet>...".into());
    };
    let compression = match codec.as_str() {
        "zstd" => Compression::ZSTD(ZstdLevel::try_new(3)?),
        "snappy" => Compression::SNAPPY,
        "none" => Compression::UNCOMPRESSED,
        other => return Err(format!("unknown codec {other}").into()),
    };
    let started = Instant::now();
    let props = WriterProperties::builder().set_compression(compression).build();
    let mut writer: Option<ArrowWriter<File>> = None;
    let mut rows = 0usize;
    for input in inputs {
        // Rows per batch small enough that fat strings never overflow 32-bit offsets.
        let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(input)?)?.with_batch_size(1024).build()?;
        for batch in reader {
            let batch = batch?;
            if writer.is_none() {
                writer = Some(ArrowWriter::try_new(File::create(out)?, batch.schema(), Some(props.clone()))?);
            }
            if let Some(w) = writer.as_mut() {
                w.write(&batch)?;
            }
            rows += batch.num_rows();
        }
    }
    if let Some(w) = writer {
        w.close()?;
    }
    println!("{{\"tool\":\"bare\",\"rows\":{rows},\"elapsedMs\":{}}}", started.elapsed().as_secs_f64() * 1000.0);
    Ok(())
}
