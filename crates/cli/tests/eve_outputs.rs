//! EVE outputs of Suricata's kinds, end to end through `flowbundle inspect`: Redis (a list by RPUSH, a channel by
//! PUBLISH) on a real `redis-server` (Debian's, installed by `scripts/test-all`) that the test starts on a loopback
//! port; a Unix datagram socket the test listens on; and a receiver that is not there, which must cost the run
//! nothing but counted losses. Each receives exactly the lines the same run writes to a file.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const CAPTURE: &str = "reassembly/example.pcap";

/// A `redis-server` on a free loopback port, stopped on drop.
struct RedisServer {
    child: Child,
    port: u16,
}

/// Far above any start of `redis-server`: only a server that never answers reaches it.
const HANG: Duration = Duration::from_secs(120);

impl RedisServer {
    /// Starts a server on a port the kernel just gave out and took back. Another process may take that port
    /// meanwhile (the server then exits, unable to bind it, or something else answers there): the answer is checked
    /// to come from this server (its process id), and a server that exits is started again on another port.
    fn start(bin: &Path) -> RedisServer {
        for _ in 0..20 {
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .map(|a| a.port())
                .expect("a free port");
            let child = Command::new(bin)
                .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
                .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("starting redis-server");
            let mut server = RedisServer { child, port };
            let deadline = Instant::now() + HANG;
            loop {
                if server.answers_as_itself() {
                    return server;
                }
                if server
                    .child
                    .try_wait()
                    .expect("redis-server's status")
                    .is_some()
                {
                    // It could not listen there (the port was taken): another port.
                    break;
                }
                assert!(
                    Instant::now() < deadline,
                    "redis-server did not answer on {port}"
                );
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        panic!("redis-server exited at start on twenty ports");
    }

    /// The server answering on the port is this one.
    fn answers_as_itself(&self) -> bool {
        let Some(mut con) = self.connection() else {
            return false;
        };
        let info: String = redis::cmd("INFO")
            .arg("server")
            .query(&mut con)
            .unwrap_or_default();
        info.lines()
            .any(|l| l.trim() == format!("process_id:{}", self.child.id()))
    }

    fn connection(&self) -> Option<redis::Connection> {
        let c =
            redis::Client::open(redis::ConnectionAddr::Tcp("127.0.0.1".into(), self.port)).ok()?;
        let mut con = c.get_connection_with_timeout(Duration::from_secs(1)).ok()?;
        redis::cmd("PING").query::<String>(&mut con).ok()?;
        Some(con)
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `flowbundle inspect CAPTURE --threads T --eve-stats` with `extra`; its standard error.
fn inspect(capture: &Path, threads: &str, extra: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_flowbundle"))
        .arg("inspect")
        .arg(capture)
        .args(["--threads", threads, "--summary"])
        .args(extra)
        .output()
        .expect("running flowbundle inspect");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "inspect {extra:?} failed: {stderr}");
    String::from_utf8_lossy(&out.stdout).into_owned() + &stderr
}

/// The lines of the same run written to a file (the stats record's uptime left out: it is the run's own).
fn file_lines(capture: &Path, dir: &Path) -> Vec<String> {
    let path: PathBuf = dir.join("eve.json");
    inspect(capture, "1", &["-o", path.to_str().unwrap(), "--eve-stats"]);
    std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(comparable)
        .collect()
}

/// A line with the fields that differ between two runs of the same input (the stats record's time) removed.
fn comparable(line: &str) -> String {
    let mut v: serde_json::Value = serde_json::from_str(line).expect("an EVE line is JSON");
    if v["event_type"] == "stats" {
        v["timestamp"] = serde_json::Value::Null;
        v["stats"]["uptime"] = serde_json::Value::Null;
    }
    v.to_string()
}

fn setup() -> Option<(PathBuf, tempfile::TempDir)> {
    let capture = flowbundle_testsupport::data(CAPTURE)?;
    Some((capture, tempfile::tempdir().expect("temporary directory")))
}

#[test]
fn redis_list_and_channel_receive_every_line_in_order() {
    let Some((capture, dir)) = setup() else {
        return;
    };
    let Some(bin) = flowbundle_testsupport::tool("redis-server") else {
        return;
    };
    let want = file_lines(&capture, dir.path());
    let server = RedisServer::start(&bin);
    let port = server.port.to_string();

    // A list, with RPUSH: the list reads in output order; with two workers the output is the same.
    for threads in ["1", "2"] {
        let key = format!("fb-list-{threads}");
        let said = inspect(
            &capture,
            threads,
            &[
                "--eve-filetype",
                "redis",
                "--redis-port",
                &port,
                "--redis-mode",
                "rpush",
                "--redis-key",
                &key,
                "--eve-stats",
            ],
        );
        let mut con = server.connection().expect("redis connection");
        let got: Vec<String> = redis::cmd("LRANGE")
            .arg(&key)
            .arg(0)
            .arg(-1)
            .query(&mut con)
            .expect("LRANGE");
        let got: Vec<String> = got.iter().map(|l| comparable(l)).collect();
        assert_eq!(got.len(), want.len(), "--threads {threads}");
        assert_eq!(got, want, "--threads {threads}");
        assert!(
            said.contains(&format!(
                "{} events written, 0 dropped with the queue full, 0 lost",
                want.len()
            )),
            "{said}"
        );
    }

    // The default mode is Suricata's `list` (LPUSH): the newest line first.
    inspect(
        &capture,
        "1",
        &[
            "--eve-filetype",
            "redis",
            "--redis-port",
            &port,
            "--eve-stats",
        ],
    );
    let mut con = server.connection().expect("redis connection");
    let first: String = redis::cmd("LINDEX")
        .arg("suricata")
        .arg(0)
        .query(&mut con)
        .unwrap();
    assert_eq!(
        comparable(&first),
        *want.last().unwrap(),
        "LPUSH puts the last line first"
    );

    // A channel: a subscriber sees every line. It reads until the test's own message, published once the run has
    // ended (every PUBLISH of the run answered by then, so the server sends the end last), however long the run
    // takes; the read timeout only guards against a hang.
    const END: &str = "end of the run";
    let mut sub = server.connection().expect("redis connection");
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut ps = sub.as_pubsub();
        ps.subscribe("fb-channel").unwrap();
        ps.set_read_timeout(Some(HANG)).unwrap();
        tx.send(()).unwrap();
        let mut got = Vec::new();
        loop {
            let msg = ps.get_message().expect("a message before the end");
            let line = msg.get_payload::<String>().unwrap();
            if line == END {
                return got;
            }
            got.push(line);
        }
    });
    rx.recv().unwrap();
    inspect(
        &capture,
        "2",
        &[
            "--eve-filetype",
            "redis",
            "--redis-port",
            &port,
            "--redis-mode",
            "channel",
            "--redis-key",
            "fb-channel",
            "--eve-stats",
        ],
    );
    let mut con = server.connection().expect("redis connection");
    let _: i64 = redis::cmd("PUBLISH")
        .arg("fb-channel")
        .arg(END)
        .query(&mut con)
        .expect("PUBLISH");
    let got: Vec<String> = reader
        .join()
        .unwrap()
        .iter()
        .map(|l| comparable(l))
        .collect();
    assert_eq!(got, want);
}

#[test]
fn redis_settings_come_from_the_configuration_file() {
    let Some((capture, dir)) = setup() else {
        return;
    };
    let Some(bin) = flowbundle_testsupport::tool("redis-server") else {
        return;
    };
    let want = file_lines(&capture, dir.path());
    let server = RedisServer::start(&bin);
    let conf = dir.path().join("suricata.yaml");
    std::fs::write(
        &conf,
        format!(
            "outputs:\n  - eve-log:\n      enabled: yes\n      filetype: redis\n      redis:\n        server: \
             127.0.0.1\n        port: {}\n        mode: rpush\n        key: from-config\n",
            server.port
        ),
    )
    .unwrap();
    inspect(
        &capture,
        "1",
        &["-c", conf.to_str().unwrap(), "--eve-stats"],
    );
    let mut con = server.connection().expect("redis connection");
    let got: Vec<String> = redis::cmd("LRANGE")
        .arg("from-config")
        .arg(0)
        .arg(-1)
        .query(&mut con)
        .unwrap();
    assert_eq!(got.iter().map(|l| comparable(l)).collect::<Vec<_>>(), want);
}

/// Redis down: the run completes at once with its summary, every line counted as lost, the failure said in one line.
#[test]
fn a_redis_that_is_down_costs_counted_losses_not_the_run() {
    let Some((capture, _dir)) = setup() else {
        return;
    };
    // A port nobody listens on for the whole run: the local end of a connection the test holds (a port that was
    // free a moment ago could be taken meanwhile, by a server of another test among them).
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let held = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let _accepted = listener.accept().unwrap();
    let port = held.local_addr().unwrap().port().to_string();
    let t = Instant::now();
    let said = inspect(
        &capture,
        "2",
        &["--eve-filetype", "redis", "--redis-port", &port],
    );
    assert!(
        t.elapsed() < Duration::from_secs(60),
        "the run waited on the receiver"
    );
    assert!(said.contains("cannot connect"), "{said}");
    let line = said
        .lines()
        .find(|l| l.trim_start().starts_with("eve output (redis 127.0.0.1:"))
        .unwrap_or_else(|| panic!("no eve output line: {said}"));
    assert!(
        line.contains(": 0 events written, 0 dropped with the queue full, "),
        "{line}"
    );
    assert!(!line.contains(" 0 lost"), "{line}");
}

#[test]
fn a_unix_datagram_socket_receives_one_line_per_datagram() {
    let Some((capture, dir)) = setup() else {
        return;
    };
    let want = file_lines(&capture, dir.path());
    let path = dir.path().join("eve.sock");
    let listener = std::os::unix::net::UnixDatagram::bind(&path).unwrap();
    // The reader takes datagrams until the test's own, sent once the run has ended (the socket keeps the order in
    // which they were sent), however long the run takes; the read timeout only guards against a hang.
    const END: &[u8] = b"end of the run";
    listener.set_read_timeout(Some(HANG)).unwrap();
    let reader = std::thread::spawn(move || {
        let mut got = Vec::new();
        let mut buf = vec![0u8; 1 << 20];
        loop {
            let k = listener.recv(&mut buf).expect("a datagram before the end");
            if &buf[..k] == END {
                return got;
            }
            got.push(String::from_utf8_lossy(&buf[..k]).into_owned());
        }
    });
    inspect(
        &capture,
        "2",
        &[
            "--eve-filetype",
            "unix_dgram",
            "-o",
            path.to_str().unwrap(),
            "--eve-stats",
        ],
    );
    let end = std::os::unix::net::UnixDatagram::unbound().unwrap();
    end.send_to(END, &path).unwrap();
    let got = reader.join().unwrap();
    assert!(
        got.iter()
            .all(|d| d.ends_with('\n') && d.matches('\n').count() == 1)
    );
    assert_eq!(
        got.iter()
            .map(|l| comparable(l.trim_end()))
            .collect::<Vec<_>>(),
        want
    );
}

/// The waits of a socket or Redis output (`--eve-write-timeout`, `--eve-finish-timeout`, the eve-log output's
/// `write-timeout` and `finish-timeout`): a bad value fails the run with one line naming the setting, wherever it was
/// set; good values run. Needs no shared data: the capture is a pcap header with no packet.
#[test]
fn eve_output_waits_refuse_bad_values_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let capture = dir.path().join("empty.pcap");
    let mut header = vec![0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0];
    header.extend_from_slice(&[0; 8]);
    header.extend_from_slice(&65535u32.to_le_bytes());
    header.extend_from_slice(&1u32.to_le_bytes());
    std::fs::write(&capture, &header).unwrap();
    let sock = dir.path().join("eve.sock");
    let _listener = std::os::unix::net::UnixDatagram::bind(&sock).unwrap();
    let run = |extra: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_flowbundle"))
            .arg("inspect")
            .arg(&capture)
            .args(["--threads", "1", "--eve-filetype", "unix_dgram", "-o"])
            .arg(&sock)
            .args(extra)
            .output()
            .expect("running flowbundle inspect");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    for bad in [
        "--eve-write-timeout=0",
        "--eve-write-timeout=soon",
        "--eve-finish-timeout=-1",
        "--eve-finish-timeout=nan",
        "--eve-finish-timeout=86400",
    ] {
        let (ok, err) = run(&[bad]);
        let flag = bad.split('=').next().unwrap();
        assert!(!ok, "{bad} was taken: {err}");
        assert_eq!(err.lines().count(), 1, "{bad}: {err}");
        assert!(
            err.starts_with(&format!("flowbundle: {flag}: ")),
            "{bad}: {err}"
        );
    }
    let conf = dir.path().join("suricata.yaml");
    std::fs::write(
        &conf,
        "outputs:\n  - eve-log:\n      enabled: yes\n      write-timeout: 2\n      finish-timeout: soon\n",
    )
    .unwrap();
    let (ok, err) = run(&["-c", conf.to_str().unwrap()]);
    assert!(!ok, "{err}");
    assert!(
        err.contains("outputs.eve-log.finish-timeout: \"soon\" is not a number of seconds"),
        "{err}"
    );
    // The command line wins over the file.
    let (ok, err) = run(&["-c", conf.to_str().unwrap(), "--eve-finish-timeout", "0.5"]);
    assert!(ok, "{err}");
    let (ok, err) = run(&["--eve-write-timeout", "0.25", "--eve-finish-timeout", "1"]);
    assert!(ok, "{err}");
    // A regular file waits for nothing: the options are refused there rather than ignored.
    let out = Command::new(env!("CARGO_BIN_EXE_flowbundle"))
        .arg("inspect")
        .arg(&capture)
        .args(["-o"])
        .arg(dir.path().join("eve.json"))
        .args(["--eve-write-timeout", "1"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("apply to --eve-filetype unix_dgram"));
}
