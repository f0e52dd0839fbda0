//! What a storage port reports when it fails.

/// Storage failures a caller acts on.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database could not be reached or answered with an error (the driver's error,
    /// which never holds a value or the DSN).
    #[error("node store unavailable")]
    Unavailable(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// Every database connection stayed busy for the whole wait: the load is too high
    /// for now (a request is refused, background work retries).
    #[error("node store busy: no free connection")]
    Busy,
    /// A row with this key already exists (names the table, never a value).
    #[error("a {0} row with this key already exists")]
    Duplicate(&'static str),
    /// Stored data could not be interpreted.
    #[error("node store holds an unreadable row: {0}")]
    Corrupt(String),
    /// The DSN names no supported database (the DSN is not repeated).
    #[error("unsupported database URL: want memory, sqlite://PATH or postgres://…")]
    UnsupportedUrl,
}
