//! FTP data-connection expectations, shared by every worker.
//!
//! An FTP control connection announces where its data connection will go (`227`/`229` replies, `PORT`/`EPRT`
//! commands). The data connection is a different flow, usually in another bundle and so possibly on another worker,
//! so the announcement goes through this one shared table: `(listener address, port) → (peer address, when)`. It
//! is small (bounded by [`EngineConfig::max_expectations`](crate::EngineConfig), oldest replaced first, counted) and
//! guarded by a mutex that is taken only when an FTP parser announces a connection or when a new flow is created
//! while the table holds anything and one of its ports was announced (an atomic count and a bit per port are
//! checked first), never per packet.
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
//! ## Positions
//! When every worker reads the input ([`crate::EachReads`]), each applies the announcements of its own packets at
//! its own pace, and a worker that reaches a sweep ends its timed-out flows without waiting for the others to get
//! there (see that module). What the single-threaded run's lookup at that sweep saw is the table after every packet
//! before the sweep and none after it: another worker may be behind (an announcement before the sweep not yet
//! applied) or ahead (a later announcement for the same endpoint, or a later transfer command, already applied).
//! So, there ([`Expectations::track_positions`]), every change is kept with the input position of what made it
//! (`2n + 1` for packet `n`, `2n + 2` for the sweep after it; [`crate::WorkerCtx`]), and a lookup at position `p`
//! sees the table as the changes below `p` made it, in position order, whatever order they came in: the
//! single-threaded run's table at that point, once every worker has applied its changes below `p` (the runtime
//! ends a sweep's flows only then). Changes below the position every lookup still to come is at or after
//! ([`Expectations::advance`]: the slowest worker's) are folded into one entry, so what is kept is bounded by the
//! workers' window. Without tracking (the single-threaded loop, the reader thread's runs, whose sweeps wait for
//! every packet before them and let none after them start) each change applies at once.
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
#[derive(Debug, Clone)]
struct Entry {
    peer: IpAddr,
    /// Capture time of the announcement.
    at: u64,
    /// The file the last transfer command over it named.
    file: Option<Transfer>,
}

/// A change to one endpoint's expectation, at an input position (see "Positions" in the module documentation).
#[derive(Debug)]
enum Change {
    /// A new announcement: replaces what was expected there.
    Announced { peer: IpAddr, at: u64 },
    /// A transfer command named the file of the connection from `peer`.
    Named { peer: IpAddr, file: Transfer },
}

impl Change {
    fn apply(self, e: &mut Option<Entry>) {
        match self {
            Change::Announced { peer, at } => {
                *e = Some(Entry {
                    peer,
                    at,
                    file: None,
                })
            }
            Change::Named { peer, file } => {
                if let Some(e) = e.as_mut()
                    && e.peer == peer
                {
                    e.file = Some(file);
                }
            }
        }
    }
}

/// What is expected at one endpoint: the state every lookup still to come sees, and the changes made at later
/// positions, in position order (empty unless positions are tracked).
#[derive(Debug, Default)]
struct Slot {
    base: Option<Entry>,
    changes: Vec<(u64, Change)>,
}

impl Slot {
    /// Adds `c`, made at position `at`, in position order; folds into the base every change below `floor`.
    fn change(&mut self, at: u64, c: Change, floor: u64) {
        if floor == u64::MAX {
            c.apply(&mut self.base);
            return;
        }
        let i = self.changes.partition_point(|&(p, _)| p <= at);
        self.changes.insert(i, (at, c));
        let old = self.changes.partition_point(|&(p, _)| p < floor);
        for (_, c) in self.changes.drain(..old) {
            c.apply(&mut self.base);
        }
    }

    /// The entry as of position `at`: the base with every change made below `at`.
    fn as_of(&self, at: u64) -> Option<(IpAddr, u64, Option<&Transfer>)> {
        let mut cur = self.base.as_ref().map(|e| (e.peer, e.at, e.file.as_ref()));
        for (p, c) in &self.changes {
            if *p >= at {
                break;
            }
            match c {
                Change::Announced { peer, at } => cur = Some((*peer, *at, None)),
                Change::Named { peer, file } => {
                    if let Some(e) = cur.as_mut()
                        && e.0 == *peer
                    {
                        e.2 = Some(file);
                    }
                }
            }
        }
        cur
    }
}

