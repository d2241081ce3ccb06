//! The plans of the cluster's hot statements, as the server's connections run them: each is
//! prepared once and run many times, and after five runs PostgreSQL may settle on its
//! *generic* plan, made without the arguments (`plan_cache_mode = force_generic_plan`
//! makes it at once). Such a plan once scanned every lease, every log row or every record
//! for each call, found only by profiling a load test. Here each statement's text (the
//! same constant the code runs) is prepared on a database of a few thousand leases over
//! four nodes, with live games' logs, finished games and sleeping ones, and its generic
//! plan must read no `game_leases`, `game_log` or `games` by a `Seq Scan`, nor, where it
//! looks leases up by key, a range of the (node_id, epoch) index (all of a node's leases).
//! Checked with no statistics (a new table, or autovacuum off: the planner's defaults)
//! and after `ANALYZE`.

use postgres::Client;

use super::{claim, lease, step_log, step_write};
use crate::db::testing::TestPostgres;

/// Four nodes' leases, 1,000 each, and each game's six steps; 4,000 finished games; 500
/// sleeping games (their leases no node's, their logs kept).
const FILL: &str = "
    INSERT INTO accounts (name, created_at) VALUES ('one', 0), ('two', 0);
    INSERT INTO node_leases
        SELECT 'node-' || n, 3, now() + interval '1 hour' FROM generate_series(0, 3) n;
    INSERT INTO game_leases (game_id, node_id, token, epoch)
        SELECT md5('live' || g)::uuid::text, 'node-' || (g % 4), 1 + g % 3, 3
        FROM generate_series(1, 4000) g;
    INSERT INTO game_wakeups (game_id, due_ms, one_id, two_id)
        SELECT md5('asleep' || g)::uuid::text, g, a.id, a.id
        FROM generate_series(1, 500) g, (SELECT min(id) AS id FROM accounts) a;
    INSERT INTO game_leases (game_id, node_id, token, epoch)
        SELECT game_id, '', 2, 0 FROM game_wakeups;
    INSERT INTO game_log (game_id, step, entry)
        SELECT game_id, s, '\\x00'::bytea FROM game_leases, generate_series(0, 5) s;
    INSERT INTO games (id, rated, one_id, two_id, reason, started_at, ended_at, rounds, record)
        SELECT md5('done' || g)::uuid::text, true, a.id, a.id, 'resign', 0, 0, 3, '\\x00'::bytea
        FROM generate_series(1, 4000) g, (SELECT min(id) AS id FROM accounts) a;
";

/// How a statement is meant to find the leases it reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lookup {
    /// By their keys: never a range of the (node_id, epoch) index.
    ByKey,
    /// By node, a range of the (node_id, epoch) index (the claim's search for lapsed ones).
    ByNode,
}

/// Tables whose every row is never to be read by a hot statement.
const NEVER_SCANNED: [&str; 3] = ["game_leases", "game_log", "games"];

/// A hot statement, with realistic arguments (SQL literals, as `EXECUTE` takes them).
struct Hot {
    name: &'static str,
    sql: &'static str,
    args: String,
    lookup: Lookup,
}

/// The games' ids and tokens as the tables hold them.
struct Ids {
    /// `node-1`'s games and their tokens.
    held: Vec<(String, i64)>,
    sleeping: Vec<String>,
    recorded: Vec<String>,
}

fn ids(client: &mut Client) -> Ids {
    let held = client
        .query(
            "SELECT game_id, token FROM game_leases WHERE node_id = 'node-1' ORDER BY game_id",
            &[],
        )
        .unwrap()
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect();
    let column = |client: &mut Client, sql: &str| -> Vec<String> {
        client
            .query(sql, &[])
            .unwrap()
            .iter()
            .map(|row| row.get(0))
            .collect()
    };
    Ids {
        held,
        sleeping: column(client, "SELECT game_id FROM game_wakeups ORDER BY game_id"),
        recorded: column(client, "SELECT id FROM games ORDER BY id LIMIT 10"),
    }
}

fn texts<'a>(ids: impl IntoIterator<Item = &'a String>) -> String {
    let ids: Vec<&str> = ids.into_iter().map(String::as_str).collect();
    format!("'{{{}}}'::text[]", ids.join(","))
}

