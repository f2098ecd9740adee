//! FTP data-connection expectations, shared by every worker.
//!
//! An FTP control connection announces where its data connection will go (`227`/`229` replies, `PORT`/`EPRT`
//! commands). The data connection is a different flow, usually in another bundle and so possibly on another worker,
//! so the announcement goes through this one shared table: `(listener address, port) → (peer address, when)`. It
//! is small (bounded by [`EngineConfig::max_expectations`](crate::EngineConfig), oldest replaced first, counted) and
//! guarded by a mutex that is taken only when an FTP parser announces a connection or when a new flow is created
//! while the table holds anything (an atomic count is checked first), never per packet.
//!
//! ## Determinism
//! The engine looks a flow up when it is created and again when its record is written. In a single-threaded run the
//! announcement always precedes the data connection's first packet. In a parallel run the control connection's
//! reply may still be waiting in another worker's queue when the data connection's first packet is inspected; the
//! second lookup, at the end of the data flow, then finds it (the announcement came a whole data transfer earlier in
//! capture time), so flow records are the same for any thread count (the decision is recorded at the flow's first
//! packet either way: the announcement preceded it). What the first lookup decides early can differ: the label
//! content rules see while the flow is open, the label in per-packet cost records, and when `l7aff` is told the
//! connection is classified. Entries are never consumed by a lookup (a second data connection to the same endpoint finds it too), so
//! the order of lookups does not matter; only eviction under the cap depends on timing, and it is counted.
//!
//! ## Files
//! A transfer command (`STOR`, `RETR`, ...) names the file of the data connection announced last
//! ([`Expectations::name_file`]); the data connection reads it when it ends ([`Expectations::file`]), a whole
//! transfer after the command in capture time, so in any run. A data connection keeps its file's bytes only when
//! the first lookup found it: a parallel run in which the announcement was still queued behind the data
//! connection's first packet labels the connection at its end but has no bytes to inspect (not seen in the
//! captures the parallel tests run, where the reply precedes the connection by a round trip).

use std::collections::VecDeque;
use std::net::IpAddr;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};

use flowbundle_protocols::ftp::data::Transfer;
use hashbrown::HashMap;

/// One expected data connection.
#[derive(Debug)]
struct Entry {
    peer: IpAddr,
    /// Capture time of the announcement.
    at: u64,
    /// The file the last transfer command over it named.
    file: Option<Transfer>,
}

#[derive(Debug, Default)]
struct Inner {
    /// (listener ip, port) → what is expected there.
    map: HashMap<(IpAddr, u16), Entry>,
    /// Insertion order, for replacing the oldest.
    order: VecDeque<(IpAddr, u16)>,
}

/// The shared expectation table. See the module documentation.
#[derive(Debug)]
pub struct Expectations {
    inner: Mutex<Inner>,
    len: AtomicUsize,
    cap: usize,
    ttl_ns: u64,
    added: AtomicU64,
    replaced: AtomicU64,
    matched: AtomicU64,
}

impl Expectations {
    pub fn new(cap: usize, ttl_ns: u64) -> Self {
        Expectations {
            inner: Mutex::new(Inner::default()),
            len: AtomicUsize::new(0),
            cap: cap.max(1),
            ttl_ns,
            added: AtomicU64::new(0),
            replaced: AtomicU64::new(0),
            matched: AtomicU64::new(0),
        }
    }

    /// A data connection to `listener:port` from `peer` is expected, announced at capture time `ts_ns`.
    pub fn add(&self, listener: IpAddr, port: u16, peer: IpAddr, ts_ns: u64) {
        let mut g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let k = (listener, port);
        let e = Entry {
            peer,
            at: ts_ns,
            file: None,
        };
        if g.map.insert(k, e).is_none() {
            g.order.push_back(k);
            while g.map.len() > self.cap {
                let Some(old) = g.order.pop_front() else {
                    break;
                };
                if g.map.remove(&old).is_some() {
                    self.replaced.fetch_add(1, Relaxed);
                }
            }
        }
        self.len.store(g.map.len(), Relaxed);
        self.added.fetch_add(1, Relaxed);
    }

    /// A transfer command named `file` for the data connection to `listener:port` from `peer` (announced
    /// earlier); nothing when that announcement is gone (replaced under the cap).
    pub fn name_file(&self, listener: IpAddr, port: u16, peer: IpAddr, file: Transfer) {
        if self.len.load(Relaxed) == 0 {
            return;
        }
        let mut g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(e) = g.map.get_mut(&(listener, port))
            && e.peer == peer
        {
            e.file = Some(file);
        }
    }

