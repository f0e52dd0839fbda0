//! The providers' API descriptions kept in `tests/specs/` (see its README): read by the
//! contract tests and the OpenAPI validation of the fakes. Large files are stored
//! gzip-compressed; [`read`] takes the plain name and finds either form.
use std::io::Read as _;
use std::path::PathBuf;

/// The folder holding the descriptions: `tests/specs/` of this repository, next to this
/// crate's `sim/`. They stay with the tests because the provisioner's and the credentials
/// service's own tests read them too.
pub fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/specs")
}

/// The text of `tests/specs/<file>`, or of `<file>.gz` decompressed. Panics with the path
/// when neither can be read: a missing description is a broken checkout, not a skip.
pub fn read(file: &str) -> String {
    let plain = dir().join(file);
    if let Ok(text) = std::fs::read_to_string(&plain) {
        return text;
    }
    let gz = dir().join(format!("{file}.gz"));
    let bytes = std::fs::read(&gz)
        .unwrap_or_else(|e| panic!("neither {} nor {}: {e}", plain.display(), gz.display()));
    let mut text = String::new();
    flate2::read::GzDecoder::new(bytes.as_slice())
        .read_to_string(&mut text)
        .unwrap_or_else(|e| panic!("{}: {e}", gz.display()));
    text
}

/// [`read`], parsed as JSON.
pub fn json(file: &str) -> serde_json::Value {
    serde_json::from_str(&read(file)).unwrap_or_else(|e| panic!("{file}: {e}"))
}
