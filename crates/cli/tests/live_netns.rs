//! The live sensor on a network the test builds for itself: a network namespace holding a veth pair, a capture from
//! the shared data replayed into one end with `tcpreplay` at a fixed rate, `flowbundle inspect --interface` on the
//! other end with `--threads 2` (one AF_PACKET ring and the `lfb` scheduler; one ring per worker with the kernel's
//! fanout hash). The sensor is stopped with SIGTERM, as an operator stops it: it must drain its queues, flush the
//! flows still open, write the EVE `stats` record and the summary, and report the same flows, application protocols
//! and alerts as the offline run of the same capture, with `capture.kernel_drops` 0 at that rate.
//!
//! The inline sensor is tested on three namespaces in a line (client, sensor bridging two interfaces, server): a
//! TCP connection through it completes, and with a `drop` rule matching the payload the server never sees it.
//!
//! Needs root (namespaces, raw sockets), nc, ethtool and tcpreplay (Debian `tcpreplay`, installed by `scripts/test-all`): without
//! them the tests say why and return, and fail under `FLOWBUNDLE_REQUIRE_TOOLS=1`. Nothing outside the namespace is
//! touched (IPv6 is off inside it, so the kernel sends nothing of its own on the pair).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The replay side and the sensor side of the veth pair.
const REPLAY: &str = "replay0";
const SENSOR: &str = "sensor0";

/// A network namespace with a veth pair ([`REPLAY`], [`SENSOR`]), both up; deleted on drop.
struct Netns {
    name: String,
}

static NEXT: AtomicU32 = AtomicU32::new(0);

fn run(cmd: &mut Command) -> Result<Output, String> {
    let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
    if out.status.success() {
        Ok(out)
    } else {
        Err(format!(
            "{cmd:?}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

impl Netns {
    /// An empty namespace with IPv6 off.
    fn bare() -> Result<Netns, String> {
        let name = format!(
            "fb-live-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        run(Command::new("ip").args(["netns", "add", &name]))?;
        let ns = Netns { name };
        for sysctl in [
            "net.ipv6.conf.all.disable_ipv6=1",
            "net.ipv6.conf.default.disable_ipv6=1",
        ] {
            run(ns.exec("sysctl").args(["-q", "-w", sysctl]))?;
        }
        Ok(ns)
    }

    /// A namespace holding the veth pair ([`REPLAY`], [`SENSOR`]).
    fn new() -> Result<Netns, String> {
        let ns = Netns::bare()?;
        run(ns.exec("ip").args([
            "link", "add", "name", REPLAY, "type", "veth", "peer", "name", SENSOR,
        ]))?;
        for dev in [REPLAY, SENSOR] {
            // Frames of the captures may exceed 1,500 bytes (offloaded segments): a large MTU carries them whole.
            run(ns
                .exec("ip")
                .args(["link", "set", dev, "mtu", "9000", "up"]))?;
        }
        Ok(ns)
    }

    /// `program` run inside the namespace.
    fn exec(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.name]).arg(program);
        c
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .output();
    }
}

/// The namespace, or `None` (said why; a failure under `FLOWBUNDLE_REQUIRE_TOOLS=1`) when it cannot be made.
fn netns() -> Option<Netns> {
    made(Netns::new())
}

fn made<T>(r: Result<T, String>) -> Option<T> {
    match r {
        Ok(ns) => Some(ns),
        Err(e) => {
            flowbundle_testsupport::missing_tool(&format!(
                "network namespaces with veth pairs (root, iproute2): {e}"
            ));
            None
        }
    }
}

const CAPTURE: &str = "reassembly/example.pcap";
const RULES: &str = "alert tcp any any -> any any (msg:\"HTTP GET\"; flow:to_server,established; \
                     content:\"GET \"; depth:4; sid:9000001; rev:1;)\n\
                     alert http any any -> any any (msg:\"HTTP host\"; http.host; content:\".com\"; sid:9000002; \
                     rev:1;)\n\
                     alert dns any any -> any any (msg:\"DNS query\"; dns.query; content:\".\"; sid:9000003; rev:1;)\n";

/// The `flowbundle` binary's EVE lines for `args` (offline).
fn offline(capture: &Path, rules: &Path, out: &Path) {
    let r = Command::new(env!("CARGO_BIN_EXE_flowbundle"))
        .arg("inspect")
        .arg(capture)
        .arg("--rules")
        .arg(rules)
        .args(["--threads", "1", "--eve-stats", "-o"])
        .arg(out)
        .output()
        .expect("running flowbundle inspect");
    assert!(
        r.status.success(),
        "offline inspect failed: {}",
        String::from_utf8_lossy(&r.stderr)
    );
}

/// Starts the sensor on [`SENSOR`] inside `ns` and waits until it says it is capturing.
fn start_sensor(
    ns: &Netns,
    rules: &Path,
    out: &Path,
    extra: &[&str],
) -> (Child, std::sync::mpsc::Receiver<String>) {
    let mut args = vec!["-i", SENSOR];
    args.extend_from_slice(extra);
    start_flowbundle(ns, rules, out, &args)
}

/// Starts `flowbundle inspect` with `args` inside `ns` and waits until it says it is capturing.
fn start_flowbundle(
    ns: &Netns,
    rules: &Path,
    out: &Path,
    extra: &[&str],
) -> (Child, std::sync::mpsc::Receiver<String>) {
    let mut child = ns
        .exec(env!("CARGO_BIN_EXE_flowbundle"))
        .args(["inspect", "--rules"])
        .arg(rules)
        .args(["--eve-stats", "--summary", "--seconds", "120", "-o"])
        .arg(out)
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting the sensor");
    let stderr = child.stderr.take().expect("sensor stderr");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut seen = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) if line.starts_with("capturing on") => break,
            Ok(line) => seen.push(line),
            Err(_) => {
                let _ = child.kill();
                panic!("the sensor did not start capturing: {}", seen.join("\n"));
            }
        }
    }
    (child, rx)
}

