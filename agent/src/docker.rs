//! The local Docker engine, over its Unix socket (`DOCKER_HOST`, default
//! `unix:///var/run/docker.sock`): the agent asks it for its version (`GET /version` of the
//! Engine API) before every heartbeat and reports it, so the control plane shows whether a
//! node can run workloads. Only `unix://` hosts: the engine's TCP socket is unauthenticated
//! unless TLS is set up, and a node never needs it.
//!
//! The request is HTTP/1.0 with `Connection: close`, so the engine answers with a plain body
//! that ends at EOF (no chunked encoding to decode). An engine that does not answer within
//! [`TIMEOUT`], or answers something that is not an Engine API version, is "unavailable"
//! with a reason; it never stops the heartbeat.
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::exit::AgentError;

/// The process environment variable (and env-file key) naming the engine's socket, as the
/// Docker CLI reads it.
pub const DOCKER_HOST: &str = "DOCKER_HOST";
/// The engine's default socket.
pub const DEFAULT_DOCKER_HOST: &str = "unix:///var/run/docker.sock";
/// How long one probe may take.
pub const TIMEOUT: Duration = Duration::from_secs(3);
/// The most of an answer the agent reads.
const MAX_ANSWER: u64 = 64 * 1024;
/// The longest version string reported (the control plane refuses longer ones).
const MAX_VERSION: usize = 64;

/// Where the Docker engine listens: a Unix socket path.
#[derive(Clone, PartialEq, Eq)]
pub struct DockerHost {
    socket: PathBuf,
}

impl fmt::Debug for DockerHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unix://{}", self.socket.display())
    }
}

impl fmt::Display for DockerHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

impl Default for DockerHost {
    fn default() -> Self {
        Self::parse(DEFAULT_DOCKER_HOST).unwrap_or_else(|_| Self {
            socket: PathBuf::from("/var/run/docker.sock"),
        })
    }
}

impl DockerHost {
    /// Parses `unix:///absolute/path`.
    pub fn parse(value: &str) -> Result<Self, AgentError> {
        let value = value.trim();
        let Some(path) = value.strip_prefix("unix://") else {
            return Err(AgentError::config(
                DOCKER_HOST,
                "must be unix:///path/to/docker.sock (the agent talks to the local engine only)",
            ));
        };
        if !path.starts_with('/') || path.contains('\0') {
            return Err(AgentError::config(
                DOCKER_HOST,
                "must name an absolute socket path, as unix:///var/run/docker.sock",
            ));
        }
        Ok(Self {
            socket: PathBuf::from(path),
        })
    }

    /// The socket's path.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// The engine's version (`Version` of `GET /version`), or why it is unavailable.
    pub async fn engine_version(&self) -> Result<String, String> {
        match tokio::time::timeout(TIMEOUT, self.ask_version()).await {
            Ok(result) => result,
            Err(_) => Err(format!(
                "the Docker engine at {self} did not answer within {} s",
                TIMEOUT.as_secs()
            )),
        }
    }

    async fn ask_version(&self) -> Result<String, String> {
        let mut stream = tokio::net::UnixStream::connect(&self.socket)
            .await
            .map_err(|e| format!("cannot connect to the Docker engine at {self}: {e}"))?;
        stream
            .write_all(b"GET /version HTTP/1.0\r\nHost: docker\r\nConnection: close\r\n\r\n")
            .await
            .map_err(|e| format!("writing to the Docker engine at {self}: {e}"))?;
        let mut answer = Vec::new();
        stream
            .take(MAX_ANSWER)
            .read_to_end(&mut answer)
            .await
            .map_err(|e| format!("reading from the Docker engine at {self}: {e}"))?;
        parse_version_answer(&answer).map_err(|why| format!("the Docker engine at {self} {why}"))
    }
}

