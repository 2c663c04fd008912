//! TLS for client connections: rustls (ring) wrapped around the byte stream.
//!
//! TLS is not a second server. The acceptor listens on `tls-port` beside
//! `port`; the worker that gets a TLS connection runs its handshake as a
//! task of its own event loop, so a slow or stalled handshake never holds
//! up the worker's other clients; after it, the connection takes the same
//! read, dispatch and write path as a plain one, through [`TlsStream`], a
//! [`ClientSocket`] whose reads decrypt and whose writes encrypt.
//!
//! The rustls configuration is built from the `tls-*` directives at
//! start-up and again after CONFIG SET changes one of them
//! ([`configure`]); a connection takes the configuration current when it
//! is accepted, so new certificates apply to new connections while
//! existing ones keep theirs, as in Redis. A configuration that cannot be
//! built leaves the previous one in place.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::io::{self, Read, Write};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::{Duration, Instant};

use bytes::BufMut;
use parking_lot::{Mutex, RwLock};
use rustls::crypto::ring::cipher_suite as suite;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::server::{
    NoServerSessionStorage, ServerConfig, ServerConnection, StoresServerSessions,
    WebPkiClientVerifier,
};
use rustls::{RootCertStore, SupportedCipherSuite, SupportedProtocolVersion};
use tokio::io::{AsyncRead, AsyncWrite, Interest, ReadBuf};

use super::socket::ClientSocket;
use crate::config::{Config, TlsAuthClients};
use crate::util::log;

/// Redis's log line when TLS cannot be configured at start-up (after the
/// line that says why).
pub const CONFIGURE_FAILED: &str = "Failed to configure TLS. Check logs for more info.";
/// Redis's CONFIG SET error when a TLS directive's new value cannot be used.
pub const UPDATE_FAILED: &str = "Unable to update TLS configuration. Check server logs.";

