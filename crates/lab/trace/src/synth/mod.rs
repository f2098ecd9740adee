//! # `trace synth`: realistic traffic with a chosen shape
//!
//! Scheduling results depend on the traffic (ANCS'10 §4.2 needed a capture dominated by one connection, one with
//! many concurrent connections, and one in between), so the synthesizer controls exactly the attributes that
//! matter to a scheduler: the number of connections, how packets are spread over them (a Zipf law, plus an
//! optional dominant connection with a given share), how they are interleaved (connection density: distinct
//! connections per 100 packets; packet trains), and the average and peak rate. The profiles
//! [`SynthConfig::profile`] `dominant`, `many` and `balanced` reproduce the three captures of the paper's Table 1.
//!
//! ## What the packets are
//! Ethernet frames with IPv4 or IPv6 (a configurable share), correct checksums everywhere, and real conversations
//! the engine identifies ([`GeneratedApp`]): TCP connections with handshake, sequence and acknowledgement numbers, delayed
//! ACKs, windows and a FIN or RST teardown carrying HTTP/1.1 (gzip-compressed HTML, or downloads), TLS 1.3 (SNI in
//! a ClientHello, ServerHello, encrypted records), SSH (banners, KEXINIT, key exchange, encrypted data), SMTP (a
//! whole mail) and FTP (login, listing); UDP conversations carrying DNS, QUIC v1 (Initials protected with the real
//! RFC 9001 keys, so the engine decrypts the SNI) and opaque datagrams; and opaque TCP on an unregistered port.
//! Clients live in 10.0.0.0/8 and fd00:c1::/64, servers in 198.18.0.0/15 (RFC 2544's benchmarking range) and
//! 2001:db8::/32, so nothing collides with real hosts.
//!
//! ## How the shape is reached
//! * **Sizes** ([`plan`]): a rank-size Zipf law with exponent `zipf` over the connections, capped at
//!   `max_flow_share` of the packets, every flow at least as long as its conversation needs; the dominant
//!   connection gets `share / (1 − share)` of the others' packets. Each conversation is built to have exactly its
//!   planned packet count ([`apps`]), so the shares are exact.
//! * **Density** ([`schedule`]): the ranked flows run in `K` concurrent slots at equal pace, in trains; `K` is
//!   calibrated by running the scheduler itself on the trace's first packets. The dominant connection is
//!   interleaved outside the slots, by count, so its share holds in every part of the trace.
//! * **Rate**: packets get timestamps in output order. Within a train they follow each other at the peak rate;
//!   the time left over by the average rate (wire bits / average) is spent before each new train, scaled by an
//!   exponential factor (bursty, but the average holds). With `duration` instead of a rate, the time per packet is
//!   the duration over the planned packet count.
//!
//! ## Memory and speed
//! Generation is streaming: the plan is closed-form (no table of flows), the scheduler holds `K` slots, an active
//! conversation holds its small messages and generates bulk bytes on demand (a 1 MiB random pool, precomputed gzip
//! bodies). 1 million packets take well under 5 s in a release build (`BENCHMARKS.md`). The same seed gives the
//! same bytes.

pub mod apps;
mod content;
mod dns;
mod frame;
pub mod plan;
mod quic;
pub mod schedule;
mod tcp;
mod tls;

use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::Path;
use std::sync::Arc;

use flate2::Compression;
use flate2::write::GzEncoder;
use flowbundle_ingest::{LinkType, PcapWriter, Trace, TraceBuilder, WriterOptions};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

pub use apps::GeneratedApp;

use apps::{Ctx, Side, UdpConv};
use content::{Pools, mix};
use frame::{Endpoint, L4, Wire};
use plan::Plan;
use schedule::Scheduler;
use tcp::TcpConv;

use crate::rewrite::progress::{Bar, Unit};
use crate::rewrite::{Rate, ToolError};
use crate::stats::Progress;

/// The ANCS'10 Table 1 connection density window.
pub const DENSITY_WINDOW: usize = 100;

/// What to synthesize.
#[derive(Debug, Clone, PartialEq)]
pub struct SynthConfig {
    /// Packets to write (the result is within a few packets of it: every conversation has a minimum size).
    pub packets: u64,
    /// TCP and UDP connections, the dominant one included.
    pub connections: u64,
    /// Zipf exponent of the connection sizes (0 = all equal; 1 = classic Zipf).
    pub zipf: f64,
    /// No ranked connection gets more than this share of the packets.
    pub max_flow_share: f64,
    /// Share of the packets of the dominant connection (0 = none).
    pub dominant_share: f64,
    /// What the dominant connection carries.
    pub dominant_app: GeneratedApp,
    /// Mean packets per train (a flow's packets back to back), ≥ 1.
    pub train: f64,
    /// Target connection density (distinct connections per 100 packets); `None` uses `concurrency`.
    pub density: Option<f64>,
    /// Concurrent connections (slots) when `density` is not given.
    pub concurrency: u64,
    /// Average rate; `None` with `duration_s` set.
    pub rate: Option<Rate>,
    /// Duration in seconds instead of a rate.
    pub duration_s: Option<f64>,
    /// Peak rate: trains are sent at this rate (≥ the average), so the maximum rate sustained over 1 ms is about
    /// this; `None`: three times the average.
    pub peak: Option<Rate>,
    /// Share of the connections over IPv6.
    pub ipv6_share: f64,
    /// Application weights by connection count, indexed like [`GeneratedApp::ALL`].
    pub mix: [f64; 9],
    /// Share of TCP connections that end with a RST instead of FINs.
    pub rst_share: f64,
    pub seed: u64,
    /// Timestamp of the first packet (ns since the epoch).
    pub start_ns: u64,
}

