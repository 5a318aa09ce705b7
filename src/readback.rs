//! Readback: a spilled run's chunks read back (`spill::Run::open`), frame by frame
//! (`frames`), as the IPC stream they were written as: its schema decoded once for all of a
//! call's runs (`Schemas`), the dictionaries as they come, each chunk's arrays slices of the
//! frame it was decoded from. The merge that consumes a run gives back what it has read as it
//! goes (`holes`).
//!
//! A frame's lengths are checked against the bytes the file still holds and the run's largest
//! frame before a buffer is sized for it (`frames::next_frame`).
//!
//! Memory: a reader holds its file, the dictionaries its run's chunks share and its current
//! frame (decompressed; while it is read, compressed too): `spill::RUN_READ_STATE` and the
//! run's figures account for them.

use crate::error::{CompactError, Result};
use crate::frames::next_frame;
use crate::holes::Holes;
use arrow_array::{ArrayRef, RecordBatch};
use arrow_buffer::Buffer;
use arrow_ipc::reader::{read_dictionary, read_record_batch};
use arrow_ipc::MessageHeader;
use arrow_schema::{ArrowError, SchemaRef};
use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What the merge consuming a run gives back of its file as it reads (`holes`), and what to
/// tell of each part given back (the disk counted in use goes down: the file's and the call's).
pub(crate) struct GiveBack {
    pub(crate) holes: Holes,
    pub(crate) given: Box<dyn Fn(u64) + Send>,
}

/// Reads a run's chunks back: the IPC stream's messages (its schema decoded once for all the
/// call's runs, `Schemas`), the dictionaries as they come. A chunk's arrays are slices of the
/// frame it was decoded from (no copy): the frame lives as long as a chunk of it does. A frame
/// holds whole messages.
pub struct RunReader {
    input: File,
    /// The merge consuming the run gives back what it has read (`Run::open_consuming`).
    give_back: Option<GiveBack>,
    schemas: Schemas,
    /// The stream's schema, once its message is read.
    schema: Option<SchemaRef>,
    /// The dictionaries sent so far, by id.
    dictionaries: HashMap<i64, ArrayRef>,
    /// What is left of the current frame.
    frame: Buffer,
    path: PathBuf,
    /// The rows the run was written with, and read so far: a run file that ends early (cut
    /// at a frame) is an error, not a shorter run.
    rows: u64,
    read: u64,
    /// The bytes of the file not read yet, and the most a frame of the run decompresses to:
    /// what a frame's lengths are checked against before a buffer is sized for it.
    left: u64,
    max_frame: usize,
}

/// The schema of a call's runs as their readers decode it (with the ids of the dictionaries
/// the stream sends), decoded once for all the runs whose schema message is the same bytes: a
/// merge reads a hundred runs or more, and a wide schema decoded costs tens of KB.
#[derive(Default, Clone)]
pub(crate) struct Schemas(Arc<std::sync::Mutex<Option<Decoded>>>);

/// A schema message's bytes and the schema it sends.
type Decoded = (Vec<u8>, SchemaRef);

impl Schemas {
    /// The schema the message `meta` (whose header is `fb`) sends.
    fn decode(&self, meta: &[u8], fb: arrow_ipc::Schema) -> std::result::Result<SchemaRef, ArrowError> {
        let mut known = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((bytes, schema)) = known.as_ref() {
            if bytes.as_slice() == meta {
                return Ok(schema.clone());
            }
        }
        let schema = Arc::new(arrow_ipc::convert::try_fb_to_schema(fb)?);
        *known = Some((meta.to_vec(), schema.clone()));
        Ok(schema)
    }
}

/// The IPC stream's continuation marker, before each message's length.
const CONTINUATION: u32 = 0xFFFF_FFFF;

