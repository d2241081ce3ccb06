//! A loopback TCP proxy between servers and the tests' PostgreSQL, which a test cuts and
//! restores: cut, it closes every connection and refuses new ones, as a PostgreSQL
//! restart does, without stopping the shared server other tests use; paused, it holds
//! every connection open and passes nothing on, as a stalled database or link does.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use elementals_server::db::testing::{server_url, TestPostgres};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

/// What the proxy is told to do with a writer's COMMIT.
type CommitCut = Arc<Mutex<Option<oneshot::Sender<()>>>>;

/// The proxy: forwards every connection to PostgreSQL while it is up; cut, it closes every
/// connection and refuses new ones.
pub struct PgProxy {
    addr: SocketAddr,
    up: watch::Sender<bool>,
    flowing: watch::Sender<bool>,
    pumps: Arc<Mutex<Vec<JoinHandle<()>>>>,
    commit_cut: CommitCut,
    accept: JoinHandle<()>,
}

impl PgProxy {
    pub async fn start() -> PgProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let target = server_url()
            .rsplit_once('@')
            .map(|(_, host)| host.trim_end_matches('/').to_owned())
            .expect("the test server's URL names a host");
        let (up, _) = watch::channel(true);
        let (flowing, _) = watch::channel(true);
        let pumps: Arc<Mutex<Vec<JoinHandle<()>>>> = Arc::default();
        let commit_cut: CommitCut = Arc::default();
        let accept = tokio::spawn({
            let up = up.clone();
            let flowing = flowing.clone();
            let pumps = Arc::clone(&pumps);
            let commit_cut = Arc::clone(&commit_cut);
            async move {
                loop {
                    let Ok((client, _)) = listener.accept().await else {
                        return;
                    };
                    if !*up.borrow() {
                        continue;
                    }
                    let pump = tokio::spawn(pump(
                        client,
                        target.clone(),
                        up.subscribe(),
                        flowing.subscribe(),
                        Arc::clone(&commit_cut),
                    ));
                    pumps.lock().unwrap().push(pump);
                }
            }
        });
        PgProxy {
            addr,
            up,
            flowing,
            pumps,
            commit_cut,
            accept,
        }
    }

    /// The URL of `pg`'s database through the proxy.
    pub fn url(&self, pg: &TestPostgres) -> String {
        self.url_for(pg.url())
    }

    /// The URL of database `url` (on the tests' server) through the proxy.
    pub fn url_for(&self, url: &str) -> String {
        let server = server_url();
        let (user, _) = server.rsplit_once('@').unwrap();
        let (_, name) = url.rsplit_once('/').unwrap();
        format!("{user}@{}/{name}", self.addr)
    }

    /// Closes every connection (returns once each is closed) and refuses new ones.
    pub async fn cut(&self) {
        self.up.send_replace(false);
        let pumps = std::mem::take(&mut *self.pumps.lock().unwrap());
        for pump in pumps {
            pump.await.unwrap();
        }
    }

    pub fn restore(&self) {
        self.up.send_replace(true);
    }

    /// Nothing more reaches PostgreSQL, on any connection (new ones too), until `resume`.
    pub fn pause(&self) {
        self.flowing.send_replace(false);
    }

    pub fn resume(&self) {
        self.flowing.send_replace(true);
    }

    /// The next COMMIT of the connection that records games is forwarded, PostgreSQL's
    /// answer read and dropped, and the connection closed; the receiver hears once
    /// PostgreSQL has answered it.
    pub fn lose_next_record_commit(&self) -> oneshot::Receiver<()> {
        let (done, answered) = oneshot::channel();
        *self.commit_cut.lock().unwrap() = Some(done);
        answered
    }
}

impl Drop for PgProxy {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

/// One connection, both ways, until either side closes it, the proxy is cut, or the
/// records' COMMIT is to be lost.
async fn pump(
    client: TcpStream,
    target: String,
    mut up: watch::Receiver<bool>,
    mut flowing: watch::Receiver<bool>,
    commit_cut: CommitCut,
) {
    let Ok(server) = TcpStream::connect(&target).await else {
        return;
    };
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    // The writer's connection is the one that prepares the insert of finished games.
    let mut records = false;
    let to_server = async {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match client_read.read(&mut buf).await {
                Ok(0) | Err(_) => return None,
                Ok(n) => n,
            };
            let chunk = &buf[..n];
            if flowing.wait_for(|f| *f).await.is_err() {
                return None;
            }
            records |= contains(chunk, b"INSERT INTO games");
            if server_write.write_all(chunk).await.is_err() {
                return None;
            }
            if records && contains(chunk, b"COMMIT\0") {
                if let Some(done) = commit_cut.lock().unwrap().take() {
                    return Some(done);
                }
            }
        }
    };
    let to_client = tokio::io::copy(&mut server_read, &mut client_write);
    let lost = tokio::select! {
        lost = to_server => lost,
        _ = to_client => None,
        _ = up.wait_for(|up| !*up) => None,
    };
    if let Some(done) = lost {
        // The client hears nothing more; PostgreSQL's answer to the COMMIT is read here.
        drop(client_write);
        let mut answer = [0u8; 256];
        let _ = server_read.read(&mut answer).await;
        let _ = done.send(());
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}
