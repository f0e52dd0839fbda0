//! The streams and the secret input of one run: what [`crate::run`] is given and the
//! context and the error report write to. A leaf under them.
use std::fmt;
use std::io::Write;

use crate::secrets::SecretSource;

/// Where one run of the CLI reads secret input from and writes its output to.
pub struct Io<'a> {
    /// Normal output: tables, confirmations, or the one JSON document of `--json`.
    pub stdout: &'a mut dyn Write,
    /// Warnings and the one-line `error: …` message.
    pub stderr: &'a mut dyn Write,
    /// Secret values not given on the command line: piped stdin or a no-echo prompt.
    pub secrets: &'a mut dyn SecretSource,
}

impl fmt::Debug for Io<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Io").finish_non_exhaustive()
    }
}
