//! Size limits, checked before anything is parsed: the header section, the
//! path, the declared body size (before a byte of the body is read), and the
//! host-wide budget of body bytes in flight ([`BodyBudget`]).
//!
//! # The memory a request can hold, bounded
//!
//! A request's headers are bounded by [`Limits::header_bytes`] (the host's
//! HTTP parser refuses a larger header section before it reaches a
//! component; the door checks each value again). Its body is read only when
//! its declared size fits [`Limits::body_bytes`], and only while the host's
//! [`BodyBudget`] can hold it: every body, declared or not, takes from the
//! budget chunk by chunk as the bytes arrive, and is refused the moment it
//! would pass either bound. So the bytes of bodies buffered at once never
//! exceed the budget, whatever the number of connections, and no request is
//! read past its own limit. A declared size reserves nothing: a connection
//! that declares a large body and sends nothing holds none of the budget
//! (the host cuts it off by its address's cap on bodies and the minimum
//! rate a body must keep, see [`crate::peers`]).

use crate::refusal::{Code, Refusal};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The size limits of one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Headers in one request.
    pub headers: usize,
    /// Bytes of all header names and values together.
    pub header_bytes: usize,
    /// Bytes of one header value.
    pub header_value_bytes: usize,
    /// Bytes of the path and query.
    pub uri_bytes: usize,
    /// Bytes of one request body (the `max_body_bytes` variable).
    pub body_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { headers: 64, header_bytes: 32 * 1024, header_value_bytes: 8 * 1024, uri_bytes: 8 * 1024, body_bytes: 4 << 20 }
    }
}

impl Limits {
    /// Checks the header section: count, total bytes, each value.
    pub fn check_headers<'a>(&self, headers: impl IntoIterator<Item = (&'a str, &'a [u8])>) -> Result<(), Refusal> {
        let (mut count, mut total) = (0usize, 0usize);
        for (name, value) in headers {
            count += 1;
            total += name.len() + value.len();
            if value.len() > self.header_value_bytes {
                return Err(Refusal::new(
                    Code::HeaderTooLarge,
                    format!("the {name} header is {} bytes; at most {} are accepted", value.len(), self.header_value_bytes),
                ));
            }
        }
        if count > self.headers {
            return Err(Refusal::new(Code::HeaderTooLarge, format!("{count} headers; at most {} are accepted", self.headers)));
        }
        if total > self.header_bytes {
            return Err(Refusal::new(Code::HeaderTooLarge, format!("the headers are {total} bytes; at most {} are accepted", self.header_bytes)));
        }
        Ok(())
    }

    /// Checks the length of the path and query.
    pub fn check_uri(&self, path_and_query: &str) -> Result<(), Refusal> {
        if path_and_query.len() > self.uri_bytes {
            return Err(Refusal::new(
                Code::UriTooLong,
                format!("the path and query are {} bytes; at most {} are accepted", path_and_query.len(), self.uri_bytes),
            ));
        }
        Ok(())
    }

    /// Checks a declared body size (`Content-Length`) before the body is
    /// read: `Ok(Some(n))` for a declared size that fits, `Ok(None)` when
    /// none is declared (the body is then counted as it arrives).
    pub fn check_declared(&self, content_length: Option<&[u8]>) -> Result<Option<usize>, Refusal> {
        let Some(raw) = content_length else { return Ok(None) };
        let n: usize = std::str::from_utf8(raw)
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .ok_or_else(|| Refusal::new(Code::BodyTooLarge, "the content-length header is not a number of bytes"))?;
        self.check_body(n)?;
        Ok(Some(n))
    }

    /// Checks a body size (declared, or read so far).
    pub fn check_body(&self, n: usize) -> Result<(), Refusal> {
        if n > self.body_bytes {
            return Err(too_large(n, self.body_bytes));
        }
        Ok(())
    }
}

fn too_large(n: usize, max: usize) -> Refusal {
    Refusal::new(Code::BodyTooLarge, format!("the request body is {n} bytes or more; at most {max} are accepted: send less, or split the change"))
}

/// The host-wide budget of request-body bytes held in memory at once.
///
/// A request takes its bytes as they arrive ([`BodyBudget::take`] of what
/// arrived, then [`Taken::grow`] per chunk) and gives them back when its
/// [`Taken`] is dropped (when the request is done with its body). The
/// sum of everything taken never exceeds the total: [`BodyBudget::take`]
/// only ever moves the count with a compare-and-swap that keeps it at or
/// under the total.
#[derive(Debug, Clone)]
pub struct BodyBudget {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    total: usize,
    used: AtomicUsize,
}

