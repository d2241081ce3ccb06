//! A PostgreSQL database of a test's own: created on the server the tests use (by default
//! `postgres://postgres@127.0.0.1:5432`, trust authentication; `ELEMENTALS_TEST_POSTGRES`
//! names another), with a unique name, and dropped when the value drops, even after a
//! failure (a panicking test drops it while unwinding). Without a server that answers,
//! creating one panics and says how to start it: a test never skips.

use std::sync::atomic::{AtomicU32, Ordering};

/// The server the tests use, without a database name.
pub fn server_url() -> String {
    std::env::var("ELEMENTALS_TEST_POSTGRES")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432".into())
}

/// A test's database; dropped (`DROP DATABASE … WITH (FORCE)`) with this value.
#[derive(Debug)]
pub struct TestPostgres {
    name: String,
    url: String,
}

impl TestPostgres {
    pub fn create() -> TestPostgres {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let name = format!(
            "elementals_test_{}_{}_{:08x}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed),
            rand::random::<u32>()
        );
        let server = server_url();
        admin(&format!("CREATE DATABASE {name}"));
        TestPostgres {
            url: format!("{server}/{name}"),
            name,
        }
    }

    /// `postgres://…/<the database>`, for `--database`.
    pub fn url(&self) -> &str {
        &self.url
    }
}

impl Drop for TestPostgres {
    fn drop(&mut self) {
        admin(&format!(
            "DROP DATABASE IF EXISTS {} WITH (FORCE)",
            self.name
        ));
    }
}

/// Runs one statement on the `postgres` database, on a thread of its own (the blocking
/// client runs a runtime of its own, which cannot start inside a test's).
fn admin(sql: &str) {
    let url = format!("{}/postgres", server_url());
    let sql = sql.to_owned();
    let done = std::thread::spawn(move || -> Result<(), String> {
        let mut client = postgres::Client::connect(&url, postgres::NoTls).map_err(|e| {
            format!(
                "PostgreSQL does not answer at {url} ({e}). The tests need it (user postgres, \
                 trust authentication for 127.0.0.1): run `.ci/services` (as root) to \
                 install and start it, or set ELEMENTALS_TEST_POSTGRES to another server"
            )
        })?;
        client
            .batch_execute(&sql)
            .map_err(|e| format!("{sql}: {e}"))
    })
    .join()
    .unwrap_or_else(|_| Err("the PostgreSQL admin thread panicked".into()));
    if let Err(message) = done {
        if std::thread::panicking() {
            eprintln!("{message}");
        } else {
            panic!("{message}");
        }
    }
}
