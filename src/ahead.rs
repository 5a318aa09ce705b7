//! Ahead: decoding one batch ahead of writing, on a thread of its own, with a rendezvous
//! channel between the two (or a queue of a few batches).
//!
//! Memory: two batches, the one being decoded and the one being written, and those queued
//! between the two (`queued`).

use crate::batch::Batch;
use crate::error::{CompactError, Result};

/// With `ahead` (more than one thread), decodes (and `prepare`s) on a thread of its own, one
/// batch ahead of `deliver` (which orders, encodes and writes on the calling thread), and with
/// `queued` batches more waiting between the two: at most two batches are alive, the one being
/// decoded and the one being written, and the queued ones. The first error on either side ends
/// both. Without, all three run in turn on the calling thread.
pub fn read_ahead<T: Send>(
    ahead: bool,
    queued: usize,
    produce: impl FnOnce(&mut dyn FnMut(Batch) -> Result<()>) -> Result<()> + Send,
    mut prepare: impl FnMut(Batch) -> Result<T> + Send,
    mut deliver: impl FnMut(T) -> Result<()>,
) -> Result<()> {
    if !ahead {
        return produce(&mut |b| deliver(prepare(b)?));
    }
    std::thread::scope(|scope| {
        // (without a queue, a rendezvous: the reader hands over a batch only when the writer
        // takes it)
        let (tx, rx) = std::sync::mpsc::sync_channel::<Result<T>>(queued);
        let reader = scope.spawn(move || {
            let result = produce(&mut |b| tx.send(Ok(prepare(b)?)).map_err(|_| CompactError::Aborted));
            if let Err(e) = result {
                // (When the writer stopped first, nobody listens: its own error is reported.)
                let _ = tx.send(Err(e));
            }
        });
        let mut outcome = Ok(());
        for item in rx.iter() {
            if let Err(e) = item.and_then(&mut deliver) {
                outcome = Err(e);
                break;
            }
        }
        drop(rx);
        if reader.join().is_err() {
            return Err(CompactError::Internal("panic in the read-ahead thread".into()));
        }
        outcome
    })
}
