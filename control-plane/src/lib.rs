//! Control plane library.
