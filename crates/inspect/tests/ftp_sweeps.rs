//! An FTP data connection ended by a sweep, its control connection on another worker, while every worker reads the
//! input (`EachReads`, as `inspect` runs files under `dh`): the output equals the single-threaded run's.
//!
//! A worker that reaches a sweep first takes its timed-out flows out there and ends them once every worker has got
//! past it; the worker that gets there last ends its own at once, while the others may already have inspected
//! packets after the sweep. The capture made here puts an FTP control connection and its data connection in bundles
//! of different workers: the control connection announces a passive data port and names the file (`RETR a.bin`),
//! the data connection carries it and goes idle, a sweep ends it by timeout, and right after that sweep the control
//! connection announces the same port again (which starts a new, unnamed expectation). The single-threaded run's
//! sweep sees the first announcement and its file name; a worker that looked the table up as it stands after the
//! second announcement would write the data connection's `ftp_data` event without the name. The expectation table
//! answers "as of" the sweep's position (`flowbundle_inspect::expect`), so every run, at 2 and 3 workers and
//! whichever worker gets to the sweep first, writes the same events.

use std::path::{Path, PathBuf};

mod common;
use common::{every_worker_reads, lines};

use flowbundle_ingest::{CaptureReader, LinkType, PcapWriter, WriterOptions};
use flowbundle_inspect::{
    Engine, EngineConfig, Event, Placement, Prestage, SweepClock, SweepConfig, Timeouts,
};

const S: u64 = 1_000_000_000;
const MS: u64 = 1_000_000;

const SYN: u8 = 0x02;
const SYN_ACK: u8 = 0x12;
const ACK: u8 = 0x10;
const PSH_ACK: u8 = 0x18;

const SERVER: [u8; 4] = [10, 0, 0, 1];
const CLIENT: [u8; 4] = [10, 0, 0, 2];

fn config() -> EngineConfig {
    EngineConfig {
        sweep: SweepConfig {
            every_ns: S,
            min_packets: 32,
            gap_ns: 0,
            min_packets_after_gap: 0,
        },
        timeouts: Timeouts {
            tcp_new_ns: 5 * S,
            tcp_established_ns: 5 * S,
            tcp_closed_ns: 5 * S,
            udp_new_ns: 5 * S,
            udp_established_ns: 5 * S,
            other_new_ns: 5 * S,
            other_established_ns: 5 * S,
        },
        ..EngineConfig::default()
    }
}

/// A raw IPv4 packet.
fn ipv4(src: [u8; 4], dst: [u8; 4], proto: u8, l4: &[u8]) -> Vec<u8> {
    let total = (20 + l4.len()) as u16;
    let mut b = vec![0x45, 0];
    b.extend_from_slice(&total.to_be_bytes());
    b.extend_from_slice(&[0, 1, 0x40, 0, 64, proto, 0, 0]);
    b.extend_from_slice(&src);
    b.extend_from_slice(&dst);
    flowbundle_decode::wire::ipv4::Packet::new_checked(&mut b[..])
        .expect("an IPv4 header")
        .fill_checksum();
    b.extend_from_slice(l4);
    b
}

/// One direction of a TCP connection between `CLIENT:cport` and `server:sport`.
fn tcp(
    from_client: bool,
    (server, cport, sport): ([u8; 4], u16, u16),
    seq: u32,
    ack: u32,
    flags: u8,
    data: &[u8],
) -> Vec<u8> {
    let (src, dst, sp, dp) = if from_client {
        (CLIENT, server, cport, sport)
    } else {
        (server, CLIENT, sport, cport)
    };
    let mut t = Vec::with_capacity(20 + data.len());
    t.extend_from_slice(&sp.to_be_bytes());
    t.extend_from_slice(&dp.to_be_bytes());
    t.extend_from_slice(&seq.to_be_bytes());
    t.extend_from_slice(&ack.to_be_bytes());
    t.extend_from_slice(&[0x50, flags, 0xff, 0xff, 0, 0, 0, 0]);
    t.extend_from_slice(data);
    ipv4(src, dst, 6, &t)
}

/// A TCP connection being written: its server address and ports, and each side's next sequence number.
struct Conn {
    ports: ([u8; 4], u16, u16),
    c: u32,
    s: u32,
}

impl Conn {
    fn open(ports: ([u8; 4], u16, u16), out: &mut Vec<Vec<u8>>) -> Conn {
        let (c, s) = (1000u32, 5000u32);
        out.push(tcp(true, ports, c, 0, SYN, b""));
        out.push(tcp(false, ports, s, c + 1, SYN_ACK, b""));
        out.push(tcp(true, ports, c + 1, s + 1, ACK, b""));
        Conn {
            ports,
            c: c + 1,
            s: s + 1,
        }
    }

