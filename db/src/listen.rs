//! The change feed of a database several processes share: one `LISTEN` connection per
//! process (PostgreSQL). SQLite is one process's alone and has none.
use std::fmt;

use sqlx::postgres::PgListener;

/// What a listener hears.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// A `NOTIFY` on the channel, with its payload.
    Payload(String),
    /// The connection was lost and is reopened on the next [`Listener::recv`]: whatever
    /// was notified in between is lost, so the caller reads the state it follows afresh.
    Reconnected,
}

/// A `LISTEN` connection of its own, outside the pool.
pub struct Listener {
    inner: PgListener,
}

impl fmt::Debug for Listener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Listener")
    }
}

impl Listener {
    pub(crate) async fn open(pool: &sqlx::PgPool, channel: &str) -> Result<Self, sqlx::Error> {
        let mut inner = PgListener::connect_with(pool).await?;
        inner.listen(channel).await?;
        Ok(Self { inner })
    }

    /// The next notice; waits for it. An error means the listener could not reconnect:
    /// call again later.
    pub async fn recv(&mut self) -> Result<Notice, sqlx::Error> {
        Ok(match self.inner.try_recv().await? {
            Some(n) => Notice::Payload(n.payload().to_owned()),
            None => Notice::Reconnected,
        })
    }
}