/// 2010-06-01T12:00:00Z, the era of the paper's captures.
const DEFAULT_START_NS: u64 = 1_275_393_600 * 1_000_000_000;

/// The default application mix: by connections, TLS and HTTP first, DNS and QUIC for the short flows.
pub const DEFAULT_MIX: [f64; 9] = [0.22, 0.30, 0.03, 0.03, 0.02, 0.04, 0.20, 0.12, 0.04];

impl Default for SynthConfig {
    fn default() -> Self {
        SynthConfig {
            packets: 100_000,
            connections: 5_000,
            zipf: 0.8,
            max_flow_share: 0.02,
            dominant_share: 0.0,
            dominant_app: GeneratedApp::Http,
            train: 2.0,
            density: Some(25.0),
            concurrency: 32,
            rate: Rate::bits_per_second(50e6),
            duration_s: None,
            peak: Rate::bits_per_second(100e6),
            ipv6_share: 0.1,
            mix: DEFAULT_MIX,
            rst_share: 0.1,
            seed: 1,
            start_ns: DEFAULT_START_NS,
        }
    }
}

impl SynthConfig {
    /// The ANCS'10 Table 1 shapes, at the paper's sizes:
    ///
    /// | profile | packets | connections | avg / max Mb/s | density | shape |
    /// |---|---|---|---|---|---|
    /// | `dominant` | 454,988 | 2,224 | 13 / 38 | 7 | one TCP connection with 55% of the packets |
    /// | `many` | 1,567,397 | 105,691 | 27 / 74 | 50 | flat Zipf (0.5), no connection above 0.35% |
    /// | `balanced` | 1,236,710 | 43,357 | 57 / 75 | 29 | a largest connection of 8%, Zipf 0.75 below it |
    ///
    /// [`SynthConfig::with_packets`] scales a profile down (connections in proportion) for tests and demos.
    pub fn profile(name: &str) -> Option<SynthConfig> {
        let mbps = |v: f64| Rate::bits_per_second(v * 1e6);
        let base = SynthConfig::default();
        Some(match name {
            "dominant" => SynthConfig {
                packets: 454_988,
                connections: 2_224,
                zipf: 1.0,
                max_flow_share: 0.03,
                dominant_share: 0.55,
                dominant_app: GeneratedApp::Http,
                train: 2.0,
                density: Some(7.0),
                rate: mbps(13.0),
                peak: mbps(38.0),
                ..base
            },
            "many" => SynthConfig {
                packets: 1_567_397,
                connections: 105_691,
                zipf: 0.5,
                max_flow_share: 0.0035,
                dominant_share: 0.0,
                train: 1.2,
                density: Some(50.0),
                rate: mbps(27.0),
                peak: mbps(74.0),
                ..base
            },
            "balanced" => SynthConfig {
                packets: 1_236_710,
                connections: 43_357,
                zipf: 0.75,
                max_flow_share: 0.012,
                dominant_share: 0.08,
                dominant_app: GeneratedApp::Tls,
                train: 1.6,
                density: Some(29.0),
                rate: mbps(57.0),
                peak: mbps(75.0),
                ..base
            },
            _ => return None,
        })
    }

