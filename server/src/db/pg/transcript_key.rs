//! The transcript signing key kept in the database (`transcript_key`, one row), so that
//! every server process on the database signs with the same key, across restarts.

use super::{connect, on_thread};
use crate::db::{DbError, DbResult};

/// The secret key in the database: `made` if no process has stored one yet. Of processes
/// starting at once, the first insert wins; the others wait on its row, insert nothing and
/// read it back.
pub(crate) fn shared_transcript_key(url: &str, made: [u8; 32]) -> DbResult<[u8; 32]> {
    let url = url.to_owned();
    on_thread("db-transcript-key", move || {
        let mut client = connect(&url)?;
        client.execute(
            "INSERT INTO transcript_key (id, secret) VALUES (1, $1) ON CONFLICT DO NOTHING",
            &[&made.as_slice()],
        )?;
        let secret: Vec<u8> = client
            .query_one("SELECT secret FROM transcript_key WHERE id = 1", &[])?
            .get(0);
        secret
            .try_into()
            .map_err(|_| DbError::Postgres("the stored transcript key is not 32 bytes".into()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::testing::TestPostgres;
    use crate::db::Db;

    #[test]
    fn the_first_key_stored_is_the_one_every_process_reads() {
        let pg = TestPostgres::create();
        // Migrated by opening it, as a server's start does.
        let db = Db::open(std::path::Path::new(pg.url())).unwrap();
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(2));
        let starts: Vec<_> = [[1u8; 32], [2u8; 32]]
            .into_iter()
            .map(|made| {
                let url = pg.url().to_owned();
                let barrier = barrier.clone();
                std::thread::spawn(move || {
                    barrier.wait();
                    shared_transcript_key(&url, made).unwrap()
                })
            })
            .collect();
        let keys: Vec<[u8; 32]> = starts.into_iter().map(|t| t.join().unwrap()).collect();
        assert_eq!(keys[0], keys[1]);
        assert!(keys[0] == [1; 32] || keys[0] == [2; 32]);
        // A later start keeps it, whatever it made.
        assert_eq!(shared_transcript_key(pg.url(), [3; 32]).unwrap(), keys[0]);
        drop(db);
    }
}
