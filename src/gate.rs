//! Gate: how concurrent calls share the machine. It holds one slot per core (by default;
//! `GENCOMPACT_MAX_CONCURRENT_CALLS` overrides the count) and a call takes as many slots as
//! the threads it may use (`threads`, at most all slots), so concurrent calls share the cores
//! instead of oversubscribing them. The others wait in arrival order as futures
//! on the addon's async runtime — without a thread of their own, so N queued calls cost N small
//! futures, and the blocking pool (and the allocator arenas its threads use) never grows past
//! the limit. Peak memory is that many single-call bounds however many calls the server
//! starts, and the event loop never waits. A queued call still honours its abort signal.
//!
//! With `GENCOMPACT_MEMORY_LIMIT` (bytes) set, a call also takes its memory bound
//! (3 × batchBytes + 64 MiB, see `memory`) from that process-wide budget before it starts, in
//! arrival order as well: concurrent calls' bounds then sum to at most the limit (a call whose
//! bound alone exceeds it takes all of it). Unset, the calls' bounds add up with their number.
//!
//! Memory: two semaphores, and one queue entry per waiting call.

use crate::error::{CompactError, Result};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// How often a waiting call looks at its abort flag.
const ABORT_POLL: Duration = Duration::from_millis(20);

pub struct Gate {
    limit: usize,
    slots: Arc<Semaphore>,
    /// The process-wide memory budget in MiB, when limited.
    memory: Option<(u32, Arc<Semaphore>)>,
}

/// A running call's place (its slots and its share of the memory budget); dropping it lets the
/// next call in.
pub struct Permit {
    _slots: OwnedSemaphorePermit,
    _memory: Option<OwnedSemaphorePermit>,
}

impl Gate {
    pub fn new(limit: usize) -> Self {
        Gate::with_memory(limit, None)
    }

    /// A gate whose calls also share `memory_limit` bytes of memory bounds.
    pub fn with_memory(limit: usize, memory_limit: Option<u64>) -> Self {
        let limit = limit.max(1);
        let memory = memory_limit.map(|bytes| {
            let mib = u32::try_from(bytes >> 20).unwrap_or(u32::MAX).clamp(1, Semaphore::MAX_PERMITS as u32);
            (mib, Arc::new(Semaphore::new(mib as usize)))
        });
        Gate { limit, slots: Arc::new(Semaphore::new(limit)), memory }
    }

    /// The process-wide gate of the N-API entry point.
    pub fn global() -> &'static Gate {
        static GATE: OnceLock<Gate> = OnceLock::new();
        GATE.get_or_init(|| Gate::with_memory(configured_limit(), configured_memory_limit()))
    }

    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Waits (first come, first served) until `threads` of the gate's slots are free for this
    /// call (at most all of them) and, with a memory limit, `memory_bound` bytes of it (at most
    /// all), or until `cancel` is set (`ERR_ABORTED`). Must run on a tokio runtime with its
    /// timer enabled.
    pub async fn enter(&self, cancel: &AtomicBool, threads: usize, memory_bound: usize) -> Result<Permit> {
        let memory = match &self.memory {
            Some((total, budget)) => {
                let mib = u32::try_from(memory_bound.div_ceil(1 << 20)).unwrap_or(u32::MAX).clamp(1, *total);
                Some(Self::acquire(budget, mib, cancel).await?)
            }
            None => None,
        };
        let n = u32::try_from(threads.clamp(1, self.limit)).unwrap_or(1);
        let slots = Self::acquire(&self.slots, n, cancel).await?;
        Ok(Permit { _slots: slots, _memory: memory })
    }

    async fn acquire(semaphore: &Arc<Semaphore>, n: u32, cancel: &AtomicBool) -> Result<OwnedSemaphorePermit> {
        // One acquire future, polled until it completes: the call keeps its place in the queue.
        let mut acquire = Box::pin(semaphore.clone().acquire_many_owned(n));
        loop {
            if cancel.load(Ordering::Relaxed) {
                return Err(CompactError::Aborted);
            }
            match tokio::time::timeout(ABORT_POLL, &mut acquire).await {
                Ok(Ok(permit)) => return Ok(permit),
                Ok(Err(_)) => return Err(CompactError::Internal("call gate closed".into())),
                Err(_) => continue,
            }
        }
    }
}

