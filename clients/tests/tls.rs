//! `wss://` and `https://` against the real server behind a TLS-terminating proxy on
//! 127.0.0.1, as a deployment puts one in front of it (SECURITY.md). The proxy's
//! certificate is self-signed, so the client reaches it only when told to trust it.

use std::sync::Arc;

use elementals_client::http::Http;
use elementals_client::{Client, ClientError, ConnectOptions, ServerUrl, TlsRoots};
use elementals_server::Config;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio_rustls::rustls::{self, ServerConfig};
use tokio_rustls::TlsAcceptor;

struct Deployment {
    /// `wss://127.0.0.1:PORT/ws`: the proxy's address.
    url: String,
    /// The proxy's self-signed certificate.
    cert: CertificateDer<'static>,
    _stop: oneshot::Sender<()>,
    _dir: tempfile::TempDir,
}

/// The real server on 127.0.0.1:0, and a proxy that ends TLS and forwards every connection
/// to it byte for byte.
async fn start_deployment() -> Deployment {
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config::with_database(dir.path().join("tls.db"));
    config.argon2_memory_kib = 8;
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let backend = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(elementals_server::run(listener, config, async move {
        let _ = stopped.await;
    }));

    let key = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned()]).unwrap();
    let cert = key.cert.der().clone();
    let private = PrivateKeyDer::from(PrivatePkcs8KeyDer::from(key.signing_key.serialize_der()));
    let tls =
        ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![cert.clone()], private)
            .unwrap();
    let acceptor = TlsAcceptor::from(Arc::new(tls));
    let proxy = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("wss://{}/ws", proxy.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((tcp, _)) = proxy.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                // A handshake the client abandons (an untrusted certificate) ends here.
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let mut plain = TcpStream::connect(backend).await.unwrap();
                let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
            });
        }
    });
    Deployment {
        url,
        cert,
        _stop: stop,
        _dir: dir,
    }
}

#[tokio::test]
async fn wss_reaches_the_server_through_a_proxy_with_a_custom_root() {
    let deployment = start_deployment().await;
    let options = ConnectOptions {
        tls_roots: TlsRoots::default().with_der(deployment.cert.to_vec()),
        ..ConnectOptions::default()
    };
    let client = Client::connect_with(&deployment.url, options)
        .await
        .unwrap();
    client.register("tess", "password-1").await.unwrap();
    client.ping().await.unwrap();
}

#[tokio::test]
async fn https_reads_the_leaderboard_through_the_proxy() {
    let deployment = start_deployment().await;
    let server = ServerUrl::parse(&deployment.url.replace("wss://", "https://")).unwrap();
    let roots = TlsRoots::default().with_der(deployment.cert.to_vec());
    let http = Http::new(&server, &roots).unwrap();
    let response = http.get("/api/leaderboard").await.unwrap();
    assert_eq!(response.status, 200);
    http.leaderboard().await.unwrap();
}

#[tokio::test]
async fn an_untrusted_certificate_is_refused() {
    let deployment = start_deployment().await;
    let err = Client::connect(&deployment.url).await.err().unwrap();
    assert!(matches!(err, ClientError::WebSocket(_)), "{err:?}");
    let server = ServerUrl::parse(&deployment.url).unwrap();
    let err = elementals_client::http::leaderboard(&server)
        .await
        .unwrap_err();
    assert!(matches!(err, ClientError::HttpRequest(_)), "{err:?}");
}