/// A handshake not finished by then is given up, so a client that stalls
/// in it does not hold its descriptor for ever (Redis has no such limit;
/// a client `timeout` would not apply to a connection that never started).
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The configuration new TLS connections take (one server per process, as
/// for the acceptor's other settings).
static CURRENT: RwLock<Option<Arc<ServerConfig>>> = RwLock::new(None);

/// The configuration a new TLS connection uses; None until TLS is
/// configured.
pub fn current() -> Option<Arc<ServerConfig>> {
    CURRENT.read().clone()
}

/// Builds the rustls configuration from the `tls-*` directives and makes
/// it the one new connections use. On failure the previous one stays and
/// the error is the reason, in Redis's words where Redis has them.
pub fn configure(cfg: &Config) -> Result<(), String> {
    let built = build(cfg)?;
    *CURRENT.write() = Some(Arc::new(built));
    Ok(())
}

/// Applies CONFIG SET of a TLS directive: reconfigures when anything uses
/// TLS (as Redis does), logging why a value was refused.
pub fn apply_config_change(cfg: &Config, name: &str) -> Result<(), String> {
    if !cfg.tls_in_use() {
        return Ok(());
    }
    configure(cfg).map_err(|reason| {
        log::warning(&reason);
        log::warning(&format!(
            "Failed applying new configuration. Possibly related to new {name} setting. Restoring previous settings."
        ));
        UPDATE_FAILED.to_string()
    })
}

fn build(cfg: &Config) -> Result<ServerConfig, String> {
    let cert_file = cfg
        .tls_text("tls-cert-file")
        .ok_or("No tls-cert-file configured!")?;
    let key_file = cfg
        .tls_text("tls-key-file")
        .ok_or("No tls-key-file configured!")?;
    let ca_file = cfg.tls_text("tls-ca-cert-file");
    let ca_dir = cfg.tls_text("tls-ca-cert-dir");
    let auth = cfg.tls_auth_clients();
    if (auth != TlsAuthClients::No || cfg.tls_links()) && ca_file.is_none() && ca_dir.is_none() {
        return Err("Either tls-ca-cert-file or tls-ca-cert-dir must be specified when tls-cluster, tls-replication or tls-auth-clients are enabled!".into());
    }
    let versions = protocol_versions(cfg.tls_text("tls-protocols").as_deref())?;
    let mut suites = Vec::new();
    if versions.contains(&&rustls::version::TLS13) {
        suites.extend(tls13_suites(cfg.tls_text("tls-ciphersuites").as_deref())?);
    }
    if versions.contains(&&rustls::version::TLS12) {
        suites.extend(tls12_suites(cfg.tls_text("tls-ciphers").as_deref())?);
    }
    let provider = Arc::new(CryptoProvider {
        cipher_suites: suites,
        ..rustls::crypto::ring::default_provider()
    });

    let certs = load_certs(&cert_file)
        .map_err(|e| format!("Failed to load certificate: {cert_file}: {e}"))?;
    let key = load_key(&key_file, cfg.tls_text("tls-key-file-pass").as_deref())
        .map_err(|e| format!("Failed to load private key: {key_file}: {e}"))?;
    let roots = match (&ca_file, &ca_dir) {
        (None, None) => None,
        _ => Some(
            load_roots(ca_file.as_deref(), ca_dir.as_deref()).map_err(|e| {
                format!("Failed to configure CA certificate(s) file/directory: {e}")
            })?,
        ),
    };
    if let Some(dh) = cfg.tls_text("tls-dh-params-file") {
        std::fs::read(&dh).map_err(|e| format!("Failed to load {dh}: {}", io_reason(&e)))?;
        log::notice(&format!(
            "tls-dh-params-file {dh} is not needed: rustls negotiates ECDHE key exchange only"
        ));
    }
    check_client_identity(cfg, &provider)?;

    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&versions)
        .map_err(|e| format!("Failed to configure TLS: {e}"))?;
    let builder = match (auth, roots) {
        (TlsAuthClients::No, _) | (_, None) => builder.with_no_client_auth(),
        (mode, Some(roots)) => {
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
            let verifier = if mode == TlsAuthClients::Optional {
                verifier.allow_unauthenticated()
            } else {
                verifier
            };
            let verifier = verifier.build().map_err(|e| {
                format!("Failed to configure CA certificate(s) file/directory: {e}")
            })?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut config = builder
        .with_single_cert(certs, key)
        .map_err(|e| format!("Failed to load private key: {key_file}: {e}"))?;
    config.ignore_client_order = cfg.tls_prefer_server_ciphers();
    if cfg.tls_session_caching() {
        config.session_storage = Arc::new(SessionCache::new(
            cfg.tls_session_cache_size(),
            Duration::from_secs(cfg.tls_session_cache_timeout_secs()),
        ));
    } else {
        config.session_storage = Arc::new(NoServerSessionStorage {});
        config.send_tls13_tickets = 0;
    }
    Ok(config)
}

/// `tls-client-cert-file` / `tls-client-key-file`: the identity Tessera
/// shows on the links it opens (replication, cluster). Loaded and checked
/// here so a bad pair is refused when it is configured.
fn check_client_identity(cfg: &Config, provider: &CryptoProvider) -> Result<(), String> {
    let (Some(cert_file), Some(key_file)) = (
        cfg.tls_text("tls-client-cert-file"),
        cfg.tls_text("tls-client-key-file"),
    ) else {
        return Ok(());
    };
    let certs = load_certs(&cert_file)
        .map_err(|e| format!("Failed to load client certificate: {cert_file}: {e}"))?;
    let key = load_key(
        &key_file,
        cfg.tls_text("tls-client-key-file-pass").as_deref(),
    )
    .map_err(|e| format!("Failed to load private key: {key_file}: {e}"))?;
    rustls::sign::CertifiedKey::from_der(certs, key, provider)
        .map(|_| ())
        .map_err(|e| format!("Failed to load private key: {key_file}: {e}"))
}

fn io_reason(e: &io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error") {
        Some(cut) => text[..cut].to_string(),
        None => text,
    }
}

fn pem_reason(e: rustls::pki_types::pem::Error) -> String {
    match e {
        rustls::pki_types::pem::Error::Io(e) => io_reason(&e),
        rustls::pki_types::pem::Error::NoItemsFound => "no PEM data found".into(),
        other => format!("{other:?}"),
    }
}

fn load_certs(path: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(pem_reason)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(pem_reason)?;
    if certs.is_empty() {
        return Err("no certificate found".into());
    }
    Ok(certs)
}

/// A private key in PEM: PKCS#8, PKCS#1 (RSA) or SEC1 (EC), or PKCS#8
/// encrypted with `password` (`openssl pkcs8 -topk8` / `genpkey -aes256`).
fn load_key(path: &str, password: Option<&str>) -> Result<PrivateKeyDer<'static>, String> {
    let pem = std::fs::read(path).map_err(|e| io_reason(&e))?;
    const ENCRYPTED: &[u8] = b"-----BEGIN ENCRYPTED PRIVATE KEY-----";
    if let Some(start) = memchr::memmem::find(&pem, ENCRYPTED) {
        let Some(password) = password else {
            return Err(
                "the key is encrypted and no password is configured (tls-key-file-pass)".into(),
            );
        };
        const END: &[u8] = b"-----END ENCRYPTED PRIVATE KEY-----";
        let end = memchr::memmem::find(&pem[start..], END)
            .map(|e| start + e + END.len())
            .ok_or("unterminated ENCRYPTED PRIVATE KEY block")?;
        let (_, der) = pkcs8::der::pem::decode_vec(&pem[start..end])
            .map_err(|e| format!("bad ENCRYPTED PRIVATE KEY block: {e}"))?;
        let info = pkcs8::EncryptedPrivateKeyInfo::try_from(der.as_slice())
            .map_err(|e| format!("bad ENCRYPTED PRIVATE KEY block: {e}"))?;
        let plain = info
            .decrypt(password)
            .map_err(|_| "bad decrypt (wrong tls-key-file-pass?)".to_string())?;
        return Ok(PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
            plain.as_bytes().to_vec(),
        )));
    }
    if memchr::memmem::find(&pem, b"Proc-Type: 4,ENCRYPTED").is_some() {
        return Err("the key is encrypted in OpenSSL's legacy PEM format, which Tessera cannot read; convert it to encrypted PKCS#8 with `openssl pkcs8 -topk8`".into());
    }
    PrivateKeyDer::from_pem_slice(&pem).map_err(pem_reason)
}

