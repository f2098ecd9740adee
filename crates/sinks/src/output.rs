//! # Where EVE lines go: Suricata's `eve-log` filetypes
//!
//! Suricata's `eve-log` output writes to a `regular` file, to a Unix socket (`unix_dgram`, `unix_stream`, connecting
//! to a listener at `filename`) or to Redis (`redis`: a list by `LPUSH`/`RPUSH`, or a channel by `PUBLISH`, with
//! `server`, `port`, `key` and `mode` as Suricata's `redis:` settings name them). [`EveOutput`] is that, as one
//! `io::Write` the EVE writer writes whole lines to.
//!
//! **Regular files** are opened for appending (as Suricata does: a sensor's log is read while it grows and rotated
//! under it) and [`EveOutput::reopen`] closes and opens the path again, which is what logrotate's `postrotate`
//! SIGHUP asks for: after the rename, new lines go to a new file of the old name. A write error on a file is
//! returned (the run stops with it, as for any output file).
//!
//! **Sockets and Redis never hold the sensor up.** Lines go into a bounded queue ([`QUEUE_LINES`]) that one shipping
//! thread empties in batches (one `send` per line for a datagram socket, one write per batch for a stream socket,
//! one pipelined round trip per batch for Redis), with write timeouts. The policy, decided here and counted:
//! * the queue full (the receiver slower than the events): the new line is **dropped** (`dropped`), the writer never
//!   waits;
//! * the receiver gone or failing (no listener, connection refused or reset, Redis down, a timeout): the batch is
//!   **lost** (`lost`), the error counted and said once on standard error; the thread tries again at most once a
//!   second, dropping what comes meanwhile, and says when it is back (`reconnects`);
//! * at the end of the run the queue is shipped for at most [`Waits::finish`] (default [`FINISH_WAIT`]); what is
//!   left then is lost, counted.
//!
//! The waits ([`Waits`]: connect and write timeout, end-of-run wait) are configurable (`inspect --eve-write-timeout`,
//! `--eve-finish-timeout`, or the eve-log output's `write-timeout` and `finish-timeout` keys): Suricata's `eve-log`
//! has no such settings (its Redis client blocks, its sockets are written without a timeout), so the keys are
//! flowbundle's own.
//!
//! Nothing here panics or blocks on the receiver; the counters ([`OutputCounters`]) go to the summary.
//!
//! Redis is reached through the `redis` crate (its synchronous connection, no async runtime): a maintained client
//! rather than a hand-written RESP writer, as the project's rule on dependencies asks.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError, sync_channel};
use std::time::{Duration, Instant};

/// Lines the shipping queue holds (about 30 MB of typical EVE lines at most).
pub const QUEUE_LINES: usize = 65_536;
/// Lines shipped in one batch.
const BATCH: usize = 512;
/// How long the end of a run waits for the queue to be shipped, by default.
pub const FINISH_WAIT: Duration = Duration::from_secs(5);
/// Connect and write timeouts of a socket or Redis connection, by default.
pub const IO_TIMEOUT: Duration = Duration::from_secs(2);
/// The longest wait [`Waits::parse_secs`] takes (an hour: a longer one is a typo, not a policy).
pub const MAX_WAIT: Duration = Duration::from_secs(3600);

/// How long a socket or Redis output waits for its receiver (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Waits {
    /// Connect, write (and Redis reply) timeout: a receiver that takes longer loses the batch, counted.
    pub io: Duration,
    /// How long the end of the run ships what is still queued before counting the rest as lost.
    pub finish: Duration,
}

impl Default for Waits {
    fn default() -> Self {
        Waits {
            io: IO_TIMEOUT,
            finish: FINISH_WAIT,
        }
    }
}

