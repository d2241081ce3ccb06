//! `Proxy`: a TCP proxy in front of Redis that a test cuts and restores, or pauses and
//! resumes, to cut a node off from Redis or stall its link without stopping the Redis
//! every test shares.

use std::net::SocketAddr;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::watch;

/// A TCP proxy to Redis: forwards every connection while up; cut, it closes every
/// connection and refuses new ones (Redis itself, shared, is never stopped); paused, it
/// holds every connection open, new ones too, and passes nothing either way until resumed.
pub struct Proxy {
    pub addr: SocketAddr,
    up: watch::Sender<bool>,
    flowing: watch::Sender<bool>,
    accept: tokio::task::JoinHandle<()>,
}

impl Proxy {
    pub async fn start() -> Proxy {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (up, _) = watch::channel(true);
        let (flowing, _) = watch::channel(true);
        let accept = tokio::spawn({
            let (up, flowing) = (up.clone(), flowing.clone());
            async move {
                while let Ok((client, _)) = listener.accept().await {
                    if !*up.borrow() {
                        continue;
                    }
                    let mut down = up.subscribe();
                    let flowing = (flowing.subscribe(), flowing.subscribe());
                    tokio::spawn(async move {
                        let Ok(server) = tokio::net::TcpStream::connect("127.0.0.1:6379").await
                        else {
                            return;
                        };
                        let (client_in, client_out) = client.into_split();
                        let (server_in, server_out) = server.into_split();
                        tokio::select! {
                            () = pass(client_in, server_out, flowing.0) => {}
                            () = pass(server_in, client_out, flowing.1) => {}
                            _ = down.wait_for(|up| !*up) => {}
                        }
                    });
                }
            }
        });
        Proxy {
            addr,
            up,
            flowing,
            accept,
        }
    }

    pub fn cut(&self) {
        self.up.send_replace(false);
    }

    pub fn restore(&self) {
        self.up.send_replace(true);
    }

    /// Nothing passes, either way, on any connection, until `resume`.
    pub fn pause(&self) {
        self.flowing.send_replace(false);
    }

    pub fn resume(&self) {
        self.flowing.send_replace(true);
    }
}

/// Copies `from` to `to`, each read held while the proxy is paused, until either side
/// closes.
async fn pass(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    mut flowing: watch::Receiver<bool>,
) {
    let mut buf = vec![0; 16 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        if flowing.wait_for(|f| *f).await.is_err() || to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.accept.abort();
    }
}
