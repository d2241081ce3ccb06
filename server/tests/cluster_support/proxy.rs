//! `Proxy`: a TCP proxy in front of Redis that a test cuts and restores, to cut a node
//! off from Redis without stopping the Redis every test shares.

use std::net::SocketAddr;

/// A TCP proxy to Redis: forwards every connection while up; cut, it closes every
/// connection and refuses new ones (Redis itself, shared, is never stopped).
pub struct Proxy {
    pub addr: SocketAddr,
    up: tokio::sync::watch::Sender<bool>,
    accept: tokio::task::JoinHandle<()>,
}

impl Proxy {
    pub async fn start() -> Proxy {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (up, _) = tokio::sync::watch::channel(true);
        let accept = tokio::spawn({
            let up = up.clone();
            async move {
                while let Ok((client, _)) = listener.accept().await {
                    if !*up.borrow() {
                        continue;
                    }
                    let mut down = up.subscribe();
                    tokio::spawn(async move {
                        let Ok(server) = tokio::net::TcpStream::connect("127.0.0.1:6379").await
                        else {
                            return;
                        };
                        let (mut client, mut server) = (client, server);
                        tokio::select! {
                            _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
                            _ = down.wait_for(|up| !*up) => {}
                        }
                    });
                }
            }
        });
        Proxy { addr, up, accept }
    }

    pub fn cut(&self) {
        self.up.send_replace(false);
    }

    pub fn restore(&self) {
        self.up.send_replace(true);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.accept.abort();
    }
}
