//! The queue in front of a database's one writer (a SQLite file): requests of the API go
//! before background work (the provision drivers, lease renewals, the sweeper), first come
//! first served within each class. A caller that waits longer
//! than the acquire timeout is told the database is busy (`PoolTimedOut`), as a full pool
//! would tell it.
//!
//! The gate keeps the writer's connection itself and hands it over with each turn: a pool
//! sends a connection given back to it a round trip to the connection's thread (sqlx
//! pings it before it takes it back), and with one writer that round trip stood between
//! every write and the next.
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
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

struct State<C> {
    held: bool,
    /// The writer's connection, while no turn holds it (`None` until a turn opens one when
    /// the gate began without it, after a turn that gave it up, and once the gate is
    /// closed).
    conn: Option<C>,
    /// Whether the connection in `conn` may be inside a transaction its turn left open
    /// (a caller that went away during it): the next turn rolls it back first.
    unsettled: bool,
    closed: bool,
    api: VecDeque<oneshot::Sender<()>>,
    background: VecDeque<oneshot::Sender<()>>,
    /// API turns given in a row while background work waited.
    streak: u32,
}

/// Opens a new connection to the writer's database.
pub(crate) type Connect<C> =
    Box<dyn Fn() -> BoxFuture<'static, Result<C, sqlx::Error>> + Send + Sync>;

/// The writer's queue, and its connection of type `C`.
pub(crate) struct WriterGate<C> {
    state: Mutex<State<C>>,
    timeout: Duration,
    connect: Connect<C>,
}

impl<C> std::fmt::Debug for WriterGate<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriterGate").finish_non_exhaustive()
    }
}

/// The right to use the writer, with its connection; passed on to the next in line when
/// dropped.
pub(crate) struct WriterTurn<C> {
    gate: Arc<WriterGate<C>>,
    conn: Option<C>,
    /// Whether the connection may be inside a transaction (see [`WriterTurn::unsettle`]).
    unsettled: bool,
    /// Whether the connection is dropped when the turn ends (see [`WriterTurn::give_up`]).
    given_up: bool,
}

impl<C> std::fmt::Debug for WriterTurn<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriterTurn").finish_non_exhaustive()
    }
}

impl<C> WriterGate<C> {
    /// A gate whose connection `connect` opens at the first turn (and again after a turn
    /// that gave its connection up).
    pub(crate) fn new(timeout: Duration, connect: Connect<C>) -> Arc<Self> {
        Arc::new(WriterGate {
            state: Mutex::new(State {
                held: false,
                conn: None,
                unsettled: false,
                closed: false,
                api: VecDeque::new(),
                background: VecDeque::new(),
                streak: 0,
            }),
            timeout,
            connect,
        })
    }