    /// `data` from one side, acknowledged by the other.
    fn say(&mut self, from_client: bool, data: &[u8], out: &mut Vec<Vec<u8>>) {
        let n = data.len() as u32;
        if from_client {
            out.push(tcp(true, self.ports, self.c, self.s, PSH_ACK, data));
            self.c += n;
            out.push(tcp(false, self.ports, self.s, self.c, ACK, b""));
        } else {
            out.push(tcp(false, self.ports, self.s, self.c, PSH_ACK, data));
            self.s += n;
            out.push(tcp(true, self.ports, self.c, self.s, ACK, b""));
        }
    }
}

/// A UDP datagram of a filler flow (flow `k`, in bundles of every worker).
fn filler(k: u32) -> Vec<u8> {
    let src = [10, 1, (k >> 8) as u8, k as u8];
    let mut u = Vec::new();
    u.extend_from_slice(&(20_000 + (k % 40_000) as u16).to_be_bytes());
    u.extend_from_slice(&9999u16.to_be_bytes());
    u.extend_from_slice(&(8u16 + 6).to_be_bytes());
    u.extend_from_slice(&[0, 0]);
    u.extend_from_slice(b"filler");
    ipv4(src, [192, 168, 0, 1], 17, &u)
}

/// The worker `dh` gives `frame`'s flow among `workers`.
fn owner(frame: &[u8], workers: usize) -> usize {
    let d = flowbundle_decode::decode_bytes(LinkType::RAW, frame, &config().decode);
    usize::from(Engine::serial_bundle(&d)) % workers
}

/// The port the data connection is announced at.
const DATA_PORT: u16 = 2020;

/// The address the control connection announces for the data connection (a data server of its own, as a server
/// behind a load balancer announces), which `dh` puts on another worker than the control connection, at 2 and at 3
/// workers (`dh` places a flow by its pair of addresses).
fn data_server() -> [u8; 4] {
    let control = tcp(true, (SERVER, 40_000, 21), 1, 0, SYN, b"");
    (2..=254u8)
        .map(|h| [10, 0, 0, h])
        .find(|&ip| {
            let data = tcp(true, (ip, 40_001, DATA_PORT), 1, 0, SYN, b"");
            [2, 3]
                .iter()
                .all(|&n| owner(&control, n) != owner(&data, n))
        })
        .expect("an address that puts the two connections on different workers")
}

/// The capture being written: the packets, each with its capture time (10 ms apart), and where the single-threaded
/// run sweeps.
struct Builder {
    packets: Vec<(u64, Vec<u8>)>,
    ts: u64,
    clock: SweepClock,
    /// The capture time of each sweep and the packet it follows.
    sweeps: Vec<(u64, u64)>,
    fillers: u32,
}

impl Builder {
    fn push(&mut self, frames: Vec<Vec<u8>>) {
        for f in frames {
            self.ts += 10 * MS;
            let i = self.packets.len() as u64;
            self.packets.push((self.ts, f));
            if let Some(now) = self.clock.packet(self.ts) {
                self.sweeps.push((now, i));
            }
        }
    }

    fn fill(&mut self, n: u32) {
        let first = self.fillers;
        self.fillers += n;
        self.push((first..first + n).map(filler).collect());
    }
}