impl Waits {
    /// Reads a wait in seconds (`2`, `0.5`): a finite number above 0 and at most [`MAX_WAIT`]; the error says which
    /// value was refused and why. `what` names the setting in the message.
    pub fn parse_secs(what: &str, text: &str) -> Result<Duration, String> {
        let t = text.trim();
        let secs: f64 = t
            .strip_suffix('s')
            .unwrap_or(t)
            .trim()
            .parse()
            .map_err(|_| format!("{what}: {text:?} is not a number of seconds (e.g. 2 or 0.5)"))?;
        if !secs.is_finite() || secs <= 0.0 || secs > MAX_WAIT.as_secs_f64() {
            return Err(format!(
                "{what}: {text:?} is out of range (more than 0, at most {} seconds)",
                MAX_WAIT.as_secs()
            ));
        }
        // Below a microsecond a socket timeout rounds to zero, which the system reads as "wait forever".
        Ok(Duration::from_secs_f64(secs).max(Duration::from_micros(1)))
    }
}
/// Least time between two connection attempts.
const RETRY: Duration = Duration::from_secs(1);

/// How Redis receives the lines (Suricata's `redis.mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RedisMode {
    /// `LPUSH` to the list `key` (Suricata's default; `list` is its other name).
    Lpush,
    /// `RPUSH` to the list `key`.
    Rpush,
    /// `PUBLISH` on the channel `key` (`channel` is its other name).
    Publish,
}

impl RedisMode {
    /// The Redis command.
    pub fn command(self) -> &'static str {
        match self {
            RedisMode::Lpush => "LPUSH",
            RedisMode::Rpush => "RPUSH",
            RedisMode::Publish => "PUBLISH",
        }
    }
}

impl std::str::FromStr for RedisMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "list" | "lpush" => Ok(RedisMode::Lpush),
            "rpush" => Ok(RedisMode::Rpush),
            "channel" | "publish" => Ok(RedisMode::Publish),
            other => Err(format!(
                "redis mode {other:?}: one of list, lpush, rpush, channel, publish"
            )),
        }
    }
}

/// A Redis server and where on it the lines go (Suricata's `redis:` settings; defaults 127.0.0.1, 6379, `list`,
/// key `suricata`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedisTarget {
    pub server: String,
    pub port: u16,
    pub mode: RedisMode,
    pub key: String,
}

impl Default for RedisTarget {
    fn default() -> Self {
        RedisTarget {
            server: "127.0.0.1".into(),
            port: 6379,
            mode: RedisMode::Lpush,
            key: "suricata".into(),
        }
    }
}

/// Suricata's `eve-log` `filetype`s this output knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileType {
    Regular,
    UnixDgram,
    UnixStream,
    Redis,
}

impl FileType {
    /// The name in `suricata.yaml`.
    pub fn name(self) -> &'static str {
        match self {
            FileType::Regular => "regular",
            FileType::UnixDgram => "unix_dgram",
            FileType::UnixStream => "unix_stream",
            FileType::Redis => "redis",
        }
    }
}

impl std::str::FromStr for FileType {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "regular" | "file" => Ok(FileType::Regular),
            "unix_dgram" => Ok(FileType::UnixDgram),
            "unix_stream" => Ok(FileType::UnixStream),
            "redis" => Ok(FileType::Redis),
            "syslog" => Err("eve-log filetype syslog is not supported (regular, unix_dgram, unix_stream, redis)".into()),
            other => Err(format!(
                "eve-log filetype {other:?}: one of regular, unix_dgram, unix_stream, redis"
            )),
        }
    }
}

/// Where the lines go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// A file, appended to.
    Regular(PathBuf),
    /// A listening Unix datagram socket: one datagram per line.
    UnixDgram(PathBuf),
    /// A listening Unix stream socket: the lines as written to a file.
    UnixStream(PathBuf),
    Redis(RedisTarget),
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Regular(p) => write!(f, "{}", p.display()),
            Target::UnixDgram(p) => write!(f, "unix_dgram {}", p.display()),
            Target::UnixStream(p) => write!(f, "unix_stream {}", p.display()),
            Target::Redis(r) => write!(
                f,
                "redis {}:{} {} {}",
                r.server,
                r.port,
                r.mode.command(),
                r.key
            ),
        }
    }
}