    /// A gate that starts with its connection.
    pub(crate) fn with_connection(timeout: Duration, conn: C, connect: Connect<C>) -> Arc<Self> {
        let gate = Self::new(timeout, connect);
        gate.lock().conn = Some(conn);
        gate
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State<C>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Closes the gate: no turn has a connection after it. Waits (up to the gate's timeout)
    /// for the turns already in line, whose connection is dropped as each ends; the idle
    /// connection, if any, is the closer's to close.
    pub(crate) async fn close(self: &Arc<Self>) -> Option<C> {
        self.lock().closed = true;
        let last = self.wait(Class::Api).await;
        let conn = self.lock().conn.take();
        drop(last);
        conn
    }

    /// Waits for the writer's turn (API requests first), with the writer's connection, and
    /// whether its last turn may have left it inside a transaction.
    pub(crate) async fn enter(
        self: &Arc<Self>,
        class: Class,
    ) -> Result<WriterTurn<C>, sqlx::Error> {
        let mut turn = self.wait(class).await?;
        let (conn, unsettled, closed) = {
            let mut state = self.lock();
            (
                state.conn.take(),
                std::mem::take(&mut state.unsettled),
                state.closed,
            )
        };
        turn.unsettled = unsettled;
        turn.conn = match conn {
            Some(conn) => Some(conn),
            None if closed => return Err(sqlx::Error::PoolClosed),
            None => Some((self.connect)().await?),
        };
        Ok(turn)
    }

    /// Waits for the writer's turn, without its connection.
    async fn wait(self: &Arc<Self>, class: Class) -> Result<WriterTurn<C>, sqlx::Error> {
        let turn = || WriterTurn {
            gate: Arc::clone(self),
            conn: None,
            unsettled: false,
            given_up: false,
        };
        let rx = {
            let mut state = self.lock();
            if !state.held {
                state.held = true;
                return Ok(turn());
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
                Ok(turn())
            }
            // The gate never drops a sender it holds without sending; on a timeout the
            // waiter is dropped below, handing on a turn that arrived meanwhile.
            _ => Err(sqlx::Error::PoolTimedOut),
        }
    }

    /// Hands the writer to the next in line (API first), or frees it.
    fn pass_on(&self) {
        let mut state = self.lock();
        Self::pass_on_locked(&mut state);
    }

    fn pass_on_locked(state: &mut State<C>) {
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

impl<C> WriterTurn<C> {
    /// Whether the connection's last turn may have left it inside a transaction.
    pub(crate) fn unsettled(&self) -> bool {
        self.unsettled
    }

    /// Marks the connection as possibly inside a transaction (one that began and has not
    /// yet ended): if the turn ends so, the next one rolls it back first.
    pub(crate) fn unsettle(&mut self) {
        self.unsettled = true;
    }

    /// Marks the connection as outside any transaction.
    pub(crate) fn settle(&mut self) {
        self.unsettled = false;
    }

    /// Gives the connection up: its state is not known (its thread failed, or a rollback
    /// did). It is dropped when the turn ends, and the next turn opens another.
    pub(crate) fn give_up(&mut self) {
        self.given_up = true;
    }

    /// Replaces the connection with a new one, outside any transaction. On an error the
    /// turn has none, and the next turn opens one.
    pub(crate) async fn reconnect(&mut self) -> Result<(), sqlx::Error> {
        self.conn = None;
        self.unsettled = false;
        self.given_up = false;
        self.conn = Some((self.gate.connect)().await?);
        Ok(())
    }
}

impl<C> std::ops::Deref for WriterTurn<C> {
    type Target = C;

    fn deref(&self) -> &C {
        self.conn
            .as_ref()
            .expect("a turn holds the connection until dropped")
    }
}

impl<C> std::ops::DerefMut for WriterTurn<C> {
    fn deref_mut(&mut self) -> &mut C {
        self.conn
            .as_mut()
            .expect("a turn holds the connection until dropped")
    }
}

impl<C> Drop for WriterTurn<C> {
    fn drop(&mut self) {
        let conn = self.conn.take();
        let (kept, given_up) = if self.given_up {
            (None, conn)
        } else {
            (conn, None)
        };
        // The connection goes back before the next turn begins (dropped outside the lock
        // when given up or the gate is closed).
        let _dropped = {
            let mut state = self.gate.lock();
            let dropped = if state.closed {
                kept.or(given_up)
            } else {
                state.unsettled = kept.is_some() && self.unsettled;
                state.conn = kept;
                given_up
            };
            WriterGate::pass_on_locked(&mut state);
            dropped
        };
    }
}

/// A waiter in line; dropped before its turn came (a timeout, a cancelled caller), it
/// takes itself out, handing on a turn that was given to it in the meantime.
struct Waiting<C> {
    gate: Arc<WriterGate<C>>,
    rx: Option<oneshot::Receiver<()>>,
}

impl<C> Drop for Waiting<C> {
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
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;

    /// A gate whose connections are numbered in the order they were opened.
    fn test_gate() -> Arc<WriterGate<u32>> {
        let opened = Arc::new(AtomicU32::new(0));
        WriterGate::new(
            Duration::from_secs(5),
            Box::new(move || {
                let n = opened.fetch_add(1, Ordering::SeqCst) + 1;
                Box::pin(async move { Ok(n) })
            }),
        )
    }

    #[tokio::test]
    async fn each_turn_gets_the_connection_the_last_one_gave_back() {
        let gate = test_gate();
        let mut turn = gate.enter(Class::Api).await.expect("free");
        assert_eq!(
            (*turn, turn.unsettled()),
            (1, false),
            "opened at the first turn"
        );
        turn.unsettle();
        drop(turn);
        // Left in a transaction: the next turn is told, and has the same connection.
        let mut turn = gate.enter(Class::Background).await.expect("free");
        assert_eq!((*turn, turn.unsettled()), (1, true));
        turn.settle();
        drop(turn);
        let mut turn = gate.enter(Class::Api).await.expect("free");
        assert_eq!((*turn, turn.unsettled()), (1, false));
        // Given up: still its own until the turn ends; the next turn opens another.
        turn.unsettle();
        turn.give_up();
        assert_eq!(*turn, 1);
        drop(turn);
        let mut turn = gate.enter(Class::Api).await.expect("free");
        assert_eq!((*turn, turn.unsettled()), (2, false));
        // Replaced within a turn, settled.
        turn.unsettle();
        turn.reconnect().await.expect("reconnects");
        assert_eq!((*turn, turn.unsettled()), (3, false));
        drop(turn);
        // Closed: the idle connection is the closer's, and no turn has one again.
        assert_eq!(gate.close().await, Some(3));
        assert!(matches!(
            gate.enter(Class::Api).await,
            Err(sqlx::Error::PoolClosed)
        ));
    }

    #[tokio::test]
    async fn closing_waits_for_the_turn_in_flight_and_drops_its_connection() {
        let gate = test_gate();
        let turn = gate.enter(Class::Api).await.expect("free");
        let closing = tokio::spawn({
            let gate = Arc::clone(&gate);
            async move { gate.close().await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!closing.is_finished(), "closed with a turn in flight");
        drop(turn);
        let idle = tokio::time::timeout(Duration::from_secs(5), closing)
            .await
            .expect("closes once the turn ends")
            .expect("closer");
        assert_eq!(idle, None, "the turn's connection went with it");
    }

    #[tokio::test]
    async fn api_requests_go_before_queued_background_work() {
        let gate = test_gate();
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
        let gate = test_gate();
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
        let gate = test_gate();
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
