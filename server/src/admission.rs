//! Who may open a WebSocket, decided from the upgrade request alone: the client's address
//! (the TCP peer, or behind a trusted proxy the address it forwarded) and the browser's
//! `Origin` against the allow-list. Pure functions over headers, so they are tested here.

use std::net::{IpAddr, SocketAddr};

use axum::http::header::{HOST, ORIGIN};
use axum::http::HeaderMap;

/// The client's address. `X-Forwarded-For` is believed only when the TCP peer is a
/// trusted proxy: then the client is the right-most listed address that is not itself a
/// trusted proxy (the left part of the header is whatever the client chose to send). An
/// unreadable entry stops the walk at the last proxy, so a garbled header counts against
/// the proxy rather than against someone else.
pub fn client_ip(peer: IpAddr, headers: &HeaderMap, trusted: &[IpAddr]) -> IpAddr {
    if !is_trusted(peer, trusted) {
        return peer;
    }
    let mut client = peer;
    let hops = headers
        .get_all("x-forwarded-for")
        .iter()
        .flat_map(|v| v.to_str().unwrap_or("?").split(','))
        .collect::<Vec<_>>();
    for hop in hops.into_iter().rev() {
        let Some(ip) = parse_hop(hop.trim()) else {
            return client;
        };
        client = ip;
        if !is_trusted(ip, trusted) {
            break;
        }
    }
    client
}

fn is_trusted(ip: IpAddr, trusted: &[IpAddr]) -> bool {
    let ip = ip.to_canonical();
    trusted.iter().any(|t| t.to_canonical() == ip)
}

/// An address as proxies write it: bare, or with a port (`1.2.3.4:5`, `[::1]:5`).
fn parse_hop(hop: &str) -> Option<IpAddr> {
    hop.parse::<IpAddr>()
        .or_else(|_| hop.parse::<SocketAddr>().map(|s| s.ip()))
        .ok()
        .map(|ip| ip.to_canonical())
}

/// Whether a browser page from the request's `Origin` may open a WebSocket here. No
/// `Origin` (native clients, bots): allowed. With an allow-list, the origin must be on it
/// (scheme, host and port; case-insensitive). Without one, the page must come from this
/// server: the origin's host and port must be the request's `Host`.
pub fn origin_allowed(headers: &HeaderMap, allowed: &[String]) -> bool {
    let Some(origin) = headers.get(ORIGIN) else {
        return true;
    };
    let Ok(origin) = origin.to_str() else {
        return false;
    };
    let origin = origin.trim().trim_end_matches('/');
    if !allowed.is_empty() {
        return allowed
            .iter()
            .any(|a| a.trim().trim_end_matches('/').eq_ignore_ascii_case(origin));
    }
    let Some(host) = headers.get(HOST).and_then(|h| h.to_str().ok()) else {
        return false;
    };
    same_host(origin, host)
}

/// `origin` is `scheme://host[:port]`; `host` is a Host header, `host[:port]`.
fn same_host(origin: &str, host: &str) -> bool {
    let Some((scheme, authority)) = origin.split_once("://") else {
        return false; // includes the opaque origin "null"
    };
    let default_port = match scheme.to_ascii_lowercase().as_str() {
        "http" => 80,
        "https" => 443,
        _ => return false,
    };
    let (Some((o_host, o_port)), Some((h_host, h_port))) =
        (split_authority(authority), split_authority(host))
    else {
        return false;
    };
    let o_port = o_port.unwrap_or(default_port);
    // A Host without a port names the scheme's default port, whichever scheme the page
    // used (behind a TLS proxy the request here may be plain HTTP).
    let port_matches = match h_port {
        Some(p) => p == o_port,
        None => o_port == 80 || o_port == 443,
    };
    port_matches && o_host.eq_ignore_ascii_case(h_host)
}

