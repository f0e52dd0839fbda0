//! The queue in front of a database's one writer (a SQLite file): requests of the API go
//! before background work (the provision drivers, lease renewals, the sweeper), first come
//! first served within each class. A caller that waits longer
//! than the acquire timeout is told the database is busy (`PoolTimedOut`), as a full pool
//! would tell it.
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::oneshot;

/// Whose work a database handle does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Requests a caller waits for: RPCs, enrollments, progress reports.
    Api,
    /// Background work: it waits while API requests are queued.
    Background,
}

/// API turns in a row, with background work waiting, before one background turn.
const API_STREAK: u32 = 8;

#[derive(Debug, Default)]
struct State {
    held: bool,
    api: VecDeque<oneshot::Sender<()>>,
    background: VecDeque<oneshot::Sender<()>>,
    /// API turns given in a row while background work waited.
    streak: u32,
}

/// The writer's queue.
#[derive(Debug)]
pub(crate) struct WriterGate {
    state: Mutex<State>,
    timeout: Duration,
}

/// The right to use the writer, passed on to the next in line when dropped.
#[derive(Debug)]
pub(crate) struct WriterTurn {
    gate: Arc<WriterGate>,
}

impl WriterGate {
    pub(crate) fn new(timeout: Duration) -> Arc<Self> {
        Arc::new(WriterGate {
            state: Mutex::new(State::default()),
            timeout,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits for the writer's turn: API requests first.
    pub(crate) async fn enter(self: &Arc<Self>, class: Class) -> Result<WriterTurn, sqlx::Error> {
        let rx = {
            let mut state = self.lock();
            if !state.held {
                state.held = true;
                return Ok(WriterTurn {
                    gate: Arc::clone(self),
                });
            }
            let (tx, rx) = oneshot::channel();
            match class {
                Class::Api => state.api.push_back(tx),
                Class::Background => state.background.push_back(tx),
            }
            rx
        };
        let mut waiting = Waiting {
            gate: Arc::clone(self),
            rx: Some(rx),
        };
        let rx = waiting.rx.as_mut().expect("set above");
        match tokio::time::timeout(self.timeout, rx).await {
            Ok(Ok(())) => {
                waiting.rx = None;
                Ok(WriterTurn {
                    gate: Arc::clone(self),
                })
            }
            // The gate never drops a sender it holds without sending; on a timeout the
            // waiter is dropped below, handing on a turn that arrived meanwhile.
            _ => Err(sqlx::Error::PoolTimedOut),
        }
    }

    /// Hands the writer to the next in line (API first), or frees it.
    fn pass_on(&self) {
        let mut state = self.lock();
        loop {
            let background_due = state.streak >= API_STREAK || state.api.is_empty();
            let next = if background_due && let Some(tx) = state.background.pop_front() {
                state.streak = 0;
                tx
            } else if let Some(tx) = state.api.pop_front() {
                if !state.background.is_empty() {
                    state.streak += 1;
                }
                tx
            } else {
                state.held = false;
                state.streak = 0;
                return;
            };
            // A waiter that gave up is skipped.
            if next.send(()).is_ok() {
                return;
            }
        }
    }
}

impl Drop for WriterTurn {
    fn drop(&mut self) {
        self.gate.pass_on();
    }
}

/// A waiter in line; dropped before its turn came (a timeout, a cancelled caller), it
/// takes itself out, handing on a turn that was given to it in the meantime.
struct Waiting {
    gate: Arc<WriterGate>,
    rx: Option<oneshot::Receiver<()>>,
}

impl Drop for Waiting {
    fn drop(&mut self) {
        if let Some(mut rx) = self.rx.take() {
            rx.close();
            if rx.try_recv().is_ok() {
                self.gate.pass_on();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn api_requests_go_before_queued_background_work() {
        let gate = WriterGate::new(Duration::from_secs(5));
        let first = gate.enter(Class::Background).await.expect("free");
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut waiters = Vec::new();
        for (name, class) in [
            ("bg1", Class::Background),
            ("api1", Class::Api),
            ("bg2", Class::Background),
            ("api2", Class::Api),
        ] {
            let (gate, order) = (Arc::clone(&gate), Arc::clone(&order));
            waiters.push(tokio::spawn(async move {
                let _turn = gate.enter(class).await.expect("turn");
                order.lock().unwrap().push(name);
            }));
            tokio::task::yield_now().await;
        }
        drop(first);
        for w in waiters {
            w.await.expect("waiter");
        }
        assert_eq!(*order.lock().unwrap(), ["api1", "api2", "bg1", "bg2"]);
    }

    #[tokio::test]
    async fn background_work_gets_a_turn_after_a_streak_of_api_turns() {
        let gate = WriterGate::new(Duration::from_secs(5));
        let first = gate.enter(Class::Api).await.expect("free");
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut waiters = Vec::new();
        let classes = std::iter::once(Class::Background).chain(std::iter::repeat_n(Class::Api, 10));
        for (n, class) in classes.enumerate() {
            let (gate, order) = (Arc::clone(&gate), Arc::clone(&order));
            waiters.push(tokio::spawn(async move {
                let _turn = gate.enter(class).await.expect("turn");
                order.lock().unwrap().push(n);
            }));
            tokio::task::yield_now().await;
        }
        drop(first);
        for w in waiters {
            w.await.expect("waiter");
        }
        // Eight API turns, then the background waiter, then the other API turns.
        assert_eq!(*order.lock().unwrap(), [1, 2, 3, 4, 5, 6, 7, 8, 0, 9, 10]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_waiter_that_gives_up_is_skipped_and_a_long_wait_is_busy() {
        let gate = WriterGate::new(Duration::from_secs(5));
        let held = gate.enter(Class::Api).await.expect("free");
        // Cancelled while queued.
        let cancelled = tokio::spawn({
            let gate = Arc::clone(&gate);
            async move { gate.enter(Class::Api).await.map(drop) }
        });
        tokio::task::yield_now().await;
        cancelled.abort();
        let timed_out = gate.enter(Class::Background).await;
        assert!(matches!(timed_out, Err(sqlx::Error::PoolTimedOut)));
        drop(held);
        // The writer is free again: neither the cancelled nor the timed-out waiter kept it.
        let again = tokio::time::timeout(Duration::from_secs(1), gate.enter(Class::Api)).await;
        assert!(matches!(again, Ok(Ok(_))));
    }
}
