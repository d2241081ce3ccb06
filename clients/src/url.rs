//! Server addresses: one `--server` value gives both the WebSocket endpoint and the HTTP
//! base, whichever form the user typed.
//!
//! Accepted: `ws://HOST:PORT/ws`, `ws://HOST:PORT`, `http://HOST:PORT`, `http://HOST:PORT/`,
//! the same with `wss://` or `https://` (TLS, port 443 by default), and a bare `HOST:PORT`
//! (plain TCP).

use std::fmt;
use std::str::FromStr;

use crate::error::ClientError;

/// Where a server listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerUrl {
    /// Host name or address; an IPv6 address keeps its brackets (`[::1]`).
    host: String,
    port: u16,
    /// `wss://` and `https://`: both endpoints are reached through TLS.
    tls: bool,
}

impl ServerUrl {
    /// Parse any accepted form.
    pub fn parse(text: &str) -> Result<ServerUrl, ClientError> {
        let bad = |reason| ClientError::InvalidUrl {
            url: text.to_owned(),
            reason,
        };
        let trimmed = text.trim();
        let (rest, default_port, tls) = match trimmed.split_once("://") {
            Some(("ws", rest)) | Some(("http", rest)) => (rest, Some(80), false),
            Some(("wss", rest)) | Some(("https", rest)) => (rest, Some(443), true),
            Some(_) => return Err(bad("the scheme must be ws://, wss://, http:// or https://")),
            None => (trimmed, None, false),
        };
        let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
        if authority.is_empty() {
            return Err(bad("missing host"));
        }
        if authority.contains('@') {
            return Err(bad("credentials in the address are not supported"));
        }
        let (host, port) = split_host_port(authority).ok_or_else(|| bad("bad host or port"))?;
        let port = match port {
            Some(p) => p,
            None => default_port.ok_or_else(|| bad("missing port"))?,
        };
        Ok(ServerUrl {
            host: host.to_owned(),
            port,
            tls,
        })
    }

    pub fn host(&self) -> &str {
        &self.host
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Whether both endpoints go through TLS.
    pub fn is_tls(&self) -> bool {
        self.tls
    }

    /// `HOST:PORT`, as the HTTP `Host` header and `TcpStream::connect` want it.
    pub fn authority(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }

    /// The WebSocket endpoint: `ws://HOST:PORT/ws`, or `wss://` over TLS.
    pub fn ws_url(&self) -> String {
        let scheme = if self.tls { "wss" } else { "ws" };
        format!("{scheme}://{}/ws", self.authority())
    }

    /// The HTTP base without a trailing slash: `http://HOST:PORT`, or `https://` over TLS.
    pub fn http_base(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}", self.authority())
    }
}

/// Split `host[:port]`, keeping IPv6 brackets; `None` when malformed.
fn split_host_port(authority: &str) -> Option<(&str, Option<u16>)> {
    let (host, port) = if authority.starts_with('[') {
        let close = authority.find(']')?;
        let (host, after) = authority.split_at(close + 1);
        match after {
            "" => (host, None),
            _ => (host, Some(after.strip_prefix(':')?)),
        }
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    if host.is_empty() || host == "[]" {
        return None;
    }
    let port = match port {
        Some(p) => Some(p.parse::<u16>().ok().filter(|&p| p != 0)?),
        None => None,
    };
    Some((host, port))
}

impl FromStr for ServerUrl {
    type Err = ClientError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ServerUrl::parse(s)
    }
}

impl fmt::Display for ServerUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.authority())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> (String, String) {
        let url = ServerUrl::parse(text).unwrap();
        (url.ws_url(), url.http_base())
    }

    #[test]
    fn every_accepted_form_gives_both_endpoints() {
        let want = (
            "ws://127.0.0.1:7878/ws".to_owned(),
            "http://127.0.0.1:7878".to_owned(),
        );
        for text in [
            "ws://127.0.0.1:7878/ws",
            "ws://127.0.0.1:7878",
            "http://127.0.0.1:7878",
            "http://127.0.0.1:7878/",
            "http://127.0.0.1:7878/api/leaderboard",
            "127.0.0.1:7878",
            " 127.0.0.1:7878 ",
        ] {
            assert_eq!(parsed(text), want, "{text}");
        }
    }

    #[test]
    fn schemes_default_to_port_80_and_ipv6_keeps_brackets() {
        assert_eq!(parsed("http://example.org").0, "ws://example.org:80/ws");
        let url = ServerUrl::parse("ws://[::1]:9000/ws").unwrap();
        assert_eq!(url.host(), "[::1]");
        assert_eq!(url.port(), 9000);
        assert_eq!(url.ws_url(), "ws://[::1]:9000/ws");
    }

    #[test]
    fn tls_schemes_give_tls_endpoints_on_port_443() {
        for text in [
            "wss://example.org/ws",
            "https://example.org",
            "wss://example.org:443",
        ] {
            let url = ServerUrl::parse(text).unwrap();
            assert!(url.is_tls(), "{text}");
            assert_eq!(url.ws_url(), "wss://example.org:443/ws", "{text}");
            assert_eq!(url.http_base(), "https://example.org:443", "{text}");
        }
        let url = ServerUrl::parse("https://[::1]:8443/").unwrap();
        assert_eq!(url.ws_url(), "wss://[::1]:8443/ws");
        assert!(!ServerUrl::parse("127.0.0.1:7878").unwrap().is_tls());
    }

    #[test]
    fn malformed_addresses_are_refused() {
        for text in [
            "",
            "wss://:1/ws",
            "https://user@host",
            "ftp://host:1",
            "host",
            "host:",
            "host:0",
            "host:99999",
            "ws://:7878",
            "ws://user@host:1",
            "[::1:7878",
        ] {
            assert!(ServerUrl::parse(text).is_err(), "{text:?} was accepted");
        }
    }
}
