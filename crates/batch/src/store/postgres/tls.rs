//! TLS for the store's connections through rustls (feature `postgres-tls`).
//!
//! [`PostgresOptions::tls_roots_pem`](super::PostgresOptions::tls_roots_pem) and
//! [`PostgresOptions::tls_config`](super::PostgresOptions::tls_config) record a [`Tls`]
//! setting; the constructors turn it into a connector ([`Tls::connector`]), so a bad PEM is a
//! [`PostgresError::Config`] from the constructor like every other bad setting.
//!
//! The crypto provider is rustls' `ring` provider, passed explicitly rather than taken from
//! the process default: building never panics when an application links both `ring` and
//! `aws-lc-rs` (rustls cannot pick a default then), and `ring` builds with a C compiler alone,
//! where `aws-lc-rs` needs cmake or a larger C build.
//!
//! Verification: the server's certificate chain must end at one of the given roots and name
//! the host connected to (an IP address must be among its subject alternative names). That is
//! libpq's `sslmode=verify-full`; tokio-postgres spells it `require`, and there is no mode
//! that encrypts without verifying.

use std::sync::Arc;

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use rustls::{ClientConfig, RootCertStore};
use tokio_postgres_rustls::MakeRustlsConnect;

use super::PostgresError;

/// The TLS setting of a [`PostgresOptions`](super::PostgresOptions).
#[derive(Clone)]
pub(super) enum Tls {
    /// Trust exactly these PEM certificates.
    RootsPem(Arc<[u8]>),
    /// The application's own rustls configuration.
    Config(Arc<ClientConfig>),
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::RootsPem(pem) => write!(f, "RootsPem({} bytes)", pem.len()),
            Self::Config(_) => f.write_str("Config(..)"),
        }
    }
}

impl Tls {
    /// The connector for this setting.
    pub(super) fn connector(&self) -> Result<MakeRustlsConnect, PostgresError> {
        let config = match self {
            Self::RootsPem(pem) => trusting(pem)?,
            Self::Config(config) => ClientConfig::clone(config),
        };
        Ok(MakeRustlsConnect::new(config))
    }
}

/// A client configuration that trusts exactly the certificates in `pem`.
fn trusting(pem: &[u8]) -> Result<ClientConfig, PostgresError> {
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(pem) {
        let cert = cert.map_err(|err| {
            PostgresError::Config(format!("tls_roots_pem: a PEM block does not parse: {err}"))
        })?;
        roots.add(cert).map_err(|err| {
            PostgresError::Config(format!(
                "tls_roots_pem: not a usable root certificate: {err}"
            ))
        })?;
    }
    if roots.is_empty() {
        return Err(PostgresError::Config(
            "tls_roots_pem: no certificate (BEGIN CERTIFICATE block) in the PEM".into(),
        ));
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|err| PostgresError::Config(format!("tls: {err}")))?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

/// Whether `err` (or an error it wraps) is rustls refusing the handshake: the server's
/// certificate is not trusted or does not name the host. Trying again will not help.
pub(super) fn is_handshake_refusal(err: &(dyn std::error::Error + 'static)) -> bool {
    let mut next = Some(err);
    while let Some(err) = next {
        // tokio-rustls wraps rustls' error in an `io::Error`, whose `source` skips it.
        let wrapped = err
            .downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::get_ref)
            .is_some_and(|inner| inner.is::<rustls::Error>());
        if wrapped || err.is::<rustls::Error>() {
            return true;
        }
        next = err.source();
    }
    false
}