    /// The profile names [`SynthConfig::profile`] knows.
    pub const PROFILES: [&'static str; 3] = ["dominant", "many", "balanced"];

    /// The same shape with `packets` packets: connections scale in proportion (at least 10).
    pub fn with_packets(mut self, packets: u64) -> SynthConfig {
        let ratio = packets as f64 / self.packets.max(1) as f64;
        self.connections = ((self.connections as f64 * ratio).round() as u64).max(10);
        self.packets = packets;
        self
    }

    /// Refuses a configuration the generator cannot honour, saying why.
    pub fn validate(&self) -> Result<(), ToolError> {
        let bad = |m: String| Err(ToolError::Usage(m));
        if self.packets == 0 {
            return bad("--packets must be at least 1".into());
        }
        if self.connections == 0 {
            return bad("--connections must be at least 1".into());
        }
        if self.connections > self.packets {
            return bad(format!(
                "{} connections cannot fit in {} packets (a connection has at least one packet)",
                self.connections, self.packets
            ));
        }
        if !(self.zipf.is_finite() && (0.0..=4.0).contains(&self.zipf)) {
            return bad(format!("--zipf must be between 0 and 4, not {}", self.zipf));
        }
        if !(self.dominant_share.is_finite() && (0.0..0.99).contains(&self.dominant_share)) {
            return bad(format!(
                "--dominant-share must be in [0, 0.99), not {}",
                self.dominant_share
            ));
        }
        if self.dominant_share > 0.0 && self.connections < 2 {
            return bad("a dominant connection needs at least 2 connections".into());
        }
        if !(self.max_flow_share.is_finite()
            && self.max_flow_share > 0.0
            && self.max_flow_share <= 1.0)
        {
            return bad(format!(
                "--max-flow-share must be in (0, 1], not {}",
                self.max_flow_share
            ));
        }
        if !(self.train.is_finite() && (1.0..=1000.0).contains(&self.train)) {
            return bad(format!(
                "--train must be between 1 and 1000 packets, not {}",
                self.train
            ));
        }
        if let Some(d) = self.density
            && !(d.is_finite() && (1.0..=DENSITY_WINDOW as f64).contains(&d))
        {
            return bad(format!(
                "--density must be between 1 and {DENSITY_WINDOW}, not {d}"
            ));
        }
        if self.density.is_none() && self.concurrency == 0 {
            return bad("--concurrency must be at least 1".into());
        }
        match (self.rate, self.duration_s) {
            (Some(_), Some(_)) => return bad("give --rate or --duration, not both".into()),
            (None, None) => return bad("give --rate or --duration".into()),
            (None, Some(d)) if !(d.is_finite() && d > 0.0 && d < 1e8) => {
                return bad(format!("--duration must be positive seconds, not {d}"));
            }
            _ => {}
        }
        if let (Some(avg), Some(peak)) = (self.rate, self.peak)
            && peak.bps() < avg.bps()
        {
            return bad(format!(
                "the peak rate ({peak}) is below the average ({avg})"
            ));
        }
        if !(self.ipv6_share.is_finite() && (0.0..=1.0).contains(&self.ipv6_share)) {
            return bad(format!(
                "--ipv6-share must be in [0, 1], not {}",
                self.ipv6_share
            ));
        }
        if !(self.rst_share.is_finite() && (0.0..=1.0).contains(&self.rst_share)) {
            return bad(format!(
                "the RST share must be in [0, 1], not {}",
                self.rst_share
            ));
        }
        if self.mix.iter().any(|w| !(w.is_finite() && *w >= 0.0))
            || self.mix.iter().sum::<f64>() <= 0.0
        {
            return bad("the application mix needs non-negative weights, not all zero".into());
        }
        if u32::try_from(self.start_ns / 1_000_000_000).is_err() {
            return bad("the start time must be before 2106 (classic pcap timestamps)".into());
        }
        Ok(())
    }
}

/// Parses an application mix such as `http=2,tls=3,dns=1` into weights indexed like [`GeneratedApp::ALL`] (applications not
/// named get 0; names as [`GeneratedApp::name`] prints them).
pub fn parse_mix(s: &str) -> Result<[f64; 9], String> {
    let mut w = [0.0; 9];
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (name, val) = part
            .split_once('=')
            .ok_or_else(|| format!("`{part}`: write APP=WEIGHT, e.g. tls=3"))?;
        let i = GeneratedApp::ALL
            .iter()
            .position(|a| a.name() == name.trim().to_ascii_lowercase())
            .ok_or_else(|| {
                let names: Vec<&str> = GeneratedApp::ALL.iter().map(|a| a.name()).collect();
                format!("unknown application `{name}` (one of {})", names.join(", "))
            })?;
        let v: f64 = val
            .trim()
            .parse()
            .map_err(|_| format!("`{part}`: the weight must be a number"))?;
        if !(v.is_finite() && v >= 0.0) {
            return Err(format!("`{part}`: the weight must be non-negative"));
        }
        w[i] = v;
    }
    if w.iter().sum::<f64>() <= 0.0 {
        return Err(format!("`{s}`: the mix needs at least one positive weight"));
    }
    Ok(w)
}

/// One generated packet, borrowed from the generator until the next call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SynthPacket<'a> {
    pub ts_ns: u64,
    /// An Ethernet frame.
    pub data: &'a [u8],
    /// The connection: 0 for the dominant one, else 1 + its start index.
    pub flow: u64,
    pub app: GeneratedApp,
    /// Sent by the connection's client.
    pub from_client: bool,
}

/// A generated packet that owns its bytes (the [`generate`] iterator).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnedPacket {
    pub ts_ns: u64,
    pub data: Vec<u8>,
    pub flow: u64,
    pub app: GeneratedApp,
    pub from_client: bool,
}

/// Per-application counts of a generated trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct AppCount {
    pub app: GeneratedApp,
    pub connections: u64,
    pub packets: u64,
}

/// What was generated.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SynthSummary {
    pub packets: u64,
    /// Packets the plan promised (equal to `packets` once generation is complete).
    pub planned_packets: u64,
    pub wire_bytes: u64,
    pub connections: u64,
    /// Concurrent slots used (calibrated from the density target).
    pub concurrency: u64,
    pub dominant_packets: u64,
    pub first_ns: Option<u64>,
    pub last_ns: Option<u64>,
    pub apps: Vec<AppCount>,
}

impl SynthSummary {
    /// Seconds from the first to the last packet.
    pub fn duration_s(&self) -> f64 {
        match (self.first_ns, self.last_ns) {
            (Some(a), Some(b)) => (b - a) as f64 / 1e9,
            _ => 0.0,
        }
    }
}

