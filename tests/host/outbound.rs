//! Outbound HTTP: `<id>.spin.internal` is served in-process, including
//! private components, when a rule names it (never through a wildcard);
//! hosts missing from `allowed_outbound_hosts` are denied; stores missing
//! from `key_value_stores` are denied; an issuer's keys are read over TLS
//! and no further than their cap.
use crate::harness::*;

fn fixture() -> Cairn {
    require_built(&["health.wasm", "misbehave.wasm"]);
    Cairn::start(Start { manifest: fixtures(), ..Start::default() })
}

#[test]
fn spin_internal_reaches_a_private_component_in_process() {
    let cairn = fixture();
    let r = cairn.get("/misbehave/chain");
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.text().starts_with("200 "), "{}", r.text());
    assert!(r.text().contains(r#""status":"ok""#), "{}", r.text());
}

#[test]
fn a_host_missing_from_allowed_outbound_hosts_is_denied() {
    let cairn = fixture();
    let r = cairn.get("/misbehave/denied");
    assert_eq!(r.status, 502, "{}", r.text());
    assert!(r.text().contains("outbound failed"), "{}", r.text());
    let log = cairn.wait_for_log("outbound request denied");
    assert!(log.contains("outbound request denied"), "{log}");
}

#[test]
fn a_wildcard_rule_never_reaches_a_component_in_process() {
    require_built(&["health.wasm", "misbehave.wasm"]);
    let dir = scratch("wildcard");
    let wasm = root().join("target/wasm32-wasip2/wasm");
    let manifest = format!(
        "spin_manifest_version = 2\n[application]\nname = \"wildcard\"\n\
         [[trigger.http]]\nroute = \"/misbehave/...\"\ncomponent = \"misbehave\"\n\
         [[trigger.http]]\nroute = {{ private = true }}\ncomponent = \"health\"\n\
         [component.misbehave]\nsource = \"{}\"\nallowed_outbound_hosts = [\"http://*\"]\n\
         [component.health]\nsource = \"{}\"\n",
        wasm.join("misbehave.wasm").display(),
        wasm.join("health.wasm").display()
    );
    std::fs::write(dir.join("spin.toml"), manifest).unwrap();
    let cairn = Cairn::start(Start { manifest: dir.join("spin.toml"), ..Start::default() });
    // `http://*` lets a stranger choose where a call goes: public addresses
    // only, and a component of this application is none.
    let r = cairn.get("/misbehave/chain");
    assert_eq!(r.status, 502, "{}", r.text());
    assert!(r.text().contains("outbound failed"), "{}", r.text());
    assert!(cairn.wait_for_log("never reaches a component").contains("never reaches a component"));
}

#[test]
fn a_store_missing_from_key_value_stores_is_access_denied() {
    let cairn = fixture();
    let r = cairn.get("/misbehave/kv");
    assert_eq!(r.status, 403, "{}", r.text());
    assert!(r.text().contains("access to the store denied"), "{}", r.text());
}

/// Keys fetched over https from an issuer whose certificate chains to a CA
/// the host trusts (`SSL_CERT_FILE`, as for any rustls-native-certs user):
/// setting the issuer and `jwks_url` alone works; a certificate from
/// elsewhere, plain http to another host and a short identity secret do not.
pub(crate) mod https_keys {
    use crate::app::*;
    use crate::harness::*;
    use serde_json::json;
    use std::path::{Path, PathBuf};
    use std::process::Command;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    /// A CA and a certificate it signed for `localhost` and 127.0.0.1, by openssl.
    pub(crate) fn certificates(dir: &Path, ca_name: &str) -> (PathBuf, PathBuf, PathBuf) {
        let run = |args: &[&str]| {
            let out = Command::new("openssl").args(args).current_dir(dir).output().expect("openssl runs");
            assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        };
        std::fs::write(dir.join("san.ext"), "subjectAltName=DNS:localhost,IP:127.0.0.1\n").unwrap();
        run(&[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            "2",
            "-subj",
            &format!("/CN={ca_name}"),
        ]);
        run(&["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "leaf.key", "-out", "leaf.csr", "-subj", "/CN=localhost"]);
        run(&[
            "x509",
            "-req",
            "-in",
            "leaf.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "leaf.pem",
            "-days",
            "2",
            "-extfile",
            "san.ext",
        ]);
        (dir.join("ca.pem"), dir.join("leaf.pem"), dir.join("leaf.key"))
    }

    /// An https server on loopback answering every GET with `body`; counts requests.
    fn serve(cert: &Path, key: &Path, body: String) -> (u16, Arc<AtomicUsize>) {
        use rustls::pki_types::pem::PemObject;
        let certs = rustls::pki_types::CertificateDer::pem_file_iter(cert).unwrap().collect::<Result<Vec<_>, _>>().unwrap();
        let key = rustls::pki_types::PrivateKeyDer::from_pem_file(key).unwrap();
        #[allow(deprecated)]
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let hits = Arc::new(AtomicUsize::new(0));
        let counted = hits.clone();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async move {
                use tokio::io::{AsyncReadExt, AsyncWriteExt};
                listener.set_nonblocking(true).unwrap();
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                loop {
                    let Ok((tcp, _)) = listener.accept().await else { continue };
                    let (acceptor, body, counted) = (acceptor.clone(), body.clone(), counted.clone());
                    tokio::spawn(async move {
                        let Ok(mut tls) = acceptor.accept(tcp).await else { return };
                        let mut buf = vec![0u8; 8192];
                        let mut got = Vec::new();
                        while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                            match tls.read(&mut buf).await {
                                Ok(0) | Err(_) => return,
                                Ok(n) => got.extend_from_slice(&buf[..n]),
                            }
                        }
                        counted.fetch_add(1, Ordering::SeqCst);
                        let answer =
                            format!("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}", body.len());
                        let _ = tls.write_all(answer.as_bytes()).await;
                        let _ = tls.shutdown().await;
                    });
                }
            });
        });
        (port, hits)
    }

    /// An https server on loopback answering every GET with a JSON body of
    /// `total` bytes (blanks, then `{}`), sent as fast as it is read; counts
    /// the bytes the reader took.
    fn serve_big(cert: &Path, key: &Path, total: usize) -> (u16, Arc<AtomicUsize>) {
        use rustls::pki_types::pem::PemObject;
        let certs = rustls::pki_types::CertificateDer::pem_file_iter(cert).unwrap().collect::<Result<Vec<_>, _>>().unwrap();
        let key = rustls::pki_types::PrivateKeyDer::from_pem_file(key).unwrap();
        #[allow(deprecated)]
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let written = Arc::new(AtomicUsize::new(0));
        let counted = written.clone();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async move {
                use tokio::io::{AsyncReadExt, AsyncWriteExt};
                listener.set_nonblocking(true).unwrap();
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                loop {
                    let Ok((tcp, _)) = listener.accept().await else { continue };
                    let (acceptor, counted) = (acceptor.clone(), counted.clone());
                    tokio::spawn(async move {
                        let Ok(mut tls) = acceptor.accept(tcp).await else { return };
                        let mut buf = vec![0u8; 8192];
                        let mut got = Vec::new();
                        while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                            match tls.read(&mut buf).await {
                                Ok(0) | Err(_) => return,
                                Ok(n) => got.extend_from_slice(&buf[..n]),
                            }
                        }
                        let head = format!("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {total}\r\nconnection: close\r\n\r\n");
                        if tls.write_all(head.as_bytes()).await.is_err() {
                            return;
                        }
                        let chunk = vec![b' '; 64 * 1024];
                        let mut left = total - 2;
                        while left > 0 {
                            let n = left.min(chunk.len());
                            // A reader that stopped reading: give up after a while.
                            match tokio::time::timeout(Duration::from_secs(20), tls.write_all(&chunk[..n])).await {
                                Ok(Ok(())) => {}
                                _ => return,
                            }
                            counted.fetch_add(n, Ordering::SeqCst);
                            left -= n;
                        }
                        let _ = tls.write_all(b"{}").await;
                        let _ = tls.shutdown().await;
                    });
                }
            });
        });
        (port, written)
    }

    fn issuer_env(url: &str, ca: &Path) -> Vec<(&'static str, &'static str)> {
        let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
        vec![
            ("SPIN_VARIABLE_ISSUER", leak(url.to_string())),
            ("SPIN_VARIABLE_JWKS_URL", leak(format!("{url}/jwks.json"))),
            ("SSL_CERT_FILE", leak(ca.display().to_string())),
        ]
    }

    fn token_from(cairn: &Cairn, issuer: &str) -> String {
        let mut c = cairn.claims(&agent());
        c["iss"] = json!(issuer);
        key().sign(&c)
    }

    fn list(cairn: &Cairn, token: &str) -> Reply {
        cairn.mcp(token, &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "list_notes", "arguments": {}}}))
    }

    #[test]
    fn an_https_issuer_set_alone_is_fetched_over_tls_and_its_tokens_pass() {
        require_app();
        let dir = scratch("tls-good");
        let (ca, cert, leaf_key) = certificates(&dir, "Cairn test CA");
        let (port, hits) = serve(&cert, &leaf_key, key().jwks());
        let url = format!("https://localhost:{port}");
        let cairn = Cairn::start(Start { env: issuer_env(&url, &ca), ..Start::default() });
        let r = list(&cairn, &token_from(&cairn, &url));
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(r.json()["result"]["isError"], false, "{}", r.text());
        assert_eq!(hits.load(Ordering::SeqCst), 1, "the keys were fetched once, then cached");
        // Many tokens naming a key the issuer never published: one refetch
        // at most, whatever their number.
        let mut c = cairn.claims(&agent());
        c["iss"] = json!(url);
        let unknown = stranger().sign(&c);
        let handles: Vec<_> = (0..16)
            .map(|_| {
                let t = unknown.clone();
                let addr = cairn.addr;
                std::thread::spawn(move || {
                    request(addr, "POST", "/mcp", &[("authorization", &format!("Bearer {t}"))], br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).status
                })
            })
            .collect();
        for h in handles {
            assert_eq!(h.join().unwrap(), 401);
        }
        assert!(hits.load(Ordering::SeqCst) <= 2, "{} fetches for 16 unknown kids", hits.load(Ordering::SeqCst));
    }

    #[test]
    fn a_jwks_larger_than_the_cap_is_read_no_further_than_the_cap() {
        require_app();
        let dir = scratch("tls-big");
        let (ca, cert, leaf_key) = certificates(&dir, "Cairn test CA");
        let total = 64 << 20;
        let (port, written) = serve_big(&cert, &leaf_key, total);
        let url = format!("https://localhost:{port}");
        let cairn = Cairn::start(Start { env: issuer_env(&url, &ca), ..Start::default() });
        let r = list(&cairn, &token_from(&cairn, &url));
        assert_eq!(r.status, 503, "{}", r.text());
        assert!(r.text().contains("larger than 262144 bytes"), "{}", r.text());
        // What the issuer got out before reading stopped: the cap, and what
        // the sockets and the host's buffers hold, never the whole 64 MiB.
        std::thread::sleep(Duration::from_secs(1));
        let sent = written.load(Ordering::SeqCst);
        eprintln!("{sent} bytes of a {total}-byte JWKS sent before reading stopped (cap 262,144)");
        assert!(sent < 16 << 20, "{sent} bytes of a {total}-byte JWKS were read");
    }

    #[test]
    fn a_certificate_from_an_untrusted_ca_is_refused_and_no_token_passes() {
        require_app();
        let dir = scratch("tls-bad");
        let (_, cert, leaf_key) = certificates(&dir, "Somebody else's CA");
        let trusted = scratch("tls-trusted");
        let (ca, _, _) = certificates(&trusted, "Cairn test CA");
        let (port, hits) = serve(&cert, &leaf_key, key().jwks());
        let url = format!("https://localhost:{port}");
        let cairn = Cairn::start(Start { env: issuer_env(&url, &ca), ..Start::default() });
        let r = list(&cairn, &token_from(&cairn, &url));
        assert_eq!(r.status, 503, "{}", r.text());
        assert_eq!(r.json()["error"], "issuer_unavailable", "{}", r.text());
        assert_eq!(hits.load(Ordering::SeqCst), 0, "no request went out over the untrusted connection");
    }

    #[test]
    fn plain_http_keys_on_another_host_and_a_short_identity_secret_stop_the_start_naming_the_variable() {
        require_app();
        let log = Cairn::try_start(Start {
            env: vec![("SPIN_VARIABLE_JWKS_URL", "http://keys.example/jwks.json"), ("SPIN_VARIABLE_ISSUER", "https://keys.example")],
            ..Start::default()
        })
        .err()
        .expect("plain http keys from another host must not start");
        assert!(log.contains("jwks_url") && log.contains("https"), "{log}");
        let log =
            Cairn::try_start(Start { env: vec![("SPIN_VARIABLE_IDENTITY_SECRET", "short")], ..Start::default() }).err().expect("a short secret must not start");
        assert!(log.contains("identity_secret") && log.contains("32"), "{log}");
    }
}