#[derive(Debug, Default)]
struct Inner {
    /// (listener ip, port) → what is expected there.
    map: HashMap<(IpAddr, u16), Slot>,
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
    /// Positions below it are folded into each endpoint's base; `u64::MAX` (the default): positions are not
    /// tracked, every change applies at once and every lookup sees the latest state.
    floor: AtomicU64,
    added: AtomicU64,
    replaced: AtomicU64,
    matched: AtomicU64,
    /// One bit per port, set when a connection to that port was announced (never cleared): a new flow neither of
    /// whose ports was ever announced is looked up without the mutex. Without it every flow created while the table
    /// held anything took the mutex, whose line every worker creating flows wrote in turn.
    ports: Box<[AtomicU64]>,
}

impl Expectations {
    pub fn new(cap: usize, ttl_ns: u64) -> Self {
        Expectations {
            inner: Mutex::new(Inner::default()),
            len: AtomicUsize::new(0),
            cap: cap.max(1),
            ttl_ns,
            floor: AtomicU64::new(u64::MAX),
            added: AtomicU64::new(0),
            replaced: AtomicU64::new(0),
            matched: AtomicU64::new(0),
            ports: (0..1024).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// Whether a connection to `port` was ever announced. A lookup that needs an announcement changed before it
    /// (at a lower input position) sees its bit: the runtime orders those changes before the lookup (see
    /// "Positions"), and the bit is set before the change.
    #[inline]
    fn announced_port(&self, port: u16) -> bool {
        let (w, b) = (usize::from(port >> 6), 1u64 << (port & 63));
        self.ports[w].load(Relaxed) & b != 0
    }

    /// Keeps each change with its input position from now on, so that a lookup sees the table as of its own
    /// position (see "Positions" in the module documentation). Call before any change, when every worker reads the
    /// input ([`crate::EachReads`]).
    pub fn track_positions(&self) {
        self.floor.store(0, Relaxed);
    }

    /// Every lookup still to come is at position `at` or later: the changes below it may be folded together.
    pub fn advance(&self, at: u64) {
        // Every worker calls this every few packets with about the same position: the line is written only when
        // the floor rises.
        let at = at.min(u64::MAX - 1);
        let floor = self.floor.load(Relaxed);
        if floor != u64::MAX && at > floor {
            self.floor.fetch_max(at, Relaxed);
        }
    }

    /// A data connection to `listener:port` from `peer` is expected, announced at capture time `ts_ns` by input
    /// position `at`.
    pub fn add(&self, listener: IpAddr, port: u16, peer: IpAddr, ts_ns: u64, at: u64) {
        let floor = self.floor.load(Relaxed);
        if !self.announced_port(port) {
            let (w, b) = (usize::from(port >> 6), 1u64 << (port & 63));
            self.ports[w].fetch_or(b, Relaxed);
        }
        let mut g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let k = (listener, port);
        let c = Change::Announced { peer, at: ts_ns };
        match g.map.get_mut(&k) {
            Some(slot) => slot.change(at, c, floor),
            None => {
                let mut slot = Slot::default();
                slot.change(at, c, floor);
                g.map.insert(k, slot);
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
        }
        self.len.store(g.map.len(), Relaxed);
        self.added.fetch_add(1, Relaxed);
    }

    /// A transfer command at input position `at` named `file` for the data connection to `listener:port` from
    /// `peer` (announced earlier); nothing when that announcement is gone (replaced under the cap).
    pub fn name_file(&self, listener: IpAddr, port: u16, peer: IpAddr, file: Transfer, at: u64) {
        if self.len.load(Relaxed) == 0 {
            return;
        }
        let floor = self.floor.load(Relaxed);
        let mut g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(slot) = g.map.get_mut(&(listener, port)) {
            slot.change(at, Change::Named { peer, file }, floor);
        }
    }

    /// Runs `f` on the entry, as of input position `at`, that a flow between `(a, a_port)` and `(b, b_port)`
    /// starting at `ts_ns` matches: one end is an expected listener, the other its peer, and the announcement is at
    /// most the TTL older than the flow.
    fn find<R>(
        &self,
        (a, a_port): (IpAddr, u16),
        (b, b_port): (IpAddr, u16),
        ts_ns: u64,
        at: u64,
        f: impl FnOnce(Option<&Transfer>) -> R,
    ) -> Option<R> {
        if self.len.load(Relaxed) == 0
            || !(self.announced_port(a_port) || self.announced_port(b_port))
        {
            return None;
        }
        let g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let hit = |listener: IpAddr, port: u16, peer: IpAddr| {
            g.map
                .get(&(listener, port))
                .and_then(|s| s.as_of(at))
                .filter(|&(p, when, _)| p == peer && ts_ns >= when && ts_ns - when <= self.ttl_ns)
        };
        hit(a, a_port, b)
            .or_else(|| hit(b, b_port, a))
            .map(|(_, _, file)| f(file))
    }

    /// Whether a flow between `(a, a_port)` and `(b, b_port)` starting at `ts_ns` was announced, as of input
    /// position `at` (see `find`).
    pub fn lookup(
        &self,
        a: IpAddr,
        a_port: u16,
        b: IpAddr,
        b_port: u16,
        ts_ns: u64,
        at: u64,
    ) -> bool {
        let found = self
            .find((a, a_port), (b, b_port), ts_ns, at, |_| ())
            .is_some();
        if found {
            self.matched.fetch_add(1, Relaxed);
        }
        found
    }

    /// The file a transfer command named for the announced flow between `(a, a_port)` and `(b, b_port)` starting
    /// at `ts_ns`, as of input position `at`, if any.
    pub fn file(
        &self,
        a: (IpAddr, u16),
        b: (IpAddr, u16),
        ts_ns: u64,
        at: u64,
    ) -> Option<Transfer> {
        self.find(a, b, ts_ns, at, |f| f.cloned()).flatten()
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

    /// Any position: without tracking, positions are not read.
    const NOW: u64 = u64::MAX;

    #[test]
    fn matches_either_orientation_within_the_ttl_and_caps() {
        let e = Expectations::new(2, 100);
        let (srv, cli): (IpAddr, IpAddr) =
            ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        assert!(!e.lookup(cli, 5000, srv, 2020, 10, NOW));
        e.add(srv, 2020, cli, 10, 1);
        assert!(e.lookup(cli, 5000, srv, 2020, 50, NOW));
        assert!(e.lookup(srv, 2020, cli, 5000, 50, NOW));
        assert!(!e.lookup(cli, 5000, srv, 2021, 50, NOW), "other port");
        assert!(!e.lookup(srv, 2020, cli, 5000, 200, NOW), "expired");
        assert!(
            !e.lookup(srv, 2020, cli, 5000, 5, NOW),
            "before the announcement"
        );
        e.add(srv, 1, cli, 10, 2);
        e.add(srv, 2, cli, 10, 3);
        assert_eq!(e.len(), 2);
        assert!(!e.lookup(cli, 5000, srv, 2020, 50, NOW), "oldest replaced");
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
        e.add(srv, 2020, cli, 10, 1);
        assert_eq!(
            e.file((cli, 5000), (srv, 2020), 50, NOW),
            None,
            "no command yet"
        );
        // Another peer, or a connection never announced: not named.
        e.name_file(srv, 2020, srv, stor(b"x"), 2);
        e.name_file(srv, 2021, cli, stor(b"x"), 3);
        assert_eq!(e.file((cli, 5000), (srv, 2020), 50, NOW), None);
        e.name_file(srv, 2020, cli, stor(b"a.bin"), 4);
        e.name_file(srv, 2020, cli, stor(b"b.bin"), 5);
        assert_eq!(
            e.file((srv, 2020), (cli, 5000), 50, NOW),
            Some(stor(b"b.bin")),
            "the last command names it, either orientation"
        );
        assert_eq!(e.file((cli, 5000), (srv, 2020), 500, NOW), None, "expired");
        // A new announcement of the same endpoint starts unnamed.
        e.add(srv, 2020, cli, 60, 6);
        assert_eq!(e.file((cli, 5000), (srv, 2020), 70, NOW), None);
    }

    /// With positions tracked, a lookup sees the table as the single-threaded run had it at the lookup's position,
    /// whatever order the changes came in (as when workers reading the input apply them at their own pace).
    #[test]
    fn a_lookup_sees_the_table_as_of_its_position_whatever_order_the_changes_came_in() {
        let (srv, cli, other): (IpAddr, IpAddr, IpAddr) = (
            "10.0.0.1".parse().unwrap(),
            "10.0.0.2".parse().unwrap(),
            "10.0.0.3".parse().unwrap(),
        );
        let stor = |name: &[u8]| Transfer {
            command: "STOR",
            filename: name.into(),
        };
        // Announced at position 10 (capture time 100), named at 12, announced again at 30 (time 300) for another
        // peer, named again at 31: applied in every order.
        type Step = fn(&Expectations, IpAddr, IpAddr, IpAddr);
        let steps: [Step; 4] = [
            |e, srv, cli, _| e.add(srv, 2020, cli, 100, 10),
            |e, srv, cli, _| {
                e.name_file(
                    srv,
                    2020,
                    cli,
                    Transfer {
                        command: "STOR",
                        filename: b"a.bin".as_slice().into(),
                    },
                    12,
                )
            },
            |e, srv, _, other| e.add(srv, 2020, other, 300, 30),
            |e, srv, _, other| {
                e.name_file(
                    srv,
                    2020,
                    other,
                    Transfer {
                        command: "RETR",
                        filename: b"b.bin".as_slice().into(),
                    },
                    31,
                )
            },
        ];
        let orders: [[usize; 4]; 4] = [[0, 1, 2, 3], [2, 3, 0, 1], [0, 2, 1, 3], [2, 0, 3, 1]];
        for order in orders {
            let e = Expectations::new(8, 1_000);
            e.track_positions();
            // Each endpoint is announced before it is named (a name for an endpoint with nothing announced is
            // dropped, as the single-threaded run drops it).
            for k in order {
                steps[k](&e, srv, cli, other);
            }
            let what = format!("order {order:?}");
            assert!(
                !e.lookup(cli, 5000, srv, 2020, 150, 10),
                "{what}: not yet announced at 10"
            );
            assert!(e.lookup(cli, 5000, srv, 2020, 150, 11), "{what}");
            assert_eq!(e.file((cli, 5000), (srv, 2020), 150, 12), None, "{what}");
            assert_eq!(
                e.file((cli, 5000), (srv, 2020), 150, 13),
                Some(stor(b"a.bin")),
                "{what}"
            );
            assert!(
                e.lookup(cli, 5000, srv, 2020, 150, 30),
                "{what}: the first announcement until 30"
            );
            assert!(
                !e.lookup(cli, 5000, srv, 2020, 150, 31),
                "{what}: replaced at 30"
            );
            assert!(e.lookup(other, 5000, srv, 2020, 350, 31), "{what}");
            assert_eq!(
                e.file((other, 5000), (srv, 2020), 350, 32)
                    .map(|t| t.command),
                Some("RETR"),
                "{what}"
            );
            // Once every lookup to come is at 31 or later, what came before is folded: the same answers.
            e.advance(31);
            e.name_file(srv, 2020, cli, stor(b"c.bin"), 40);
            assert!(e.lookup(other, 5000, srv, 2020, 350, 31), "{what}: folded");
            assert!(!e.lookup(cli, 5000, srv, 2020, 150, 31), "{what}: folded");
            assert_eq!(
                e.file((other, 5000), (srv, 2020), 350, 32)
                    .map(|t| t.command),
                Some("RETR"),
                "{what}"
            );
        }
    }
}
