//! Reading one file back out of a rendered document (tests, and tools that inspect what a
//! node was given).
use serde::Deserialize;
use zeroize::Zeroize as _;

#[derive(Deserialize)]
struct Document {
    #[serde(default)]
    write_files: Vec<FileEntry>,
}

#[derive(Deserialize)]
struct FileEntry {
    path: String,
    #[serde(default)]
    content: String,
}

impl Drop for FileEntry {
    fn drop(&mut self) {
        // Two of the files hold secrets.
        self.content.zeroize();
    }
}

/// The content `user_data` writes to `path` with `write_files`; `None` when the document
/// is not YAML or writes no such file.
pub fn written_file(user_data: &str, path: &str) -> Option<String> {
    let document: Document = serde_norway::from_str(user_data).ok()?;
    document
        .write_files
        .iter()
        .find(|file| file.path == path)
        .map(|file| file.content.clone())
}
