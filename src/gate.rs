//! Gate: how concurrent calls share the machine. Each call runs on one thread; at most
//! `limit()` calls run at once (by default the number of cores, `GENCOMPACT_MAX_CONCURRENT_CALLS`
//! overrides it), the others wait in arrival order on their own (idle) blocking thread, so
//! peak memory is that many single-call bounds however many calls the server starts, and the
//! event loop never waits. A queued call still honours its abort signal.
//!
//! Memory: a counter and a queue position per waiting call.

use crate::error::{CompactError, Result};
use std::sync::atomic::{AtomicBool, Ordering};
use std::collections::BTreeSet;
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::Duration;

/// How often a waiting call looks at its abort flag.
const ABORT_POLL: Duration = Duration::from_millis(20);

struct State {
    running: usize,
    /// Tickets handed out and the next ticket allowed in (first come, first served).
    issued: u64,
    serving: u64,
    /// Tickets whose call was aborted while it waited: skipped when their turn comes.
    abandoned: BTreeSet<u64>,
}

impl State {
    fn skip_abandoned(&mut self) {
        while self.abandoned.remove(&self.serving) {
            self.serving += 1;
        }
    }
}

pub struct Gate {
    limit: usize,
    state: Mutex<State>,
    turn: Condvar,
}

/// A running call's place; dropping it lets the next call in.
pub struct Permit<'a> {
    gate: &'a Gate,
}

impl Gate {
    pub fn new(limit: usize) -> Self {
        let state = State { running: 0, issued: 0, serving: 0, abandoned: BTreeSet::new() };
        Gate { limit: limit.max(1), state: Mutex::new(state), turn: Condvar::new() }
    }

    /// The process-wide gate of the N-API entry point.
    pub fn global() -> &'static Gate {
        static GATE: OnceLock<Gate> = OnceLock::new();
        GATE.get_or_init(|| Gate::new(configured_limit()))
    }

    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Blocks until this call may run, or until `cancel` is set (`ERR_ABORTED`).
    pub fn enter(&self, cancel: &AtomicBool) -> Result<Permit<'_>> {
        let poisoned = || CompactError::Internal("call gate poisoned".into());
        let mut state = self.state.lock().map_err(|_| poisoned())?;
        let ticket = state.issued;
        state.issued += 1;
        loop {
            state.skip_abandoned();
            if state.serving == ticket && state.running < self.limit {
                state.serving += 1;
                state.running += 1;
                self.turn.notify_all();
                return Ok(Permit { gate: self });
            }
            if cancel.load(Ordering::Relaxed) {
                state.abandoned.insert(ticket);
                state.skip_abandoned();
                self.turn.notify_all();
                return Err(CompactError::Aborted);
            }
            state = self.turn.wait_timeout(state, ABORT_POLL).map_err(|_| poisoned())?.0;
        }
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        if let Ok(mut state) = self.gate.state.lock() {
            state.running -= 1;
        }
        self.gate.turn.notify_all();
    }
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
    use std::sync::Arc;

    #[test]
    fn at_most_limit_calls_run_and_a_waiting_call_can_abort() {
        let gate = Arc::new(Gate::new(2));
        let (running, peak) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let (gate, running, peak) = (gate.clone(), running.clone(), peak.clone());
                std::thread::spawn(move || {
                    let _p = gate.enter(&AtomicBool::new(false)).unwrap();
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    peak.fetch_max(now, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(20));
                    running.fetch_sub(1, Ordering::SeqCst);
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(peak.load(Ordering::SeqCst), 2);

        // Both places taken: a third call waits, aborts, and a fourth still gets in afterwards.
        let a = gate.enter(&AtomicBool::new(false)).unwrap();
        let b = gate.enter(&AtomicBool::new(false)).unwrap();
        let cancel = Arc::new(AtomicBool::new(false));
        let waiting = {
            let (gate, cancel) = (gate.clone(), cancel.clone());
            std::thread::spawn(move || gate.enter(&cancel).map(|_| ()).map_err(|e| e.code()))
        };
        std::thread::sleep(Duration::from_millis(50));
        cancel.store(true, Ordering::SeqCst);
        assert_eq!(waiting.join().unwrap(), Err("ERR_ABORTED"));
        drop((a, b));
        assert!(gate.enter(&AtomicBool::new(false)).is_ok());
    }
}
