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
    /// The same, PEM-encoded.
    cert_pem: String,
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
    let cert_pem = key.cert.pem();
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
        cert_pem,
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

/// The `elementals` CLI with `args`, its environment's server settings removed: whether it
/// succeeded, and what it printed.
async fn cli(args: &[&str]) -> (bool, String) {
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_elementals"))
        .args(args)
        .env_remove("ELEMENTALS_SERVER")
        .env_remove("ELEMENTALS_CA_CERT")
        .output()
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout) + String::from_utf8_lossy(&output.stderr);
    (output.status.success(), text.into_owned())
}

#[tokio::test]
async fn the_cli_trusts_the_root_given_with_ca_cert_over_wss_and_https() {
    let deployment = start_deployment().await;
    let https = deployment
        .url
        .replace("wss://", "https://")
        .replace("/ws", "");
    let dir = tempfile::tempdir().unwrap();
    let pem = dir.path().join("proxy.pem");
    let der = dir.path().join("proxy.der");
    std::fs::write(&pem, &deployment.cert_pem).unwrap();
    std::fs::write(&der, deployment.cert.as_ref()).unwrap();
    let (pem, der) = (pem.to_str().unwrap(), der.to_str().unwrap());

    // Without `--ca-cert`, the proxy's self-signed certificate is refused both ways.
    let (ok, out) = cli(&["watch", "--server", &deployment.url]).await;
    assert!(!ok, "{out}");
    let (ok, out) = cli(&["leaderboard", "--server", &https]).await;
    assert!(!ok, "{out}");

    // With it, PEM or DER, the CLI reaches the server through the proxy.
    let (ok, out) = cli(&["watch", "--server", &deployment.url, "--ca-cert", pem]).await;
    assert!(ok && out.contains("no live games"), "{out}");
    let (ok, out) = cli(&["watch", "--server", &deployment.url, "--ca-cert", der]).await;
    assert!(ok && out.contains("no live games"), "{out}");
    let (ok, out) = cli(&["leaderboard", "--server", &https, "--ca-cert", pem]).await;
    assert!(ok, "{out}");

    // A missing file, or PEM that holds no certificate, is refused, naming the file.
    let bad = dir.path().join("bad.pem");
    std::fs::write(
        &bad,
        "-----BEGIN CERTIFICATE-----\n!!\n-----END CERTIFICATE-----\n",
    )
    .unwrap();
    for path in ["/nonexistent.pem", bad.to_str().unwrap()] {
        let (ok, out) = cli(&["watch", "--server", &deployment.url, "--ca-cert", path]).await;
        assert!(!ok && out.contains(path), "{out}");
    }
}