/// The CAs client certificates must chain to: every certificate in
/// `file`, and in every file of `dir` (OpenSSL reads the directory's
/// hashed names; every PEM certificate found there is taken).
fn load_roots(file: Option<&str>, dir: Option<&str>) -> Result<RootCertStore, String> {
    let mut roots = RootCertStore::empty();
    let mut add = |path: &str, strict: bool| -> Result<(), String> {
        let certs = match CertificateDer::pem_file_iter(path) {
            Ok(iter) => iter.collect::<Result<Vec<_>, _>>(),
            Err(e) => Err(e),
        };
        match certs {
            Ok(certs) => {
                for c in certs {
                    if let Err(e) = roots.add(c) {
                        if strict {
                            return Err(format!("{path}: {e}"));
                        }
                    }
                }
                Ok(())
            }
            Err(e) if strict => Err(pem_reason(e)),
            Err(_) => Ok(()),
        }
    };
    if let Some(f) = file {
        add(f, true)?;
    }
    if let Some(d) = dir {
        let entries = std::fs::read_dir(d).map_err(|e| io_reason(&e))?;
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_file() {
                add(&path.to_string_lossy(), false)?;
            }
        }
    }
    if roots.is_empty() {
        return Err("no CA certificate found".into());
    }
    Ok(roots)
}

const INVALID_PROTOCOLS: &str = "Invalid tls-protocols specified. Use a combination of 'TLSv1', 'TLSv1.1', 'TLSv1.2' and 'TLSv1.3'.";

/// `tls-protocols`: Redis's names; by default TLSv1.2 and TLSv1.3. rustls
/// does not speak TLSv1 or TLSv1.1, so naming either stops the
/// configuration with a message that says so.
fn protocol_versions(spec: Option<&str>) -> Result<Vec<&'static SupportedProtocolVersion>, String> {
    let Some(spec) = spec else {
        return Ok(vec![&rustls::version::TLS13, &rustls::version::TLS12]);
    };
    let mut versions = Vec::new();
    for word in spec.split_whitespace() {
        if word.eq_ignore_ascii_case("TLSv1.3") {
            versions.push(&rustls::version::TLS13);
        } else if word.eq_ignore_ascii_case("TLSv1.2") {
            versions.push(&rustls::version::TLS12);
        } else if word.eq_ignore_ascii_case("TLSv1") || word.eq_ignore_ascii_case("TLSv1.1") {
            return Err(format!(
                "tls-protocols: {word} is not supported by Tessera (rustls speaks TLSv1.2 and TLSv1.3 only)"
            ));
        } else {
            return Err(INVALID_PROTOCOLS.into());
        }
    }
    if versions.is_empty() {
        return Err(INVALID_PROTOCOLS.into());
    }
    Ok(versions)
}

/// The TLS 1.3 suites rustls implements, by their (OpenSSL and IANA) names.
const TLS13: &[(&str, SupportedCipherSuite)] = &[
    ("TLS_AES_256_GCM_SHA384", suite::TLS13_AES_256_GCM_SHA384),
    ("TLS_AES_128_GCM_SHA256", suite::TLS13_AES_128_GCM_SHA256),
    (
        "TLS_CHACHA20_POLY1305_SHA256",
        suite::TLS13_CHACHA20_POLY1305_SHA256,
    ),
];

/// `tls-ciphersuites` (TLS 1.3): a colon-separated list of suite names.
fn tls13_suites(spec: Option<&str>) -> Result<Vec<SupportedCipherSuite>, String> {
    let Some(spec) = spec else {
        return Ok(TLS13.iter().map(|(_, s)| *s).collect());
    };
    let mut out = Vec::new();
    for name in spec.split(':').map(str::trim).filter(|n| !n.is_empty()) {
        let Some((_, s)) = TLS13.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)) else {
            return Err(format!(
                "Failed to configure ciphersuites: {name} is not a TLS 1.3 cipher suite Tessera (rustls) implements; those are {}",
                names(TLS13.iter().map(|e| e.0))
            ));
        };
        if !out.contains(s) {
            out.push(*s);
        }
    }
    Ok(out)
}

