//! TLS for the acceptor (rustls, ring provider): with `[fix] tls_cert` and
//! `tls_key` every connection must open with a TLS handshake; with neither
//! the acceptor speaks plain TCP (for a private network or a TLS
//! terminator in front). A certificate or key that cannot be read stops
//! the server at start, naming the file.

use std::path::Path;
use std::sync::Arc;

use crate::config::FixConfig;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::{self, ServerConfig};
use tokio_rustls::TlsAcceptor;

use crate::FixError;

fn unusable(path: &Path, reason: impl ToString) -> FixError {
    FixError::Tls {
        path: path.to_path_buf(),
        reason: reason.to_string(),
    }
}

/// The TLS acceptor the configuration asks for, if any.
pub fn acceptor(config: &FixConfig) -> Result<Option<TlsAcceptor>, FixError> {
    match (&config.tls_cert, &config.tls_key) {
        (None, None) => Ok(None),
        (Some(cert), Some(key)) => load(cert, key).map(Some),
        _ => Err(FixError::Config(
            "tls_cert and tls_key go together: both for TLS, neither for plain TCP".into(),
        )),
    }
}

fn load(cert_path: &Path, key_path: &Path) -> Result<TlsAcceptor, FixError> {
    let certs = CertificateDer::pem_file_iter(cert_path)
        .map_err(|e| unusable(cert_path, e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| unusable(cert_path, e))?;
    if certs.is_empty() {
        return Err(unusable(cert_path, "no PEM certificate in it"));
    }
    let key = PrivateKeyDer::from_pem_file(key_path).map_err(|e| unusable(key_path, e))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let server = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| unusable(cert_path, e))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| unusable(key_path, format!("does not go with the certificate: {e}")))?;
    Ok(TlsAcceptor::from(Arc::new(server)))
}
