//! HTTP routes: the WebSocket upgrade at `/ws`, the JSON API, health and metrics (and,
//! merged in, the browser client's files and the API's documents).

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use axum::extract::{ConnectInfo, Path, Query, Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{middleware, Json, Router};
use elementals_protocol::wire::MAX_CLIENT_MESSAGE_BYTES;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

use crate::api::{self, PageQuery, MAX_GAMES, MAX_HISTORY, MAX_LIST};
use crate::db::{DbError, LogHealth};
use crate::state::AppState;
use crate::{admission, ws};

/// Bytes tungstenite reads from the socket at a time, allocated up front for every
/// connection. Its default (128 KiB) would cost that much per idle connection; client
/// frames are a few hundred bytes, and a larger one (up to the 16 KiB limit) grows the
/// buffer for itself. 1 KiB rather than 4 KiB saves about a quarter of an idle signed-in
/// connection's server memory (the density target).
pub(crate) const READ_BUFFER: usize = 1024;

pub fn router(state: Arc<AppState>) -> Router {
    // The JSON API is limited per address; health, metrics and the page's files are not.
    let api = Router::new()
        .route("/api/leaderboard", get(leaderboard))
        .route("/api/players/{name}", get(player))
        .route("/api/players/{name}/games", get(player_games))
        .route("/api/games/live", get(live_games))
        .route("/api/me/games", get(my_games))
        .route("/api/games/{id}", get(game))
        .route("/api/games/{id}/transcript", get(transcript))
        .route("/api/transcript-key", get(transcript_key))
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            api::limit_requests,
        ));
    Router::new()
        .route("/ws", get(ws_upgrade))
        .route("/healthz", get(healthz))
        .route("/metrics", get(metrics))
        .merge(api)
        .merge(crate::web::routes())
        .merge(crate::api_docs::routes())
        .with_state(state)
}

/// 200 while the games' log can be written; 503 while it cannot (a full disk: moves are
/// answered `unavailable` and their games held), or while a cluster's node does not hear
/// Redis (it can reach no other node), so that a load balancer or an operator sees it.
async fn healthz(State(state): State<Arc<AppState>>) -> Response {
    if !state.registry.reaches_cluster() {
        return (StatusCode::SERVICE_UNAVAILABLE, "Redis out of reach").into_response();
    }
    let stall = std::time::Duration::from_millis(state.config.game_log_stall_ms);
    if state.db.log_stalled(stall) {
        return (StatusCode::SERVICE_UNAVAILABLE, "game log stalled").into_response();
    }
    match state.db.log_health() {
        LogHealth::Writable => "ok".into_response(),
        LogHealth::Failing | LogHealth::Broken => {
            (StatusCode::SERVICE_UNAVAILABLE, "game log not writable").into_response()
        }
    }
}

/// The upgrade. Every refusal happens here, before the upgrade, so a refused client costs
/// no WebSocket: a request that is not a WebSocket upgrade (400, 405, 426), a page from a
/// foreign origin (403), an address over its connection cap (429), a full or stopping
/// server (503).
async fn ws_upgrade(
    State(state): State<Arc<AppState>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    mut request: Request,
) -> Response {
    let headers = request.headers();
    let switching = match ws::accept(request.method(), headers) {
        Ok(switching) => switching,
        Err(refused) => return refused,
    };
    if state.shutdown.is_cancelled() {
        return (StatusCode::SERVICE_UNAVAILABLE, "shutting down").into_response();
    }
    if !admission::origin_allowed(headers, &state.config.allowed_origin) {
        return (StatusCode::FORBIDDEN, "origin not allowed").into_response();
    }
    let client = admission::client_ip(peer.ip(), headers, &state.config.trusted_proxy);
    let Some(upgrade) = request
        .extensions_mut()
        .remove::<hyper::upgrade::OnUpgrade>()
    else {
        return (
            StatusCode::UPGRADE_REQUIRED,
            "this connection cannot be upgraded",
        )
            .into_response();
    };
    let Some(ip_slot) = state.abuse.connections.try_acquire(client) else {
        return (
            StatusCode::TOO_MANY_REQUESTS,
            "too many connections from this address",
        )
            .into_response();
    };
    let Ok(permit) = state.connection_permits.clone().try_acquire_owned() else {
        return (StatusCode::SERVICE_UNAVAILABLE, "too many connections").into_response();
    };
    let client = SocketAddr::new(client, peer.port());
    tokio::spawn(async move {
        // Hyper hands the connection over once the 101 has gone out. The socket is the
        // accept loop's (`accept.rs`), so it comes back as that: the server writes its
        // frames to it directly (`ws.rs`).
        let Ok(upgraded) = upgrade.await else {
            return;
        };
        let parts = match upgraded.downcast::<TokioIo<TcpStream>>() {
            Ok(parts) => parts,
            Err(_) => {
                tracing::error!("an upgraded connection that is not a TCP stream");
                return;
            }
        };
        let config = WebSocketConfig::default()
            .read_buffer_size(READ_BUFFER)
            .max_message_size(Some(MAX_CLIENT_MESSAGE_BYTES))
            .max_frame_size(Some(MAX_CLIENT_MESSAGE_BYTES));
        let socket = ws::Socket::new(parts.io.into_inner(), parts.read_buf.to_vec(), config).await;
        // The connection gets a task of its own, sized for it alone: awaited here, it
        // would live inside this task, whose upgrade state stays allocated for the
        // connection's lifetime.
        let tasks = state.tasks.clone();
        tasks.spawn(crate::connection::serve(
            socket,
            state,
            client,
            (permit, ip_slot),
        ));
    });
    switching
}