/// What an output did, for the summary.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OutputCounters {
    /// The target, described.
    pub target: String,
    /// Lines handed on (written to the file, sent, pushed).
    pub written: u64,
    /// Lines dropped because the shipping queue was full.
    pub dropped: u64,
    /// Lines lost to a failed or absent receiver.
    pub lost: u64,
    /// Failed connections and sends.
    pub errors: u64,
    /// Connections made again after one failed.
    pub reconnects: u64,
    /// Times a regular file was reopened.
    pub reopens: u64,
}

/// An EVE output. See the module documentation.
pub struct EveOutput {
    target: Target,
    inner: Inner,
}

enum Inner {
    File {
        file: BufWriter<File>,
        lines: u64,
        reopens: u64,
    },
    Shipper(Shipper),
}

fn append(path: &Path) -> io::Result<File> {
    OpenOptions::new().create(true).append(true).open(path)
}

impl EveOutput {
    /// Opens `target`: a file is created or appended to (an error if it cannot be); a socket or Redis is connected
    /// to by the shipping thread, which says on standard error when it cannot. The default [`Waits`].
    pub fn open(target: Target) -> io::Result<EveOutput> {
        Self::open_with(target, Waits::default())
    }

    /// [`EveOutput::open`] with the given waits for a socket or Redis (a file does not wait).
    pub fn open_with(target: Target, waits: Waits) -> io::Result<EveOutput> {
        let inner = match &target {
            Target::Regular(p) => Inner::File {
                file: BufWriter::with_capacity(256 * 1024, append(p)?),
                lines: 0,
                reopens: 0,
            },
            other => Inner::Shipper(Shipper::start(other.clone(), waits)),
        };
        Ok(EveOutput { target, inner })
    }

    /// The target.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// A regular file: flushes and opens the path again (after logrotate renamed the file, a new one). Nothing for
    /// the other targets.
    pub fn reopen(&mut self) -> io::Result<()> {
        if let (Inner::File { file, reopens, .. }, Target::Regular(p)) =
            (&mut self.inner, &self.target)
        {
            file.flush()?;
            *file = BufWriter::with_capacity(256 * 1024, append(p)?);
            *reopens += 1;
        }
        Ok(())
    }

    /// The counters so far.
    pub fn counters(&self) -> OutputCounters {
        let mut c = match &self.inner {
            Inner::File { lines, reopens, .. } => OutputCounters {
                written: *lines,
                reopens: *reopens,
                ..OutputCounters::default()
            },
            Inner::Shipper(s) => s.counters(),
        };
        c.target = self.target.to_string();
        c
    }

    /// Flushes a file, or ships what is queued (for at most [`Waits::finish`]), and returns the counters.
    pub fn finish(mut self) -> io::Result<OutputCounters> {
        if let Inner::File { file, .. } = &mut self.inner {
            file.flush()?;
        }
        let target = self.target.to_string();
        let mut c = match self.inner {
            Inner::File { lines, reopens, .. } => OutputCounters {
                written: lines,
                reopens,
                ..OutputCounters::default()
            },
            Inner::Shipper(s) => s.finish(),
        };
        c.target = target;
        Ok(c)
    }
}

impl Write for EveOutput {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_all(buf)?;
        Ok(buf.len())
    }

    /// Whole lines (the EVE writer writes nothing else); a file counts them.
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match &mut self.inner {
            Inner::File { file, lines, .. } => {
                file.write_all(buf)?;
                *lines += memchr::memchr_iter(b'\n', buf).count() as u64;
                Ok(())
            }
            Inner::Shipper(s) => {
                s.queue(buf);
                Ok(())
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.inner {
            Inner::File { file, .. } => file.flush(),
            Inner::Shipper(_) => Ok(()),
        }
    }
}

#[derive(Default)]
struct Counters {
    written: AtomicU64,
    dropped: AtomicU64,
    lost: AtomicU64,
    errors: AtomicU64,
    reconnects: AtomicU64,
}

/// The shipping thread and its queue.
struct Shipper {
    tx: Option<SyncSender<Vec<u8>>>,
    counters: Arc<Counters>,
    /// Raised when the queue is to be shipped no longer (the end of the run waited long enough).
    give_up: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    finish_wait: Duration,
}