/// The `Version` of an HTTP answer to `GET /version`.
fn parse_version_answer(answer: &[u8]) -> Result<String, String> {
    let split = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or("answered without a complete HTTP header")?;
    let head = String::from_utf8_lossy(&answer[..split]);
    let status = head.lines().next().unwrap_or_default();
    let code = status.split_whitespace().nth(1).unwrap_or_default();
    if !status.starts_with("HTTP/1.") || code != "200" {
        return Err(format!(
            "answered {:?} to GET /version",
            status.chars().take(80).collect::<String>()
        ));
    }
    let body: serde_json::Value = serde_json::from_slice(&answer[split + 4..])
        .map_err(|_| "answered GET /version with a body that is not JSON".to_owned())?;
    let version = body
        .get("Version")
        .and_then(serde_json::Value::as_str)
        .ok_or("answered GET /version without a Version")?;
    let valid = !version.is_empty()
        && version.len() <= MAX_VERSION
        && version
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._+-~".contains(&b));
    if valid {
        Ok(version.to_owned())
    } else {
        Err("answered GET /version with a malformed Version".to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A one-shot engine on a socket in `dir` that answers `answer` and records the request.
    async fn engine(
        dir: &Path,
        answer: &'static [u8],
    ) -> (DockerHost, tokio::task::JoinHandle<String>) {
        let socket = dir.join("docker.sock");
        let listener = tokio::net::UnixListener::bind(&socket).unwrap();
        let task = tokio::spawn(async move {
            let (mut stream, _) = listener.accept().await.unwrap();
            let mut request = vec![0u8; 1024];
            let n = stream.read(&mut request).await.unwrap();
            stream.write_all(answer).await.unwrap();
            String::from_utf8_lossy(&request[..n]).into_owned()
        });
        let host = DockerHost::parse(&format!("unix://{}", socket.display())).unwrap();
        (host, task)
    }

    #[tokio::test]
    async fn the_engine_version_is_read_from_get_version_on_the_socket() {
        let dir = tempfile::tempdir().unwrap();
        let (host, request) = engine(
            dir.path(),
            b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n{\"Platform\":{\"Name\":\"Docker Engine - Community\"},\"Version\":\"26.1.5+dfsg1\",\"ApiVersion\":\"1.45\"}\n",
        )
        .await;
        assert_eq!(host.engine_version().await.unwrap(), "26.1.5+dfsg1");
        let request = request.await.unwrap();
        assert!(
            request.starts_with("GET /version HTTP/1.0\r\n"),
            "{request}"
        );
    }

    #[tokio::test]
    async fn a_missing_engine_or_a_wrong_answer_is_unavailable_with_the_reason() {
        let dir = tempfile::tempdir().unwrap();
        let missing =
            DockerHost::parse(&format!("unix://{}/none.sock", dir.path().display())).unwrap();
        let why = missing.engine_version().await.unwrap_err();
        assert!(
            why.contains("cannot connect") && why.contains("none.sock"),
            "{why}"
        );

        let (host, _) = engine(dir.path(), b"HTTP/1.0 500 Internal Server Error\r\n\r\n{}").await;
        let why = host.engine_version().await.unwrap_err();
        assert!(why.contains("500"), "{why}");
    }

    #[test]
    fn answers_are_checked() {
        let ok = b"HTTP/1.1 200 OK\r\n\r\n{\"Version\":\"27.0.3\"}";
        assert_eq!(parse_version_answer(ok).unwrap(), "27.0.3");
        for (answer, why) in [
            (&b"HTTP/1.1 200 OK\r\n"[..], "header"),
            (b"HTTP/1.1 200 OK\r\n\r\nnot json", "not JSON"),
            (
                b"HTTP/1.1 200 OK\r\n\r\n{\"ApiVersion\":\"1.45\"}",
                "without a Version",
            ),
            (
                b"HTTP/1.1 200 OK\r\n\r\n{\"Version\":\"1 2; rm\"}",
                "malformed",
            ),
            (b"SSH-2.0-OpenSSH\r\n\r\n", "answered"),
        ] {
            let err = parse_version_answer(answer).unwrap_err();
            assert!(err.contains(why), "{err}");
        }
    }

    #[test]
    fn only_absolute_unix_sockets_are_accepted() {
        assert_eq!(
            DockerHost::default().socket(),
            Path::new("/var/run/docker.sock")
        );
        for bad in [
            "tcp://127.0.0.1:2375",
            "unix://relative.sock",
            "/var/run/docker.sock",
        ] {
            let err = DockerHost::parse(bad).unwrap_err().to_string();
            assert!(err.contains(DOCKER_HOST), "{err}");
        }
    }
}
