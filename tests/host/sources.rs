//! Clients at other loopback addresses: a socket bound to its source
//! (`127.0.0.2`, `127.0.0.3`, …) before it connects, so the host sees
//! distinct client addresses on one machine.

use crate::harness::Reply;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// A blocking connection to `addr` from the loopback address `source`.
pub fn connect_from(source: &str, addr: SocketAddr) -> TcpStream {
    let rt = tokio::runtime::Builder::new_current_thread().enable_io().build().unwrap();
    let bind = SocketAddr::new(source.parse().unwrap(), 0);
    let s = rt
        .block_on(async {
            let socket = tokio::net::TcpSocket::new_v4()?;
            socket.bind(bind)?;
            socket.connect(addr).await?.into_std()
        })
        .unwrap_or_else(|e| panic!("connecting from {source}: {e}"));
    s.set_nonblocking(false).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    s
}

/// One request from `source` on a fresh connection (`Connection: close`).
pub fn request_from(source: &str, addr: SocketAddr, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Reply {
    let mut s = connect_from(source, addr);
    let mut head = format!("{method} {path} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\ncontent-length: {}\r\n", body.len());
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    // One write, as HTTP clients send a small request: the body comes with its head.
    let mut whole = head.into_bytes();
    whole.extend_from_slice(body);
    s.write_all(&whole).unwrap();
    read_reply(&mut s)
}

/// Everything the host answers until it closes the connection, parsed
/// (panics when it closed without an answer).
pub fn read_reply(s: &mut TcpStream) -> Reply {
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    parse(&raw).unwrap_or_else(|| panic!("no answer: {:?}", String::from_utf8_lossy(&raw)))
}

/// A response with a `content-length` body (what the host answers).
pub fn parse(raw: &[u8]) -> Option<Reply> {
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.split("\r\n");
    let status = lines.next()?.split(' ').nth(1)?.parse().ok()?;
    let headers = lines.filter_map(|l| l.split_once(':')).map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string())).collect();
    Some(Reply { status, headers, body: raw[split + 4..].to_vec() })
}
