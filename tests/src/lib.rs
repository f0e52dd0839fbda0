//! Workspace-level integration and end-to-end tests, fake clouds, browser tests.