/// The TLS 1.2 suites rustls implements, by their OpenSSL names, with the
/// OpenSSL cipher-string words each belongs to.
const TLS12: &[(&str, SupportedCipherSuite, &[&str])] = &[
    (
        "ECDHE-ECDSA-AES256-GCM-SHA384",
        suite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
        &["AECDSA", "ECDSA", "AES", "AES256", "AESGCM", "SHA384"],
    ),
    (
        "ECDHE-ECDSA-AES128-GCM-SHA256",
        suite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
        &["AECDSA", "ECDSA", "AES", "AES128", "AESGCM", "SHA256"],
    ),
    (
        "ECDHE-ECDSA-CHACHA20-POLY1305",
        suite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
        &["AECDSA", "ECDSA", "CHACHA20", "SHA256"],
    ),
    (
        "ECDHE-RSA-AES256-GCM-SHA384",
        suite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
        &["ARSA", "AES", "AES256", "AESGCM", "SHA384"],
    ),
    (
        "ECDHE-RSA-AES128-GCM-SHA256",
        suite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
        &["ARSA", "AES", "AES128", "AESGCM", "SHA256"],
    ),
    (
        "ECDHE-RSA-CHACHA20-POLY1305",
        suite::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
        &["ARSA", "CHACHA20", "SHA256"],
    ),
];

/// OpenSSL words that select every suite above (all of them are ECDHE
/// with an AEAD, so all are in these classes).
const TLS12_ALL_WORDS: &[&str] = &[
    "DEFAULT", "ALL", "HIGH", "ECDHE", "EECDH", "KECDHE", "KEECDH", "AEAD", "TLSV1.2", "SSLV3",
    "FIPS",
];

fn names<'a>(all: impl Iterator<Item = &'a str>) -> String {
    all.collect::<Vec<_>>().join(", ")
}

/// The suites an OpenSSL cipher-string word (or a `+`-joined
/// intersection of words) selects; None for a word that names none of
/// them.
fn tls12_select(term: &str) -> Option<Vec<SupportedCipherSuite>> {
    let mut selected: Option<Vec<SupportedCipherSuite>> = None;
    for word in term.split('+') {
        let upper = word.to_ascii_uppercase();
        let matching: Vec<SupportedCipherSuite> = if TLS12_ALL_WORDS.contains(&upper.as_str()) {
            TLS12.iter().map(|e| e.1).collect()
        } else if let Some(e) = TLS12.iter().find(|e| e.0.eq_ignore_ascii_case(word)) {
            vec![e.1]
        } else {
            let by_class: Vec<_> = TLS12
                .iter()
                .filter(|e| e.2.contains(&upper.as_str()))
                .map(|e| e.1)
                .collect();
            if by_class.is_empty() {
                return None;
            }
            by_class
        };
        selected = Some(match selected {
            None => matching,
            Some(prev) => prev.into_iter().filter(|s| matching.contains(s)).collect(),
        });
    }
    selected
}

/// `tls-ciphers` (TLS 1.2), an OpenSSL cipher string: words and names
/// joined by `:`, `,` or spaces; `!` or `-` removes, `+` at the front moves
/// to the end, `@` directives are ignored. Removing what rustls never
/// offers (`!aNULL`, `!MD5`, ...) is harmless; asking for a suite rustls
/// does not implement stops the configuration, naming it.
fn tls12_suites(spec: Option<&str>) -> Result<Vec<SupportedCipherSuite>, String> {
    let Some(spec) = spec else {
        return Ok(TLS12.iter().map(|e| e.1).collect());
    };
    let mut list: Vec<SupportedCipherSuite> = Vec::new();
    let mut removed: Vec<SupportedCipherSuite> = Vec::new();
    for item in spec
        .split([':', ',', ' '])
        .map(str::trim)
        .filter(|i| !i.is_empty())
    {
        if item.starts_with('@') {
            continue;
        }
        if let Some(term) = item.strip_prefix('!').or_else(|| item.strip_prefix('-')) {
            let gone = tls12_select(term).unwrap_or_default();
            list.retain(|s| !gone.contains(s));
            if item.starts_with('!') {
                removed.extend(gone);
            }
            continue;
        }
        if let Some(term) = item.strip_prefix('+') {
            let moved = tls12_select(term).unwrap_or_default();
            let (to_end, keep): (Vec<_>, Vec<_>) =
                list.into_iter().partition(|s| moved.contains(s));
            list = keep;
            list.extend(to_end);
            continue;
        }
        let Some(chosen) = tls12_select(item) else {
            return Err(format!(
                "Failed to configure ciphers: {item} names no TLS 1.2 cipher Tessera (rustls) implements; those are {}",
                names(TLS12.iter().map(|e| e.0))
            ));
        };
        for s in chosen {
            if !list.contains(&s) && !removed.contains(&s) {
                list.push(s);
            }
        }
    }
    if list.is_empty() {
        return Err(format!("Failed to configure ciphers: {spec}"));
    }
    Ok(list)
}