/// Sends SIGTERM and waits for the sensor's exit (at most 30 s): its summary and the rest of its standard error.
fn stop_sensor(mut child: Child, rx: std::sync::mpsc::Receiver<String>) -> (String, String) {
    let r = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(r.success());
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(s) = child.try_wait().expect("waiting for the sensor") {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the sensor did not stop within 30 s of SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut stdout = String::new();
    if let Some(mut o) = child.stdout.take() {
        use std::io::Read;
        let _ = o.read_to_string(&mut stdout);
    }
    let stderr: Vec<String> = rx.try_iter().collect();
    let stderr = stderr.join("\n");
    assert!(
        status.success(),
        "the sensor failed after SIGTERM: {stderr}"
    );
    (stdout, stderr)
}

fn events(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .expect("reading EVE output")
        .lines()
        .map(|l| serde_json::from_str(l).expect("an EVE line is JSON"))
        .collect()
}

/// Flows (5-tuple, application protocol, packets each way) and alerts (signature, 5-tuple), counted.
fn observable(evs: &[Value]) -> (BTreeMap<String, usize>, BTreeMap<String, usize>) {
    let tuple = |e: &Value| {
        format!(
            "{} {}:{} -> {}:{}",
            e["proto"], e["src_ip"], e["src_port"], e["dest_ip"], e["dest_port"]
        )
    };
    let (mut flows, mut alerts) = (BTreeMap::new(), BTreeMap::new());
    for e in evs {
        match e["event_type"].as_str() {
            Some("flow") => {
                let k = format!(
                    "{} app={} pkts={}/{}",
                    tuple(e),
                    e["app_proto"],
                    e["flow"]["pkts_toserver"],
                    e["flow"]["pkts_toclient"]
                );
                *flows.entry(k).or_insert(0) += 1;
            }
            Some("alert") => {
                let k = format!("{} {}", e["alert"]["signature_id"], tuple(e));
                *alerts.entry(k).or_insert(0) += 1;
            }
            _ => {}
        }
    }
    (flows, alerts)
}

fn stats(evs: &[Value]) -> &Value {
    evs.iter()
        .rev()
        .find(|e| e["event_type"] == "stats")
        .expect("an EVE stats record")
}

/// Replays the capture into [`REPLAY`] at `pps` packets a second while the sensor runs on [`SENSOR`] with `extra`, stops the
/// sensor with SIGTERM and compares what it saw with the offline run.
fn replay_matches_offline(extra: &[&str], pps: u32) {
    let Some(capture) = flowbundle_testsupport::data(CAPTURE) else {
        return;
    };
    let Some(tcpreplay) = flowbundle_testsupport::tool("tcpreplay") else {
        return;
    };
    let Some(ns) = netns() else { return };
    let dir = tempfile::tempdir().expect("temporary directory");
    let rules = dir.path().join("live.rules");
    std::fs::write(&rules, RULES).expect("writing rules");
    let (off_path, live_path) = (
        dir.path().join("offline.json"),
        dir.path().join("live.json"),
    );
    offline(&capture, &rules, &off_path);
    let off = events(&off_path);

    let (child, rx) = start_sensor(&ns, &rules, &live_path, extra);
    let replay = ns
        .exec(&tcpreplay)
        .args(["-q", "-i", REPLAY, "--pps"])
        .arg(pps.to_string())
        .arg(&capture)
        .output()
        .expect("running tcpreplay");
    // Stopped as soon as the replay has ended: the sensor still reads and inspects every frame captured before the
    // stop (the block still filling at the stop included), however far it lags behind.
    let (summary, stderr) = stop_sensor(child, rx);
    assert!(
        replay.status.success(),
        "tcpreplay failed: {}",
        String::from_utf8_lossy(&replay.stderr)
    );

    let live = events(&live_path);
    let (off_flows, off_alerts) = observable(&off);
    let (live_flows, live_alerts) = observable(&live);
    assert!(!off_flows.is_empty() && !off_alerts.is_empty());
    let diff = |a: &BTreeMap<String, usize>, b: &BTreeMap<String, usize>| {
        a.iter()
            .filter(|(k, n)| b.get(*k) != Some(n))
            .map(|(k, n)| format!("{k} ×{n}"))
            .take(10)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        live_flows,
        off_flows,
        "{extra:?}: flows differ; offline only: {:?}; live only: {:?}\n{stderr}",
        diff(&off_flows, &live_flows),
        diff(&live_flows, &off_flows)
    );
    assert_eq!(live_alerts, off_alerts, "{extra:?}: alerts differ");
    let capture_stats = &stats(&live)["stats"]["capture"];
    let offline_packets = stats(&off)["stats"]["capture"]["kernel_packets"].clone();
    assert_eq!(
        capture_stats["kernel_drops"], 0,
        "{extra:?}: {capture_stats}"
    );
    assert_eq!(
        capture_stats["kernel_packets"], offline_packets,
        "{extra:?}: the kernel saw other packets than the capture's: {capture_stats}"
    );
    assert!(
        summary.contains("capture.kernel_drops 0"),
        "{extra:?}: no capture line in the summary:\n{summary}"
    );
}

#[test]
fn one_ring_and_the_lfb_scheduler_see_what_the_offline_run_sees() {
    replay_matches_offline(&["--threads", "2", "--scheduler", "lfb"], 2000);
}

#[test]
fn kernel_fanout_hash_one_ring_per_worker_sees_what_the_offline_run_sees() {
    replay_matches_offline(&["--threads", "2", "--fanout", "hash"], 2000);
}

#[test]
fn single_threaded_live_loop_sees_what_the_offline_run_sees() {
    replay_matches_offline(&["--threads", "1"], 2000);
}

/// Three namespaces in a line: a client, the sensor bridging its two interfaces, a server. Checksum offload is off
/// on the endpoints, so the frames the sensor forwards carry complete checksums (a veth hands over a frame whose
/// checksum the receiving stack would otherwise fill in).
struct Line {
    client: Netns,
    sensor: Netns,
    server: Netns,
}

const CLIENT_IP: &str = "10.77.0.1";
const SERVER_IP: &str = "10.77.0.2";

impl Line {
    fn new() -> Result<Line, String> {
        let (client, sensor, server) = (Netns::bare()?, Netns::bare()?, Netns::bare()?);
        for (a, a_ns, b, b_ns) in [
            ("client0", &client, "left0", &sensor),
            ("right0", &sensor, "server0", &server),
        ] {
            run(Command::new("ip").args([
                "link", "add", "name", a, "netns", &a_ns.name, "type", "veth", "peer", "name", b,
                "netns", &b_ns.name,
            ]))?;
        }
        for (ns, dev, ip) in [
            (&client, "client0", Some(CLIENT_IP)),
            (&sensor, "left0", None),
            (&sensor, "right0", None),
            (&server, "server0", Some(SERVER_IP)),
        ] {
            if let Some(ip) = ip {
                run(ns
                    .exec("ip")
                    .args(["addr", "add", &format!("{ip}/24"), "dev", dev]))?;
                run(ns.exec("ethtool").args(["-K", dev, "tx", "off"]))?;
            }
            run(ns.exec("ip").args(["link", "set", dev, "up"]))?;
        }
        Ok(Line {
            client,
            sensor,
            server,
        })
    }

    /// Starts `nc -l` (TCP, or UDP with `udp`) on the server's `port` and waits until it listens (an event, not a
    /// delay: a client started before would be refused).
    fn listen(&self, nc: &Path, port: u16, udp: bool) -> Server {
        let mut cmd = self.server.exec(nc);
        if udp {
            cmd.arg("-u");
        }
        let mut child = cmd
            .args(["-l", SERVER_IP, &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting the server");
        let mut stdout = child.stdout.take().expect("server stdout");
        let received = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let reader = {
            let received = std::sync::Arc::clone(&received);
            std::thread::spawn(move || {
                use std::io::Read;
                let mut buf = [0u8; 4096];
                while let Ok(n) = stdout.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    received.lock().unwrap().extend_from_slice(&buf[..n]);
                }
            })
        };
        let listening = format!("sport = :{port}");
        let deadline = Instant::now() + HANG;
        loop {
            let out = self
                .server
                .exec("ss")
                .args(["-H", "-l", if udp { "-un" } else { "-tn" }, &listening])
                .output()
                .expect("running ss");
            if !String::from_utf8_lossy(&out.stdout).trim().is_empty() {
                break;
            }
            assert!(Instant::now() < deadline, "nc did not listen on {port}");
            std::thread::sleep(Duration::from_millis(20));
        }
        Server {
            child,
            reader,
            received,
        }
    }

    /// Sends `payload` from the client to `server` (listening on `port`) with `nc -N` and waits for the client to
    /// end: whether its connection completed. The client ends once the server closed the connection (the server has
    /// then received everything), or after `idle` seconds without traffic (what a connection the sensor stopped
    /// does).
    fn send(&self, nc: &Path, port: u16, payload: &str, idle: u32) -> bool {
        let mut client = self
            .client
            .exec(nc)
            .args(["-N", "-w", &idle.to_string(), SERVER_IP, &port.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting the client");
        {
            use std::io::Write;
            let mut stdin = client.stdin.take().expect("client stdin");
            let _ = stdin.write_all(payload.as_bytes());
        }
        client.wait().expect("waiting for the client").success()
    }

    /// Sends `payload` as one UDP datagram from the client to a server listening on `port` (fragmented by the
    /// client's stack when it exceeds the MTU); returns once the client has sent it and ended (one second idle).
    fn send_udp(&self, nc: &Path, port: u16, payload: &str) {
        let mut client = self
            .client
            .exec(nc)
            .args(["-u", "-w", "1", SERVER_IP, &port.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting the client");
        {
            use std::io::Write;
            let mut stdin = client.stdin.take().expect("client stdin");
            let _ = stdin.write_all(payload.as_bytes());
        }
        let _ = client.wait();
    }
}

/// Far above any step of these tests: only a hang reaches it.
const HANG: Duration = Duration::from_secs(60);

/// An `nc -l` on the server, its output collected as it comes.
struct Server {
    child: Child,
    reader: std::thread::JoinHandle<()>,
    received: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
}

impl Server {
    /// What the server received, once the sensor has stopped (it forwards nothing more): waits until `expected`
    /// bytes came (what a sensor that forwarded everything delivers; 0 when nothing should pass), then ends the
    /// server.
    fn received(mut self, expected: usize) -> String {
        let deadline = Instant::now() + HANG;
        while self.received.lock().unwrap().len() < expected && Instant::now() < deadline {
            if self
                .child
                .try_wait()
                .expect("waiting for the server")
                .is_some()
            {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = self.reader.join();
        let got = self.received.lock().unwrap().clone();
        String::from_utf8_lossy(&got).into_owned()
    }
}

/// What went through the inline sensor: what the server received, whether the client completed, the sensor's
/// summary and EVE events.
struct Through {
    received: String,
    client_ok: bool,
    summary: String,
    events: Vec<Value>,
}

impl Through {
    fn inline_line(&self) -> &str {
        self.summary
            .lines()
            .find(|l| l.trim_start().starts_with("inline:"))
            .unwrap_or_else(|| panic!("no inline line in the summary:\n{}", self.summary))
    }

    fn alerted(&self, sid: u64) -> bool {
        self.events
            .iter()
            .any(|e| e["alert"]["signature_id"] == sid)
    }
}

/// Runs the inline sensor between the client and the server with `rules_text`, sends `payload` through it. With
/// `passes`, the payload is expected through: the client ends when the server closes the connection (its idle
/// timeout only a guard against a hang); else the client ends after three idle seconds. What the server received is
/// read once the sensor has stopped (every frame captured before the stop forwarded or dropped by then).
fn through_inline_sensor(rules_text: &str, payload: &str, passes: bool) -> Option<Through> {
    let nc = flowbundle_testsupport::tool("nc")?;
    flowbundle_testsupport::tool("ethtool")?;
    let line = made(Line::new())?;
    let dir = tempfile::tempdir().expect("temporary directory");
    let rules = dir.path().join("inline.rules");
    std::fs::write(&rules, rules_text).expect("writing rules");
    let eve = dir.path().join("inline.json");
    let (child, rx) = start_flowbundle(
        &line.sensor,
        &rules,
        &eve,
        &["--inline", "left0:right0", "--threads", "2"],
    );
    let server = line.listen(&nc, 7777, false);
    let client_ok = line.send(&nc, 7777, payload, if passes { 60 } else { 3 });
    let (summary, _) = stop_sensor(child, rx);
    let received = server.received(if passes { payload.len() } else { 0 });
    Some(Through {
        received,
        client_ok,
        summary,
        events: events(&eve),
    })
}

#[test]
fn inline_sensor_forwards_a_tcp_connection_and_reports_its_latency() {
    let rules = "alert tcp any any -> any 7777 (msg:\"greeting\"; content:\"hello\"; sid:9100001; rev:1;)\n";
    let Some(t) = through_inline_sensor(rules, "hello through the sensor\n", true) else {
        return;
    };
    assert_eq!(t.received, "hello through the sensor\n", "{}", t.summary);
    assert!(
        t.client_ok,
        "the connection did not complete:\n{}",
        t.summary
    );
    assert!(
        t.alerted(9100001),
        "the sensor did not inspect what it forwarded"
    );
    let inline = t.inline_line();
    assert!(inline.contains("receive-to-send latency p50"), "{inline}");
    assert!(!inline.contains("inline: 0 forwarded"), "{inline}");
    assert!(inline.contains(" 0 dropped"), "{inline}");
}

#[test]
fn inline_sensor_drop_rule_keeps_the_payload_from_the_receiver() {
    let rules = "drop tcp any any -> any 7777 (msg:\"forbidden\"; content:\"forbidden\"; sid:9100002; rev:1;)\n";
    let Some(t) = through_inline_sensor(rules, "this is forbidden\n", false) else {
        return;
    };
    assert!(
        !t.received.contains("forbidden"),
        "the receiver saw the dropped payload: {:?}\n{}",
        t.received,
        t.summary
    );
    assert!(
        t.alerted(9100002),
        "the drop rule did not match:\n{}",
        t.summary
    );
    assert!(
        !t.inline_line().contains(" 0 dropped"),
        "{}",
        t.inline_line()
    );
}

/// Now less `before`, as an EVE timestamp (fixed width, UTC: such strings compare as the times they name).
fn eve_now(before: Duration) -> String {
    let ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    flowbundle_sinks::timestamp(ns.saturating_sub(before.as_nanos() as u64))
}

/// Waits (at most 30 s) for a line of the sensor's standard error that starts with `prefix`; the lines read.
fn wait_for_line(rx: &std::sync::mpsc::Receiver<String>, prefix: &str) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut seen = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => {
                let done = line.starts_with(prefix);
                seen.push(line);
                if done {
                    return seen;
                }
            }
            Err(_) => panic!("no line starting {prefix:?} within 30 s: {seen:?}"),
        }
    }
}

/// Waits (at most [`HANG`]) until the EVE file at `path` holds an alert of `sid` (the sensor flushes its output
/// at least once a second while it runs).
fn wait_for_alert(path: &Path, sid: u64) {
    let needle = format!("\"signature_id\":{sid},");
    let deadline = Instant::now() + HANG;
    while !std::fs::read_to_string(path).is_ok_and(|t| t.contains(&needle)) {
        assert!(
            Instant::now() < deadline,
            "no alert of {sid} in {} within {HANG:?}",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Sends `signal` to the sensor.
fn signal(child: &Child, signal: &str) {
    let r = Command::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(r.success());
}

const OLD_RULES: &str = "alert tcp any any -> any any (msg:\"before the reload\"; flow:to_server,established; \
                         content:\"GET \"; depth:4; sid:9200001; rev:1;)\n";
const NEW_RULES: &str = "alert tcp any any -> any any (msg:\"after the reload\"; flow:to_client,established; \
                         content:\"HTTP/1.\"; depth:7; sid:9200002; rev:1;)\n";

/// Alerts of `sid` as (5-tuple, timestamp).
fn alerts_of(evs: &[Value], sid: u64) -> Vec<(String, String)> {
    evs.iter()
        .filter(|e| e["event_type"] == "alert" && e["alert"]["signature_id"] == sid)
        .map(|e| {
            (
                format!(
                    "{} {}:{} -> {}:{}",
                    e["proto"], e["src_ip"], e["src_port"], e["dest_ip"], e["dest_port"]
                ),
                e["timestamp"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// The capture replayed slowly (1,000 packets a second, about 4.6 s); a third of the way in, the rule file is
/// rewritten and the sensor gets SIGHUP. The sensor must go on with the same flows (the flow records equal the
/// offline run's: none ended early, none written twice), alert with the old rule only on data before the reload and
/// with the new one only on data after it (each such alert one the offline run with that rule raises too), and say
/// in its summary that one reload was applied.
fn rules_reload_mid_replay(extra: &[&str]) {
    let Some(capture) = flowbundle_testsupport::data(CAPTURE) else {
        return;
    };
    let Some(tcpreplay) = flowbundle_testsupport::tool("tcpreplay") else {
        return;
    };
    let Some(ns) = netns() else { return };
    let dir = tempfile::tempdir().expect("temporary directory");
    let (old_path, new_path, rules) = (
        dir.path().join("old.rules"),
        dir.path().join("new.rules"),
        dir.path().join("live.rules"),
    );
    std::fs::write(&old_path, OLD_RULES).expect("writing rules");
    std::fs::write(&new_path, NEW_RULES).expect("writing rules");
    std::fs::write(&rules, OLD_RULES).expect("writing rules");
    let (off_old, off_new, live_path) = (
        dir.path().join("offline-old.json"),
        dir.path().join("offline-new.json"),
        dir.path().join("live.json"),
    );
    offline(&capture, &old_path, &off_old);
    offline(&capture, &new_path, &off_new);
    let (off_old, off_new) = (events(&off_old), events(&off_new));

    let (child, rx) = start_sensor(&ns, &rules, &live_path, extra);
    let mut replay = ns
        .exec(&tcpreplay)
        .args(["-q", "-i", REPLAY, "--pps", "1000"])
        .arg(&capture)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running tcpreplay");
    // The reload once the old rule has alerted (the sensor has inspected a request), not after a delay that a
    // lagging sensor may not have used.
    wait_for_alert(&live_path, 9200001);
    std::fs::write(&rules, NEW_RULES).expect("rewriting rules");
    let asked = eve_now(Duration::ZERO);
    signal(&child, "HUP");
    let lines = wait_for_line(&rx, "rules: reloaded");
    let loaded = eve_now(Duration::ZERO);
    let replayed = replay.wait().expect("tcpreplay");
    assert!(replayed.success(), "tcpreplay failed");
    let (summary, stderr) = stop_sensor(child, rx);

    let live = events(&live_path);
    let (off_flows, _) = observable(&off_old);
    let (live_flows, _) = observable(&live);
    assert_eq!(
        live_flows, off_flows,
        "{extra:?}: the flows differ from the offline run's across the reload\n{lines:?}\n{stderr}"
    );
    let (old_alerts, new_alerts) = (alerts_of(&live, 9200001), alerts_of(&live, 9200002));
    let (off_old_alerts, off_new_alerts) =
        (alerts_of(&off_old, 9200001), alerts_of(&off_new, 9200002));
    assert!(
        !old_alerts.is_empty() && !new_alerts.is_empty(),
        "{extra:?}: {} alerts before the reload, {} after",
        old_alerts.len(),
        new_alerts.len()
    );
    // The reload applies at one packet of the capture (frames are read in the order, and with the timestamps, the
    // kernel captured them): every old-rule alert is on a packet before every new-rule alert's, and none of the
    // packets the old rule saw came after the reload was done.
    let last_old = old_alerts.iter().map(|(_, ts)| ts).max();
    let first_new = new_alerts.iter().map(|(_, ts)| ts).min();
    assert!(
        last_old <= first_new,
        "{extra:?}: the old rule alerted at {last_old:?}, after the new one at {first_new:?}"
    );
    for (tuple, ts) in &old_alerts {
        assert!(
            ts <= &loaded,
            "{extra:?}: the old rule alerted at {ts}, after the reload ({loaded})"
        );
        assert!(off_old_alerts.iter().any(|(t, _)| t == tuple), "{tuple}");
    }
    for (tuple, _) in &new_alerts {
        assert!(off_new_alerts.iter().any(|(t, _)| t == tuple), "{tuple}");
    }
    assert!(
        new_alerts.len() < off_new_alerts.len() && old_alerts.len() < off_old_alerts.len(),
        "{extra:?}: each rule saw only its part of the replay"
    );
    assert!(
        summary.contains("rule reloads: 1 applied, 0 unchanged, 0 failed"),
        "{extra:?}: {summary}"
    );
    let engines = &stats(&live)["stats"]["detect"]["engines"][0];
    assert_eq!(engines["rules_loaded"], 1, "{engines}");
    assert!(
        engines["last_reload"]
            .as_str()
            .is_some_and(|t| t >= asked.as_str()),
        "{engines}"
    );
}

#[test]
fn sighup_reloads_the_rules_mid_replay_with_two_workers() {
    rules_reload_mid_replay(&["--threads", "2", "--scheduler", "lfb"]);
}

#[test]
fn sighup_reloads_the_rules_mid_replay_in_the_single_threaded_loop() {
    rules_reload_mid_replay(&["--threads", "1"]);
}

/// A reload that cannot load (a rule file of garbage) keeps the rules in use and says so in one line; a reload of
/// files that did not change loads nothing; SIGUSR2 reloads as SIGHUP does.
#[test]
fn a_failed_or_needless_reload_keeps_the_rules_in_use() {
    let Some(ns) = netns() else { return };
    let dir = tempfile::tempdir().expect("temporary directory");
    let rules = dir.path().join("live.rules");
    std::fs::write(&rules, OLD_RULES).expect("writing rules");
    let eve = dir.path().join("live.json");
    let (child, rx) = start_sensor(&ns, &rules, &eve, &["--threads", "2"]);
    signal(&child, "HUP");
    let lines = wait_for_line(&rx, "rules: reload asked; the files are unchanged");
    assert!(
        lines.last().is_some_and(|l| l.contains("1 rules loaded")),
        "{lines:?}"
    );
    std::fs::write(&rules, "this is not a rule\nnor is this\n").expect("writing garbage");
    signal(&child, "USR2");
    let lines = wait_for_line(&rx, "rules: reload failed");
    let failed = lines.last().cloned().unwrap_or_default();
    assert!(
        failed.contains("the sets in use kept (1 rules loaded")
            && failed.contains("no rule loaded"),
        "{failed}"
    );
    std::fs::write(&rules, NEW_RULES).expect("writing rules");
    signal(&child, "HUP");
    wait_for_line(&rx, "rules: reloaded");
    let (summary, _) = stop_sensor(child, rx);
    assert!(
        summary.contains("rule reloads: 1 applied, 1 unchanged, 1 failed"),
        "{summary}"
    );
}

/// logrotate's way: while the capture is replayed, the EVE file is renamed and the sensor gets SIGHUP; it reopens
/// the path (a new file) and goes on there. The two files together hold what the offline run writes (no line lost or
/// cut at the rotation), and each holds part of it.
#[test]
fn sighup_reopens_the_eve_file_after_logrotate_renamed_it() {
    let Some(capture) = flowbundle_testsupport::data(CAPTURE) else {
        return;
    };
    let Some(tcpreplay) = flowbundle_testsupport::tool("tcpreplay") else {
        return;
    };
    let Some(ns) = netns() else { return };
    let dir = tempfile::tempdir().expect("temporary directory");
    let rules = dir.path().join("live.rules");
    std::fs::write(&rules, RULES).expect("writing rules");
    let (off_path, live_path, rotated) = (
        dir.path().join("offline.json"),
        dir.path().join("eve.json"),
        dir.path().join("eve.json.1"),
    );
    offline(&capture, &rules, &off_path);
    let (child, rx) = start_sensor(&ns, &rules, &live_path, &["--threads", "2"]);
    let mut replay = ns
        .exec(&tcpreplay)
        .args(["-q", "-i", REPLAY, "--pps", "1000"])
        .arg(&capture)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("running tcpreplay");
    // Rotated once the file holds an alert (the sensor has written part of the replay's events), not after a delay.
    wait_for_alert(&live_path, 9000001);
    std::fs::rename(&live_path, &rotated).expect("rotating the EVE file");
    signal(&child, "HUP");
    wait_for_line(&rx, "eve: reopened");
    assert!(replay.wait().expect("tcpreplay").success());
    let (summary, _) = stop_sensor(child, rx);
    let (before, after) = (events(&rotated), events(&live_path));
    assert!(
        // Flow records come when flows end (timeouts, the end of the run): the first file holds the application
        // events and alerts of the first part.
        before.iter().any(|e| e["event_type"] == "alert")
            && after.iter().any(|e| e["event_type"] == "alert"),
        "{} events before the rotation, {} after",
        before.len(),
        after.len()
    );
    let all: Vec<Value> = before.into_iter().chain(after).collect();
    assert_eq!(observable(&all), observable(&events(&off_path)));
    assert!(summary.contains(" 1 reopens"), "{summary}");
}

/// A UDP datagram of 3,000 bytes crosses the inline sensor as the client's stack fragmented it (MTU 1,500): the
/// receiver gets it whole, the sensor inspected the reassembled datagram (its content rule alerts) and sent the
/// fragments on as they came; with a `drop` rule matching the datagram's content, the fragment that completes it is
/// withheld and the receiver gets nothing.
#[test]
fn inline_sensor_forwards_fragments_and_a_drop_rule_stops_the_datagram() {
    let Some(nc) = flowbundle_testsupport::tool("nc") else {
        return;
    };
    if flowbundle_testsupport::tool("ethtool").is_none() {
        return;
    }
    let payload: String = "fragmented ".repeat(270) + "secret tail\n";
    for (action, sid) in [("alert", 9100011u64), ("drop", 9100012)] {
        let Some(line) = made(Line::new()) else {
            return;
        };
        let dir = tempfile::tempdir().expect("temporary directory");
        let rules = dir.path().join("inline.rules");
        std::fs::write(
            &rules,
            format!("{action} udp any any -> any 7778 (msg:\"tail\"; content:\"secret tail\"; sid:{sid}; rev:1;)\n"),
        )
        .expect("writing rules");
        let eve = dir.path().join("inline.json");
        let (child, rx) = start_flowbundle(
            &line.sensor,
            &rules,
            &eve,
            &["--inline", "left0:right0", "--threads", "2"],
        );
        let server = line.listen(&nc, 7778, true);
        line.send_udp(&nc, 7778, &payload);
        let (summary, _) = stop_sensor(child, rx);
        let received = server.received(if action == "alert" { payload.len() } else { 0 });
        let alerted = events(&eve)
            .iter()
            .any(|e| e["alert"]["signature_id"] == sid);
        assert!(
            alerted,
            "{action}: the reassembled datagram was not inspected:\n{summary}"
        );
        let inline = summary
            .lines()
            .find(|l| l.trim_start().starts_with("inline:"))
            .unwrap_or_default()
            .to_string();
        assert!(!inline.contains(" 0 fragments forwarded"), "{inline}");
        if action == "alert" {
            assert_eq!(received, payload, "{inline}");
        } else {
            assert!(
                received.is_empty(),
                "the receiver got the dropped datagram: {inline}"
            );
            assert!(!inline.contains(" 0 dropped"), "{inline}");
        }
    }
}

/// A device that strips VLAN tags into the ring's metadata (a veth pair does): the sensor puts them back, so it
/// counts the bytes of the capture's frames as the offline run does, and sees the same flows.
#[test]
fn vlan_tags_stripped_by_the_device_are_restored() {
    let Some(capture) = flowbundle_testsupport::data("reassembly/VlanPackets.pcap") else {
        return;
    };
    let Some(tcpreplay) = flowbundle_testsupport::tool("tcpreplay") else {
        return;
    };
    let Some(ns) = netns() else { return };
    let dir = tempfile::tempdir().expect("temporary directory");
    let rules = dir.path().join("live.rules");
    std::fs::write(&rules, RULES).expect("writing rules");
    let (off_path, live_path) = (
        dir.path().join("offline.json"),
        dir.path().join("live.json"),
    );
    offline(&capture, &rules, &off_path);
    let (child, rx) = start_sensor(&ns, &rules, &live_path, &["--threads", "2"]);
    let replay = ns
        .exec(&tcpreplay)
        .args(["-q", "-i", REPLAY, "--pps", "2000"])
        .arg(&capture)
        .output()
        .expect("running tcpreplay");
    assert!(replay.status.success());
    let (summary, _) = stop_sensor(child, rx);
    assert!(
        !summary.contains("VLAN tags restored 0"),
        "the device kept the tags in the frames: nothing was restored\n{summary}"
    );
    let (off, live) = (events(&off_path), events(&live_path));
    let decoder = |evs: &[Value]| stats(evs)["stats"]["decoder"].clone();
    assert_eq!(
        decoder(&live)["bytes"],
        decoder(&off)["bytes"],
        "the tags' bytes"
    );
    assert!(decoder(&off)["pkts"].as_u64().is_some_and(|n| n > 0));
    assert_eq!(observable(&live).0, observable(&off).0);
}