enum Conv {
    Tcp(TcpConv),
    Udp(UdpConv),
}

/// A live conversation.
struct Flow {
    id: u64,
    app: GeneratedApp,
    conv: Conv,
    wire: Wire,
    rng: ChaCha8Rng,
}

/// Addresses of the synthetic network (see the module documentation).
fn client_ip(h: u64, v6: bool) -> IpAddr {
    if v6 {
        IpAddr::V6(Ipv6Addr::from((0xfd00_00c1u128 << 96) | u128::from(h + 1)))
    } else {
        let n = h % (254 * 65_536);
        IpAddr::V4(Ipv4Addr::new(
            10,
            (n / 254 / 256) as u8,
            (n / 254 % 256) as u8,
            (n % 254 + 1) as u8,
        ))
    }
}

fn server_ip(app: GeneratedApp, s: u64, v6: bool) -> IpAddr {
    let a = GeneratedApp::ALL
        .iter()
        .position(|x| *x == app)
        .unwrap_or(0) as u64;
    if v6 {
        IpAddr::V6(Ipv6Addr::from(
            (0x2001_0db8_005eu128 << 80) | (u128::from(a) << 32) | u128::from(s + 1),
        ))
    } else {
        // 198.18.0.0/15: the application in the third octet's top bits, the server below.
        let n = (a << 12) | (s % 4_000 + 1);
        IpAddr::V4(Ipv4Addr::new(
            198,
            18 + (n >> 16) as u8 % 2,
            (n >> 8) as u8,
            n as u8,
        ))
    }
}

/// Everything a flow's construction needs.
struct Env {
    seed: u64,
    hosts: u64,
    servers: u64,
    ipv6_share: f64,
    rst_share: f64,
}

impl Flow {
    fn new(id: u64, rank: u64, app: GeneratedApp, packets: u64, env: &Env, ctx: &Ctx<'_>) -> Flow {
        let mut rng = ChaCha8Rng::seed_from_u64(mix(env.seed, id.wrapping_add(0x666c_6f77)));
        let v6 =
            ((mix(env.seed ^ 0x7636, rank) >> 11) as f64 / (1u64 << 53) as f64) < env.ipv6_share;
        // (client host, client port) is unique per rank: host = rank mod H, the port a bijection of rank div H.
        let h = rank % env.hosts;
        let q = rank / env.hosts;
        let port = 1024 + ((q * 40_503 + h * 7_919) % 64_511) as u16;
        let servers = if app == GeneratedApp::Dns {
            4
        } else {
            env.servers
        };
        let s = mix(env.seed ^ 0x7372_7672, rank) % servers;
        let client = Endpoint {
            mac: [
                0x02,
                0x00,
                (h >> 24) as u8,
                (h >> 16) as u8,
                (h >> 8) as u8,
                h as u8,
            ],
            ip: client_ip(h, v6),
            port,
            ttl: 64,
        };
        let server = Endpoint {
            mac: [0x02, 0x42, 0xac, 0x11, 0x00, 0x01],
            ip: server_ip(app, s, v6),
            port: app.server_port(&mut rng),
            ttl: 64 - (s % 20) as u8,
        };
        let wire = Wire {
            ends: [client, server],
            ip_id: [rng.random(), rng.random()],
            flow_label: if v6 {
                rng.random::<u32>() & 0xf_ffff
            } else {
                0
            },
        };
        let mss = if v6 { 1440 } else { 1460 };
        let conv = match app.shape() {
            Some(shape) => {
                let rst = rng.random::<f64>() < env.rst_share;
                let (n, td) = shape.solve(packets, rst);
                let ctx = Ctx { mss, ..*ctx };
                let msgs = apps::tcp_messages(app, n, &mut rng, &ctx);
                let isn = [rng.random(), rng.random()];
                Conv::Tcp(TcpConv::new(msgs, shape.closer, td, isn, mss))
            }
            None => Conv::Udp(UdpConv::new(app, packets, &mut rng)),
        };
        Flow {
            id,
            app,
            conv,
            wire,
            rng,
        }
    }

    /// Writes the next frame into `buf`; returns the sender, or `None` when the conversation is over.
    fn emit(&mut self, buf: &mut Vec<u8>, scratch: &mut Vec<u8>, pools: &Pools) -> Option<Side> {
        match &mut self.conv {
            Conv::Tcp(c) => {
                let seg = c.next()?;
                let l4 = L4::Tcp {
                    seq: seg.seq,
                    ack: seg.ack,
                    flags: seg.flags,
                    window: seg.window,
                    syn_mss: seg.syn_mss,
                };
                let len = seg.payload.map_or(0, |p| p.2);
                let msgs = &c.msgs;
                self.wire.frame(buf, seg.from, l4, len, |out| {
                    if let Some((m, off, _)) = seg.payload
                        && let Some((_, content)) = msgs.get(m)
                    {
                        content.copy(off, out, pools);
                    }
                });
                Some(seg.from)
            }
            Conv::Udp(u) => {
                let side = u.next(&mut self.rng, pools, scratch)?;
                let data: &[u8] = scratch;
                self.wire.frame(buf, side, L4::Udp, data.len(), |out| {
                    out.copy_from_slice(data)
                });
                Some(side)
            }
        }
    }
}

