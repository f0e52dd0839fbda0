//! The files a stored credential may have the control plane read: Azure's
//! `federated_token_file` and GCP's `credential_source.file`, workload-identity tokens an
//! orchestrator projects beside the process. Only files inside the one directory the
//! operator names (`--token-file-dir`) are read, after every link is resolved, and that
//! directory may not be `/`, lie in `/proc`, `/sys` or `/dev`, or hold or lie in the data
//! directory. So a stored credential can neither make the control plane read its own files
//! nor learn whether one exists: the caller is told only that the file cannot be used, and
//! the log says why.
use std::path::{Path, PathBuf};

use secrecy::SecretString;

use crate::model::CredentialsError;

/// The largest token file read.
const MAX_TOKEN_FILE: u64 = 64 * 1024;

/// The directory token files are read from; none by default.
#[derive(Debug, Clone, Default)]
pub struct TokenFileDir {
    dir: Option<PathBuf>,
}

impl TokenFileDir {
    /// Token files in `dir` (resolved now), which must not be or hold a forbidden place
    /// (see the module), `data_dir` included.
    pub fn new(dir: &Path, data_dir: &Path) -> Result<Self, String> {
        let shown = dir.display();
        let dir =
            std::fs::canonicalize(dir).map_err(|e| format!("--token-file-dir {shown}: {e}"))?;
        if !dir.is_dir() {
            return Err(format!("--token-file-dir {shown} is not a directory"));
        }
        let system = ["/proc", "/sys", "/dev"].iter().any(|p| dir.starts_with(p));
        let data = std::fs::canonicalize(data_dir).unwrap_or_else(|_| data_dir.to_owned());
        if dir == Path::new("/") || system || dir.starts_with(&data) || data.starts_with(&dir) {
            return Err(format!(
                "--token-file-dir {shown} may not be /, lie in /proc, /sys or /dev, or hold or \
                 lie in the data directory: name the directory the tokens are projected into"
            ));
        }
        Ok(Self { dir: Some(dir) })
    }

    /// The token in `path` (trimmed), read fresh; `what` names the file in errors and the
    /// log (`the federated token file`).
    pub(crate) async fn read(
        &self,
        path: &str,
        what: &str,
    ) -> Result<SecretString, CredentialsError> {
        let text = self.read_inner(path).await.map_err(|why| {
            tracing::warn!(file = path, reason = %why, "{what} of a stored credential refused");
            refused(what)
        })?;
        let token = text.trim();
        if token.is_empty() {
            tracing::warn!(file = path, "{what} of a stored credential is empty");
            return Err(refused(what));
        }
        Ok(SecretString::from(token.to_owned()))
    }

    async fn read_inner(&self, path: &str) -> Result<String, String> {
        let Some(dir) = &self.dir else {
            return Err("no --token-file-dir is set".into());
        };
        let resolved = tokio::fs::canonicalize(path)
            .await
            .map_err(|e| format!("cannot be resolved ({})", e.kind()))?;
        if !resolved.starts_with(dir) {
            return Err(format!(
                "resolves to {}, outside --token-file-dir {}",
                resolved.display(),
                dir.display()
            ));
        }
        // The file opened is the one checked (its own metadata), and no more than the
        // limit is read whatever it grows to.
        let file = tokio::fs::File::open(&resolved)
            .await
            .map_err(|e| format!("cannot be opened ({})", e.kind()))?;
        let meta = file
            .metadata()
            .await
            .map_err(|e| format!("cannot be read ({})", e.kind()))?;
        if !meta.is_file() {
            return Err("is not a regular file".into());
        }
        let mut text = String::new();
        tokio::io::AsyncReadExt::read_to_string(
            &mut tokio::io::AsyncReadExt::take(file, MAX_TOKEN_FILE + 1),
            &mut text,
        )
        .await
        .map_err(|e| format!("cannot be read ({})", e.kind()))?;
        if u64::try_from(text.len()).unwrap_or(u64::MAX) > MAX_TOKEN_FILE {
            return Err("is larger than 64 KiB".into());
        }
        Ok(text)
    }
}

/// What the caller is told about a token file that cannot be used: nothing about the file.
pub(crate) fn refused(what: &str) -> CredentialsError {
    CredentialsError::FailedPrecondition(format!(
        "{what} cannot be used: token files are read only from the control plane's \
         --token-file-dir (its log says why this one was refused)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use secrecy::ExposeSecret as _;

    fn message(e: CredentialsError) -> String {
        e.to_string()
    }

    #[tokio::test]
    async fn only_files_inside_the_directory_are_read_and_the_caller_learns_nothing_else() {
        let root = tempfile::tempdir().expect("dir");
        let tokens = root.path().join("tokens");
        let data = root.path().join("data");
        std::fs::create_dir_all(&tokens).expect("tokens");
        std::fs::create_dir_all(&data).expect("data");
        std::fs::write(tokens.join("token"), "eyJ.ok.sig\n").expect("token");
        std::fs::write(data.join("secret.key"), "not for you").expect("secret");
        std::os::unix::fs::symlink(data.join("secret.key"), tokens.join("escape")).expect("link");
        std::os::unix::fs::symlink(tokens.join("token"), tokens.join("projected")).expect("link");
        let files = TokenFileDir::new(&tokens, &data).expect("allowed");

        let ok = files
            .read(&tokens.join("token").to_string_lossy(), "the token file")
            .await;
        let linked = files
            .read(
                &tokens.join("projected").to_string_lossy(),
                "the token file",
            )
            .await;
        assert_eq!(ok.expect("read").expose_secret(), "eyJ.ok.sig");
        assert_eq!(linked.expect("a link inside").expose_secret(), "eyJ.ok.sig");

        let refusals = [
            data.join("secret.key").to_string_lossy().into_owned(),
            tokens.join("escape").to_string_lossy().into_owned(),
            tokens.join("missing").to_string_lossy().into_owned(),
            format!("{}/../data/secret.key", tokens.display()),
            "/proc/self/environ".to_owned(),
            "/etc/hostname".to_owned(),
        ];
        let mut messages = Vec::new();
        for path in &refusals {
            messages.push(message(
                files.read(path, "the token file").await.expect_err(path),
            ));
        }
        // One answer for every refusal: it says nothing of the file's existence or content.
        assert!(messages.iter().all(|m| *m == messages[0]), "{messages:?}");
        assert!(!messages[0].contains("secret.key") && !messages[0].contains("not found"));
    }

    #[tokio::test]
    async fn without_a_directory_no_file_is_read() {
        let root = tempfile::tempdir().expect("dir");
        std::fs::write(root.path().join("token"), "eyJ.ok.sig").expect("token");
        let path = root.path().join("token");
        let err = TokenFileDir::default()
            .read(&path.to_string_lossy(), "the token file")
            .await
            .expect_err("refused");
        assert!(message(err).contains("--token-file-dir"));
    }

    #[test]
    fn the_directory_may_not_be_a_system_place_or_touch_the_data_directory() {
        let root = tempfile::tempdir().expect("dir");
        let data = root.path().join("data");
        std::fs::create_dir_all(data.join("inner")).expect("data");
        for dir in [
            Path::new("/"),
            Path::new("/proc"),
            Path::new("/sys/kernel"),
            root.path(),
            &data,
            &data.join("inner"),
        ] {
            assert!(
                TokenFileDir::new(dir, &data).is_err(),
                "{} allowed",
                dir.display()
            );
        }
        assert!(TokenFileDir::new(&root.path().join("nowhere"), &data).is_err());
    }
}
