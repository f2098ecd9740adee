//! A live run's source: an interface (AF_PACKET rings or libpcap) or an inline pair, opened as the caller's
//! [`CaptureSpec`] says (checked by the caller: the options that do not go together are refused there), and at the
//! end the capture's counters for the summary.

use anyhow::Context;
use flowbundle_ingest::{CaptureMethod, FanoutMode, LiveSource, RingConfig, TpacketVersion};
use flowbundle_inspect::Inline;
use flowbundle_sinks::{CaptureCounters, RunInfo};

/// Where a live run captures, and how.
#[derive(Clone, Debug)]
pub struct CaptureSpec {
    /// The interface (`--interface`), or `None` inline.
    pub interface: Option<String>,
    /// The inline pair as the user named it (`IF1:IF2`), or `None`.
    pub inline: Option<String>,
    pub method: CaptureMethod,
    /// The ring layout asked for (`None`: TPACKET_V3 for capture, V2 inline).
    pub tpacket: Option<TpacketVersion>,
    /// One ring per worker in a fanout group, the kernel spreading the packets.
    pub fanout: Option<FanoutMode>,
    pub ring_blocks: Option<u32>,
    pub block_size: Option<u32>,
    pub block_timeout_ms: Option<u32>,
    pub snaplen: u32,
    pub promisc: bool,
}

impl CaptureSpec {
    /// The ring layout: the one asked for, else `default`.
    fn version(&self, default: TpacketVersion) -> TpacketVersion {
        self.tpacket.unwrap_or(default)
    }

    /// How the capture is named in the summary and the start line.
    pub fn method_name(&self, rings: usize) -> String {
        let default = match self.inline {
            Some(_) => TpacketVersion::V2,
            None => TpacketVersion::V3,
        };
        let v = self.version(default).name();
        if self.inline.is_some() {
            return format!("afpacket TPACKET_V{v}, one ring per side");
        }
        match (self.method, self.fanout) {
            (CaptureMethod::Pcap, _) => "libpcap".into(),
            (CaptureMethod::AfPacket, Some(m)) => {
                format!("afpacket TPACKET_V{v}, {rings} rings, fanout {}", m.name())
            }
            (CaptureMethod::AfPacket, None) => format!("afpacket TPACKET_V{v}, 1 ring"),
        }
    }
}

/// Opens `iface` as `spec` says: libpcap, or AF_PACKET rings (one per worker of `threads` under a fanout).
pub fn open_live(spec: &CaptureSpec, iface: &str, threads: usize) -> anyhow::Result<LiveSource> {
    let rings = match spec.fanout {
        Some(_) => threads,
        None => 1,
    };
    let source = match spec.method {
        CaptureMethod::Pcap => LiveSource::pcap(iface, spec.snaplen, spec.promisc),
        CaptureMethod::AfPacket => {
            let d = RingConfig::default();
            let cfg = RingConfig {
                version: spec.version(d.version),
                block_size: spec.block_size.unwrap_or(d.block_size),
                blocks: spec.ring_blocks.unwrap_or(d.blocks),
                block_timeout_ms: spec.block_timeout_ms.unwrap_or(d.block_timeout_ms),
                frame_size: None,
                snaplen: spec.snaplen,
                promisc: spec.promisc,
                // One group per process: a second sensor on the same interface gets its own copy.
                fanout: spec
                    .fanout
                    .map(|m| ((std::process::id() & 0xffff) as u16, m)),
                ignore_outgoing: false,
            };
            LiveSource::af_packet(iface, &cfg, rings)
        }
    }
    .with_context(|| format!("opening interface {iface}"))?;
    eprintln!(
        "capturing on {iface} (link type {}, {}); SIGINT or SIGTERM to stop",
        source.link_type(),
        spec.method_name(source.rings())
    );
    Ok(source)
}

/// What an inline ring keeps of a frame: more than the largest frame a device hands over (a 64 KiB offloaded
/// segment plus its link and IP headers), so that every frame can be forwarded whole.
const INLINE_SNAPLEN: u32 = 128 * 1024;

/// Opens an inline pair `a`, `b`: a ring on each side (ignoring what this host sends) and a sending socket on each,
/// with `packet_buffers` frames in flight at most.
pub fn open_inline(
    spec: &CaptureSpec,
    [a, b]: [&str; 2],
    packet_buffers: usize,
) -> anyhow::Result<(LiveSource, Inline)> {
    let pair = spec.inline.as_deref().unwrap_or_default();
    let d = RingConfig::default();
    let cfg = RingConfig {
        // Each frame handed over as it arrives: a TPACKET_V3 block would hold it back.
        version: spec.version(TpacketVersion::V2),
        block_size: spec.block_size.unwrap_or(d.block_size),
        blocks: spec.ring_blocks.unwrap_or(d.blocks),
        // With TPACKET_V3 a packet waits in the ring until its block is handed over: the timeout is the latency floor.
        block_timeout_ms: spec.block_timeout_ms.unwrap_or(1),
        frame_size: None,
        // Whole frames, the largest a device hands over included (a 64 KiB offloaded segment and its headers).
        snaplen: INLINE_SNAPLEN,
        promisc: spec.promisc,
        fanout: None,
        ignore_outgoing: true,
    };
    let source =
        LiveSource::inline([a, b], &cfg).with_context(|| format!("opening {pair} inline"))?;
    let inline =
        Inline::open([a, b], packet_buffers).with_context(|| format!("opening {pair} inline"))?;
    eprintln!(
        "capturing on {a} and {b}, inline (link type {}); SIGINT or SIGTERM to stop",
        source.link_type()
    );
    Ok((source, inline))
}

/// At the end of a live run: the capture's counters into the summary.
pub fn note_capture(cap: &mut LiveSource, spec: &CaptureSpec, queue_full: u64, info: &mut RunInfo) {
    let what = match (&spec.interface, &spec.inline) {
        (Some(iface), _) => iface.clone(),
        (None, Some(pair)) => format!("{pair} inline"),
        (None, None) => "?".into(),
    };
    let kernel = match cap.kernel_stats() {
        Ok(k) => k,
        Err(e) => {
            eprintln!("warning: the kernel's capture counters could not be read: {e}");
            flowbundle_ingest::KernelStats::default()
        }
    };
    let ring = cap.counters();
    info.capture_drops = Some(kernel.drops + queue_full);
    info.live = Some(CaptureCounters {
        method: format!("{} on {what}", spec.method_name(cap.rings())),
        kernel_packets: kernel.packets,
        kernel_drops: kernel.drops,
        kernel_freeze_q: kernel.freeze_q_count,
        queue_full,
        snaplen_cut: ring.snaplen_cut,
        vlan_restored: ring.vlan_restored,
        malformed: ring.malformed,
        whole_copies: ring.copied,
    });
}