    /// Runs `f` on the entry a flow between `(a, a_port)` and `(b, b_port)` starting at `ts_ns` matches: one end
    /// is an expected listener, the other its peer, and the announcement is at most the TTL older than the flow.
    fn find<R>(
        &self,
        (a, a_port): (IpAddr, u16),
        (b, b_port): (IpAddr, u16),
        ts_ns: u64,
        f: impl FnOnce(&Entry) -> R,
    ) -> Option<R> {
        if self.len.load(Relaxed) == 0 {
            return None;
        }
        let g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let hit = |listener: IpAddr, port: u16, peer: IpAddr| {
            g.map
                .get(&(listener, port))
                .filter(|e| e.peer == peer && ts_ns >= e.at && ts_ns - e.at <= self.ttl_ns)
        };
        hit(a, a_port, b).or_else(|| hit(b, b_port, a)).map(f)
    }

    /// Whether a flow between `(a, a_port)` and `(b, b_port)` starting at `ts_ns` was announced (see `find`).
    pub fn lookup(&self, a: IpAddr, a_port: u16, b: IpAddr, b_port: u16, ts_ns: u64) -> bool {
        let found = self.find((a, a_port), (b, b_port), ts_ns, |_| ()).is_some();
        if found {
            self.matched.fetch_add(1, Relaxed);
        }
        found
    }

    /// The file a transfer command named for the announced flow between `(a, a_port)` and `(b, b_port)` starting
    /// at `ts_ns`, if any.
    pub fn file(&self, a: (IpAddr, u16), b: (IpAddr, u16), ts_ns: u64) -> Option<Transfer> {
        self.find(a, b, ts_ns, |e| e.file.clone()).flatten()
    }

    /// (announcements added, entries replaced under the cap, lookups that matched).
    pub fn counters(&self) -> (u64, u64, u64) {
        (
            self.added.load(Relaxed),
            self.replaced.load(Relaxed),
            self.matched.load(Relaxed),
        )
    }

    /// Pending expectations.
    pub fn len(&self) -> usize {
        self.len.load(Relaxed)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_either_orientation_within_the_ttl_and_caps() {
        let e = Expectations::new(2, 100);
        let (srv, cli): (IpAddr, IpAddr) =
            ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        assert!(!e.lookup(cli, 5000, srv, 2020, 10));
        e.add(srv, 2020, cli, 10);
        assert!(e.lookup(cli, 5000, srv, 2020, 50));
        assert!(e.lookup(srv, 2020, cli, 5000, 50));
        assert!(!e.lookup(cli, 5000, srv, 2021, 50), "other port");
        assert!(!e.lookup(srv, 2020, cli, 5000, 200), "expired");
        assert!(
            !e.lookup(srv, 2020, cli, 5000, 5),
            "before the announcement"
        );
        e.add(srv, 1, cli, 10);
        e.add(srv, 2, cli, 10);
        assert_eq!(e.len(), 2);
        assert!(!e.lookup(cli, 5000, srv, 2020, 50), "oldest replaced");
        assert_eq!(e.counters().1, 1);
    }

    #[test]
    fn a_transfer_names_the_file_of_its_announced_connection() {
        let e = Expectations::new(4, 100);
        let (srv, cli): (IpAddr, IpAddr) =
            ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        let stor = |name: &[u8]| Transfer {
            command: "STOR",
            filename: name.into(),
        };
        e.add(srv, 2020, cli, 10);
        assert_eq!(e.file((cli, 5000), (srv, 2020), 50), None, "no command yet");
        // Another peer, or a connection never announced: not named.
        e.name_file(srv, 2020, srv, stor(b"x"));
        e.name_file(srv, 2021, cli, stor(b"x"));
        assert_eq!(e.file((cli, 5000), (srv, 2020), 50), None);
        e.name_file(srv, 2020, cli, stor(b"a.bin"));
        e.name_file(srv, 2020, cli, stor(b"b.bin"));
        assert_eq!(
            e.file((srv, 2020), (cli, 5000), 50),
            Some(stor(b"b.bin")),
            "the last command names it, either orientation"
        );
        assert_eq!(e.file((cli, 5000), (srv, 2020), 500), None, "expired");
        // A new announcement of the same endpoint starts unnamed.
        e.add(srv, 2020, cli, 60);
        assert_eq!(e.file((cli, 5000), (srv, 2020), 70), None);
    }
}