impl Shipper {
    fn start(target: Target, waits: Waits) -> Shipper {
        let (tx, rx) = sync_channel(QUEUE_LINES);
        let counters = Arc::new(Counters::default());
        let give_up = Arc::new(AtomicBool::new(false));
        let (c, g) = (Arc::clone(&counters), Arc::clone(&give_up));
        let thread = std::thread::Builder::new()
            .name("eve-output".into())
            .spawn(move || ship(target, waits.io, rx, &c, &g))
            .ok();
        Shipper {
            tx: thread.is_some().then_some(tx),
            counters,
            give_up,
            thread,
            finish_wait: waits.finish,
        }
    }

    /// Queues each whole line of `buf` (newline included), dropping what the full queue cannot take.
    fn queue(&mut self, buf: &[u8]) {
        let Some(tx) = &self.tx else {
            let n = memchr::memchr_iter(b'\n', buf).count() as u64;
            self.counters.lost.fetch_add(n, Relaxed);
            return;
        };
        for line in buf.split_inclusive(|&b| b == b'\n') {
            match tx.try_send(line.to_vec()) {
                Ok(()) => {}
                Err(TrySendError::Full(_)) => {
                    self.counters.dropped.fetch_add(1, Relaxed);
                }
                Err(TrySendError::Disconnected(_)) => {
                    self.counters.lost.fetch_add(1, Relaxed);
                }
            }
        }
    }

    fn counters(&self) -> OutputCounters {
        let c = &self.counters;
        OutputCounters {
            written: c.written.load(Relaxed),
            dropped: c.dropped.load(Relaxed),
            lost: c.lost.load(Relaxed),
            errors: c.errors.load(Relaxed),
            reconnects: c.reconnects.load(Relaxed),
            ..OutputCounters::default()
        }
    }

    fn finish(mut self) -> OutputCounters {
        // Closing the queue ends the thread once it shipped (or lost) what is queued.
        self.tx = None;
        if let Some(t) = self.thread.take() {
            let deadline = Instant::now() + self.finish_wait;
            while !t.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            self.give_up.store(true, Relaxed);
            // The thread now counts what is left as lost, and each of its calls ends within its timeout.
            let _ = t.join();
        }
        self.counters()
    }
}

/// A connection to the receiver.
enum Conn {
    Dgram(std::os::unix::net::UnixDatagram),
    Stream(std::os::unix::net::UnixStream),
    Redis(Box<redis::Connection>, RedisMode, String),
}

fn connect(target: &Target, io_timeout: Duration) -> Result<Conn, String> {
    match target {
        Target::UnixDgram(p) => {
            let s = std::os::unix::net::UnixDatagram::unbound().map_err(|e| e.to_string())?;
            s.connect(p).map_err(|e| e.to_string())?;
            s.set_write_timeout(Some(io_timeout))
                .map_err(|e| e.to_string())?;
            Ok(Conn::Dgram(s))
        }
        Target::UnixStream(p) => {
            let s = std::os::unix::net::UnixStream::connect(p).map_err(|e| e.to_string())?;
            s.set_write_timeout(Some(io_timeout))
                .map_err(|e| e.to_string())?;
            Ok(Conn::Stream(s))
        }
        Target::Redis(r) => {
            let addr = redis::ConnectionAddr::Tcp(r.server.clone(), r.port);
            let client = redis::Client::open(addr).map_err(|e| e.to_string())?;
            let con = client
                .get_connection_with_timeout(io_timeout)
                .map_err(|e| e.to_string())?;
            con.set_write_timeout(Some(io_timeout))
                .map_err(|e| e.to_string())?;
            con.set_read_timeout(Some(io_timeout))
                .map_err(|e| e.to_string())?;
            Ok(Conn::Redis(Box::new(con), r.mode, r.key.clone()))
        }
        Target::Regular(_) => Err("a regular file is not shipped".into()),
    }
}