async fn metrics(State(state): State<Arc<AppState>>) -> Response {
    let mut body = state.metrics.render();
    if let Some(read) = state.db.game_log_frames_read() {
        let name = "elementals_game_log_frames_read_total";
        let help = "Frames read back from the step-log file (SQLite): at startup, and the log of each game going to sleep.";
        let _ = write!(
            body,
            "# HELP {name} {help}\n# TYPE {name} counter\n{name} {read}\n"
        );
    }
    let name = "elementals_hibernated_games";
    let help = "Games asleep in storage, waiting on absent players (in a cluster, the cluster's, as this node has heard).";
    let asleep = state.registry.asleep_count();
    let _ = write!(
        body,
        "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {asleep}\n"
    );
    body.push_str(&state.registry.cluster_metrics());
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], body).into_response()
}

/// A failed read: 503 while the database cannot be reached (the read may be retried),
/// else 500.
fn internal(e: DbError) -> Response {
    if let DbError::Unavailable(_) = e {
        return (StatusCode::SERVICE_UNAVAILABLE, "database unavailable").into_response();
    }
    tracing::error!(error = %e, "api error");
    (StatusCode::INTERNAL_SERVER_ERROR, "internal error").into_response()
}

async fn leaderboard(State(state): State<Arc<AppState>>, Query(q): Query<PageQuery>) -> Response {
    let page = match q.page(MAX_LIST) {
        Ok(page) => page,
        Err(refused) => return refused.into_response(),
    };
    match state.leaderboard.get(&state.db, page, Instant::now()).await {
        Ok(rows) => Json(rows).into_response(),
        Err(e) => internal(e),
    }
}

async fn player(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    Query(q): Query<PageQuery>,
) -> Response {
    let page = match q.page(MAX_HISTORY) {
        Ok(page) => page,
        Err(refused) => return refused.into_response(),
    };
    match state.db.player_page(name, page).await {
        Ok(Some(page)) => Json(page).into_response(),
        Ok(None) => (StatusCode::NOT_FOUND, "no such player").into_response(),
        Err(e) => internal(e),
    }
}

async fn player_games(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    Query(q): Query<PageQuery>,
) -> Response {
    let page = match q.page(MAX_GAMES) {
        Ok(page) => page,
        Err(refused) => return refused.into_response(),
    };
    match state.db.player_games(name, page).await {
        Ok(Some(games)) => Json(games).into_response(),
        Ok(None) => (StatusCode::NOT_FOUND, "no such player").into_response(),
        Err(e) => internal(e),
    }
}

async fn live_games(State(state): State<Arc<AppState>>, Query(q): Query<PageQuery>) -> Response {
    let page = match q.page(MAX_LIST) {
        Ok(page) => page,
        Err(refused) => return refused.into_response(),
    };
    let end = page.offset as usize + page.limit as usize;
    let mut games = state.registry.most_watched(end);
    games.drain(..games.len().min(page.offset as usize));
    Json(games).into_response()
}

/// The open games of the account whose session token is the request's bearer token
/// (`Authorization: Bearer <token>`, as `authenticated` gave it), with what each waits for.
/// A header, not a cookie or the query: no other site's page can make a browser send it,
/// and it stays out of access logs and `Referer`s (SECURITY.md). 401 without a valid token.
async fn my_games(State(state): State<Arc<AppState>>, headers: HeaderMap) -> Response {
    let unauthorized = |message: &'static str| {
        (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
            message,
        )
            .into_response()
    };
    let token = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    let Some(token) = token.filter(|t| !t.is_empty()) else {
        return unauthorized("a session token is required (Authorization: Bearer <token>)");
    };
    match state.auth.resume(token).await {
        Ok(signed) => {
            let account = signed.account.id;
            state.registry.wake_seated(account).await;
            Json(state.registry.my_games(account).await).into_response()
        }
        Err(e) if e.code == elementals_protocol::ErrorCode::InvalidToken => {
            unauthorized("unknown, expired or revoked token")
        }
        // The token store could not be read (already logged by `auth`): worth a retry.
        Err(_) => (StatusCode::SERVICE_UNAVAILABLE, "account store unavailable").into_response(),
    }
}

async fn game(State(state): State<Arc<AppState>>, Path(id): Path<String>) -> Response {
    match state.db.game_record(id).await {
        Ok(Some(mut record)) => {
            without_account_ids(&mut record);
            Json(record).into_response()
        }
        Ok(None) => (StatusCode::NOT_FOUND, "no finished game with that id").into_response(),
        Err(e) => internal(e),
    }
}

async fn transcript(State(state): State<Arc<AppState>>, Path(id): Path<String>) -> Response {
    match state.db.stored_game(id).await {
        Ok(Some(game)) => {
            let mut record = game.record;
            without_account_ids(&mut record);
            Json(state.signing.sign(record, game.changes)).into_response()
        }
        Ok(None) => (StatusCode::NOT_FOUND, "no finished game with that id").into_response(),
        Err(e) => internal(e),
    }
}

async fn transcript_key(State(state): State<Arc<AppState>>) -> Response {
    Json(state.signing.public()).into_response()
}

/// A stored record as PROTOCOL.md section 12 shows it: the players' database ids are the
/// server's own business (records of every format are stored with them).
fn without_account_ids(record: &mut serde_json::Value) {
    let players = record.get_mut("players").and_then(|p| p.as_object_mut());
    for player in players.into_iter().flat_map(|p| p.values_mut()) {
        if let Some(player) = player.as_object_mut() {
            player.remove("account_id");
        }
    }
}
