//! The browser client, embedded: `index.html`, `app.js` and `app.css`, built from
//! `clients/web` by `build.rs` into `OUT_DIR` and compiled into the binary, so the server
//! is one file to deploy and always serves the client that speaks its protocol.

use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;

const INDEX_HTML: &str = include_str!(concat!(env!("OUT_DIR"), "/web/index.html"));
const APP_JS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/web/app.js"));
const APP_CSS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/web/app.css"));

/// The page must be revalidated so a new deploy is picked up at once.
const NO_CACHE: &str = "no-cache";
/// `index.html` names the assets with a hash of their content (`/app.js?v=...`), so a
/// browser may keep them for good: a changed file gets a new URL.
const IMMUTABLE: &str = "public, max-age=31536000, immutable";

/// Routes serving the client; merge them into the server's router.
pub fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route("/", get(index))
        .route("/index.html", get(index))
        .route("/app.js", get(app_js))
        .route("/app.css", get(app_css))
}

async fn index() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, NO_CACHE),
        ],
        INDEX_HTML,
    )
}

async fn app_js() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (header::CACHE_CONTROL, IMMUTABLE),
        ],
        APP_JS,
    )
}

async fn app_css() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/css; charset=utf-8"),
            (header::CACHE_CONTROL, IMMUTABLE),
        ],
        APP_CSS,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_names_the_embedded_assets() {
        assert!(INDEX_HTML.contains("/app.js?v="));
        assert!(INDEX_HTML.contains("/app.css?v="));
        assert!(!APP_JS.is_empty());
        assert!(!APP_CSS.is_empty());
    }
}
