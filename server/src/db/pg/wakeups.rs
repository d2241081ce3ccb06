//! Hibernated games' wake-up rows (`game_wakeups`) on PostgreSQL, on the writer's
//! connection (see `db/wakeups.rs`).

use elementals_protocol::messages::{GameId, SeatPair};
use postgres::GenericClient;

use super::Cache;
use crate::db::wakeups::{ms_sql, summary_from_sql, summary_sql, DueWakeups, Sleeper};
use crate::db::DbResult;

pub(super) fn hibernate(
    c: &mut impl GenericClient,
    k: &mut Cache,
    sleeper: &Sleeper,
) -> DbResult<()> {
    let upsert = k.get(
        c,
        "INSERT INTO game_wakeups (game_id, due_ms, one_id, two_id, summary)
         VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (game_id) DO UPDATE SET due_ms = excluded.due_ms, summary = excluded.summary",
    )?;
    c.execute(
        &upsert,
        &[
            &sleeper.game_id.to_string(),
            &ms_sql(sleeper.due_ms),
            &sleeper.seats.one,
            &sleeper.seats.two,
            &summary_sql(&sleeper.summary),
        ],
    )?;
    Ok(())
}

pub(super) fn woken(c: &mut impl GenericClient, k: &mut Cache, game_id: &GameId) -> DbResult<()> {
    let delete = k.get(c, "DELETE FROM game_wakeups WHERE game_id = $1")?;
    c.execute(&delete, &[&game_id.to_string()])?;
    Ok(())
}

pub(super) fn due(
    c: &mut impl GenericClient,
    k: &mut Cache,
    now_ms: u64,
    limit: usize,
) -> DbResult<DueWakeups> {
    let select = k.get(
        c,
        "SELECT game_id, due_ms FROM game_wakeups ORDER BY due_ms LIMIT $1",
    )?;
    let take = i64::try_from(limit).unwrap_or(i64::MAX).saturating_add(1);
    let mut due = DueWakeups::default();
    for row in c.query(&select, &[&take])? {
        let at = u64::try_from(row.get::<_, i64>(1)).unwrap_or(0);
        if at > now_ms || due.games.len() == limit {
            due.next_ms = Some(at);
            break;
        }
        if let Ok(game_id) = row.get::<_, &str>(0).parse::<GameId>() {
            due.games.push(game_id);
        }
    }
    Ok(due)
}

pub(super) fn sleepers(c: &mut impl GenericClient, k: &mut Cache) -> DbResult<Vec<Sleeper>> {
    let select = k.get(
        c,
        "SELECT game_id, due_ms, one_id, two_id, summary FROM game_wakeups",
    )?;
    Ok(c.query(&select, &[])?
        .iter()
        .filter_map(|row| {
            Some(Sleeper {
                game_id: row.get::<_, &str>(0).parse().ok()?,
                due_ms: u64::try_from(row.get::<_, i64>(1)).unwrap_or(0),
                seats: SeatPair::new(row.get(2), row.get(3)),
                summary: summary_from_sql(row.get(4)),
            })
        })
        .collect())
}