fn bigints(values: impl IntoIterator<Item = i64>) -> String {
    let values: Vec<String> = values.into_iter().map(|v| v.to_string()).collect();
    format!("'{{{}}}'::bigint[]", values.join(","))
}

/// The held games' ids and their tokens, as two array literals.
fn held(held: &[(String, i64)]) -> String {
    format!(
        "{}, {}",
        texts(held.iter().map(|(id, _)| id)),
        bigints(held.iter().map(|(_, token)| *token))
    )
}

/// The statements run per step, per renewal, per claim, per record, per sleep or wake.
/// Startup's are not among them (`claim::CLAIM_OWN`, and `claim::CLAIM_UNLEASED`, which
/// reads all of `game_log` by design), nor a shutdown's.
fn hot_statements(ids: &Ids) -> Vec<Hot> {
    // A step batch of `node-1`: one step each of 20 games it holds and of 2 new ones.
    let batch = &ids.held[..20];
    let new = [
        "00000000-0000-4000-8000-000000000001",
        "00000000-0000-4000-8000-000000000002",
    ]
    .map(String::from);
    let rows: Vec<&String> = batch.iter().map(|(id, _)| id).chain(&new).collect();
    let write = format!(
        "{}, {}, array_fill('\\x00'::bytea, ARRAY[{}]), 'node-1', {}, {}",
        texts(rows.iter().copied()),
        bigints(rows.iter().map(|_| 6)),
        rows.len(),
        texts(&new),
        held(batch),
    );
    let finished = &ids.held[20..24];
    vec![
        Hot {
            name: "step batch (step_write::WRITE_FENCED)",
            sql: step_write::WRITE_FENCED,
            args: write,
            lookup: Lookup::ByKey,
        },
        Hot {
            name: "renewal of the node's row (lease::RENEW_NODE)",
            sql: lease::RENEW_NODE,
            args: "'node-1', 6000, 0".into(),
            lookup: Lookup::ByKey,
        },
        Hot {
            name: "the orphan scan, every tenth renewal (lease::OWN_LEASES)",
            sql: lease::OWN_LEASES,
            args: "'node-1'".into(),
            lookup: Lookup::ByNode,
        },
        Hot {
            name: "renewal's read of the held leases (lease::RENEW_CHECK)",
            sql: lease::RENEW_CHECK,
            args: format!("{}, 'node-1'", held(&ids.held)),
            lookup: Lookup::ByKey,
        },
        Hot {
            name: "a record's lease check (lease::HELD_FOR_RECORD)",
            sql: lease::HELD_FOR_RECORD,
            args: format!("{}, 'node-1'", held(finished)),
            lookup: Lookup::ByKey,
        },
        Hot {
            name: "records of unheld games (lease::RECORDED)",
            sql: lease::RECORDED,
            args: texts(&ids.recorded[..2]),
            lookup: Lookup::ByKey,
        },
        Hot {
            name: "a record's log and lease deleted (lease::FORGET_GAMES)",
            sql: lease::FORGET_GAMES,
            args: texts(finished.iter().map(|(id, _)| id)),
            lookup: Lookup::ByKey,
        },
        Hot {
            name: "the claim's search for lapsed leases (claim::LAPSED)",
            sql: claim::LAPSED,
            args: "3600000".into(),
            lookup: Lookup::ByNode,
        },
        Hot {
            name: "the claim's delete of stale lapsed leases (claim::DELETE_STALE)",
            sql: claim::DELETE_STALE,
            args: texts(ids.held[..10].iter().map(|(id, _)| id)),
            lookup: Lookup::ByKey,
        },
        Hot {
            name: "the claim's update of the lapsed leases (claim::CLAIM_LAPSED)",
            sql: claim::CLAIM_LAPSED,
            args: format!(
                "'node-1', {}",
                texts(ids.held[..10].iter().map(|(id, _)| id))
            ),
            lookup: Lookup::ByKey,
        },
        Hot {
            name: "the lobby's lease made (claim::MAKE_LOBBY)",
            sql: claim::MAKE_LOBBY,
            args: format!("'node-1', '{}'", claim::LOBBY_ID),
            lookup: Lookup::ByKey,
        },
        Hot {
            name: "whether the lobby's lease lapsed (claim::LOBBY_LAPSED)",
            sql: claim::LOBBY_LAPSED,
            args: format!("'{}'", claim::LOBBY_ID),
            lookup: Lookup::ByKey,
        },
        Hot {
            name: "the lobby's lease claimed (claim::CLAIM_LOBBY)",
            sql: claim::CLAIM_LOBBY,
            args: format!("'node-1', '{}'", claim::LOBBY_ID),
            lookup: Lookup::ByKey,
        },
        Hot {
            name: "a claimed game's log (step_log::LOGS_IN)",
            sql: step_log::LOGS_IN,
            args: texts(ids.held[..10].iter().map(|(id, _)| id)),
            lookup: Lookup::ByKey,
        },
        Hot {
            name: "a game going to sleep (lease::GO_DORMANT)",
            sql: lease::GO_DORMANT,
            args: format!("'{}', 'node-1', {}, ''", ids.held[30].0, ids.held[30].1),
            lookup: Lookup::ByKey,
        },
        Hot {
            name: "a sleeping game woken (lease::WAKE)",
            sql: lease::WAKE,
            args: format!("{}, 'node-1', ''", texts(&ids.sleeping[..2])),
            lookup: Lookup::ByKey,
        },
    ]
}

