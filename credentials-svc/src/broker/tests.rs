//! The token exchanges against a recording HTTP endpoint: every request the Azure and GCP
//! issuers send is compared field by field with what the official SDKs sent
//! (`tests/specs/golden-*.jsonl`), the federated token files are re-read on every
//! exchange, and refusals become errors that never echo the secret. This module holds the
//! recorder; the tests are in `azure` and `gcp`.
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

mod azure;
mod gcp;

pub(super) const KEY_PEM: &str = include_str!("testdata/test-sa-key.pem");

/// One recorded request.
#[derive(Debug, Clone)]
pub(super) struct Seen {
    pub(super) method: String,
    pub(super) path: String,
    pub(super) headers: Vec<(String, String)>,
    pub(super) body: String,
}

impl Seen {
    pub(super) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub(super) fn form(&self) -> Vec<(String, String)> {
        form_pairs(&self.body)
    }
}

/// A plain HTTP/1.1 endpoint answering every request with `answer(path)`.
pub(super) struct Recorder {
    pub(super) url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Recorder {
    pub(super) async fn start(answer: fn(&str) -> (u16, Value)) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        tokio::spawn(async move {
            while let Ok((mut tcp, _)) = listener.accept().await {
                let log = log.clone();
                tokio::spawn(async move {
                    let Some(req) = read_request(&mut tcp).await else {
                        return;
                    };
                    let (status, body) = answer(&req.path);
                    log.lock().expect("log").push(req);
                    let text = body.to_string();
                    let head = format!(
                        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                        text.len()
                    );
                    let _ = tcp.write_all(format!("{head}{text}").as_bytes()).await;
                });
            }
        });
        Self { url, seen }
    }

    pub(super) fn seen(&self) -> Vec<Seen> {
        self.seen.lock().expect("log").clone()
    }
}

async fn read_request(tcp: &mut tokio::net::TcpStream) -> Option<Seen> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        let n = tcp.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.lines();
    let mut first = lines.next()?.split(' ');
    let (method, path) = (first.next()?.to_owned(), first.next()?.to_owned());
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(": "))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    let len: usize = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    while buf.len() < head_end + len {
        let n = tcp.read(&mut chunk).await.ok()?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let body = String::from_utf8_lossy(&buf[head_end..]).into_owned();
    Some(Seen {
        method,
        path,
        headers,
        body,
    })
}

pub(super) fn form_pairs(s: &str) -> Vec<(String, String)> {
    let decode = |v: &str| {
        let v = v.replace('+', " ");
        let mut out = Vec::new();
        let b = v.as_bytes();
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'%' && i + 2 < b.len() {
                out.push(u8::from_str_radix(&v[i + 1..i + 3], 16).expect("hex"));
                i += 3;
            } else {
                out.push(b[i]);
                i += 1;
            }
        }
        String::from_utf8(out).expect("utf-8")
    };
    s.split('&')
        .filter_map(|p| p.split_once('='))
        .map(|(k, v)| (decode(k), decode(v)))
        .collect()
}

pub(super) fn golden(file: &str) -> Vec<Value> {
    let path = format!("{}/../tests/specs/{file}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_str(l).expect("golden"))
        .collect()
}

pub(super) fn token_answer(_: &str) -> (u16, Value) {
    (
        200,
        json!({ "token_type": "Bearer", "expires_in": 3599, "access_token": "at-1" }),
    )
}

/// Token files read from `dir` (the data directory is elsewhere).
pub(super) fn token_files(dir: &std::path::Path) -> crate::broker::token_files::TokenFileDir {
    crate::broker::token_files::TokenFileDir::new(
        dir,
        std::path::Path::new("/nonexistent-data-dir"),
    )
    .expect("token directory")
}
