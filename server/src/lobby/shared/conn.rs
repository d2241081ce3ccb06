//! The lobby's connection to the cluster's Redis, made again once lost: a multiplexed
//! connection does not reconnect by itself, and a node cut off from Redis for a while
//! must find its pools again when Redis is back.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Mutex, PoisonError};

use ::redis::aio::MultiplexedConnection;

use super::{SharedError, REDIS_WAIT};

#[derive(Clone)]
pub(super) struct Conn {
    client: ::redis::Client,
    con: Arc<Mutex<MultiplexedConnection>>,
    /// A request failed for the connection (lost, or Redis silent past `REDIS_WAIT`):
    /// `heal` makes it again.
    broken: Arc<AtomicBool>,
}

impl Conn {
    pub(super) async fn open(client: ::redis::Client) -> Result<Conn, SharedError> {
        let con = bounded(client.get_multiplexed_async_connection()).await?;
        Ok(Conn {
            client,
            con: Arc::new(Mutex::new(con)),
            broken: Arc::default(),
        })
    }

    /// The connection, to send a request on (its clones share one socket).
    pub(super) fn get(&self) -> MultiplexedConnection {
        self.con
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// `fut`'s answer, within `REDIS_WAIT`; a failure of the connection is noted.
    pub(super) async fn timed<T>(
        &self,
        fut: impl std::future::Future<Output = ::redis::RedisResult<T>>,
    ) -> Result<T, SharedError> {
        let answer = bounded(fut).await;
        if let Err(SharedError::Timeout) = &answer {
            self.broken.store(true, Relaxed);
        }
        if let Err(SharedError::Redis(error)) = &answer {
            if error.is_connection_dropped()
                || error.is_io_error()
                || error.is_unrecoverable_error()
            {
                self.broken.store(true, Relaxed);
            }
        }
        answer
    }

    /// Whether a request found the connection broken since it was last made.
    pub(super) fn is_broken(&self) -> bool {
        self.broken.load(Relaxed)
    }

    /// Makes the connection again if a request found it broken (the lobby's tick).
    pub(super) async fn heal(&self) {
        if !self.broken.load(Relaxed) {
            return;
        }
        match bounded(self.client.get_multiplexed_async_connection()).await {
            Ok(con) => {
                *self.con.lock().unwrap_or_else(PoisonError::into_inner) = con;
                self.broken.store(false, Relaxed);
                tracing::info!("the lobby reaches the cluster's Redis again");
            }
            Err(error) => tracing::warn!(%error, "the cluster's Redis is still out of reach"),
        }
    }
}

async fn bounded<T>(
    fut: impl std::future::Future<Output = ::redis::RedisResult<T>>,
) -> Result<T, SharedError> {
    Ok(tokio::time::timeout(REDIS_WAIT, fut)
        .await
        .map_err(|_| SharedError::Timeout)??)
}