impl BodyBudget {
    /// A budget of `total` bytes.
    pub fn new(total: usize) -> Self {
        BodyBudget { inner: Arc::new(Inner { total, used: AtomicUsize::new(0) }) }
    }

    /// Bytes taken now.
    pub fn used(&self) -> usize {
        self.inner.used.load(Ordering::Acquire)
    }

    /// The whole budget.
    pub fn total(&self) -> usize {
        self.inner.total
    }

    /// Takes `n` bytes, or refuses with 503 `busy` when the budget cannot
    /// hold them now.
    pub fn take(&self, n: usize) -> Result<Taken, Refusal> {
        let mut taken = Taken { budget: self.clone(), bytes: 0 };
        taken.grow(n)?;
        Ok(taken)
    }
}

/// Bytes taken from a [`BodyBudget`], given back on drop.
#[derive(Debug)]
pub struct Taken {
    budget: BodyBudget,
    bytes: usize,
}

impl Taken {
    /// Takes `n` more bytes for the same request (a body arriving in chunks).
    pub fn grow(&mut self, n: usize) -> Result<(), Refusal> {
        let inner = &self.budget.inner;
        let mut used = inner.used.load(Ordering::Acquire);
        loop {
            let next = used
                .checked_add(n)
                .filter(|next| *next <= inner.total)
                .ok_or_else(|| Refusal::new(Code::Busy, "this host is reading as many request bodies as it can hold; retry shortly").retry_after(1))?;
            match inner.used.compare_exchange_weak(used, next, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => break,
                Err(now) => used = now,
            }
        }
        self.bytes += n;
        assert!(self.budget.used() <= inner.total, "the body budget is never overdrawn");
        Ok(())
    }

    /// Bytes this request holds.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

impl Drop for Taken {
    fn drop(&mut self) {
        self.budget.inner.used.fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_declared_size_over_the_limit_is_refused_before_reading() {
        let l = Limits { body_bytes: 100, ..Limits::default() };
        assert_eq!(l.check_declared(Some(b"100")).unwrap(), Some(100));
        assert_eq!(l.check_declared(None).unwrap(), None);
        let r = l.check_declared(Some(b"101")).unwrap_err();
        assert_eq!((r.code, r.status()), (Code::BodyTooLarge, 413));
        assert!(r.message.contains("100"), "{}", r.message);
        assert_eq!(l.check_declared(Some(b"lots")).unwrap_err().code, Code::BodyTooLarge);
    }

    #[test]
    fn header_limits_name_the_header() {
        let l = Limits { header_value_bytes: 10, header_bytes: 30, headers: 3, ..Limits::default() };
        assert!(l.check_headers([("origin", &b"http://a"[..])]).is_ok());
        let r = l.check_headers([("origin", &b"http://aaaaaaaaaaa"[..])]).unwrap_err();
        assert_eq!(r.status(), 431);
        assert!(r.message.contains("origin"), "{}", r.message);
        assert!(l.check_headers([("a", &b"1"[..]); 4]).is_err(), "too many headers");
        assert!(l.check_headers([("aaaaaaaaaa", &b"1234567890"[..]); 2]).is_err(), "too many bytes in all");
        assert_eq!(Limits { uri_bytes: 4, ..l }.check_uri("/abcd").unwrap_err().status(), 414);
    }

    #[test]
    fn the_budget_is_never_overdrawn_and_comes_back_on_drop() {
        let b = BodyBudget::new(100);
        let mut a = b.take(60).unwrap();
        assert_eq!(b.take(41).unwrap_err().code, Code::Busy);
        let c = b.take(40).unwrap();
        assert_eq!(b.used(), 100);
        assert!(a.grow(1).is_err(), "a chunk that does not fit is refused");
        drop(c);
        a.grow(40).unwrap();
        assert_eq!((a.bytes(), b.used()), (100, 100));
        drop(a);
        assert_eq!(b.used(), 0);
    }

    #[test]
    fn many_threads_never_overdraw_the_budget() {
        let b = BodyBudget::new(1000);
        let peak = Arc::new(AtomicUsize::new(0));
        std::thread::scope(|s| {
            for _ in 0..8 {
                let (b, peak) = (b.clone(), peak.clone());
                s.spawn(move || {
                    for i in 0..2000 {
                        if let Ok(t) = b.take(1 + i % 300) {
                            peak.fetch_max(b.used(), Ordering::Relaxed);
                            drop(t);
                        }
                    }
                });
            }
        });
        assert!(peak.load(Ordering::Relaxed) <= 1000);
        assert_eq!(b.used(), 0);
    }
}