/// The server-side session cache (`tls-session-caching`): at most `max`
/// sessions (0: no limit, as in OpenSSL), each resumable for `ttl`.
#[derive(Debug)]
struct SessionCache {
    max: usize,
    ttl: Duration,
    inner: Mutex<Sessions>,
}

#[derive(Debug, Default)]
struct Sessions {
    by_id: HashMap<Vec<u8>, (Vec<u8>, Instant)>,
    /// Insertion order, for evicting the oldest (ids taken since may still
    /// be listed).
    order: VecDeque<Vec<u8>>,
}

impl SessionCache {
    fn new(max: usize, ttl: Duration) -> SessionCache {
        SessionCache {
            max,
            ttl,
            inner: Mutex::new(Sessions::default()),
        }
    }

    fn fresh(&self, stored: Instant) -> bool {
        stored.elapsed() < self.ttl
    }
}

impl StoresServerSessions for SessionCache {
    fn put(&self, key: Vec<u8>, value: Vec<u8>) -> bool {
        if self.ttl.is_zero() {
            return false;
        }
        let mut s = self.inner.lock();
        s.order.push_back(key.clone());
        s.by_id.insert(key, (value, Instant::now()));
        while self.max > 0 && s.by_id.len() > self.max {
            let Some(oldest) = s.order.pop_front() else {
                break;
            };
            s.by_id.remove(&oldest);
        }
        // Ids taken or expired leave stale entries in `order`: compact
        // before it outgrows the map.
        if s.order.len() > 2 * s.by_id.len() + 64 {
            let Sessions { by_id, order } = &mut *s;
            order.retain(|k| by_id.contains_key(k));
        }
        true
    }

    fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        let mut s = self.inner.lock();
        match s.by_id.get(key) {
            Some((v, at)) if self.fresh(*at) => Some(v.clone()),
            Some(_) => {
                s.by_id.remove(key);
                None
            }
            None => None,
        }
    }

    fn take(&self, key: &[u8]) -> Option<Vec<u8>> {
        let (v, at) = self.inner.lock().by_id.remove(key)?;
        self.fresh(at).then_some(v)
    }

    fn can_cache(&self) -> bool {
        true
    }
}

/// One connection's TLS state. Shared between the connection's stream and
/// its park slot (the busy-script pump reads and writes through it too);
/// the lock is never contended, both run on the connection's worker.
pub struct TlsSession {
    conn: Mutex<ServerConnection>,
}

/// A socket as std's Read and Write that never waits: WouldBlock where it
/// would (tokio's readiness is cleared then, so the next wait is real).
struct Nonblocking<'a>(&'a tokio::net::TcpStream);

impl Read for Nonblocking<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.try_read(buf)
    }
}

impl Write for Nonblocking<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.try_write(buf)
    }
    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        self.0.try_write_vectored(bufs)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

enum HandshakeStep {
    Done,
    WantRead,
    WantWrite,
}

fn would_block(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::WouldBlock
}

/// Sends what rustls holds for the peer; WouldBlock while some remains.
fn send_pending<S: Write>(conn: &mut ServerConnection, sock: &mut S) -> io::Result<()> {
    while conn.wants_write() {
        if conn.write_tls(sock)? == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
    }
    Ok(())
}

impl TlsSession {
    fn new(config: Arc<ServerConfig>) -> Result<TlsSession, String> {
        let conn = ServerConnection::new(config).map_err(|e| e.to_string())?;
        Ok(TlsSession {
            conn: Mutex::new(conn),
        })
    }

    /// Whether decrypted input waits to be read.
    pub fn has_plaintext(&self) -> bool {
        match self.conn.lock().process_new_packets() {
            Ok(state) => state.plaintext_bytes_to_read() > 0,
            // The reader reports it.
            Err(_) => true,
        }
    }