/// Timestamps: trains at the peak rate, the rest of each packet's time budget spent before trains.
///
/// Within a train, packets are spaced so that a 1 ms window holds at most the peak rate's worth of bits: a window
/// that starts on a packet holds that packet entirely, so the spacing is `bits / (peak − bits per ms)` rather than
/// `bits / peak` (which would let the measured 1 ms maximum exceed the peak by a packet per millisecond).
struct Clock {
    t: f64,
    start: u64,
    /// ns per wire bit at the average rate (rate mode), or ns per packet (duration mode).
    per_bit: Option<f64>,
    per_packet: f64,
    /// Peak rate in bit/s; `None`: three times the average (Table 1's captures peak at 1.3–3× their average).
    peak_bps: Option<f64>,
    debt: f64,
    rng: ChaCha8Rng,
    first: bool,
}

impl Clock {
    fn serial(&self, bits: f64) -> f64 {
        match self.peak_bps {
            Some(p) => bits * 1e9 / (p - bits * 1e3).max(p / 2.0),
            None => match self.per_bit {
                Some(b) => bits * b / 3.0,
                None => self.per_packet / 3.0,
            },
        }
    }

    fn stamp(&mut self, wire_bytes: usize, train_start: bool) -> u64 {
        let bits = wire_bytes as f64 * 8.0;
        let serial = self.serial(bits);
        let budget = self.per_bit.map_or(self.per_packet, |b| bits * b);
        if self.first {
            self.first = false;
        } else {
            let mut gap = serial;
            if train_start && self.debt > 0.0 {
                let e = -(self.rng.random::<f64>().max(f64::MIN_POSITIVE)).ln();
                gap += self.debt * e;
                self.debt = 0.0;
            }
            self.t += gap;
        }
        self.debt += budget - serial;
        self.start + self.t.round() as u64
    }
}

/// The emission state: which train is being sent.
#[derive(Debug, Clone, Copy)]
enum Current {
    Slot { slot: usize, left: u64 },
    Dominant { left: u64 },
}

/// The streaming generator; see the module documentation. [`Synth::next_packet`] lends each packet until the
/// next call (no allocation per packet).
pub struct Synth {
    plan: Plan,
    sched: Scheduler,
    k: u64,
    pools: Pools,
    gzip: Vec<Arc<[u8]>>,
    date: String,
    env: Env,
    slots: Vec<Option<Flow>>,
    dominant: Option<Flow>,
    dom_left: u64,
    dom_ratio: f64,
    dom_sent: u64,
    others_sent: u64,
    train_mean: f64,
    sched_done: bool,
    pending: Option<schedule::Train>,
    current: Option<Current>,
    clock: Clock,
    rng: ChaCha8Rng,
    buf: Vec<u8>,
    scratch: Vec<u8>,
    summary: SynthSummary,
}

impl std::fmt::Debug for Synth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Synth")
            .field("concurrency", &self.k)
            .field("summary", &self.summary)
            .finish_non_exhaustive()
    }
}

/// An HTTP date (RFC 9110 IMF-fixdate) for `ns` since the epoch.
fn http_date(ns: u64) -> String {
    let secs = i64::try_from(ns / 1_000_000_000).unwrap_or(i64::MAX);
    // Every u64 of nanoseconds is a representable, four-digit-year time: neither fallback is reached.
    let ts = jiff::Timestamp::from_second(secs).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    jiff::fmt::rfc2822::DateTimePrinter::new()
        .timestamp_to_rfc9110_string(&ts)
        .unwrap_or_default()
}

/// Gzip-compressed HTML pages of growing size, made once per run: HTTP responses carry them whole.
fn gzip_bodies(pools: &Pools, seed: u64) -> Vec<Arc<[u8]>> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x677a);
    let mut out = Vec::new();
    let mut html =
        String::from("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>");
    html.push_str("flowbundle</title></head>\n<body>\n");
    for step in 0..48 {
        // Grow by about 1,200 bytes of markup per body: their compressed sizes step by a few hundred bytes.
        while html.len() < 600 + step * 1_200 {
            html.push_str("<p class=\"");
            html.push_str(pools.words[rng.random_range(0..pools.words.len())]);
            html.push_str("\">");
            for _ in 0..rng.random_range(8..24) {
                html.push_str(pools.words[rng.random_range(0..pools.words.len())]);
                html.push(' ');
            }
            html.push_str("</p>\n");
        }
        let page = format!("{html}</body></html>\n");
        let mut enc = GzEncoder::new(Vec::new(), Compression::default());
        if enc.write_all(page.as_bytes()).is_ok()
            && let Ok(gz) = enc.finish()
        {
            out.push(Arc::from(gz.into_boxed_slice()));
        }
    }
    out
}