fn configured_memory_limit() -> Option<u64> {
    std::env::var("GENCOMPACT_MEMORY_LIMIT").ok().and_then(|v| v.trim().parse::<u64>().ok()).filter(|n| *n > 0)
}

fn configured_limit() -> usize {
    std::env::var("GENCOMPACT_MAX_CONCURRENT_CALLS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|n| *n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
    }

    #[test]
    fn at_most_limit_calls_run_in_arrival_order_and_a_waiting_call_can_abort() {
        let rt = runtime();
        let gate = Arc::new(Gate::new(2));
        let (running, peak) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let order = Arc::new(std::sync::Mutex::new(Vec::new()));
        rt.block_on(async {
            let mut tasks = Vec::new();
            for i in 0..8 {
                let (gate, running, peak, order) = (gate.clone(), running.clone(), peak.clone(), order.clone());
                tasks.push(tokio::spawn(async move {
                    let permit = gate.enter(&AtomicBool::new(false), 1, 0).await.unwrap();
                    order.lock().unwrap().push(i);
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    peak.fetch_max(now, Ordering::SeqCst);
                    tokio::task::spawn_blocking(|| std::thread::sleep(Duration::from_millis(30))).await.unwrap();
                    running.fetch_sub(1, Ordering::SeqCst);
                    drop(permit);
                }));
                // arrivals 5 ms apart: a defined order
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            for t in tasks {
                t.await.unwrap();
            }
        });
        assert_eq!(peak.load(Ordering::SeqCst), 2);
        assert_eq!(*order.lock().unwrap(), (0..8).collect::<Vec<_>>());

        // Both places taken: a third call waits, aborts, and a fourth still gets in afterwards.
        rt.block_on(async {
            let a = gate.enter(&AtomicBool::new(false), 1, 0).await.unwrap();
            let b = gate.enter(&AtomicBool::new(false), 1, 0).await.unwrap();
            let cancel = Arc::new(AtomicBool::new(false));
            let waiting = {
                let (gate, cancel) = (gate.clone(), cancel.clone());
                tokio::spawn(async move { gate.enter(&cancel, 1, 0).await.map(|_| ()).map_err(|e| e.code()) })
            };
            tokio::time::sleep(Duration::from_millis(50)).await;
            cancel.store(true, Ordering::SeqCst);
            assert_eq!(waiting.await.unwrap(), Err("ERR_ABORTED"));
            drop((a, b));
            assert!(gate.enter(&AtomicBool::new(false), 1, 0).await.is_ok());
        });
    }

    #[test]
    fn with_a_memory_limit_concurrent_calls_bounds_sum_to_at_most_it() {
        let rt = runtime();
        // 8 slots, but memory for two calls of a 100 MiB bound at once
        let gate = Arc::new(Gate::with_memory(8, Some(200 << 20)));
        let (running, peak) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        rt.block_on(async {
            let tasks: Vec<_> = (0..6)
                .map(|_| {
                    let (gate, running, peak) = (gate.clone(), running.clone(), peak.clone());
                    tokio::spawn(async move {
                        let permit = gate.enter(&AtomicBool::new(false), 1, 100 << 20).await.unwrap();
                        let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                        peak.fetch_max(now, Ordering::SeqCst);
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        running.fetch_sub(1, Ordering::SeqCst);
                        drop(permit);
                    })
                })
                .collect();
            for t in tasks {
                t.await.unwrap();
            }
            // a bound larger than the whole limit takes all of it, and still runs
            assert!(gate.enter(&AtomicBool::new(false), 1, 1 << 40).await.is_ok());
        });
        assert_eq!(peak.load(Ordering::SeqCst), 2);
    }
}