    /// Reads decrypted input into `out`, pulling records from `sock` as
    /// needed: Ok(0) at the end of input, WouldBlock when the socket has
    /// nothing more (so decrypted input is never left behind a cleared
    /// readiness: it is taken before the socket is read).
    pub fn read_plain<S: Read + Write>(&self, sock: &mut S, out: &mut [u8]) -> io::Result<usize> {
        if out.is_empty() {
            return Ok(0);
        }
        let mut conn = self.conn.lock();
        loop {
            match conn.reader().read(out) {
                Ok(n) => return Ok(n),
                Err(e) if would_block(&e) => {}
                Err(e) => return Err(e),
            }
            // (At the end of input, the reader says next how it ended:
            // Ok(0) after close_notify, UnexpectedEof without.)
            conn.read_tls(sock)?;
            if let Err(e) = conn.process_new_packets() {
                let _ = send_pending(&mut conn, sock);
                return Err(io::Error::new(io::ErrorKind::InvalidData, e));
            }
            // Whatever the protocol itself answers (key updates).
            match send_pending(&mut conn, sock) {
                Err(e) if !would_block(&e) => return Err(e),
                _ => {}
            }
        }
    }

    /// Encrypts and sends as much of `data` as the socket takes: the count
    /// taken, or WouldBlock while earlier output is still unsent.
    pub fn write_plain<S: Write>(&self, sock: &mut S, data: &[u8]) -> io::Result<usize> {
        let mut conn = self.conn.lock();
        send_pending(&mut conn, sock)?;
        let n = conn.writer().write(data)?;
        match send_pending(&mut conn, sock) {
            Err(e) if !would_block(&e) => Err(e),
            _ => Ok(n),
        }
    }

    /// Sends what is still held; WouldBlock while some remains.
    pub fn flush<S: Write>(&self, sock: &mut S) -> io::Result<()> {
        send_pending(&mut self.conn.lock(), sock)
    }

    fn handshake_step<S: Read + Write>(&self, sock: &mut S) -> Result<HandshakeStep, String> {
        let mut conn = self.conn.lock();
        loop {
            match send_pending(&mut conn, sock) {
                Ok(()) => {}
                Err(e) if would_block(&e) => return Ok(HandshakeStep::WantWrite),
                Err(e) => return Err(io_reason(&e)),
            }
            if !conn.is_handshaking() {
                return Ok(HandshakeStep::Done);
            }
            match conn.read_tls(sock) {
                Ok(0) => return Err("unexpected eof while handshaking".into()),
                Ok(_) => {}
                Err(e) if would_block(&e) => return Ok(HandshakeStep::WantRead),
                Err(e) => return Err(io_reason(&e)),
            }
            if let Err(e) = conn.process_new_packets() {
                // The alert that tells the peer why, as far as it goes out.
                let _ = send_pending(&mut conn, sock);
                return Err(e.to_string());
            }
        }
    }
}

/// Runs the server side of a TLS handshake on `tcp` without blocking the
/// worker: the stream to serve the client on, or why it failed.
pub async fn accept(
    tcp: tokio::net::TcpStream,
    config: Arc<ServerConfig>,
) -> Result<TlsStream, String> {
    let session = Arc::new(TlsSession::new(config)?);
    let handshake = async {
        loop {
            let step = session.handshake_step(&mut Nonblocking(&tcp))?;
            match step {
                HandshakeStep::Done => return Ok(()),
                HandshakeStep::WantRead => tcp.readable().await.map_err(|e| io_reason(&e))?,
                HandshakeStep::WantWrite => tcp.writable().await.map_err(|e| io_reason(&e))?,
            }
        }
    };
    match tokio::time::timeout(HANDSHAKE_TIMEOUT, handshake).await {
        Ok(Ok(())) => Ok(TlsStream { tcp, session }),
        Ok(Err(e)) => Err(e),
        Err(_) => Err("handshake timed out".into()),
    }
}

/// A client's TLS connection once its handshake is done.
pub struct TlsStream {
    tcp: tokio::net::TcpStream,
    session: Arc<TlsSession>,
}

impl std::os::fd::AsRawFd for TlsStream {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        self.tcp.as_raw_fd()
    }
}

/// Decrypted input read into a buffer, at most what fits in its spare
/// room (so that a read that leaves room means the socket was drained:
/// see `conn::read_available`).
const MAX_CHUNK: usize = 16 * 1024;

impl ClientSocket for TlsStream {
    fn try_io<R>(&self, interest: Interest, f: impl FnOnce() -> io::Result<R>) -> io::Result<R> {
        // Decrypted input may wait with the socket's readiness cleared.
        if interest.is_readable() && self.session.has_plaintext() {
            return f();
        }
        self.tcp.try_io(interest, f)
    }

