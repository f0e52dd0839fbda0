//! Conversions from the database crates' errors into the ports' errors, so the SQL store
//! can use `?` (the orphan rule puts them beside the error types). Compiled only with the
//! `sql` feature, which the provisioner's store enables; the types of the ports never
//! name a database type.
use crate::RedeemError;
use crate::ports::StoreError;
use crate::provision::InsertProvisionError;

impl From<sqlx::Error> for StoreError {
    fn from(e: sqlx::Error) -> Self {
        levelrail_db::DbError::from(e).into()
    }
}

impl From<sqlx::Error> for RedeemError {
    fn from(e: sqlx::Error) -> Self {
        RedeemError::Store(e.into())
    }
}

impl From<sqlx::Error> for InsertProvisionError {
    fn from(e: sqlx::Error) -> Self {
        InsertProvisionError::Store(e.into())
    }
}

impl From<levelrail_db::ColumnError> for StoreError {
    fn from(e: levelrail_db::ColumnError) -> Self {
        levelrail_db::DbError::from(e).into()
    }
}

impl From<levelrail_db::DbError> for StoreError {
    fn from(e: levelrail_db::DbError) -> Self {
        match e {
            levelrail_db::DbError::UnsupportedUrl => StoreError::UnsupportedUrl,
            levelrail_db::DbError::Unavailable(sqlx::Error::PoolTimedOut) => StoreError::Busy,
            levelrail_db::DbError::Unavailable(e) => StoreError::Unavailable(Box::new(e)),
            levelrail_db::DbError::Corrupt(why) => StoreError::Corrupt(why),
        }
    }
}
