//! Certificates for TLS tests, made by the `openssl` command line on first use (one set per
//! test process): two independent CAs, each with a server certificate (for `localhost` and
//! 127.0.0.1) and a client certificate, and an encrypted copy of a server key.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use super::TestServer;

/// The password of [`Certs::encrypted_key`].
pub const KEY_PASSWORD: &str = "tessera-secret";

pub struct Certs {
    dir: PathBuf,
}

/// One CA's files.
pub struct Authority {
    pub ca: PathBuf,
    pub server_cert: PathBuf,
    pub server_key: PathBuf,
    pub client_cert: PathBuf,
    pub client_key: PathBuf,
}

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("run openssl (apt-get install openssl): {e}"));
    assert!(
        out.status.success(),
        "openssl {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A CA named `name` with its server and client certificates. `rsa` picks RSA keys for the
/// server (EC P-256 otherwise, which is faster to make).
fn make_authority(dir: &Path, name: &str, rsa: bool) {
    let key_alg: &[&str] = if rsa {
        &["-newkey", "rsa:2048"]
    } else {
        &["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"]
    };
    let ca_key = format!("{name}-ca.key");
    let ca = format!("{name}-ca.crt");
    let mut args = vec!["req", "-x509", "-nodes", "-days", "30"];
    args.extend_from_slice(key_alg);
    args.extend_from_slice(&["-keyout", &ca_key, "-out", &ca, "-subj"]);
    let subject = format!("/CN=Tessera test CA {name}");
    args.push(&subject);
    openssl(dir, &args);
    std::fs::write(
        dir.join("server.ext"),
        "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\nsubjectAltName=DNS:localhost,IP:127.0.0.1\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("client.ext"),
        "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n",
    )
    .unwrap();
    for (role, subject) in [
        ("server", "/CN=localhost"),
        ("client", "/CN=tessera-client"),
    ] {
        let key = format!("{name}-{role}.key");
        let csr = format!("{name}-{role}.csr");
        let cert = format!("{name}-{role}.crt");
        let mut args = vec!["req", "-new", "-nodes"];
        args.extend_from_slice(key_alg);
        args.extend_from_slice(&["-keyout", &key, "-out", &csr, "-subj", subject]);
        openssl(dir, &args);
        let ext = format!("{role}.ext");
        openssl(
            dir,
            &[
                "x509",
                "-req",
                "-in",
                &csr,
                "-CA",
                &ca,
                "-CAkey",
                &ca_key,
                "-CAcreateserial",
                "-days",
                "30",
                "-out",
                &cert,
                "-extfile",
                &ext,
            ],
        );
    }
}

impl Certs {
    /// The process's certificates, made on first use.
    pub fn get() -> &'static Certs {
        static CERTS: OnceLock<Certs> = OnceLock::new();
        CERTS.get_or_init(|| {
            let dir = std::env::temp_dir()
                .join("tessera-tests")
                .join(format!("tls-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            make_authority(&dir, "one", false);
            make_authority(&dir, "two", true);
            let passout = format!("pass:{KEY_PASSWORD}");
            openssl(
                &dir,
                &[
                    "pkcs8",
                    "-topk8",
                    "-v2",
                    "aes-256-cbc",
                    "-in",
                    "one-server.key",
                    "-out",
                    "one-server-encrypted.key",
                    "-passout",
                    &passout,
                ],
            );
            Certs { dir }
        })
    }

    fn authority(&self, name: &str) -> Authority {
        let f = |suffix: &str| self.dir.join(format!("{name}-{suffix}"));
        Authority {
            ca: f("ca.crt"),
            server_cert: f("server.crt"),
            server_key: f("server.key"),
            client_cert: f("client.crt"),
            client_key: f("client.key"),
        }
    }

    /// The CA the servers start with.
    pub fn one(&self) -> Authority {
        self.authority("one")
    }

    /// Another CA, unrelated to the first (RSA keys).
    pub fn two(&self) -> Authority {
        self.authority("two")
    }

    /// `one`'s server key, encrypted with [`KEY_PASSWORD`] (PKCS#8, AES-256-CBC).
    pub fn encrypted_key(&self) -> PathBuf {
        self.dir.join("one-server-encrypted.key")
    }
}

impl Authority {
    /// The server arguments that serve TLS with this CA's certificates.
    pub fn server_args(&self) -> Vec<String> {
        vec![
            "--tls-cert-file".into(),
            path(&self.server_cert),
            "--tls-key-file".into(),
            path(&self.server_key),
            "--tls-ca-cert-file".into(),
            path(&self.ca),
        ]
    }

    /// redis-cli's (and redis-benchmark's) TLS arguments, with the client certificate.
    pub fn cli_args(&self) -> Vec<String> {
        let mut a = self.cli_args_without_cert();
        a.extend([
            "--cert".into(),
            path(&self.client_cert),
            "--key".into(),
            path(&self.client_key),
        ]);
        a
    }

    /// redis-cli's TLS arguments trusting this CA, presenting no certificate.
    pub fn cli_args_without_cert(&self) -> Vec<String> {
        vec!["--tls".into(), "--cacert".into(), path(&self.ca)]
    }

    /// A `redis` crate client for `rediss://127.0.0.1:port`, trusting this CA; with the client
    /// certificate when `with_cert`.
    pub fn client(&self, port: u16, with_cert: bool) -> redis::Client {
        let read = |p: &Path| std::fs::read(p).unwrap();
        let certs = redis::TlsCertificates {
            client_tls: with_cert.then(|| redis::ClientTlsConfig {
                client_cert: read(&self.client_cert),
                client_key: read(&self.client_key),
            }),
            root_cert: Some(read(&self.ca)),
        };
        redis::Client::build_with_tls(format!("rediss://127.0.0.1:{port}"), certs)
            .expect("a TLS client")
    }
}

pub fn path(p: &Path) -> String {
    p.display().to_string()
}

/// Runs redis-cli against `port` with `tls_args` and `command`: its exit status success and
/// what it printed (stdout, then stderr).
pub fn redis_cli(port: u16, tls_args: &[String], command: &[&str]) -> (bool, String) {
    let out = Command::new("redis-cli")
        .arg("-p")
        .arg(port.to_string())
        .args(tls_args)
        .args(command)
        .output()
        .expect("run redis-cli (apt-get install redis-tools)");
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text.trim().to_string())
}

/// A server serving TLS on a second free port (see [`TestServer::extra_port`]) with `one`'s
/// certificates, plus `args`.
pub fn start_tls(args: &[&str]) -> TestServer {
    let mut all: Vec<String> = vec!["--tls-port".into(), super::FREE_PORT.into()];
    all.extend(Certs::get().one().server_args());
    all.extend(args.iter().map(|s| s.to_string()));
    let refs: Vec<&str> = all.iter().map(String::as_str).collect();
    TestServer::start_with(&refs)
}