    fn try_read_buf<B: BufMut>(&self, buf: &mut B) -> io::Result<usize> {
        let room = buf.chunk_mut().len();
        let mut chunk = [0u8; MAX_CHUNK];
        let mut total = 0;
        while total < room {
            let want = (room - total).min(MAX_CHUNK);
            match self
                .session
                .read_plain(&mut Nonblocking(&self.tcp), &mut chunk[..want])
            {
                Ok(0) => break,
                Ok(n) => {
                    buf.put_slice(&chunk[..n]);
                    total += n;
                }
                Err(e) if total > 0 && would_block(&e) => break,
                // Reported by the next read, once this input has run.
                Err(_) if total > 0 => break,
                Err(e) => return Err(e),
            }
        }
        Ok(total)
    }

    fn poll_read_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.session.has_plaintext() {
            return Poll::Ready(Ok(()));
        }
        self.tcp.poll_read_ready(cx)
    }

    fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
        self.session.write_plain(&mut Nonblocking(&self.tcp), buf)
    }

    fn try_flush(&self) -> io::Result<()> {
        self.session.flush(&mut Nonblocking(&self.tcp))
    }

    async fn readable(&self) -> io::Result<()> {
        if self.session.has_plaintext() {
            return Ok(());
        }
        self.tcp.readable().await
    }

    fn writable(&self) -> impl Future<Output = io::Result<()>> + Send {
        self.tcp.writable()
    }

    fn tls_session(&self) -> Option<Arc<TlsSession>> {
        Some(self.session.clone())
    }
}