impl Conn {
    /// Sends the batch whole, or fails.
    fn send(&mut self, batch: &[Vec<u8>]) -> Result<(), String> {
        match self {
            Conn::Dgram(s) => {
                for line in batch {
                    s.send(line).map_err(|e| e.to_string())?;
                }
                Ok(())
            }
            Conn::Stream(s) => {
                let all: Vec<u8> = batch.concat();
                s.write_all(&all).map_err(|e| e.to_string())
            }
            Conn::Redis(con, mode, key) => {
                let mut p = redis::pipe();
                for line in batch {
                    let json = line.strip_suffix(b"\n").unwrap_or(line);
                    p.cmd(mode.command()).arg(key.as_str()).arg(json).ignore();
                }
                p.exec(&mut **con).map_err(|e| e.to_string())
            }
        }
    }
}

/// The shipping thread (see the module documentation).
fn ship(
    target: Target,
    io_timeout: Duration,
    rx: Receiver<Vec<u8>>,
    c: &Counters,
    give_up: &AtomicBool,
) {
    let mut conn: Option<Conn> = None;
    let mut next_try = Instant::now();
    let mut ever_connected = false;
    let mut failing = false;
    let mut batch: Vec<Vec<u8>> = Vec::with_capacity(BATCH);
    loop {
        batch.clear();
        match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(line) => batch.push(line),
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => return,
        }
        while batch.len() < BATCH {
            match rx.try_recv() {
                Ok(line) => batch.push(line),
                Err(_) => break,
            }
        }
        let n = batch.len() as u64;
        if give_up.load(Relaxed) {
            c.lost.fetch_add(n, Relaxed);
            continue;
        }
        if conn.is_none() && Instant::now() >= next_try {
            match connect(&target, io_timeout) {
                Ok(k) => {
                    if ever_connected {
                        c.reconnects.fetch_add(1, Relaxed);
                    }
                    if failing {
                        eprintln!("eve output {target}: connected again");
                        failing = false;
                    }
                    ever_connected = true;
                    conn = Some(k);
                }
                Err(e) => {
                    c.errors.fetch_add(1, Relaxed);
                    if !failing {
                        eprintln!(
                            "eve output {target}: cannot connect: {e} (events are lost, counted, until it can; \
                             retrying every second)"
                        );
                        failing = true;
                    }
                    next_try = Instant::now() + RETRY;
                }
            }
        }
        let Some(k) = conn.as_mut() else {
            c.lost.fetch_add(n, Relaxed);
            continue;
        };
        match k.send(&batch) {
            Ok(()) => {
                c.written.fetch_add(n, Relaxed);
            }
            Err(e) => {
                c.errors.fetch_add(1, Relaxed);
                c.lost.fetch_add(n, Relaxed);
                if !failing {
                    eprintln!(
                        "eve output {target}: send failed: {e} (events are lost, counted, until it works again; \
                         retrying every second)"
                    );
                    failing = true;
                }
                conn = None;
                next_try = Instant::now() + RETRY;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_as_suricata_writes_them() {
        assert_eq!("list".parse(), Ok(RedisMode::Lpush));
        assert_eq!("channel".parse(), Ok(RedisMode::Publish));
        assert_eq!("RPUSH".parse(), Ok(RedisMode::Rpush));
        assert!("xadd".parse::<RedisMode>().is_err());
        assert_eq!("unix_dgram".parse(), Ok(FileType::UnixDgram));
        assert!(
            "syslog"
                .parse::<FileType>()
                .unwrap_err()
                .contains("not supported")
        );
    }

    #[test]
    fn waits_are_positive_seconds_up_to_an_hour_and_a_bad_one_says_why() {
        assert_eq!(Waits::parse_secs("w", "2"), Ok(Duration::from_secs(2)));
        assert_eq!(
            Waits::parse_secs("w", " 0.5s "),
            Ok(Duration::from_millis(500))
        );
        assert_eq!(Waits::parse_secs("w", "3600"), Ok(MAX_WAIT));
        for bad in ["0", "-1", "nan", "inf", "3601", "1e400"] {
            let e = Waits::parse_secs("--eve-write-timeout", bad).unwrap_err();
            assert!(e.starts_with("--eve-write-timeout: "), "{e}");
            assert!(e.contains("out of range"), "{bad}: {e}");
        }
        for bad in ["", "two", "2ms", "0x10"] {
            let e = Waits::parse_secs("write-timeout", bad).unwrap_err();
            assert!(e.contains("not a number of seconds"), "{bad}: {e}");
        }
        // Far below what a socket timeout can hold: the least one, not zero (which would mean "never").
        assert_eq!(
            Waits::parse_secs("w", "1e-12"),
            Ok(Duration::from_micros(1))
        );
    }

    #[test]
    fn a_stream_receiver_that_never_reads_costs_the_configured_waits_and_counted_losses() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("eve.sock");
        let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        // Accepts and holds the connection without reading: the socket's buffer fills and every write then waits.
        let holder = std::thread::spawn(move || listener.accept().map(|(s, _)| s));
        let waits = Waits {
            io: Duration::from_millis(20),
            finish: Duration::from_millis(50),
        };
        let mut o = EveOutput::open_with(Target::UnixStream(path), waits).unwrap();
        // 40 MB of lines: far more than a Unix socket's buffer holds, so some are lost whatever the timing.
        let line = format!("{{\"pad\":\"{}\"}}\n", "x".repeat(1000));
        let n = 40_000u64;
        for _ in 0..n {
            o.write_all(line.as_bytes()).unwrap();
        }
        let c = o.finish().unwrap();
        assert_eq!(c.written + c.lost + c.dropped, n, "{c:?}");
        assert!(c.lost + c.dropped > 0, "{c:?}");
        drop(holder.join().unwrap());
    }

    #[test]
    fn a_regular_file_is_appended_to_and_reopened_after_a_rename() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("eve.json");
        std::fs::write(&path, "old\n").unwrap();
        let mut o = EveOutput::open(Target::Regular(path.clone())).unwrap();
        o.write_all(b"{\"a\":1}\n").unwrap();
        o.flush().unwrap();
        std::fs::rename(&path, dir.path().join("eve.json.1")).unwrap();
        o.write_all(b"{\"a\":2}\n").unwrap();
        o.reopen().unwrap();
        o.write_all(b"{\"a\":3}\n").unwrap();
        let c = o.finish().unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("eve.json.1")).unwrap(),
            "old\n{\"a\":1}\n{\"a\":2}\n"
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"a\":3}\n");
        assert_eq!((c.written, c.reopens), (3, 1));
    }

    #[test]
    fn a_unix_datagram_listener_gets_one_line_per_datagram() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("eve.sock");
        let listener = std::os::unix::net::UnixDatagram::bind(&path).unwrap();
        let mut o = EveOutput::open(Target::UnixDgram(path)).unwrap();
        o.write_all(b"{\"a\":1}\n{\"b\":2}\n").unwrap();
        let c = o.finish().unwrap();
        let mut buf = [0u8; 64];
        let n = listener.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"{\"a\":1}\n");
        let n = listener.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"{\"b\":2}\n");
        assert_eq!((c.written, c.lost, c.dropped), (2, 0, 0));
    }

    #[test]
    fn a_unix_stream_listener_gets_the_lines_and_a_missing_one_is_counted_not_fatal() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("eve.sock");
        // No listener: every line lost, counted; nothing blocks.
        let mut o = EveOutput::open(Target::UnixStream(path.clone())).unwrap();
        o.write_all(b"{\"a\":1}\n").unwrap();
        let c = o.finish().unwrap();
        assert_eq!((c.written, c.lost), (0, 1));
        assert!(c.errors >= 1);

        let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        let reader = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut text = String::new();
            io::Read::read_to_string(&mut s, &mut text).unwrap();
            text
        });
        let mut o = EveOutput::open(Target::UnixStream(path)).unwrap();
        o.write_all(b"{\"a\":1}\n{\"b\":2}\n").unwrap();
        let c = o.finish().unwrap();
        assert_eq!(reader.join().unwrap(), "{\"a\":1}\n{\"b\":2}\n");
        assert_eq!((c.written, c.lost), (2, 0));
    }
}
