//! What speaks the Iceberg table format, apart from the pipeline's stages: partition
//! transforms, column metrics in Iceberg's encodings, delete files and DataFile records.

pub mod deletes;
pub mod input;
pub mod metrics;
pub mod partition;
pub mod puffin;