/// The connection sizes for `cfg` and the dominant connection's packets, and why they do not make exactly the
/// packets asked, if they do not: the per-connection cap (`max_flow_share` of the packets) times the connections,
/// or the least packets each application's conversation needs, can make the total fall short of, or exceed,
/// `packets`.
fn plan_of(cfg: &SynthConfig) -> Result<(Plan, u64, Option<ToolError>), ToolError> {
    cfg.validate()?;
    let dominant = cfg.dominant_share > 0.0;
    let ranked = cfg.connections - u64::from(dominant);
    let others_target = ((cfg.packets as f64) * (1.0 - cfg.dominant_share))
        .round()
        .max(1.0) as u64;
    let cap = ((cfg.max_flow_share * cfg.packets as f64).round() as u64).max(1);
    let plan = Plan::new(
        ranked.max(1),
        others_target.max(ranked),
        cfg.zipf,
        cap,
        cfg.mix,
        cfg.seed,
    );
    let dom_ratio = cfg.dominant_share / (1.0 - cfg.dominant_share);
    let short = plan.total < others_target.max(ranked);
    // The dominant connection takes the packets the others leave, so the run makes exactly the packets asked (its
    // share exact up to the rounding of the others' total). When the others fall short it keeps its share of what
    // they carry instead, and the run is short.
    let dom_left = if !dominant {
        0
    } else if short {
        ((plan.total as f64 * dom_ratio).round() as u64).max(cfg.dominant_app.min_packets())
    } else {
        cfg.packets
            .saturating_sub(plan.total)
            .max(cfg.dominant_app.min_packets())
    };
    let planned = plan.total + dom_left;
    let mismatch = (short || planned != cfg.packets).then(|| {
        ToolError::Usage(format!(
            "cannot make {} packets from {} connections of at most {cap} packets each (--max-flow-share {}): \
             they make {planned}",
            cfg.packets, cfg.connections, cfg.max_flow_share
        ))
    });
    Ok((plan, dom_left, mismatch))
}

impl SynthConfig {
    /// Refuses a configuration the generator cannot honour (as [`Synth::new`] does) and one that would not make
    /// exactly `packets` packets (which [`Synth::new`] accepts, making [`SynthSummary::planned_packets`]); cheap:
    /// no packet is generated.
    pub fn check_deliverable(&self) -> Result<(), ToolError> {
        match plan_of(self)? {
            (_, _, Some(mismatch)) => Err(mismatch),
            _ => Ok(()),
        }
    }
}

impl Synth {
    /// A generator for `cfg`; refuses an invalid configuration with the reason. The packets it makes are
    /// [`SynthSummary::planned_packets`]: `cfg.packets` unless [`SynthConfig::check_deliverable`] says otherwise.
    pub fn new(cfg: &SynthConfig) -> Result<Synth, ToolError> {
        let (mut plan, dom_left, _) = plan_of(cfg)?;
        let dominant = cfg.dominant_share > 0.0;
        let window = ((DENSITY_WINDOW as f64) * (1.0 - cfg.dominant_share))
            .round()
            .max(1.0) as usize;
        let k = match cfg.density {
            Some(d) => {
                let target = if dominant { (d - 1.0).max(1.0) } else { d };
                let limit = plan.total.min(60_000);
                schedule::calibrate(&mut plan, target, cfg.train, cfg.seed, window, limit)
            }
            None => {
                plan.set_slots(cfg.concurrency);
                cfg.concurrency.min(plan.flows)
            }
        };
        let sched = Scheduler::new(&plan, k, cfg.train, cfg.seed);
        let dom_ratio = cfg.dominant_share / (1.0 - cfg.dominant_share);
        let pools = Pools::new(cfg.seed);
        let gzip = gzip_bodies(&pools, cfg.seed);
        let date = http_date(cfg.start_ns);
        let hosts = (cfg.connections / 8)
            .clamp(16, 1 << 22)
            .max(cfg.connections / 60_000 + 1);
        let env = Env {
            seed: cfg.seed,
            hosts,
            servers: (cfg.connections / 32).clamp(4, 4_000),
            ipv6_share: cfg.ipv6_share,
            rst_share: cfg.rst_share,
        };
        let planned = plan.total + dom_left;
        let (per_bit, per_packet) = match (cfg.rate, cfg.duration_s) {
            (Some(r), _) => (Some(1e9 / r.bps()), 0.0),
            (None, Some(d)) => (None, d * 1e9 / planned.max(1) as f64),
            (None, None) => (Some(1e9 / 50e6), 0.0),
        };
        let mut synth = Synth {
            plan,
            sched,
            k,
            pools,
            gzip,
            date,
            env,
            slots: (0..k).map(|_| None).collect(),
            dominant: None,
            dom_left,
            dom_ratio,
            dom_sent: 0,
            others_sent: 0,
            train_mean: cfg.train,
            sched_done: false,
            pending: None,
            current: None,
            clock: Clock {
                t: 0.0,
                start: cfg.start_ns,
                per_bit,
                per_packet,
                peak_bps: cfg.peak.map(Rate::bps),
                debt: 0.0,
                rng: ChaCha8Rng::seed_from_u64(cfg.seed ^ 0x636c_6f63),
                first: true,
            },
            rng: ChaCha8Rng::seed_from_u64(cfg.seed ^ 0x0064_6f6d),
            buf: Vec::with_capacity(1600),
            scratch: Vec::with_capacity(1600),
            summary: SynthSummary {
                packets: 0,
                planned_packets: planned,
                wire_bytes: 0,
                connections: 0,
                concurrency: k,
                dominant_packets: 0,
                first_ns: None,
                last_ns: None,
                apps: GeneratedApp::ALL
                    .iter()
                    .map(|&app| AppCount {
                        app,
                        connections: 0,
                        packets: 0,
                    })
                    .collect(),
            },
        };
        if dominant {
            let app = cfg.dominant_app;
            let f = synth.new_flow(0, 0, app, dom_left);
            synth.dominant = Some(f);
            synth.count_connection(app);
        }
        Ok(synth)
    }