/// What is wrong with `plan` (EXPLAIN's lines) for a statement meant to read by `lookup`.
fn faults(plan: &str, lookup: Lookup) -> Vec<String> {
    let mut faults = Vec::new();
    for line in plan.lines() {
        let scanned = line
            .split("Seq Scan on ")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next());
        if let Some(table) = scanned.filter(|t| NEVER_SCANNED.contains(t)) {
            faults.push(format!("reads every row of {table}"));
        }
        if lookup == Lookup::ByKey && line.contains("game_leases_by_node") {
            faults.push("reads all of a node's leases by the (node_id, epoch) index".into());
        }
    }
    faults
}

/// The generic plan of `hot`, as EXPLAIN's lines.
fn generic_plan(client: &mut Client, hot: &Hot) -> String {
    client
        .batch_execute(&format!("PREPARE hot AS {}", hot.sql))
        .unwrap_or_else(|e| panic!("{}: {e}", hot.name));
    let execute = match hot.args.is_empty() {
        true => "EXPLAIN EXECUTE hot".to_owned(),
        false => format!("EXPLAIN EXECUTE hot({})", hot.args),
    };
    let plan: Vec<String> = client
        .query(&execute, &[])
        .unwrap_or_else(|e| panic!("{}: {e}", hot.name))
        .iter()
        .map(|row| row.get(0))
        .collect();
    client.batch_execute("DEALLOCATE hot").unwrap();
    plan.join("\n")
}

/// Every hot statement's faults, with its plan, as the tables stand (`state`).
fn check(client: &mut Client, ids: &Ids, state: &str) -> Vec<String> {
    let mut found = Vec::new();
    for hot in hot_statements(ids) {
        let plan = generic_plan(client, &hot);
        let faults = faults(&plan, hot.lookup);
        if !faults.is_empty() {
            found.push(format!("{} ({state}): {faults:?}\n{plan}", hot.name));
        }
    }
    found
}

#[test]
fn hot_statements_generic_plans_read_only_the_rows_they_are_about() {
    let pg = TestPostgres::create();
    let mut client = super::connect(pg.url()).unwrap();
    super::embedded::migrations::runner()
        .run(&mut client)
        .unwrap();
    client.batch_execute(FILL).unwrap();
    client
        .batch_execute("SET plan_cache_mode = force_generic_plan")
        .unwrap();
    let ids = ids(&mut client);
    assert_eq!(ids.held.len(), 1_000);

    let mut found = check(&mut client, &ids, "no statistics");
    client.batch_execute("ANALYZE").unwrap();
    found.extend(check(&mut client, &ids, "after ANALYZE"));
    assert!(found.is_empty(), "{}", found.join("\n\n"));
}
