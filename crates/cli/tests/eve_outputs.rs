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

impl RedisServer {
    fn start(bin: &Path) -> RedisServer {
        // A port the kernel just gave out and took back: free, as far as anything can be.
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
        let server = RedisServer { child, port };
        let deadline = Instant::now() + Duration::from_secs(20);
        while server.connection().is_none() {
            assert!(
                Instant::now() < deadline,
                "redis-server did not answer on {port}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        server
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

    // A channel: a subscriber sees every line.
    let mut sub = server.connection().expect("redis connection");
    let (tx, rx) = std::sync::mpsc::channel();
    let n = want.len();
    let reader = std::thread::spawn(move || {
        let mut ps = sub.as_pubsub();
        ps.subscribe("fb-channel").unwrap();
        ps.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        tx.send(()).unwrap();
        let mut got = Vec::new();
        while got.len() < n {
            let Ok(msg) = ps.get_message() else { break };
            got.push(msg.get_payload::<String>().unwrap());
        }
        got
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
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap()
        .to_string();
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
    listener
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let n = want.len();
    let reader = std::thread::spawn(move || {
        let mut got = Vec::new();
        let mut buf = vec![0u8; 1 << 20];
        while got.len() < n {
            let Ok(k) = listener.recv(&mut buf) else {
                break;
            };
            got.push(String::from_utf8_lossy(&buf[..k]).into_owned());
        }
        got
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