    fn new_flow(&self, id: u64, rank: u64, app: GeneratedApp, packets: u64) -> Flow {
        let ctx = Ctx {
            gzip: &self.gzip,
            mss: 1460,
            date: &self.date,
        };
        Flow::new(id, rank, app, packets, &self.env, &ctx)
    }

    fn count_connection(&mut self, app: GeneratedApp) {
        self.summary.connections += 1;
        if let Some(a) = self.summary.apps.iter_mut().find(|a| a.app == app) {
            a.connections += 1;
        }
    }

    /// The concurrency (slots) in use.
    pub fn concurrency(&self) -> u64 {
        self.k
    }

    /// Packets the plan will produce in all.
    pub fn planned_packets(&self) -> u64 {
        self.summary.planned_packets
    }

    /// Counts so far (complete once [`Synth::next_packet`] returned `None`).
    pub fn summary(&self) -> &SynthSummary {
        &self.summary
    }

    fn dominant_train_len(&mut self) -> u64 {
        let p = 1.0 / self.train_mean.max(1.0);
        if p >= 1.0 {
            return 1;
        }
        let u: f64 = self.rng.random::<f64>().max(f64::MIN_POSITIVE);
        1 + (u.ln() / (1.0 - p).ln()).floor() as u64
    }

    /// Chooses the next train: the dominant connection when it is behind its share, else the next slot train.
    fn next_train(&mut self) -> Option<Current> {
        if self.pending.is_none() && !self.sched_done {
            self.pending = self.sched.next(&self.plan);
            self.sched_done = self.pending.is_none();
        }
        if self.dom_left > 0 {
            let due = (self.others_sent as f64 + 1.0) * self.dom_ratio - self.dom_sent as f64;
            if self.pending.is_none() || due >= 1.0 {
                let len = self.dominant_train_len().min(self.dom_left);
                return Some(Current::Dominant { left: len });
            }
        }
        let t = self.pending.take()?;
        if t.first {
            let (app, size) = self.plan.flow(t.rank);
            let f = self.new_flow(t.flow + 1, t.rank, app, size);
            self.slots[t.slot] = Some(f);
            self.count_connection(app);
        }
        Some(Current::Slot {
            slot: t.slot,
            left: t.packets,
        })
    }

    /// The next packet in time order, or `None` at the end.
    pub fn next_packet(&mut self) -> Option<SynthPacket<'_>> {
        loop {
            let (cur, train_start) = match self.current {
                Some(c) => (c, false),
                None => (self.next_train()?, true),
            };
            let (flow, left) = match cur {
                Current::Slot { slot, left } => {
                    (self.slots.get_mut(slot).and_then(Option::as_mut), left)
                }
                Current::Dominant { left } => (self.dominant.as_mut(), left),
            };
            let Some(flow) = flow else {
                self.current = None;
                continue;
            };
            let Some(side) = flow.emit(&mut self.buf, &mut self.scratch, &self.pools) else {
                // A conversation ended before its planned count (cannot happen by construction): move on.
                self.current = None;
                continue;
            };
            let (id, app) = (flow.id, flow.app);
            self.current = match (cur, left) {
                (_, 0 | 1) => None,
                (Current::Slot { slot, .. }, l) => Some(Current::Slot { slot, left: l - 1 }),
                (Current::Dominant { .. }, l) => Some(Current::Dominant { left: l - 1 }),
            };
            match cur {
                Current::Dominant { .. } => {
                    self.dom_sent += 1;
                    self.dom_left -= 1;
                    self.summary.dominant_packets += 1;
                }
                Current::Slot { .. } => self.others_sent += 1,
            }
            let ts = self.clock.stamp(self.buf.len(), train_start);
            let s = &mut self.summary;
            s.packets += 1;
            s.wire_bytes += self.buf.len() as u64;
            s.first_ns.get_or_insert(ts);
            s.last_ns = Some(ts);
            if let Some(a) = s.apps.iter_mut().find(|a| a.app == app) {
                a.packets += 1;
            }
            return Some(SynthPacket {
                ts_ns: ts,
                data: &self.buf,
                flow: id,
                app,
                from_client: side == Side::Client,
            });
        }
    }
}

/// An iterator of owned packets (one allocation per packet; [`Synth::next_packet`] avoids it).
pub fn generate(cfg: &SynthConfig) -> Result<impl Iterator<Item = OwnedPacket>, ToolError> {
    let mut s = Synth::new(cfg)?;
    Ok(std::iter::from_fn(move || {
        s.next_packet().map(|p| OwnedPacket {
            ts_ns: p.ts_ns,
            data: p.data.to_vec(),
            flow: p.flow,
            app: p.app,
            from_client: p.from_client,
        })
    }))
}

