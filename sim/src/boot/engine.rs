//! The node's Docker engine API, as far as the agent uses it: a Unix socket at the node's
//! `/var/run/docker.sock` (re-rooted, like `DOCKER_HOST` in the agent's env file) that
//! answers `GET /version` the way dockerd does, once Docker is installed (the `docker` stub
//! is on the node's PATH). Before that, a connection is closed unanswered, as a node whose
//! engine is not running would leave the agent without a version.
use std::path::{Path, PathBuf};

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{UnixListener, UnixStream};

/// The version the harness's engine reports (Debian's `docker.io` in trixie).
pub const ENGINE_VERSION: &str = "26.1.5+dfsg1";
/// Linux limits a socket path to 108 bytes, its terminating NUL included.
const MAX_SOCKET_PATH: usize = 107;

/// The socket of the node rooted at `root`.
pub(super) fn socket_path(root: &Path) -> PathBuf {
    root.join("var/run/docker.sock")
}

/// Serves the engine of the node at `root` until the returned task is aborted.
pub(super) fn start(root: &Path) -> Result<tokio::task::JoinHandle<()>, String> {
    let socket = socket_path(root);
    if socket.as_os_str().len() > MAX_SOCKET_PATH {
        return Err(format!(
            "{} is longer than a Unix socket path may be ({MAX_SOCKET_PATH} bytes); the node has no Docker engine",
            socket.display()
        ));
    }
    if let Some(dir) = socket.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let listener = UnixListener::bind(&socket).map_err(|e| format!("{}: {e}", socket.display()))?;
    let docker = root.join(".harness/bin/docker");
    Ok(tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let installed = docker.exists();
            tokio::spawn(answer(stream, installed));
        }
    }))
}

async fn answer(mut stream: UnixStream, installed: bool) {
    let mut request = Vec::new();
    let mut buf = [0u8; 1024];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") && request.len() < 8192 {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => request.extend_from_slice(&buf[..n]),
        }
    }
    if !installed {
        return;
    }
    let line = String::from_utf8_lossy(&request);
    let line = line.lines().next().unwrap_or_default();
    let (status, body) = if line.starts_with("GET /version ") {
        (
            "200 OK",
            serde_json::json!({
                "Platform": {"Name": ""},
                "Version": ENGINE_VERSION,
                "ApiVersion": "1.45",
                "MinAPIVersion": "1.24",
                "Os": "linux",
                "Arch": "amd64",
            }),
        )
    } else {
        (
            "404 Not Found",
            serde_json::json!({"message": "page not found"}),
        )
    };
    let body = body.to_string();
    let reply = format!(
        "HTTP/1.1 {status}\r\nApi-Version: 1.45\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(reply.as_bytes()).await;
}