impl RunReader {
    /// `bytes`: the run file's size as written; `max_frame`: its largest frame decompressed.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        input: File,
        give_back: Option<GiveBack>,
        schemas: Schemas,
        path: PathBuf,
        rows: u64,
        bytes: u64,
        max_frame: usize,
    ) -> RunReader {
        RunReader {
            input,
            give_back,
            schemas,
            schema: None,
            dictionaries: HashMap::new(),
            frame: Buffer::from_vec(Vec::<u8>::new()),
            path,
            rows,
            read: 0,
            left: bytes,
            max_frame,
        }
    }

    /// The run's next chunk, `None` at its end.
    pub fn next_chunk(&mut self) -> Result<Option<RecordBatch>> {
        loop {
            if self.frame.is_empty() {
                match next_frame(&mut self.input, self.left, self.max_frame).map_err(|e| CompactError::io(&self.path, &e))? {
                    Some((frame, bytes)) => {
                        self.left = self.left.saturating_sub(bytes);
                        self.frame = Buffer::from_vec(frame);
                        if let Some(g) = &mut self.give_back {
                            let n = g.holes.read(&self.input, bytes);
                            (g.given)(n);
                        }
                    }
                    None if self.read == self.rows => return Ok(None),
                    None => {
                        return Err(CompactError::io_msg(
                            &self.path,
                            format!("spill file ends after {} of its {} rows", self.read, self.rows),
                        ))
                    }
                }
            }
            // (the chunk of no rows that sends the run's dictionaries is not one)
            if let Some(chunk) = self.next_message()?.filter(|c| c.num_rows() > 0) {
                self.read += chunk.num_rows() as u64;
                return Ok(Some(chunk));
            }
        }
    }

    /// Decodes the next message of the current frame: a chunk, or else (a schema, a dictionary,
    /// the end of the stream) `None`.
    fn next_message(&mut self) -> Result<Option<RecordBatch>> {
        let frame = self.frame.clone();
        let damaged = |what: &str| CompactError::io_msg(&self.path, format!("spill file: {what}"));
        let word = |at: usize| frame.get(at..at + 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
        let (len, at) = match word(0) {
            Some(CONTINUATION) => (word(4), 8),
            other => (other, 4),
        };
        let len = len.ok_or_else(|| damaged("a message cut short"))? as usize;
        if len == 0 {
            // the end of the stream
            self.frame = Buffer::from_vec(Vec::<u8>::new());
            return Ok(None);
        }
        let meta = frame.get(at..at + len).ok_or_else(|| damaged("a message cut short"))?;
        let message = arrow_ipc::root_as_message(meta).map_err(|e| damaged(&format!("a damaged message: {e}")))?;
        let body_len = usize::try_from(message.bodyLength()).map_err(|_| damaged("a message of negative length"))?;
        let end = (at + len).checked_add(body_len).filter(|end| *end <= frame.len()).ok_or_else(|| damaged("a message cut short"))?;
        let body = frame.slice_with_length(at + len, body_len);
        let version = message.version();
        let schema = || self.schema.clone().ok_or_else(|| damaged("a message before the schema"));
        let chunk = match message.header_type() {
            MessageHeader::NONE => None,
            MessageHeader::Schema => {
                let fb = message.header_as_schema().ok_or_else(|| damaged("a damaged schema"))?;
                self.schema = Some(self.schemas.decode(meta, fb).map_err(|e| ipc_error(&self.path, e))?);
                None
            }
            MessageHeader::DictionaryBatch => {
                let batch = message.header_as_dictionary_batch().ok_or_else(|| damaged("a damaged dictionary"))?;
                let schema = schema()?;
                // arrow-ipc does not check a damaged message's buffer offsets against its body: it
                // panics slicing them (a run file changed on disk), contained as a damaged file
                crate::contain::contain(|| read_dictionary(&body, batch, schema.as_ref(), &mut self.dictionaries, &version))
                    .map_err(|panic| damaged(&panic))?
                    .map_err(|e| ipc_error(&self.path, e))?;
                None
            }
            MessageHeader::RecordBatch => {
                let batch = message.header_as_record_batch().ok_or_else(|| damaged("a damaged chunk"))?;
                let schema = schema()?;
                let read = crate::contain::contain(|| read_record_batch(&body, batch, schema, &self.dictionaries, None, &version));
                Some(read.map_err(|panic| damaged(&panic))?.map_err(|e| ipc_error(&self.path, e))?)
            }
            other => return Err(damaged(&format!("an unexpected message ({other:?})"))),
        };
        self.frame = frame.slice(end);
        Ok(chunk)
    }
}

pub(crate) fn ipc_error(path: &Path, e: ArrowError) -> CompactError {
    match e {
        ArrowError::IoError(_, io) => CompactError::io(path, &io),
        other => CompactError::io_msg(path, format!("spill file: {other}")),
    }
}
