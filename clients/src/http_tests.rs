use super::*;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::TcpListener;

#[test]
fn content_length_bounds_the_body() {
    let raw =
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n[]junk";
    let r = parse_response(raw).unwrap();
    assert_eq!((r.status, r.body.as_slice()), (200, &b"[]"[..]));
}

#[test]
fn chunked_bodies_are_joined() {
    let raw = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\n[1,\r\n2;ext=1\r\n2]\r\n0\r\n\r\n";
    assert_eq!(parse_response(raw).unwrap().body, b"[1,2]");
}

#[test]
fn a_body_without_length_runs_to_the_close() {
    let raw = b"HTTP/1.0 404 Not Found\r\n\r\nnope";
    let r = parse_response(raw).unwrap();
    assert_eq!((r.status, r.body.as_slice()), (404, &b"nope"[..]));
}

#[test]
fn malformed_responses_are_errors() {
    for raw in [
        &b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"[..],
        b"SPDY 200 OK\r\n\r\n",
        b"HTTP/1.1 abc OK\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nshort",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",
    ] {
        assert!(
            parse_response(raw).is_err(),
            "{:?}",
            String::from_utf8_lossy(raw)
        );
    }
}

#[test]
fn leaderboard_accepts_an_array_or_a_wrapped_array() {
    let bare = br#"[{"name":"ann","rating":2.5,"wins":3,"losses":1,"draws":0,"extra":true}]"#;
    let wrapped = br#"{"players":[{"name":"ann","rating":2.5,"wins":3,"losses":1,"draws":0}]}"#;
    let want = vec![LeaderboardEntry {
        name: "ann".into(),
        rating: 2.5,
        wins: Some(3),
        losses: Some(1),
        draws: Some(0),
    }];
    assert_eq!(parse_leaderboard(bare).unwrap(), want);
    assert_eq!(parse_leaderboard(wrapped).unwrap(), want);
    let minimal = parse_leaderboard(br#"{"leaderboard":[{"name":"bo","rating":1.0}]}"#).unwrap();
    assert_eq!(minimal[0].wins, None);
    assert!(parse_leaderboard(br#"{"other":[]}"#).is_err());
    assert!(parse_leaderboard(b"not json").is_err());
}

#[test]
fn table_ranks_rows_in_order() {
    let rows =
        parse_leaderboard(br#"[{"name":"ann","rating":2.5},{"name":"bob","rating":1.0,"wins":1}]"#)
            .unwrap();
    let table = leaderboard_table(&rows);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 3);
    assert!(lines[1].starts_with("   1  ann") && lines[1].contains("2.500"));
    assert!(lines[2].starts_with("   2  bob") && lines[2].contains("1.000"));
}

#[tokio::test]
async fn get_sends_one_request_and_reads_to_the_close() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let server = ServerUrl::parse(&listener.local_addr().unwrap().to_string()).unwrap();
    let serve = tokio::spawn(async move {
        let (socket, _) = listener.accept().await.unwrap();
        let (read, mut write) = socket.into_split();
        let mut lines = BufReader::new(read).lines();
        let mut head = Vec::new();
        while let Some(line) = lines.next_line().await.unwrap() {
            if line.is_empty() {
                break;
            }
            head.push(line);
        }
        let body = r#"[{"name":"ann","rating":1.5}]"#;
        let reply = format!(
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        write.write_all(reply.as_bytes()).await.unwrap();
        head
    });
    let rows = leaderboard(&server).await.unwrap();
    assert_eq!(rows[0].name, "ann");
    let head = serve.await.unwrap();
    assert_eq!(head[0], "GET /api/leaderboard HTTP/1.1");
    assert!(head.contains(&format!("Host: {}", server.authority())));
    assert!(head.iter().any(|h| h == "Connection: close"));
}
