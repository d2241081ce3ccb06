//! The client's one error type: everything a request, a connection or an HTTP call can
//! fail with, including the server's own typed refusals.

use std::time::Duration;

use elementals_protocol::{ErrorCode, ServerMsg};

/// Why a client call failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The server address could not be understood.
    #[error("invalid server address {url:?}: {reason}")]
    InvalidUrl { url: String, reason: &'static str },
    /// The WebSocket handshake or transport failed. Boxed: the error is large and rare.
    #[error("websocket: {0}")]
    WebSocket(#[from] Box<tokio_tungstenite::tungstenite::Error>),
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
    /// The server refused the request with a stable error code.
    #[error("server refused ({code}): {message}")]
    Server { code: ErrorCode, message: String },
    /// The connection is closed: no reply can come any more.
    #[error("connection closed")]
    Closed,
    /// No reply arrived in time.
    #[error("no reply within {0:?}")]
    Timeout(Duration),
    /// The server answered with a message that does not fit the request.
    #[error("unexpected reply: {0:?}")]
    Unexpected(Box<ServerMsg>),
    /// An HTTP response that is not a success or cannot be parsed.
    #[error("http: {0}")]
    Http(String),
    /// The HTTP request failed: connecting, TLS, or reading the response.
    #[error("http: {0}")]
    HttpRequest(#[from] reqwest::Error),
    /// A TLS configuration that rustls refuses (a bad extra root certificate).
    #[error("tls: {0}")]
    Tls(#[from] rustls::Error),
    /// The call does not fit the situation (for example, playing a watched game).
    #[error("{0}")]
    InvalidUse(&'static str),
    #[error("json: {0}")]
    Json(#[from] serde_json::Error),
}

impl ClientError {
    /// The server's error code, when the server refused.
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            ClientError::Server { code, .. } => Some(*code),
            _ => None,
        }
    }

    pub(crate) fn unexpected(msg: ServerMsg) -> ClientError {
        ClientError::Unexpected(Box::new(msg))
    }
}

impl From<tokio_tungstenite::tungstenite::Error> for ClientError {
    fn from(err: tokio_tungstenite::tungstenite::Error) -> Self {
        ClientError::WebSocket(Box::new(err))
    }
}
