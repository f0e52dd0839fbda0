//! The change feed of a database several processes share: one `LISTEN` connection per
//! process (PostgreSQL). SQLite is one process's alone and has none.
use std::fmt;

use sqlx::PgPool;
use sqlx::postgres::PgListener;

/// What a listener hears.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// A `NOTIFY` on the channel, with its payload.
    Payload(String),
    /// The connection was lost and is open again: whatever was notified in between is
    /// lost, so the caller reads the state it follows afresh.
    Reconnected,
}

/// A `LISTEN` connection of its own (taken from the pool's options, held outside it).
pub struct Listener {
    pool: PgPool,
    channel: String,
    /// `None` after a failure: the next [`Listener::recv`] opens a new connection.
    inner: Option<PgListener>,
}

impl fmt::Debug for Listener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Listener")
            .field("channel", &self.channel)
            .field("connected", &self.inner.is_some())
            .finish()
    }
}

impl Listener {
    pub(crate) async fn open(pool: &PgPool, channel: &str) -> Result<Self, sqlx::Error> {
        Ok(Self {
            inner: Some(connect(pool, channel).await?),
            pool: pool.clone(),
            channel: channel.to_owned(),
        })
    }

    /// The next notice; waits for it. An error means the connection failed (it is dropped,
    /// and the next call opens a new one and answers [`Notice::Reconnected`]): call again
    /// after a pause.
    pub async fn recv(&mut self) -> Result<Notice, sqlx::Error> {
        let Some(listener) = self.inner.as_mut() else {
            self.inner = Some(connect(&self.pool, &self.channel).await?);
            return Ok(Notice::Reconnected);
        };
        match listener.try_recv().await {
            Ok(Some(n)) => Ok(Notice::Payload(n.payload().to_owned())),
            // sqlx reconnected by itself (and listens again): something may be missed.
            Ok(None) => Ok(Notice::Reconnected),
            Err(e) => {
                // A reset or a terminated session can leave sqlx's connection dead: start
                // over on a new one.
                self.inner = None;
                Err(e)
            }
        }
    }
}

async fn connect(pool: &PgPool, channel: &str) -> Result<PgListener, sqlx::Error> {
    let mut listener = PgListener::connect_with(pool).await?;
    listener.listen(channel).await?;
    Ok(listener)
}
