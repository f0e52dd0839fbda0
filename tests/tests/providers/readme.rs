//! The README's lists that tests hold to the code.

/// The lines of the first ```text block after the README heading `heading`.
pub(crate) fn text_block(heading: &str) -> Vec<String> {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md"))
        .expect("README.md");
    readme
        .split(heading)
        .nth(1)
        .and_then(|s| s.split("```text\n").nth(1))
        .and_then(|s| s.split("```").next())
        .unwrap_or_else(|| panic!("no ```text block after {heading} in the README"))
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}
