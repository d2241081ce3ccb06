use super::*;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

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
    let host = format!("host: {}", server.authority());
    assert!(
        head.iter().any(|h| h.eq_ignore_ascii_case(&host)),
        "{head:?}"
    );
}

#[tokio::test]
async fn a_body_over_the_cap_is_refused() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let server = ServerUrl::parse(&listener.local_addr().unwrap().to_string()).unwrap();
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut head = [0u8; 1024];
        let _ = tokio::io::AsyncReadExt::read(&mut socket, &mut head).await;
        let length = MAX_RESPONSE_BYTES + 1;
        let reply = format!("HTTP/1.1 200 OK\r\nContent-Length: {length}\r\n\r\n");
        socket.write_all(reply.as_bytes()).await.unwrap();
        // The client may stop reading once over the cap: a failed write is expected.
        let _ = socket.write_all(&vec![b'x'; length]).await;
    });
    let http = Http::new(&server, &TlsRoots::default()).unwrap();
    match http.get("/big").await {
        Err(ClientError::Http(reason)) => assert_eq!(reason, "response too large"),
        other => panic!("expected the cap to refuse the body, got {other:?}"),
    }
}