/// Generates into an in-memory [`Trace`] (Ethernet link type), for the demo, the simulator and tests.
pub fn generate_trace(cfg: &SynthConfig) -> Result<(Trace, SynthSummary), ToolError> {
    let mut s = Synth::new(cfg)?;
    let n = s.planned_packets() as usize;
    let mut b = TraceBuilder::with_capacity(n, n * 600);
    while let Some(p) = s.next_packet() {
        b.push(p.ts_ns, LinkType::ETHERNET, p.data, p.data.len() as u32);
    }
    Ok((b.build(), s.summary().clone()))
}

/// Writes a pcap file (gzip when the name ends in `.gz`), with a progress bar on long runs.
pub fn write_pcap(
    cfg: &SynthConfig,
    path: impl AsRef<Path>,
    progress: Progress,
) -> Result<SynthSummary, ToolError> {
    let mut s = Synth::new(cfg)?;
    let mut w = PcapWriter::create(path.as_ref(), WriterOptions::new(LinkType::ETHERNET))?;
    let mut bar = Bar::new(progress, Unit::Packets, Some(s.planned_packets()), "synth");
    let mut n = 0u64;
    let result: Result<(), ToolError> = (|| {
        while let Some(p) = s.next_packet() {
            w.write_packet(p.ts_ns, p.data, p.data.len() as u32)?;
            n += 1;
            if n.is_multiple_of(crate::rewrite::progress::TICK_EVERY) {
                bar.tick(n, n);
            }
        }
        Ok(())
    })();
    bar.finish();
    result?;
    w.close()?;
    Ok(s.summary().clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mixes() {
        let w = parse_mix("http=2, tls=3,opaque-udp=0.5").unwrap();
        assert_eq!(w[0], 2.0);
        assert_eq!(w[1], 3.0);
        assert_eq!(w[8], 0.5);
        assert!(parse_mix("gopher=1").is_err());
        assert!(parse_mix("http").is_err());
        assert!(parse_mix("http=0").is_err());
        assert!(parse_mix("http=-1").is_err());
    }

    #[test]
    fn dates() {
        assert_eq!(http_date(DEFAULT_START_NS), "Tue, 01 Jun 2010 12:00:00 GMT");
        assert_eq!(http_date(0), "Thu, 01 Jan 1970 00:00:00 GMT");
        // A leap day, a century that is not a leap year, and the last representable nanosecond.
        assert_eq!(
            http_date(1_709_210_096_999_999_999),
            "Thu, 29 Feb 2024 12:34:56 GMT"
        );
        assert_eq!(
            http_date(4_107_542_400_000_000_000),
            "Mon, 01 Mar 2100 00:00:00 GMT"
        );
        assert_eq!(http_date(u64::MAX), "Sun, 21 Jul 2554 23:34:33 GMT");
    }

    #[test]
    fn refusals() {
        let ok = SynthConfig::default();
        assert!(ok.validate().is_ok());
        for bad in [
            SynthConfig {
                packets: 0,
                ..ok.clone()
            },
            SynthConfig {
                connections: 200_000,
                ..ok.clone()
            },
            SynthConfig {
                zipf: -1.0,
                ..ok.clone()
            },
            SynthConfig {
                dominant_share: 1.0,
                ..ok.clone()
            },
            SynthConfig {
                train: 0.5,
                ..ok.clone()
            },
            SynthConfig {
                density: Some(150.0),
                ..ok.clone()
            },
            SynthConfig {
                duration_s: Some(10.0),
                ..ok.clone()
            },
            SynthConfig {
                peak: Rate::bits_per_second(1e6),
                ..ok.clone()
            },
            SynthConfig {
                mix: [0.0; 9],
                ..ok.clone()
            },
        ] {
            assert!(
                matches!(Synth::new(&bad), Err(ToolError::Usage(_))),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn same_seed_same_bytes_and_every_flow_gets_its_planned_packets() {
        let cfg = SynthConfig::default().with_packets(20_000);
        let a: Vec<OwnedPacket> = generate(&cfg).unwrap().collect();
        let b: Vec<OwnedPacket> = generate(&cfg).unwrap().collect();
        assert_eq!(a, b);
        let mut s = Synth::new(&cfg).unwrap();
        let planned = s.planned_packets();
        let mut per_flow = std::collections::HashMap::new();
        while let Some(p) = s.next_packet() {
            *per_flow.entry(p.flow).or_insert(0u64) += 1;
        }
        for (&f, &n) in &per_flow {
            let (app, size) = s.plan.flow(s.plan.rank_at(f - 1));
            assert_eq!(n, size, "flow {f} ({app:?})");
        }
        assert_eq!(
            per_flow.values().sum::<u64>(),
            planned,
            "every conversation has exactly its planned packets"
        );
        let other = SynthConfig { seed: 2, ..cfg };
        let c: Vec<OwnedPacket> = generate(&other).unwrap().take(100).collect();
        assert_ne!(a[..100], c[..]);
        // Time order.
        assert!(a.windows(2).all(|w| w[0].ts_ns <= w[1].ts_ns));
    }
}
