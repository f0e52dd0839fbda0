//! The properties the fuzz targets check, one module per target (`fuzz/fuzz_targets/`
//! calls `<module>::check`). Each `check` takes the fuzzer's bytes and panics when a
//! property fails; it never panics on input the parser merely refuses.
//!
//! The same functions run in `cargo test` (`tests/corpus.rs`) over the corpus kept in
//! `fuzz/corpus/<target>/` and every input that once failed, kept in
//! `fuzz/regressions/<target>/`: a crash found by fuzzing becomes a regression test by
//! adding its input file there.
//!
//! Structured targets read their fields from the bytes split at NUL (`\0`), so a corpus
//! file is readable text and a seed is written by hand.
pub mod cloudinit;
pub mod credential_plaintext;
pub mod credentials;
pub mod join_token;
pub mod progress_report;
pub mod rest_request;

mod opaque;

/// One fuzz target.
#[derive(Debug, Clone, Copy)]
pub struct Target {
    /// The name of `fuzz/fuzz_targets/<name>.rs` and of its corpus folder.
    pub name: &'static str,
    /// Checks the properties; panics when one fails.
    pub check: fn(&[u8]),
    /// Whether the parser accepts the input (the corpus's `valid-*` seeds must be, so the
    /// fuzzer starts from the deep paths).
    pub accepts: fn(&[u8]) -> bool,
}

/// Every fuzz target.
pub const TARGETS: [Target; 6] = [
    Target {
        name: "cloudinit",
        check: cloudinit::check,
        accepts: cloudinit::accepts,
    },
    Target {
        name: "credential_plaintext",
        check: credential_plaintext::check,
        accepts: credential_plaintext::accepts,
    },
    Target {
        name: "credentials",
        check: credentials::check,
        accepts: credentials::accepts,
    },
    Target {
        name: "join_token",
        check: join_token::check,
        accepts: join_token::accepts,
    },
    Target {
        name: "progress_report",
        check: progress_report::check,
        accepts: progress_report::accepts,
    },
    Target {
        name: "rest_request",
        check: rest_request::check,
        accepts: rest_request::accepts,
    },
];

/// The first `n` NUL-separated fields of `data`, missing ones empty; `None` when one of
/// them is not UTF-8.
fn padded_fields(data: &[u8], n: usize) -> Option<Vec<String>> {
    data.split(|&b| b == 0)
        .chain(std::iter::repeat(&[][..]))
        .take(n)
        .map(|f| std::str::from_utf8(f).ok().map(str::to_owned))
        .collect()
}