/// `host[:port]`, with IPv6 hosts in brackets.
fn split_authority(authority: &str) -> Option<(&str, Option<u16>)> {
    if authority.is_empty() || authority.contains(['/', '@', ' ']) {
        return None;
    }
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        match after {
            "" => (host, None),
            p => (host, Some(p.strip_prefix(':')?)),
        }
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    let port = match port {
        Some(p) => Some(p.parse().ok()?),
        None => None,
    };
    (!host.is_empty()).then_some((host, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, v.parse().unwrap());
        }
        h
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn forwarded_for_is_ignored_without_a_trusted_proxy() {
        let h = headers(&[("x-forwarded-for", "10.9.9.9")]);
        assert_eq!(client_ip(ip("127.0.0.1"), &h, &[]), ip("127.0.0.1"));
        // A trusted proxy elsewhere does not make this peer one.
        assert_eq!(
            client_ip(ip("127.0.0.1"), &h, &[ip("10.0.0.1")]),
            ip("127.0.0.1")
        );
    }

    #[test]
    fn behind_trusted_proxies_the_rightmost_untrusted_hop_is_the_client() {
        let proxies = [ip("127.0.0.1"), ip("10.0.0.2")];
        // The client claims 1.1.1.1; the edge proxy saw 203.0.113.5; an inner proxy 10.0.0.2.
        let h = headers(&[("x-forwarded-for", "1.1.1.1, 203.0.113.5, 10.0.0.2")]);
        assert_eq!(client_ip(ip("127.0.0.1"), &h, &proxies), ip("203.0.113.5"));
        // Several headers are one list; ports and IPv4-mapped forms are understood.
        let h = headers(&[
            ("x-forwarded-for", "1.1.1.1"),
            ("x-forwarded-for", "[::ffff:203.0.113.5]:4711"),
        ]);
        assert_eq!(client_ip(ip("127.0.0.1"), &h, &proxies), ip("203.0.113.5"));
        // No header, or only proxies in it: the peer.
        assert_eq!(
            client_ip(ip("127.0.0.1"), &HeaderMap::new(), &proxies),
            ip("127.0.0.1")
        );
        let h = headers(&[("x-forwarded-for", "10.0.0.2")]);
        assert_eq!(client_ip(ip("127.0.0.1"), &h, &proxies), ip("10.0.0.2"));
        // Garbage stops at the last trusted hop.
        let h = headers(&[("x-forwarded-for", "203.0.113.5, not-an-ip")]);
        assert_eq!(client_ip(ip("127.0.0.1"), &h, &proxies), ip("127.0.0.1"));
    }

    #[test]
    fn native_clients_without_origin_are_allowed() {
        assert!(origin_allowed(&headers(&[("host", "a.example")]), &[]));
        assert!(origin_allowed(&HeaderMap::new(), &["https://x".into()]));
    }

    #[test]
    fn by_default_only_pages_from_this_host_are_allowed() {
        let ok = |origin: &str, host: &str| {
            origin_allowed(&headers(&[("origin", origin), ("host", host)]), &[])
        };
        assert!(ok("http://127.0.0.1:7878", "127.0.0.1:7878"));
        assert!(ok("https://Play.Example.com", "play.example.com"));
        assert!(ok("http://play.example.com", "play.example.com:80"));
        assert!(ok("http://[::1]:7878", "[::1]:7878"));
        assert!(!ok("http://127.0.0.1:9999", "127.0.0.1:7878"));
        assert!(!ok("https://evil.example", "play.example.com"));
        assert!(!ok(
            "https://play.example.com.evil.example",
            "play.example.com"
        ));
        assert!(!ok("null", "play.example.com"));
        assert!(!ok("file://", "play.example.com"));
        assert!(!origin_allowed(&headers(&[("origin", "http://a")]), &[]));
    }

    #[test]
    fn an_allow_list_replaces_the_same_host_default() {
        let allowed = vec!["https://play.example.com".to_owned()];
        let ok = |origin: &str| {
            origin_allowed(
                &headers(&[("origin", origin), ("host", "127.0.0.1:7878")]),
                &allowed,
            )
        };
        assert!(ok("https://play.example.com"));
        assert!(ok("HTTPS://PLAY.EXAMPLE.COM/"));
        assert!(!ok("http://play.example.com"));
        assert!(!ok("http://127.0.0.1:7878"));
    }
}