/// Writes the capture; returns the packet after which the sweep that ends the data connection comes.
fn capture(path: &Path) -> u64 {
    let (cport, dport, host) = (40_000, DATA_PORT, data_server());
    let pasv = format!(
        "227 Entering Passive Mode ({},{},{},{},{},{}).\r\n",
        host[0],
        host[1],
        host[2],
        host[3],
        dport >> 8,
        dport & 0xff
    );
    let mut b = Builder {
        packets: Vec::new(),
        ts: 1_700_000_000 * S,
        clock: SweepClock::new(config().sweep),
        sweeps: Vec::new(),
        fillers: 0,
    };
    let mut out = Vec::new();
    let mut control = Conn::open((SERVER, cport, 21), &mut out);
    for (from_client, line) in [
        (false, b"220 (vsFTPd 3.0.3)\r\n".as_slice()),
        (true, b"USER anonymous\r\n"),
        (false, b"331 Please specify the password.\r\n"),
        (true, b"PASS guest\r\n"),
        (false, b"230 Login successful.\r\n"),
        (true, b"PASV\r\n"),
        (false, pasv.as_bytes()),
        (true, b"RETR a.bin\r\n"),
        (false, b"150 Opening BINARY mode data connection.\r\n"),
    ] {
        control.say(from_client, line, &mut out);
    }
    b.push(std::mem::take(&mut out));
    // More than a window (64 packets) of others' packets: the data connection's first packet comes after every
    // worker has inspected the announcement, as in the single-threaded run.
    b.fill(300);
    let mut data = Conn::open((host, cport + 1, dport), &mut out);
    data.say(false, b"the bytes of a.bin, sent from the server", &mut out);
    b.push(std::mem::take(&mut out));
    let deadline = b.ts + 5 * S;
    // The data connection goes idle; the control connection stays alive (a NOOP every second) until the first
    // sweep after the data connection's deadline, which ends it.
    let mut n = 0u32;
    let ended_at = loop {
        let seen = b.sweeps.len();
        n += 1;
        if n.is_multiple_of(90) {
            control.say(true, b"NOOP\r\n", &mut out);
            control.say(false, b"200 NOOP ok.\r\n", &mut out);
            b.push(std::mem::take(&mut out));
        } else {
            b.fill(1);
        }
        if let Some(&(_, i)) = b.sweeps[seen..].iter().find(|&&(now, _)| now > deadline) {
            break i;
        }
    };
    // Right after that sweep, the same port announced again.
    control.say(true, b"PASV\r\n", &mut out);
    control.say(false, pasv.as_bytes(), &mut out);
    b.push(std::mem::take(&mut out));
    // The tail: more of the others; the control connection ends with the end of the input.
    b.fill(300);
    let file = std::fs::File::create(path).expect("creating the capture");
    let mut w = PcapWriter::new(file, WriterOptions::new(LinkType::RAW)).expect("pcap header");
    for (ts, f) in &b.packets {
        w.write_packet(*ts, f, f.len() as u32)
            .expect("writing a packet");
    }
    ended_at
}

/// `inspect FILE --threads 1`: the single-threaded loop, which sweeps at the positions the clock names.
fn single_threaded(file: &Path) -> Vec<Event> {
    let mut engine = Engine::new(config(), None, None);
    let mut pre = Prestage::new(engine.config());
    let mut ctx = engine.new_ctx();
    let mut clock = SweepClock::new(engine.config().sweep);
    let mut reader = CaptureReader::open(file).expect("the capture opens");
    let mut num = 0u64;
    while let Some(rec) = reader.next_packet().expect("the capture reads") {
        engine.process_serial(&mut ctx, &mut pre, num, &rec);
        num += 1;
        if let Some(now) = clock.packet(rec.ts_ns) {
            engine.expire_serial(&mut ctx, now);
        }
    }
    let mut events = Vec::new();
    ctx.take_events(&mut events);
    events.extend(engine.finish([ctx]).events);
    events
}

#[test]
fn an_ftp_data_connection_ended_by_a_sweep_on_another_worker_gives_the_serial_output() {
    let dir = std::env::temp_dir().join(format!("fb-ftp-sweeps-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file: PathBuf = dir.join("ftp-around-a-sweep.pcap");
    let ended_at = capture(&file);

    let mut serial = lines(&single_threaded(&file));
    serial.sort();
    // The test tests something: the single-threaded run names the data connection's file (the second announcement
    // came after the sweep that ended it), and ended it by timeout.
    let named: Vec<&String> = serial
        .iter()
        .filter(|l| l.contains("FtpData(FtpDataEvent"))
        .collect();
    assert_eq!(
        named.len(),
        1,
        "one data connection's ftp_data event: {named:?}"
    );
    assert!(
        named[0].contains("a.bin") && named[0].contains("RETR"),
        "the file named by RETR: {}",
        named[0]
    );
    assert!(ended_at > 300, "the sweep at packet {ended_at}");
    assert!(
        serial
            .iter()
            .any(|l| l.contains("ftp-data") || l.contains("FtpData")),
        "an ftp-data flow"
    );

    let mut later = 0;
    for workers in [2, 3] {
        for round in 0..10 {
            let (out, reports) = every_worker_reads(config(), &file, workers, 64, Placement::Fixed);
            let l: u64 = reports.iter().map(|r| r.sweeps_ended_later).sum();
            later += l;
            let mut sorted = out.clone();
            sorted.sort();
            if sorted != serial {
                let only_serial: Vec<&String> =
                    serial.iter().filter(|l| !sorted.contains(l)).collect();
                let only_parallel: Vec<&String> =
                    sorted.iter().filter(|l| !serial.contains(l)).collect();
                panic!(
                    "{workers} workers, round {round}: differs from the single-threaded run\n\
                     only single-threaded: {only_serial:#?}\nonly parallel: {only_parallel:#?}"
                );
            }
        }
    }
    // Some sweep was ended after its worker went on (the path this test is about), in twenty runs.
    assert!(later > 0, "no sweep was ever ended later");
    let _ = std::fs::remove_dir_all(&dir);
}
