//! The certificates that `wss://` and `https://` connections trust: webpki's roots
//! (Mozilla's list, compiled in, so a bot trusts the same everywhere), plus any the caller
//! adds for a private CA or a self-signed proxy in front of a test deployment.

use std::sync::Arc;

use rustls::pki_types::CertificateDer;
use rustls::{ClientConfig, RootCertStore};

use crate::error::ClientError;

/// Trust anchors for TLS: webpki's roots and the extra ones added here.
#[derive(Debug, Clone, Default)]
pub struct TlsRoots {
    extra: Vec<CertificateDer<'static>>,
}

impl TlsRoots {
    /// Also trust this DER-encoded CA (or self-signed) certificate.
    pub fn with_der(mut self, der: impl Into<Vec<u8>>) -> TlsRoots {
        self.extra.push(CertificateDer::from(der.into()));
        self
    }

    /// A rustls client configuration trusting these roots. The provider is named rather
    /// than taken from the process default, so that another crate's choice cannot change it.
    pub(crate) fn client_config(&self) -> Result<ClientConfig, ClientError> {
        let mut store = RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        };
        for cert in &self.extra {
            store.add(cert.clone())?;
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        Ok(ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_root_certificates(store)
            .with_no_client_auth())
    }
}
