//! How a command that ran to completion ended, apart from errors. A leaf: the commands return
//! it and `run` turns it into the exit code.
/// How a command that ran to completion ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Exit code 0.
    Success,
    /// The command ran but its result is negative (a failed verification): exit code 1,
    /// with the explanation already printed.
    Unsuccessful,
}
