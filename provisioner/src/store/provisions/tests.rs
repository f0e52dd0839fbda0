//! The provision store on each backend.
mod postgres;
mod sqlite;
