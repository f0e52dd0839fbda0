//! The gRPC-web wire format (binary, `application/grpc-web+proto`), as the control plane's
//! tonic-web layer speaks it: each message travels in a frame of one flag byte and a
//! four-byte big-endian length; the last frame (flag `0x80`) carries the trailers as
//! `name: value` lines, among them `grpc-status` and the percent-encoded `grpc-message`. A
//! response without a body ("trailers only") carries them as HTTP headers instead.
//! Everything here is pure, so the browser transport (`api::transport`) only moves bytes.

/// A gRPC status code (the numbers of the gRPC specification).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    Ok,
    Cancelled,
    Unknown,
    InvalidArgument,
    DeadlineExceeded,
    NotFound,
    AlreadyExists,
    PermissionDenied,
    ResourceExhausted,
    FailedPrecondition,
    Aborted,
    OutOfRange,
    Unimplemented,
    Internal,
    Unavailable,
    DataLoss,
    Unauthenticated,
}

impl Code {
    /// The code numbered `n`; `Unknown` for a number the specification does not define.
    pub fn from_number(n: u32) -> Code {
        use Code::*;
        const ALL: [Code; 17] = [
            Ok,
            Cancelled,
            Unknown,
            InvalidArgument,
            DeadlineExceeded,
            NotFound,
            AlreadyExists,
            PermissionDenied,
            ResourceExhausted,
            FailedPrecondition,
            Aborted,
            OutOfRange,
            Unimplemented,
            Internal,
            Unavailable,
            DataLoss,
            Unauthenticated,
        ];
        ALL.get(n as usize).copied().unwrap_or(Unknown)
    }

    /// The code of an HTTP answer that is not a gRPC one (a proxy's, or the server's before
    /// any gRPC handling), as the gRPC specification maps them.
    pub fn from_http(status: u16) -> Code {
        match status {
            400 => Code::Internal,
            401 => Code::Unauthenticated,
            403 => Code::PermissionDenied,
            404 => Code::Unimplemented,
            429 | 502..=504 => Code::Unavailable,
            _ => Code::Unknown,
        }
    }
}

/// The outcome of a call that did not succeed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    pub code: Code,
    /// The server's message (decoded).
    pub message: String,
    /// The request field the server names (`x-levelrail-field`), when it names one.
    pub field: Option<String>,
}

impl Status {
    /// A status made here (no server answer).
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Status {
            code,
            message: message.into(),
            field: None,
        }
    }

    /// The status in trailers or headers (`get` looks a lowercase name up): `None` when
    /// they carry no `grpc-status`, `Some(Ok)` for a success.
    pub fn from_metadata(get: impl Fn(&str) -> Option<String>) -> Option<Status> {
        let code = get("grpc-status")?;
        let code = code
            .trim()
            .parse::<u32>()
            .map_or(Code::Unknown, Code::from_number);
        Some(Status {
            code,
            message: percent_decode(&get("grpc-message").unwrap_or_default()),
            field: get("x-levelrail-field").filter(|f| !f.is_empty()),
        })
    }
}

/// `message` in one data frame.
pub fn frame(message: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(message.len() + 5);
    out.push(0);
    out.extend_from_slice(&(message.len() as u32).to_be_bytes());
    out.extend_from_slice(message);
    out
}

/// One frame of a response body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// An encoded message.
    Message(Vec<u8>),
    /// The trailers, names lowercased.
    Trailers(Vec<(String, String)>),
}

/// Splits a response body into frames as its bytes arrive, in any chunks.
#[derive(Debug, Default)]
pub struct FrameReader {
    buf: Vec<u8>,
}

/// The largest frame accepted (the server's own limit is far below).
const MAX_FRAME: usize = 16 * 1024 * 1024;

impl FrameReader {
    /// Appends bytes of the body.
    pub fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// The next whole frame, `None` until one has arrived; an error for a compressed or
    /// oversized frame (the client asks for neither).
    pub fn next_frame(&mut self) -> Result<Option<Frame>, Status> {
        let Some(header) = self.buf.get(..5) else {
            return Ok(None);
        };
        let flag = header[0];
        let len = u32::from_be_bytes([header[1], header[2], header[3], header[4]]) as usize;
        if flag & 0x01 != 0 || len > MAX_FRAME {
            return Err(Status::new(
                Code::Internal,
                "the control plane sent a frame this app cannot read",
            ));
        }
        if self.buf.len() < 5 + len {
            return Ok(None);
        }
        let body: Vec<u8> = self.buf.drain(..5 + len).skip(5).collect();
        Ok(Some(match flag & 0x80 {
            0 => Frame::Message(body),
            _ => Frame::Trailers(trailers(&body)),
        }))
    }
}

/// `name: value` lines (CRLF or LF), names lowercased, values trimmed.
fn trailers(block: &[u8]) -> Vec<(String, String)> {
    String::from_utf8_lossy(block)
        .lines()
        .filter_map(|line| {
            let (name, value) = line.split_once(':')?;
            Some((name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        })
        .collect()
}

/// The value of `name` among `pairs`.
pub fn lookup(pairs: &[(String, String)], name: &str) -> Option<String> {
    pairs
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.clone())
}

/// `grpc-message` decoding: `%XX` escapes as UTF-8 bytes; anything malformed kept as is.
pub fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(&h), Some(&l)) if hex(h).is_some() && hex(l).is_some() => {
                out.push((hex(h).unwrap_or(0) * 16 + hex(l).unwrap_or(0)) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_read_whatever_the_chunks() {
        let mut body = frame(b"hello");
        body.extend(frame(b""));
        let trailer =
            b"grpc-status: 3\r\ngrpc-message: name%3A bad%20%C3%A9\r\nX-Levelrail-Field: name\r\n";
        body.push(0x80);
        body.extend_from_slice(&(trailer.len() as u32).to_be_bytes());
        body.extend_from_slice(trailer);

        let mut reader = FrameReader::default();
        let mut frames = Vec::new();
        for chunk in body.chunks(3) {
            reader.push(chunk);
            while let Some(f) = reader.next_frame().expect("readable") {
                frames.push(f);
            }
        }

        assert_eq!(frames[0], Frame::Message(b"hello".to_vec()));
        assert_eq!(frames[1], Frame::Message(Vec::new()));
        let Frame::Trailers(t) = &frames[2] else {
            panic!("trailers last: {frames:?}");
        };
        let status = Status::from_metadata(|n| lookup(t, n)).expect("a status");
        assert_eq!(status.code, Code::InvalidArgument);
        assert_eq!(status.message, "name: bad é");
        assert_eq!(status.field.as_deref(), Some("name"));
    }

    #[test]
    fn a_compressed_frame_is_refused_and_unknown_codes_read_as_unknown() {
        let mut reader = FrameReader::default();
        reader.push(&[1, 0, 0, 0, 0]);
        assert_eq!(
            reader.next_frame().expect_err("compressed").code,
            Code::Internal
        );
        assert_eq!(Code::from_number(16), Code::Unauthenticated);
        assert_eq!(Code::from_number(99), Code::Unknown);
        assert_eq!(Code::from_http(401), Code::Unauthenticated);
        assert_eq!(Code::from_http(503), Code::Unavailable);
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(Status::from_metadata(|_| None), None);
    }
}
