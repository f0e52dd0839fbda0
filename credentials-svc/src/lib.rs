//! Credentials lib.
