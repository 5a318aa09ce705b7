//! The benchmark's reference: a bare parquet-rs rewrite with this repository's crate versions —
//! one thread, every input through `ParquetRecordBatchReader` into one `ArrowWriter`, the same
//! codec and level as gencompact, and nothing else (no byte bounds, no verify, no checks).
//! `npm run bench` reports gencompact's time as a ratio to it.
//!
//!   cargo run --release --example bare -- <out.parquet> <codec[:level]> <input.parquet>...
//!   cargo run --release --example bare -- <out.parquet> <codec[:level]> @<list.json>
//!
//! (`@list.json`: a JSON array of input paths, for more inputs than a command line holds.)
//!
//! `codec` is one of gencompact's `compression` values (README, "Options") with the same default
//! levels: zstd (level 3), gzip (parquet-rs's default level), snappy, lz4 (raw LZ4), none; a level
//! after a colon (`zstd:9`, `gzip:6`) matches `compressionLevel`. The output's directory is created.

use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, GzipLevel, ZstdLevel};
use parquet::file::properties::WriterProperties;
use std::fs::File;
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [out, codec, inputs @ ..] = args.as_slice() else {
        return Err("usage: bare <out.parquet> <zstd|snappy|gzip|lz4|none>[:level] <input.parquet>...".into());
    };
    let compression = compression(codec)?;
    let inputs: Vec<String> = match inputs {
        [list] if list.starts_with('@') => serde_json::from_str(&std::fs::read_to_string(&list[1..])?)?,
        _ => inputs.to_vec(),
    };
    if let Some(dir) = std::path::Path::new(out).parent() {
        std::fs::create_dir_all(dir)?;
    }
    let started = Instant::now();
    let props = WriterProperties::builder().set_compression(compression).build();
    let mut writer: Option<ArrowWriter<File>> = None;
    let mut rows = 0usize;
    for input in &inputs {
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

/// `codec[:level]` as gencompact reads `compression` / `compressionLevel` (README, "Options").
fn compression(spec: &str) -> Result<Compression, Box<dyn std::error::Error>> {
    let (codec, level) = match spec.split_once(':') {
        Some((c, l)) => (c, Some(l.parse::<u32>()?)),
        None => (spec, None),
    };
    Ok(match (codec, level) {
        ("zstd", l) => Compression::ZSTD(ZstdLevel::try_new(l.unwrap_or(3) as i32)?),
        ("gzip", None) => Compression::GZIP(GzipLevel::default()),
        ("gzip", Some(l)) => Compression::GZIP(GzipLevel::try_new(l)?),
        ("snappy", None) => Compression::SNAPPY,
        ("lz4", None) => Compression::LZ4_RAW,
        ("none" | "uncompressed", None) => Compression::UNCOMPRESSED,
        (c, Some(_)) if ["snappy", "lz4", "none", "uncompressed"].contains(&c) => return Err(format!("codec {c} takes no level").into()),
        (other, _) => return Err(format!("unknown codec {other}").into()),
    })
}