impl AsyncRead for TlsStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            let out = buf.initialize_unfilled();
            match this.session.read_plain(&mut Nonblocking(&this.tcp), out) {
                Ok(n) => {
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Err(e) if would_block(&e) => ready!(this.tcp.poll_read_ready(cx))?,
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

impl AsyncWrite for TlsStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        loop {
            match this.session.write_plain(&mut Nonblocking(&this.tcp), data) {
                Err(e) if would_block(&e) => ready!(this.tcp.poll_write_ready(cx))?,
                r => return Poll::Ready(r),
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            match this.session.flush(&mut Nonblocking(&this.tcp)) {
                Err(e) if would_block(&e) => ready!(this.tcp.poll_write_ready(cx))?,
                r => return Poll::Ready(r),
            }
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.session.conn.lock().send_close_notify();
        ready!(self.as_mut().poll_flush(cx))?;
        Pin::new(&mut self.get_mut().tcp).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocols_are_redis_names_and_refuse_what_rustls_cannot_speak() {
        assert_eq!(protocol_versions(None).map(|v| v.len()), Ok(2));
        assert_eq!(protocol_versions(Some("tlsv1.2")).map(|v| v.len()), Ok(1));
        assert_eq!(
            protocol_versions(Some("TLSv1.4")).err().as_deref(),
            Some(INVALID_PROTOCOLS)
        );
        let e = protocol_versions(Some("TLSv1.1 TLSv1.2"))
            .err()
            .unwrap_or_default();
        assert!(e.contains("TLSv1.1 is not supported"), "{e}");
    }

    #[test]
    fn cipher_strings_map_openssl_names_and_name_what_is_missing() {
        let all = tls12_suites(None).unwrap_or_default();
        assert_eq!(all.len(), 6);
        assert_eq!(
            tls12_suites(Some("HIGH:!aNULL:!MD5")).map(|v| v.len()),
            Ok(6)
        );
        assert_eq!(
            tls12_suites(Some("ECDHE-RSA-AES128-GCM-SHA256")),
            Ok(vec![suite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256])
        );
        assert_eq!(
            tls12_suites(Some("ECDHE+AESGCM:!ECDSA")).map(|v| v.len()),
            Ok(2)
        );
        assert_eq!(
            tls12_suites(Some("DEFAULT:!CHACHA20:+AES128")).map(|v| v.last().copied()),
            Ok(Some(suite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256))
        );
        let e = tls12_suites(Some("DHE-RSA-AES256-SHA"))
            .err()
            .unwrap_or_default();
        assert!(
            e.starts_with("Failed to configure ciphers: DHE-RSA-AES256-SHA "),
            "{e}"
        );
        let e = tls13_suites(Some("TLS_AES_128_CCM_SHA256"))
            .err()
            .unwrap_or_default();
        assert!(
            e.starts_with("Failed to configure ciphersuites: TLS_AES_128_CCM_SHA256 "),
            "{e}"
        );
        assert_eq!(
            tls13_suites(Some("TLS_CHACHA20_POLY1305_SHA256")),
            Ok(vec![suite::TLS13_CHACHA20_POLY1305_SHA256])
        );
    }

    #[test]
    fn the_session_cache_evicts_the_oldest_and_forgets_expired_sessions() {
        let cache = SessionCache::new(2, Duration::from_secs(60));
        for id in [b"a", b"b", b"c"] {
            assert!(cache.put(id.to_vec(), id.to_vec()));
        }
        assert_eq!(cache.get(b"a"), None);
        assert_eq!(cache.get(b"b"), Some(b"b".to_vec()));
        assert_eq!(cache.take(b"c"), Some(b"c".to_vec()));
        assert_eq!(cache.take(b"c"), None);
        let expired = SessionCache::new(0, Duration::from_nanos(1));
        assert!(expired.put(b"x".to_vec(), b"x".to_vec()));
        std::thread::sleep(Duration::from_millis(2));
        assert_eq!(expired.get(b"x"), None);
        assert!(!SessionCache::new(0, Duration::ZERO).put(b"y".to_vec(), b"y".to_vec()));
    }
}

// ---------------------------------------------------------------- links Tessera opens

/// The rustls client configuration for the links this server opens
/// (`tls-replication yes`: a replica's link to its master). It trusts the
/// CAs of `tls-ca-cert-file` / `tls-ca-cert-dir`, shows
/// `tls-client-cert-file` / `tls-client-key-file` (or, without them, the
/// server's own `tls-cert-file` / `tls-key-file`, as Redis does), and
/// honours `tls-protocols`, `tls-ciphers` and `tls-ciphersuites`.
pub fn link_config(cfg: &Config) -> Result<Arc<rustls::ClientConfig>, String> {
    let ca_file = cfg.tls_text("tls-ca-cert-file");
    let ca_dir = cfg.tls_text("tls-ca-cert-dir");
    if ca_file.is_none() && ca_dir.is_none() {
        return Err("Either tls-ca-cert-file or tls-ca-cert-dir must be specified when tls-cluster, tls-replication or tls-auth-clients are enabled!".into());
    }
    let roots = load_roots(ca_file.as_deref(), ca_dir.as_deref())
        .map_err(|e| format!("Failed to configure CA certificate(s) file/directory: {e}"))?;
    let versions = protocol_versions(cfg.tls_text("tls-protocols").as_deref())?;
    let mut suites = Vec::new();
    if versions.contains(&&rustls::version::TLS13) {
        suites.extend(tls13_suites(cfg.tls_text("tls-ciphersuites").as_deref())?);
    }
    if versions.contains(&&rustls::version::TLS12) {
        suites.extend(tls12_suites(cfg.tls_text("tls-ciphers").as_deref())?);
    }
    let provider = Arc::new(CryptoProvider {
        cipher_suites: suites,
        ..rustls::crypto::ring::default_provider()
    });
    let verifier = rustls::client::WebPkiServerVerifier::builder_with_provider(
        Arc::new(roots),
        provider.clone(),
    )
    .build()
    .map_err(|e| format!("Failed to configure CA certificate(s) file/directory: {e}"))?;
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&versions)
        .map_err(|e| format!("Failed to configure TLS: {e}"))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(ChainOnly(verifier)));
    let identity = match (
        cfg.tls_text("tls-client-cert-file"),
        cfg.tls_text("tls-client-key-file"),
    ) {
        (Some(c), Some(k)) => Some((c, k, cfg.tls_text("tls-client-key-file-pass"))),
        _ => match (cfg.tls_text("tls-cert-file"), cfg.tls_text("tls-key-file")) {
            (Some(c), Some(k)) => Some((c, k, cfg.tls_text("tls-key-file-pass"))),
            _ => None,
        },
    };
    let config = match identity {
        Some((cert_file, key_file, pass)) => {
            let certs = load_certs(&cert_file)
                .map_err(|e| format!("Failed to load certificate: {cert_file}: {e}"))?;
            let key = load_key(&key_file, pass.as_deref())
                .map_err(|e| format!("Failed to load private key: {key_file}: {e}"))?;
            builder
                .with_client_auth_cert(certs, key)
                .map_err(|e| format!("Failed to load private key: {key_file}: {e}"))?
        }
        None => builder.with_no_client_auth(),
    };
    Ok(Arc::new(config))
}

/// Verifies the master's certificate chain against the configured CAs but
/// not its name: Redis (OpenSSL with `SSL_VERIFY_PEER` and no host check)
/// accepts a master by its CA whatever address `replicaof` names.
#[derive(Debug)]
struct ChainOnly(Arc<rustls::client::WebPkiServerVerifier>);

impl rustls::client::danger::ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &rustls::pki_types::ServerName<'_>,
        ocsp_response: &[u8],
        now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        use rustls::{CertificateError, Error};
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            // (The name is checked after the chain: this error means the
            // chain is good.)
            Err(Error::InvalidCertificate(CertificateError::NotValidForName))
            | Err(Error::InvalidCertificate(CertificateError::NotValidForNameContext { .. })) => {
                Ok(rustls::client::danger::ServerCertVerified::assertion())
            }
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}
