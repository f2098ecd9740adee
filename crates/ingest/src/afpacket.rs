//! # Live capture through AF_PACKET rings (Linux, no native library)
//!
//! Two ring layouts, as Suricata's `af-packet` offers them (`tpacket-v3: yes|no`):
//! * **TPACKET_V3, blocks** (the default for capture): described below; one wake-up per block, the most frames per
//!   system call, but a frame waits in its block until the block is full or its retire timeout passes (1 ms at the
//!   least), which is why Suricata's documentation says not to use it in IPS mode ("it causes severe latency").
//! * **TPACKET_V2, frames** ([`TpacketVersion::V2`], the inline sensor's): a ring of fixed-size frame slots, each
//!   with its own status word, handed over one by one as the kernel fills them, so a frame is readable the moment it
//!   is written. A slot holds the interface's MTU (plus link header and the ring's header), not the largest
//!   possible frame, so the ring holds many more frames in the same memory; a frame longer than its slot (an
//!   offloaded segment) is cut in the ring and the kernel queues a whole copy on the socket (`PACKET_COPY_THRESH`,
//!   status `TP_STATUS_COPY`), which the reader fetches with one `recv` into a buffer of its own: such frames still
//!   arrive whole, in order, at the cost of a copy.
//!
//! The kernel copies each frame it receives on an interface into a ring of *blocks* shared with this process
//! (`mmap` of the socket), several frames per block, and hands a whole block over when it is full or when its
//! retire timeout (`block_timeout_ms`) passes: one wake-up per block instead of one system call per packet, the
//! design Suricata's `af-packet` runmode and libpcap's own Linux backend use. A block belongs to the kernel while its
//! status word is `TP_STATUS_KERNEL` and to this process while it has `TP_STATUS_USER`; the reader walks the frames
//! of a block it owns and writes `TP_STATUS_KERNEL` back when it is done with them. Records borrow the ring until the
//! next call, as the file readers' records borrow their buffer (a lending iterator): no copy here.
//!
//! Several sockets joined in one `PACKET_FANOUT` group share an interface's traffic: `hash` sends both directions of
//! a flow to one socket (the kernel's symmetric flow hash; IP fragments are reassembled first with
//! `PACKET_FANOUT_FLAG_DEFRAG` so a datagram's fragments meet), `cpu` by the receiving CPU, `qm` by the NIC's receive
//! queue, `lb` round robin. That is Suricata's `cluster_flow` / `cluster_cpu` / `cluster_qm` / `cluster_round_robin`.
//!
//! Counters: the kernel's `PACKET_STATISTICS` (`tp_packets` received, including `tp_drops`, the frames it dropped for
//! want of a free block, and `tp_freeze_q_cnt`, the times the queue froze because every block was in user space);
//! reading them resets them, so [`AfPacketCapture::kernel_stats`] accumulates. Frames the ring cut to its snaplen
//! (`tp_snaplen < tp_len`) and blocks or frames whose header points outside their block (the kernel is trusted, but
//! the bytes are read as hostile all the same) are counted in [`RingCounters`]; nothing here indexes without a check.
//!
//! The kernel strips a VLAN tag into the frame's metadata (`TP_STATUS_VLAN_VALID`) where the device offloads it (a
//! veth pair does); the reader puts the tag back (one reused scratch buffer) so that the engine sees the frame as a
//! capture file would show it.
//!
//! Cost: the ring is `block_size × blocks` bytes of locked-in memory per socket (default 4 MiB × 16 = 64 MiB, as
//! Suricata's defaults give for a busy link; with TPACKET_V2 and a 1,500-byte MTU that is 41,000 frame slots);
//! polling costs one `poll(2)` per empty look, none while frames wait.
//! Elsewhere than Linux [`AfPacketCapture::open`] returns [`Error::Live`] saying AF_PACKET needs Linux.

use crate::{Error, LinkType, PacketRecord};

/// How the kernel spreads an interface's packets over the sockets of one fanout group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FanoutMode {
    /// By the kernel's symmetric flow hash: both directions of a flow to one socket (`PACKET_FANOUT_HASH`, with IP
    /// defragmentation first).
    Hash,
    /// By the CPU that received the packet (`PACKET_FANOUT_CPU`).
    Cpu,
    /// By the NIC's receive queue (`PACKET_FANOUT_QM`).
    Qm,
    /// Round robin (`PACKET_FANOUT_LB`): no flow affinity at all.
    Lb,
}

impl FanoutMode {
    /// Every mode, with its command-line name.
    pub const ALL: [(&'static str, FanoutMode); 4] = [
        ("hash", FanoutMode::Hash),
        ("cpu", FanoutMode::Cpu),
        ("qm", FanoutMode::Qm),
        ("lb", FanoutMode::Lb),
    ];

    /// The command-line name.
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, m)| *m == self)
            .map_or("?", |(n, _)| n)
    }

    /// Whether both directions of a flow always reach the same socket (so a socket's consumer sees whole flows).
    pub fn keeps_flows_together(self) -> bool {
        matches!(self, FanoutMode::Hash)
    }
}

impl std::str::FromStr for FanoutMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Self::ALL
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(s))
            .map(|(_, m)| *m)
            .ok_or_else(|| {
                let names: Vec<&str> = Self::ALL.iter().map(|(n, _)| *n).collect();
                format!("unknown fanout mode {s:?}; one of {}", names.join(", "))
            })
    }
}

/// The ring layout (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TpacketVersion {
    /// Fixed-size frame slots, each handed over as soon as it is filled: no added latency (inline).
    V2,
    /// Blocks of frames, handed over when full or at their retire timeout: fewer wake-ups (capture).
    V3,
}

impl TpacketVersion {
    /// The command-line name (`2` or `3`).
    pub fn name(self) -> &'static str {
        match self {
            TpacketVersion::V2 => "2",
            TpacketVersion::V3 => "3",
        }
    }
}

impl std::str::FromStr for TpacketVersion {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s
            .to_ascii_lowercase()
            .trim_start_matches("tpacket_")
            .trim_start_matches('v')
        {
            "2" => Ok(TpacketVersion::V2),
            "3" => Ok(TpacketVersion::V3),
            _ => Err(format!("unknown TPACKET version {s:?}; one of 2, 3")),
        }
    }
}

/// The shape of a ring and how the socket is opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RingConfig {
    /// The ring layout.
    pub version: TpacketVersion,
    /// Bytes per block: a multiple of the page size, at least one frame of `snaplen` bytes.
    pub block_size: u32,
    /// Blocks in the ring.
    pub blocks: u32,
    /// Milliseconds after which the kernel hands over a block that is not full (the latency bound of a quiet link;
    /// TPACKET_V3 only).
    pub block_timeout_ms: u32,
    /// TPACKET_V2: bytes per frame slot (a multiple of 16, the ring's header included); `None`: the interface's MTU
    /// plus room for a link header, two VLAN tags and the ring's header. Longer frames arrive whole through the
    /// socket (see the module documentation).
    pub frame_size: Option<u32>,
    /// Bytes kept per frame.
    pub snaplen: u32,
    /// Put the interface in promiscuous mode while the socket is open.
    pub promisc: bool,
    /// Join this fanout group (group id, mode); `None`: the socket receives every packet of the interface.
    pub fanout: Option<(u16, FanoutMode)>,
    /// Do not receive the frames this host sends on the interface (an inline sensor's own output).
    pub ignore_outgoing: bool,
}

impl Default for RingConfig {
    fn default() -> Self {
        RingConfig {
            version: TpacketVersion::V3,
            block_size: 4 << 20,
            blocks: 16,
            block_timeout_ms: 10,
            frame_size: None,
            snaplen: 65_535,
            promisc: true,
            fanout: None,
            ignore_outgoing: false,
        }
    }
}

/// The kernel's counters of one socket (`PACKET_STATISTICS`), accumulated over the capture.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KernelStats {
    /// Frames the kernel received for the socket, dropped ones included (Suricata's `capture.kernel_packets`).
    pub packets: u64,
    /// Frames the kernel dropped for want of a free block (`capture.kernel_drops`).
    pub drops: u64,
    /// Times the ring froze with every block in user space.
    pub freeze_q_count: u64,
}

impl std::ops::AddAssign for KernelStats {
    fn add_assign(&mut self, o: Self) {
        self.packets += o.packets;
        self.drops += o.drops;
        self.freeze_q_count += o.freeze_q_count;
    }
}

/// What the reader found odd in the ring (the frames are still delivered unless said otherwise).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RingCounters {
    /// Frames delivered.
    pub frames: u64,
    /// Frames the ring cut to its snaplen (delivered cut, their original length kept).
    pub snaplen_cut: u64,
    /// Frames whose header pointed outside their block: skipped, with the rest of the block.
    pub malformed: u64,
    /// Frames whose VLAN tag the kernel had stripped and the reader put back.
    pub vlan_restored: u64,
    /// TPACKET_V2: frames longer than their slot, fetched whole from the socket.
    pub copied: u64,
}

impl std::ops::AddAssign for RingCounters {
    fn add_assign(&mut self, o: Self) {
        self.frames += o.frames;
        self.snaplen_cut += o.snaplen_cut;
        self.malformed += o.malformed;
        self.vlan_restored += o.vlan_restored;
        self.copied += o.copied;
    }
}

/// The smallest TPACKET_V2 frame slot accepted: the ring's header (80 bytes before an Ethernet header) and a
/// minimal frame.
const MIN_FRAME_V2: u32 = 256;

/// TPACKET_V2's frame slot for an interface of `mtu` bytes: room for the ring's header before the link header
/// (80 bytes), an Ethernet header with two VLAN tags (22) and the MTU, aligned to 16; at most `snaplen` bytes of
/// frame, within `block_size`.
pub fn v2_frame_size(mtu: u32, snaplen: u32, block_size: u32) -> u32 {
    let frame = mtu.saturating_add(22).min(snaplen);
    frame
        .saturating_add(80)
        .next_multiple_of(16)
        .clamp(MIN_FRAME_V2, block_size.max(MIN_FRAME_V2))
}

/// Checks a ring configuration without opening anything: the kernel's own rules (block size a multiple of the
/// page size, at least one frame per block) with a message that names the option to change.
pub fn check_ring(cfg: &RingConfig) -> Result<(), String> {
    const PAGE: u32 = 4096;
    if cfg.blocks == 0 || cfg.blocks > 1 << 16 {
        return Err(format!(
            "ring blocks must be 1 to 65536, not {}",
            cfg.blocks
        ));
    }
    if cfg.block_size < PAGE || !cfg.block_size.is_multiple_of(PAGE) {
        return Err(format!(
            "block size must be a multiple of {PAGE} bytes (the page size), not {}",
            cfg.block_size
        ));
    }
    if u64::from(cfg.block_size) * u64::from(cfg.blocks) > 1 << 34 {
        return Err("ring of more than 16 GiB (block size × blocks)".into());
    }
    if cfg.snaplen == 0 {
        return Err("snaplen must be at least 1 byte".into());
    }
    match cfg.version {
        TpacketVersion::V3 => {
            if cfg.snaplen.saturating_add(128) > cfg.block_size {
                return Err(format!(
                    "a block of {} bytes cannot hold one frame of snaplen {} (plus its 128-byte header)",
                    cfg.block_size, cfg.snaplen
                ));
            }
            if cfg.block_timeout_ms == 0 {
                return Err("block timeout must be at least 1 ms".into());
            }
        }
        TpacketVersion::V2 => {
            if let Some(f) = cfg.frame_size
                && (f < MIN_FRAME_V2 || !f.is_multiple_of(16) || f > cfg.block_size)
            {
                return Err(format!(
                    "frame size must be a multiple of 16 from {MIN_FRAME_V2} to the block size ({}), not {f}",
                    cfg.block_size
                ));
            }
        }
    }
    Ok(())
}

#[cfg(target_os = "linux")]
mod imp {
    use super::*;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
    use std::sync::atomic::{AtomicU32, Ordering};

    /// How long [`AfPacketCapture::next_packet`] waits for a block before answering `Ok(None)`.
    const WAIT_MS: i32 = 100;

    // Offsets in a block descriptor (`struct tpacket_block_desc` with `tpacket_hdr_v1`).
    const BLOCK_STATUS: usize = 8;
    const BLOCK_NUM_PKTS: usize = 12;
    const BLOCK_FIRST_PKT: usize = 16;
    // Offsets in a frame header (`struct tpacket3_hdr`).
    const FRAME_NEXT: usize = 0;
    const FRAME_SEC: usize = 4;
    const FRAME_NSEC: usize = 8;
    const FRAME_SNAPLEN: usize = 12;
    const FRAME_LEN: usize = 16;
    const FRAME_STATUS: usize = 20;
    const FRAME_MAC: usize = 24;
    const FRAME_VLAN_TCI: usize = 32;
    const FRAME_VLAN_TPID: usize = 36;
    const FRAME_HEADER: usize = 48;

    /// A frame's header fields (`struct tpacket3_hdr`) and where its bytes lie in the block.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub(super) struct Frame {
        pub next: u32,
        pub sec: u32,
        pub nsec: u32,
        pub snaplen: u32,
        pub len: u32,
        pub status: u32,
        pub tci: u32,
        pub tpid: u16,
        pub data: std::ops::Range<usize>,
    }

    /// The frame whose header starts at `offset` of `blk`, or `None` when the header or the bytes it points at do
    /// not lie inside the block (never a panic, whatever the bytes).
    pub(super) fn frame_at(blk: &[u8], offset: usize) -> Option<Frame> {
        let h = blk.get(offset..offset.checked_add(FRAME_HEADER)?)?;
        let snaplen = u32_at(h, FRAME_SNAPLEN)?;
        let start = offset.checked_add(usize::from(u16_at(h, FRAME_MAC)?))?;
        let end = start.checked_add(snaplen as usize)?;
        (end <= blk.len()).then_some(())?;
        Some(Frame {
            next: u32_at(h, FRAME_NEXT)?,
            sec: u32_at(h, FRAME_SEC)?,
            nsec: u32_at(h, FRAME_NSEC)?,
            snaplen,
            len: u32_at(h, FRAME_LEN)?,
            status: u32_at(h, FRAME_STATUS)?,
            tci: u32_at(h, FRAME_VLAN_TCI)?,
            tpid: u16_at(h, FRAME_VLAN_TPID)?,
            data: start..end,
        })
    }

    fn u32_at(b: &[u8], at: usize) -> Option<u32> {
        Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
    }

    fn u16_at(b: &[u8], at: usize) -> Option<u16> {
        Some(u16::from_ne_bytes(b.get(at..at + 2)?.try_into().ok()?))
    }

    // Offsets in a TPACKET_V2 frame header (`struct tpacket2_hdr`), which starts its frame slot.
    const V2_STATUS: usize = 0;
    const V2_LEN: usize = 4;
    const V2_SNAPLEN: usize = 8;
    const V2_MAC: usize = 12;
    const V2_SEC: usize = 16;
    const V2_NSEC: usize = 20;
    const V2_VLAN_TCI: usize = 24;
    const V2_VLAN_TPID: usize = 26;
    const V2_HEADER: usize = 32;

    /// The TPACKET_V2 frame in slot `slot`, or `None` when its header or the bytes it points at do not lie inside
    /// the slot (never a panic, whatever the bytes). `next` is 0: V2 frames are not chained.
    pub(super) fn frame_v2(slot: &[u8]) -> Option<Frame> {
        let h = slot.get(..V2_HEADER)?;
        let snaplen = u32_at(h, V2_SNAPLEN)?;
        let start = usize::from(u16_at(h, V2_MAC)?);
        let end = start.checked_add(snaplen as usize)?;
        (start >= V2_HEADER && end <= slot.len()).then_some(())?;
        Some(Frame {
            next: 0,
            sec: u32_at(h, V2_SEC)?,
            nsec: u32_at(h, V2_NSEC)?,
            snaplen,
            len: u32_at(h, V2_LEN)?,
            status: u32_at(h, V2_STATUS)?,
            tci: u32::from(u16_at(h, V2_VLAN_TCI)?),
            tpid: u16_at(h, V2_VLAN_TPID)?,
            data: start..end,
        })
    }

    /// The frames of the block being read: where the next one starts and how many are left.
    #[derive(Clone, Copy, Debug)]
    struct Cursor {
        block: usize,
        offset: usize,
        left: u32,
    }

    /// Where the reader stands in its ring.
    #[derive(Debug)]
    enum Layout {
        /// TPACKET_V3: the next block to look at when no block is being read, and the block being read.
        Blocks {
            next_block: usize,
            cursor: Option<Cursor>,
        },
        /// TPACKET_V2: `count` slots of `frame_size` bytes, `per_block` to a block; the next slot to read, and the
        /// slot the last record borrowed (given back to the kernel at the next call).
        Frames {
            frame_size: usize,
            per_block: usize,
            count: usize,
            next: usize,
            held: Option<usize>,
        },
    }

    /// `len` bytes at `offset` of the ring at `map`, borrowed for a lifetime the caller chooses.
    ///
    /// # Safety
    /// `offset + len` lies inside the mapping, the mapping outlives `'a`, and this process owns those bytes (their
    /// block's or frame's status read as `TP_STATUS_USER`) for all of `'a`.
    unsafe fn ring_bytes<'a>(map: *mut u8, offset: usize, len: usize) -> &'a [u8] {
        // SAFETY: the caller's promise.
        unsafe { std::slice::from_raw_parts(map.add(offset), len) }
    }

    /// A capture on one interface through a TPACKET_V3 or TPACKET_V2 ring. See the module documentation.
    pub struct AfPacketCapture {
        fd: OwnedFd,
        /// The ring: `blocks × block_size` bytes mapped from the socket.
        map: *mut u8,
        map_len: usize,
        block_size: usize,
        blocks: usize,
        layout: Layout,
        iface: String,
        link_type: LinkType,
        stats: KernelStats,
        counters: RingCounters,
        /// A frame with its VLAN tag put back.
        scratch: Vec<u8>,
        /// TPACKET_V2: a frame longer than its slot, fetched whole from the socket (snaplen bytes at most).
        whole: Vec<u8>,
        snaplen: usize,
    }

    // SAFETY: the mapping is owned by this value alone (no other handle to it exists in this process) and is only
    // read through `&mut self`; moving it to another thread moves the whole ownership.
    unsafe impl Send for AfPacketCapture {}

    impl std::fmt::Debug for AfPacketCapture {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.debug_struct("AfPacketCapture")
                .field("iface", &self.iface)
                .field("blocks", &self.blocks)
                .field("block_size", &self.block_size)
                .field("layout", &self.layout)
                .finish_non_exhaustive()
        }
    }

    fn os_err(iface: &str, what: &str) -> Error {
        Error::Live {
            iface: iface.to_string(),
            message: format!("{what}: {}", std::io::Error::last_os_error()),
        }
    }

    fn setsockopt<T>(fd: RawFd, level: i32, name: i32, v: &T) -> Result<(), ()> {
        // SAFETY: `v` is a valid `T` for the duration of the call and the length passed is its size.
        let r = unsafe {
            libc::setsockopt(
                fd,
                level,
                name,
                (v as *const T).cast(),
                std::mem::size_of::<T>() as libc::socklen_t,
            )
        };
        if r == 0 { Ok(()) } else { Err(()) }
    }

    /// A socket receive buffer large enough for the whole copies of a burst of offloaded segments (TPACKET_V2).
    const COPY_RCVBUF: libc::c_int = 8 << 20;

    impl AfPacketCapture {
        /// Opens a ring on `iface` with `cfg`. Needs root or `CAP_NET_RAW`.
        pub fn open(iface: &str, cfg: &RingConfig) -> Result<AfPacketCapture, Error> {
            check_ring(cfg).map_err(|message| Error::Live {
                iface: iface.to_string(),
                message,
            })?;
            let name = std::ffi::CString::new(iface).map_err(|_| Error::Live {
                iface: iface.to_string(),
                message: "interface name contains a NUL byte".into(),
            })?;
            // SAFETY: `name` is a NUL-terminated string that outlives the call.
            let ifindex = unsafe { libc::if_nametoindex(name.as_ptr()) };
            if ifindex == 0 {
                return Err(os_err(iface, "no such interface"));
            }
            let ifindex = i32::try_from(ifindex).map_err(|_| Error::Live {
                iface: iface.to_string(),
                message: format!("interface index {ifindex} out of range"),
            })?;
            let proto = (libc::ETH_P_ALL as u16).to_be();
            // SAFETY: plain system call; the descriptor it returns is owned by the `OwnedFd` below at once.
            let raw = unsafe {
                libc::socket(
                    libc::AF_PACKET,
                    libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                    i32::from(proto),
                )
            };
            if raw < 0 {
                return Err(os_err(
                    iface,
                    "AF_PACKET socket (needs root or CAP_NET_RAW)",
                ));
            }
            // SAFETY: `raw` is a descriptor this call just opened and nothing else owns.
            let fd = unsafe { OwnedFd::from_raw_fd(raw) };
            let link_type = hardware_link_type(fd.as_raw_fd(), &name, iface)?;
            let s = fd.as_raw_fd();
            let version = match cfg.version {
                TpacketVersion::V2 => libc::tpacket_versions::TPACKET_V2,
                TpacketVersion::V3 => libc::tpacket_versions::TPACKET_V3,
            } as libc::c_int;
            setsockopt(s, libc::SOL_PACKET, libc::PACKET_VERSION, &version).map_err(|_| {
                os_err(
                    iface,
                    &format!("PACKET_VERSION TPACKET_V{}", cfg.version.name()),
                )
            })?;
            // The ring copies whole frames (up to its frame size): the snaplen is a one-instruction classic BPF
            // program, `ret #snaplen`, as libpcap attaches it.
            let mut ret_snaplen = [libc::sock_filter {
                code: 0x06, // BPF_RET | BPF_K
                jt: 0,
                jf: 0,
                k: cfg.snaplen,
            }];
            let prog = libc::sock_fprog {
                len: 1,
                filter: ret_snaplen.as_mut_ptr(),
            };
            setsockopt(s, libc::SOL_SOCKET, libc::SO_ATTACH_FILTER, &prog)
                .map_err(|_| os_err(iface, "SO_ATTACH_FILTER (snaplen)"))?;
            if cfg.ignore_outgoing {
                let one: libc::c_int = 1;
                setsockopt(s, libc::SOL_PACKET, libc::PACKET_IGNORE_OUTGOING, &one)
                    .map_err(|_| os_err(iface, "PACKET_IGNORE_OUTGOING"))?;
            }
            let layout = match cfg.version {
                TpacketVersion::V3 => {
                    // Frames are 16-byte aligned within a block; the frame size only matters to the kernel's
                    // sanity check.
                    let frame_size = (cfg.snaplen + 128).next_multiple_of(16).min(cfg.block_size);
                    let req = libc::tpacket_req3 {
                        tp_block_size: cfg.block_size,
                        tp_block_nr: cfg.blocks,
                        tp_frame_size: frame_size,
                        tp_frame_nr: (cfg.block_size / frame_size) * cfg.blocks,
                        tp_retire_blk_tov: cfg.block_timeout_ms,
                        tp_sizeof_priv: 0,
                        tp_feature_req_word: libc::TP_FT_REQ_FILL_RXHASH,
                    };
                    setsockopt(s, libc::SOL_PACKET, libc::PACKET_RX_RING, &req).map_err(|_| {
                        os_err(
                            iface,
                            "PACKET_RX_RING (ring too large for the memory limit?)",
                        )
                    })?;
                    Layout::Blocks {
                        next_block: 0,
                        cursor: None,
                    }
                }
                TpacketVersion::V2 => {
                    let frame_size = match cfg.frame_size {
                        Some(f) => f,
                        None => v2_frame_size(
                            interface_mtu(s, &name, iface)?,
                            cfg.snaplen,
                            cfg.block_size,
                        ),
                    };
                    // A frame longer than its slot: the kernel queues a whole copy on the socket (any threshold
                    // turns the copies on), given room in the receive buffer.
                    let one: libc::c_int = 1;
                    setsockopt(s, libc::SOL_PACKET, libc::PACKET_COPY_THRESH, &one)
                        .map_err(|_| os_err(iface, "PACKET_COPY_THRESH"))?;
                    if setsockopt(s, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, &COPY_RCVBUF).is_err()
                    {
                        let _ = setsockopt(s, libc::SOL_SOCKET, libc::SO_RCVBUF, &COPY_RCVBUF);
                    }
                    let per_block = cfg.block_size / frame_size;
                    let req = libc::tpacket_req {
                        tp_block_size: cfg.block_size,
                        tp_block_nr: cfg.blocks,
                        tp_frame_size: frame_size,
                        tp_frame_nr: per_block * cfg.blocks,
                    };
                    setsockopt(s, libc::SOL_PACKET, libc::PACKET_RX_RING, &req).map_err(|_| {
                        os_err(
                            iface,
                            "PACKET_RX_RING (ring too large for the memory limit?)",
                        )
                    })?;
                    Layout::Frames {
                        frame_size: frame_size as usize,
                        per_block: per_block as usize,
                        count: (per_block * cfg.blocks) as usize,
                        next: 0,
                        held: None,
                    }
                }
            };
            let map_len = cfg.block_size as usize * cfg.blocks as usize;
            // SAFETY: maps the ring the kernel just allocated for this socket; checked against MAP_FAILED below
            // and unmapped in `Drop`.
            let map = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    map_len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_SHARED,
                    s,
                    0,
                )
            };
            if map == libc::MAP_FAILED {
                return Err(os_err(iface, "mmap of the ring"));
            }
            let cap = AfPacketCapture {
                fd,
                map: map.cast(),
                map_len,
                block_size: cfg.block_size as usize,
                blocks: cfg.blocks as usize,
                layout,
                iface: iface.to_string(),
                link_type,
                stats: KernelStats::default(),
                counters: RingCounters::default(),
                scratch: Vec::new(),
                whole: Vec::new(),
                snaplen: cfg.snaplen as usize,
            };
            // SAFETY: an all-zero `sockaddr_ll` is a valid value of the plain C struct.
            let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
            sll.sll_family = libc::AF_PACKET as u16;
            sll.sll_protocol = proto;
            sll.sll_ifindex = ifindex;
            // SAFETY: `sll` is a valid `sockaddr_ll` and the length passed is its size.
            let r = unsafe {
                libc::bind(
                    s,
                    (&sll as *const libc::sockaddr_ll).cast(),
                    std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
                )
            };
            if r != 0 {
                return Err(os_err(iface, "bind"));
            }
            if cfg.promisc {
                let mreq = libc::packet_mreq {
                    mr_ifindex: ifindex,
                    mr_type: libc::PACKET_MR_PROMISC as u16,
                    mr_alen: 0,
                    mr_address: [0; 8],
                };
                setsockopt(s, libc::SOL_PACKET, libc::PACKET_ADD_MEMBERSHIP, &mreq)
                    .map_err(|_| os_err(iface, "promiscuous mode"))?;
            }
            if let Some((group, mode)) = cfg.fanout {
                let kind = match mode {
                    FanoutMode::Hash => libc::PACKET_FANOUT_HASH | libc::PACKET_FANOUT_FLAG_DEFRAG,
                    FanoutMode::Cpu => libc::PACKET_FANOUT_CPU,
                    FanoutMode::Qm => libc::PACKET_FANOUT_QM,
                    FanoutMode::Lb => libc::PACKET_FANOUT_LB,
                };
                let arg: libc::c_int = (u32::from(group) | kind << 16) as libc::c_int;
                setsockopt(s, libc::SOL_PACKET, libc::PACKET_FANOUT, &arg).map_err(|_| {
                    os_err(iface, "PACKET_FANOUT (group in use with another mode?)")
                })?;
            }
            Ok(cap)
        }

        /// The status word at byte `offset` of the ring (a block's, V3, or a frame slot's, V2), shared with the
        /// kernel.
        fn status_at(&self, offset: usize) -> &AtomicU32 {
            // SAFETY: the callers pass the offset of a block's status word (`b * block_size + 8`, `b < blocks`) or
            // of a frame slot's (`slot_offset`, inside the mapping): 4 bytes inside the mapping, aligned (blocks
            // start page-aligned, slots 16-aligned); the kernel and this process both access it atomically (the
            // kernel with its own barriers around the status), and the mapping lives as long as `&self`.
            unsafe { &*self.map.add(offset).cast::<AtomicU32>() }
        }

        /// Block `b`'s bytes. Only while this process owns it (status has `TP_STATUS_USER`).
        fn block(&self, b: usize) -> &[u8] {
            // SAFETY: `b < blocks`, so the range lies in the mapping. The caller only looks at a block whose
            // status it read as `TP_STATUS_USER` (with acquire ordering): the kernel does not write a block it has
            // handed over until this process writes `TP_STATUS_KERNEL` back, which it does only after the last
            // borrow of these bytes (`ready` takes `&mut self`).
            unsafe { ring_bytes(self.map, b * self.block_size, self.block_size) }
        }

        /// Where frame slot `i` starts (TPACKET_V2: slots do not straddle blocks).
        fn slot_offset(&self, i: usize, frame_size: usize, per_block: usize) -> usize {
            (i / per_block) * self.block_size + (i % per_block) * frame_size
        }

        /// Gives back what the reader finished with, then says whether a frame can be read now without waiting.
        pub fn ready(&mut self) -> bool {
            match self.layout {
                Layout::Blocks { .. } => self.ready_block(),
                Layout::Frames {
                    frame_size,
                    per_block,
                    next,
                    held,
                    ..
                } => {
                    if let Some(h) = held {
                        let at = self.slot_offset(h, frame_size, per_block);
                        self.status_at(at)
                            .store(libc::TP_STATUS_KERNEL, Ordering::Release);
                        if let Layout::Frames { held, .. } = &mut self.layout {
                            *held = None;
                        }
                    }
                    let at = self.slot_offset(next, frame_size, per_block);
                    self.status_at(at).load(Ordering::Acquire) & libc::TP_STATUS_USER != 0
                }
            }
        }

        /// TPACKET_V3: gives back a block whose frames have all been read; whether a frame is ready.
        fn ready_block(&mut self) -> bool {
            loop {
                let Layout::Blocks { next_block, cursor } = self.layout else {
                    return false;
                };
                if let Some(c) = cursor {
                    if c.left > 0 {
                        return true;
                    }
                    self.status_at(c.block * self.block_size + BLOCK_STATUS)
                        .store(libc::TP_STATUS_KERNEL, Ordering::Release);
                    self.layout = Layout::Blocks {
                        next_block: (c.block + 1) % self.blocks,
                        cursor: None,
                    };
                    continue;
                }
                let b = next_block;
                if self
                    .status_at(b * self.block_size + BLOCK_STATUS)
                    .load(Ordering::Acquire)
                    & libc::TP_STATUS_USER
                    == 0
                {
                    return false;
                }
                let blk = self.block(b);
                let cursor = match (u32_at(blk, BLOCK_NUM_PKTS), u32_at(blk, BLOCK_FIRST_PKT)) {
                    (Some(n), Some(first)) => Cursor {
                        block: b,
                        offset: first as usize,
                        left: n,
                    },
                    _ => {
                        self.counters.malformed += 1;
                        Cursor {
                            block: b,
                            offset: 0,
                            left: 0,
                        }
                    }
                };
                self.layout = Layout::Blocks {
                    next_block,
                    cursor: Some(cursor),
                };
            }
        }

        /// The next frame if one is ready, without waiting.
        pub fn try_next(&mut self) -> Option<PacketRecord<'_>> {
            while self.ready() {
                let (frame, base, whole) = match self.layout {
                    Layout::Blocks { next_block, cursor } => {
                        let c = cursor?;
                        let Some(f) = frame_at(self.block(c.block), c.offset) else {
                            // A header outside the block: the rest of the block cannot be walked.
                            self.counters.malformed += u64::from(c.left);
                            self.layout = Layout::Blocks {
                                next_block,
                                cursor: Some(Cursor { left: 0, ..c }),
                            };
                            continue;
                        };
                        self.layout = Layout::Blocks {
                            next_block,
                            cursor: Some(Cursor {
                                block: c.block,
                                offset: if f.next == 0 {
                                    usize::MAX
                                } else {
                                    c.offset.saturating_add(f.next as usize)
                                },
                                left: if f.next == 0 { 0 } else { c.left - 1 },
                            }),
                        };
                        (f, c.block * self.block_size, false)
                    }
                    Layout::Frames {
                        frame_size,
                        per_block,
                        count,
                        next,
                        ..
                    } => {
                        let at = self.slot_offset(next, frame_size, per_block);
                        if let Layout::Frames { next, held, .. } = &mut self.layout {
                            *held = Some(*next);
                            *next = (*next + 1) % count;
                        }
                        // SAFETY: slot `next` lies inside the mapping (`slot_offset` of an index below `count`) and
                        // this process owns it (its status read as `TP_STATUS_USER`) until `ready` gives it back,
                        // which needs `&mut self`, so after this borrow ends.
                        let slot = unsafe { ring_bytes(self.map, at, frame_size) };
                        let Some(f) = frame_v2(slot) else {
                            self.counters.malformed += 1;
                            // Its whole copy, if the kernel queued one, is discarded so the next one stays in step.
                            if u32_at(slot, V2_STATUS).unwrap_or(0) & libc::TP_STATUS_COPY != 0 {
                                self.fetch_whole();
                            }
                            continue;
                        };
                        let whole = f.status & libc::TP_STATUS_COPY != 0 && self.fetch_whole();
                        (f, at, whole)
                    }
                };
                self.counters.frames += 1;
                return Some(self.record(frame, base, whole));
            }
            None
        }

        /// TPACKET_V2: receives the whole copy of a frame longer than its slot into `whole`; false when none could
        /// be read (the frame is then delivered as the ring cut it).
        fn fetch_whole(&mut self) -> bool {
            self.whole.resize(self.snaplen.max(1), 0);
            // SAFETY: `whole` is valid for writing its length for the call's duration.
            let n = unsafe {
                libc::recv(
                    self.fd.as_raw_fd(),
                    self.whole.as_mut_ptr().cast(),
                    self.whole.len(),
                    libc::MSG_DONTWAIT | libc::MSG_TRUNC,
                )
            };
            let Ok(n) = usize::try_from(n) else {
                return false;
            };
            self.counters.copied += 1;
            self.whole.truncate(n.min(self.whole.len()));
            true
        }

        /// The record of `f`, whose offsets are from ring byte `base` (its bytes in the ring, or in `whole`).
        fn record(&mut self, f: Frame, base: usize, whole: bool) -> PacketRecord<'_> {
            let ts_ns = u64::from(f.sec) * 1_000_000_000 + u64::from(f.nsec);
            let mut orig_len = f.len.max(f.snaplen);
            // SAFETY: `base + f.data` lies in the mapping (checked against its block or slot by `frame_at` /
            // `frame_v2`), and this process owns those bytes until the next call (see `try_next`).
            let ring = unsafe { ring_bytes(self.map, base + f.data.start, f.data.len()) };
            let data: &[u8] = if whole { &self.whole } else { ring };
            if (data.len() as u64) < u64::from(orig_len) {
                self.counters.snaplen_cut += 1;
            }
            let restore_vlan = f.status & libc::TP_STATUS_VLAN_VALID != 0
                && self.link_type == LinkType::ETHERNET
                && data.len() >= 12;
            let data = if restore_vlan {
                self.counters.vlan_restored += 1;
                let tpid = if f.status & libc::TP_STATUS_VLAN_TPID_VALID != 0 && f.tpid != 0 {
                    f.tpid
                } else {
                    0x8100
                };
                self.scratch.clear();
                self.scratch
                    .extend_from_slice(data.get(..12).unwrap_or(&[]));
                self.scratch.extend_from_slice(&tpid.to_be_bytes());
                self.scratch
                    .extend_from_slice(&(f.tci as u16).to_be_bytes());
                self.scratch
                    .extend_from_slice(data.get(12..).unwrap_or(&[]));
                orig_len = orig_len.saturating_add(4);
                &self.scratch[..]
            } else {
                data
            };
            PacketRecord {
                ts_ns,
                orig_len,
                interface: 0,
                link_type: self.link_type,
                data,
            }
        }

        /// The next frame, or `Ok(None)` when none arrived within the wait (at most 100 ms), so the caller can look
        /// at a stop flag and call again.
        pub fn next_packet(&mut self) -> Result<Option<PacketRecord<'_>>, Error> {
            if !self.ready() {
                wait_any(&[self.fd.as_raw_fd()], WAIT_MS);
            }
            Ok(self.try_next())
        }

        /// The socket's descriptor, for waiting on several rings at once ([`wait_any`]).
        pub fn raw_fd(&self) -> RawFd {
            self.fd.as_raw_fd()
        }

        /// Link type of the interface's frames.
        pub fn link_type(&self) -> LinkType {
            self.link_type
        }

        /// The interface's name.
        pub fn iface(&self) -> &str {
            &self.iface
        }

        /// The kernel's counters since the ring opened (`PACKET_STATISTICS`, accumulated: each read resets them).
        pub fn kernel_stats(&mut self) -> Result<KernelStats, Error> {
            let mut st = libc::tpacket_stats_v3 {
                tp_packets: 0,
                tp_drops: 0,
                tp_freeze_q_cnt: 0,
            };
            let mut len = std::mem::size_of::<libc::tpacket_stats_v3>() as libc::socklen_t;
            // SAFETY: `st` and `len` are valid for writing and `len` holds `st`'s size.
            let r = unsafe {
                libc::getsockopt(
                    self.fd.as_raw_fd(),
                    libc::SOL_PACKET,
                    libc::PACKET_STATISTICS,
                    (&mut st as *mut libc::tpacket_stats_v3).cast(),
                    &mut len,
                )
            };
            if r != 0 {
                return Err(os_err(&self.iface, "PACKET_STATISTICS"));
            }
            self.stats += KernelStats {
                packets: u64::from(st.tp_packets),
                drops: u64::from(st.tp_drops),
                freeze_q_count: u64::from(st.tp_freeze_q_cnt),
            };
            Ok(self.stats)
        }

        /// What the reader found odd in the ring so far.
        pub fn counters(&self) -> RingCounters {
            self.counters
        }
    }

    /// A socket that sends whole link-layer frames out of one interface (an inline sensor's egress). Shared by the
    /// workers: `sendto(2)` on one descriptor from several threads is safe, and each frame goes out whole.
    #[derive(Debug)]
    pub struct PacketSender {
        fd: OwnedFd,
        ifindex: i32,
        iface: String,
    }

    impl PacketSender {
        /// Opens a sending socket on `iface`. Needs root or `CAP_NET_RAW`.
        pub fn open(iface: &str) -> Result<PacketSender, Error> {
            let name = std::ffi::CString::new(iface).map_err(|_| Error::Live {
                iface: iface.to_string(),
                message: "interface name contains a NUL byte".into(),
            })?;
            // SAFETY: `name` is a NUL-terminated string that outlives the call.
            let ifindex = unsafe { libc::if_nametoindex(name.as_ptr()) };
            let ifindex = match i32::try_from(ifindex) {
                Ok(i) if i > 0 => i,
                _ => return Err(os_err(iface, "no such interface")),
            };
            // SAFETY: plain system call; the descriptor it returns is owned by the `OwnedFd` below at once.
            let raw =
                unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
            if raw < 0 {
                return Err(os_err(
                    iface,
                    "AF_PACKET socket (needs root or CAP_NET_RAW)",
                ));
            }
            // SAFETY: `raw` is a descriptor this call just opened and nothing else owns.
            let fd = unsafe { OwnedFd::from_raw_fd(raw) };
            // Frames leave straight through the driver, as they came in: no queueing discipline reorders them.
            let one: libc::c_int = 1;
            let _ = setsockopt(
                fd.as_raw_fd(),
                libc::SOL_PACKET,
                libc::PACKET_QDISC_BYPASS,
                &one,
            );
            Ok(PacketSender {
                fd,
                ifindex,
                iface: iface.to_string(),
            })
        }

        /// The interface's name.
        pub fn iface(&self) -> &str {
            &self.iface
        }

        /// Sends `frame` (a whole Ethernet frame) out of the interface.
        pub fn send(&self, frame: &[u8]) -> std::io::Result<()> {
            // SAFETY: an all-zero `sockaddr_ll` is a valid value of the plain C struct.
            let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
            sll.sll_family = libc::AF_PACKET as u16;
            sll.sll_ifindex = self.ifindex;
            sll.sll_halen = 6;
            if let Some(dst) = frame.get(..6) {
                sll.sll_addr[..6].copy_from_slice(dst);
            }
            // SAFETY: `frame` is valid for reading its length, `sll` for its size, for the call's duration.
            let r = unsafe {
                libc::sendto(
                    self.fd.as_raw_fd(),
                    frame.as_ptr().cast(),
                    frame.len(),
                    0,
                    (&sll as *const libc::sockaddr_ll).cast(),
                    std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
                )
            };
            if r < 0 {
                Err(std::io::Error::last_os_error())
            } else {
                Ok(())
            }
        }
    }

    impl Drop for AfPacketCapture {
        fn drop(&mut self) {
            // SAFETY: `map`/`map_len` are the mapping `open` made; no borrow of it outlives `&mut self`.
            unsafe {
                libc::munmap(self.map.cast(), self.map_len);
            }
        }
    }

    /// Waits until one of `fds` is readable or `timeout_ms` passes. An interrupted or failed wait only means the
    /// next look may find nothing.
    pub fn wait_any(fds: &[RawFd], timeout_ms: i32) {
        let mut pfds = [libc::pollfd {
            fd: -1,
            events: 0,
            revents: 0,
        }; 64];
        let n = fds.len().min(pfds.len());
        for (p, &fd) in pfds.iter_mut().zip(fds) {
            p.fd = fd;
            p.events = libc::POLLIN | libc::POLLERR;
        }
        // SAFETY: `pfds[..n]` are valid pollfds owned by this frame for the call's duration.
        unsafe {
            libc::poll(pfds.as_mut_ptr(), n as libc::nfds_t, timeout_ms);
        }
    }

    /// An `ifreq` naming `name`, or an error when the name does not fit.
    fn ifreq_for(name: &std::ffi::CStr, iface: &str) -> Result<libc::ifreq, Error> {
        // SAFETY: an all-zero `ifreq` is a valid value of the plain C struct.
        let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
        let bytes = name.to_bytes();
        if bytes.len() >= req.ifr_name.len() {
            return Err(Error::Live {
                iface: iface.to_string(),
                message: "interface name too long".into(),
            });
        }
        for (d, &s) in req.ifr_name.iter_mut().zip(bytes) {
            *d = s as libc::c_char;
        }
        Ok(req)
    }

    /// The interface's MTU (`SIOCGIFMTU`).
    fn interface_mtu(fd: RawFd, name: &std::ffi::CStr, iface: &str) -> Result<u32, Error> {
        let mut req = ifreq_for(name, iface)?;
        // SAFETY: `req` is a valid `ifreq` with a NUL-terminated name; SIOCGIFMTU writes its `ifru_mtu`.
        let r = unsafe { libc::ioctl(fd, libc::SIOCGIFMTU, &mut req) };
        if r != 0 {
            return Err(os_err(iface, "SIOCGIFMTU"));
        }
        // SAFETY: after SIOCGIFMTU succeeded the union holds `ifru_mtu`.
        let mtu = unsafe { req.ifr_ifru.ifru_mtu };
        Ok(u32::try_from(mtu).unwrap_or(0))
    }

    /// The link type of the interface's frames, from its hardware type (`SIOCGIFHWADDR`).
    fn hardware_link_type(
        fd: RawFd,
        name: &std::ffi::CStr,
        iface: &str,
    ) -> Result<LinkType, Error> {
        let mut req = ifreq_for(name, iface)?;
        // SAFETY: `req` is a valid `ifreq` with a NUL-terminated name; SIOCGIFHWADDR writes its `ifru_hwaddr`.
        let r = unsafe { libc::ioctl(fd, libc::SIOCGIFHWADDR, &mut req) };
        if r != 0 {
            return Err(os_err(iface, "SIOCGIFHWADDR"));
        }
        // SAFETY: after SIOCGIFHWADDR succeeded the union holds `ifru_hwaddr`.
        let family = unsafe { req.ifr_ifru.ifru_hwaddr.sa_family };
        match family {
            libc::ARPHRD_ETHER | libc::ARPHRD_LOOPBACK => Ok(LinkType::ETHERNET),
            libc::ARPHRD_NONE => Ok(LinkType::RAW),
            other => Err(Error::Live {
                iface: iface.to_string(),
                message: format!(
                    "hardware type {other} is not supported by the AF_PACKET reader (Ethernet, loopback or raw IP)"
                ),
            }),
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use super::*;

    /// A descriptor (unused outside Linux).
    pub type RawFd = i32;

    /// AF_PACKET exists only on Linux: no value of this type can exist elsewhere.
    #[derive(Debug)]
    pub struct AfPacketCapture {
        never: std::convert::Infallible,
    }

    impl AfPacketCapture {
        /// Always an error elsewhere than Linux.
        pub fn open(iface: &str, cfg: &RingConfig) -> Result<AfPacketCapture, Error> {
            let _ = cfg;
            Err(Error::Live {
                iface: iface.to_string(),
                message: "AF_PACKET capture needs Linux; use `--capture pcap` (a build with `--features live`)"
                    .into(),
            })
        }
        pub fn ready(&mut self) -> bool {
            match self.never {}
        }
        pub fn try_next(&mut self) -> Option<PacketRecord<'_>> {
            match self.never {}
        }
        pub fn next_packet(&mut self) -> Result<Option<PacketRecord<'_>>, Error> {
            match self.never {}
        }
        pub fn raw_fd(&self) -> RawFd {
            match self.never {}
        }
        pub fn link_type(&self) -> LinkType {
            match self.never {}
        }
        pub fn iface(&self) -> &str {
            match self.never {}
        }
        pub fn kernel_stats(&mut self) -> Result<KernelStats, Error> {
            match self.never {}
        }
        pub fn counters(&self) -> RingCounters {
            match self.never {}
        }
    }

    /// AF_PACKET exists only on Linux: no value of this type can exist elsewhere.
    #[derive(Debug)]
    pub struct PacketSender {
        never: std::convert::Infallible,
    }

    impl PacketSender {
        /// Always an error elsewhere than Linux.
        pub fn open(iface: &str) -> Result<PacketSender, Error> {
            Err(Error::Live {
                iface: iface.to_string(),
                message: "inline mode (AF_PACKET) needs Linux".into(),
            })
        }
        pub fn iface(&self) -> &str {
            match self.never {}
        }
        pub fn send(&self, frame: &[u8]) -> std::io::Result<()> {
            let _ = frame;
            match self.never {}
        }
    }

    /// Nothing to wait for elsewhere than Linux.
    pub fn wait_any(fds: &[RawFd], timeout_ms: i32) {
        let _ = (fds, timeout_ms);
    }
}

pub use imp::{AfPacketCapture, PacketSender, wait_any};

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    proptest::proptest! {
        /// Whatever bytes a block holds, reading a frame header from it never panics, and a frame it gives lies in
        /// the block.
        #[test]
        fn any_block_bytes_give_a_frame_inside_the_block_or_none(
            blk in proptest::collection::vec(proptest::num::u8::ANY, 0..256),
            offset in 0usize..300,
        ) {
            if let Some(f) = imp::frame_at(&blk, offset) {
                proptest::prop_assert!(f.data.start >= offset && f.data.end <= blk.len());
                proptest::prop_assert_eq!(f.data.len(), f.snaplen as usize);
            }
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_frame_header_is_read_field_by_field_and_refused_past_the_block() {
        let mut blk = vec![0u8; 128];
        let put =
            |b: &mut Vec<u8>, at: usize, v: u32| b[at..at + 4].copy_from_slice(&v.to_ne_bytes());
        put(&mut blk, 16, 0); // next: last frame
        put(&mut blk, 16 + 4, 1_700_000_000);
        put(&mut blk, 16 + 8, 5);
        put(&mut blk, 16 + 12, 60); // snaplen
        put(&mut blk, 16 + 16, 1514); // len: cut by the snaplen
        blk[16 + 24..16 + 26].copy_from_slice(&48u16.to_ne_bytes()); // mac offset
        let f = imp::frame_at(&blk, 16).expect("a frame");
        assert_eq!(
            (f.sec, f.nsec, f.snaplen, f.len),
            (1_700_000_000, 5, 60, 1514)
        );
        assert_eq!(f.data, 64..124);
        // Four more bytes of snaplen run past the block.
        put(&mut blk, 16 + 12, 65);
        assert_eq!(imp::frame_at(&blk, 16), None);
        assert_eq!(imp::frame_at(&blk, usize::MAX - 8), None);
    }

    #[test]
    fn fanout_modes_parse_by_name_and_refuse_others() {
        for (name, mode) in FanoutMode::ALL {
            assert_eq!(name.parse::<FanoutMode>(), Ok(mode));
            assert_eq!(mode.name(), name);
        }
        let e = "cluster".parse::<FanoutMode>().unwrap_err();
        assert!(e.contains("hash, cpu, qm, lb"), "{e}");
        assert!(FanoutMode::Hash.keeps_flows_together());
        assert!(!FanoutMode::Lb.keeps_flows_together());
    }

    #[test]
    fn ring_shapes_the_kernel_would_refuse_are_refused_with_the_option_named() {
        assert_eq!(check_ring(&RingConfig::default()), Ok(()));
        let bad = |f: fn(&mut RingConfig)| {
            let mut c = RingConfig::default();
            f(&mut c);
            check_ring(&c).unwrap_err()
        };
        assert!(bad(|c| c.block_size = 5000).contains("block size"));
        assert!(bad(|c| c.blocks = 0).contains("ring blocks"));
        assert!(bad(|c| c.block_size = 4096).contains("snaplen"));
        assert!(bad(|c| c.block_timeout_ms = 0).contains("timeout"));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_missing_interface_is_a_one_line_error() {
        let e = AfPacketCapture::open("fb-no-such0", &RingConfig::default()).unwrap_err();
        let s = e.to_string();
        assert!(s.contains("fb-no-such0"), "{s}");
        assert!(!s.contains('\n'), "{s}");
    }

    /// The tests that capture on `lo` one at a time (each one's traffic would crowd the other's small rings).
    #[cfg(target_os = "linux")]
    static LO: std::sync::Mutex<()> = std::sync::Mutex::new(());

    /// A ring on `lo`, or `None` (said why) without capture rights.
    #[cfg(target_os = "linux")]
    fn ring_on_lo(cfg: &RingConfig) -> Option<AfPacketCapture> {
        match AfPacketCapture::open("lo", cfg) {
            Ok(c) => Some(c),
            Err(e) if e.to_string().contains("not permitted") => {
                flowbundle_testsupport::missing_tool(&format!(
                    "AF_PACKET capture rights (root or CAP_NET_RAW): {e}"
                ));
                None
            }
            Err(e) => panic!("opening a ring on lo: {e}"),
        }
    }

    /// Reads `cap` until a frame ending in `tail` comes (at most `tries` waits); its data and original length.
    #[cfg(target_os = "linux")]
    fn wait_for(cap: &mut AfPacketCapture, tail: &[u8], tries: usize) -> Option<(Vec<u8>, u32)> {
        for _ in 0..tries {
            match cap.next_packet().unwrap() {
                Some(p) if p.data.ends_with(tail) => return Some((p.data.to_vec(), p.orig_len)),
                Some(_) => {}
                None => return None,
            }
        }
        None
    }

    /// TPACKET_V2 hands a lone frame over at once (a TPACKET_V3 block with a long retire timeout holds it back),
    /// and a frame longer than its slot still arrives whole, fetched from the socket.
    #[cfg(target_os = "linux")]
    #[test]
    fn v2_ring_hands_over_each_frame_at_once_and_long_frames_whole() {
        use std::net::UdpSocket;
        let v2 = RingConfig {
            version: TpacketVersion::V2,
            block_size: 1 << 16,
            blocks: 4,
            frame_size: Some(512),
            snaplen: 4096,
            promisc: false,
            ..RingConfig::default()
        };
        // A block large enough that other traffic on `lo` does not fill it while the test looks.
        let v3 = RingConfig {
            version: TpacketVersion::V3,
            block_size: 4 << 20,
            blocks: 2,
            block_timeout_ms: 60_000,
            ..v2
        };
        let _lo = LO.lock().unwrap_or_else(|e| e.into_inner());
        let Some(mut frames) = ring_on_lo(&v2) else {
            return;
        };
        let Some(mut blocks) = ring_on_lo(&v3) else {
            return;
        };
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let lone = b"flowbundle-v2-lone-frame";
        tx.send_to(lone, rx.local_addr().unwrap()).unwrap();
        let (data, orig) =
            wait_for(&mut frames, lone, 10_000).expect("the V2 ring delivered the frame");
        assert_eq!(
            (data.len(), orig as usize),
            (14 + 20 + 8 + lone.len(), data.len())
        );
        assert_eq!(
            wait_for(&mut blocks, lone, 10_000),
            None,
            "a V3 block is handed over when full or at its timeout, not per frame"
        );
        // 2,000 bytes of payload in a 512-byte slot: cut in the ring, whole from the socket.
        let mut long = vec![0u8; 2000];
        long[1990..].copy_from_slice(b"-long-tail");
        for _ in 0..3 {
            tx.send_to(&long, rx.local_addr().unwrap()).unwrap();
            tx.send_to(lone, rx.local_addr().unwrap()).unwrap();
        }
        for _ in 0..3 {
            let (data, orig) =
                wait_for(&mut frames, b"-long-tail", 10_000).expect("the long frame");
            assert_eq!(data.len(), 14 + 20 + 8 + 2000);
            assert_eq!(orig as usize, data.len());
            assert!(data.ends_with(&long));
            // The short frame after it is in step: copies and slots stay paired.
            assert!(wait_for(&mut frames, lone, 10_000).is_some());
        }
        let c = frames.counters();
        assert!(c.copied >= 3, "{c:?}");
        assert_eq!((c.snaplen_cut, c.malformed), (0, 0), "{c:?}");
        assert!(frames.kernel_stats().unwrap().packets >= 7);
    }

    #[test]
    fn v2_frame_slots_hold_the_mtu_and_headers_within_the_block() {
        assert_eq!(v2_frame_size(1500, 65_535, 4 << 20), 1616);
        assert_eq!(v2_frame_size(9000, 65_535, 4 << 20), 9104);
        // The snaplen bounds the slot; the block bounds it too; never below the minimum.
        assert_eq!(v2_frame_size(1500, 100, 4 << 20), 192.max(MIN_FRAME_V2));
        assert_eq!(v2_frame_size(65_536, 1 << 20, 8192), 8192);
        assert_eq!(v2_frame_size(0, 0, 4096), MIN_FRAME_V2);
        let v2 = |f| RingConfig {
            version: TpacketVersion::V2,
            frame_size: Some(f),
            ..RingConfig::default()
        };
        assert_eq!(check_ring(&v2(2048)), Ok(()));
        assert!(check_ring(&v2(2050)).unwrap_err().contains("frame size"));
        assert!(check_ring(&v2(128)).unwrap_err().contains("frame size"));
        assert!(check_ring(&v2(8 << 20)).unwrap_err().contains("frame size"));
        // No block timeout in V2.
        assert_eq!(
            check_ring(&RingConfig {
                block_timeout_ms: 0,
                ..v2(2048)
            }),
            Ok(())
        );
        assert_eq!("v2".parse(), Ok(TpacketVersion::V2));
        assert_eq!("TPACKET_V3".parse(), Ok(TpacketVersion::V3));
        assert!("4".parse::<TpacketVersion>().is_err());
    }

    #[cfg(target_os = "linux")]
    proptest::proptest! {
        /// Whatever bytes a V2 slot holds, reading its header never panics, and a frame it gives lies in the slot.
        #[test]
        fn any_slot_bytes_give_a_v2_frame_inside_the_slot_or_none(
            slot in proptest::collection::vec(proptest::num::u8::ANY, 0..256),
        ) {
            if let Some(f) = imp::frame_v2(&slot) {
                proptest::prop_assert!(f.data.start >= 32 && f.data.end <= slot.len());
                proptest::prop_assert_eq!(f.data.len(), f.snaplen as usize);
            }
        }
    }

    /// Captures its own datagrams on the loopback through a small ring (needs root or CAP_NET_RAW; skipped with
    /// the reason otherwise), and reads the kernel's counters.
    #[cfg(target_os = "linux")]
    #[test]
    fn ring_on_loopback_delivers_our_datagrams_and_counts_them() {
        use std::net::UdpSocket;
        let cfg = RingConfig {
            block_size: 1 << 16,
            blocks: 4,
            block_timeout_ms: 5,
            snaplen: 1024,
            promisc: false,
            ..RingConfig::default()
        };
        let _lo = LO.lock().unwrap_or_else(|e| e.into_inner());
        let mut cap = match AfPacketCapture::open("lo", &cfg) {
            Ok(c) => c,
            Err(e) if e.to_string().contains("not permitted") => {
                flowbundle_testsupport::missing_tool(&format!(
                    "AF_PACKET capture rights (root or CAP_NET_RAW): {e}"
                ));
                return;
            }
            Err(e) => panic!("opening a ring on lo: {e}"),
        };
        assert_eq!(cap.link_type(), LinkType::ETHERNET);
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let port = rx.local_addr().unwrap().port().to_be_bytes();
        let payload = b"flowbundle-afpacket-test";
        // Longer than the snaplen: delivered cut, counted, the original length kept.
        let long = [7u8; 2000];
        // More datagrams than one block holds, so blocks go back to the kernel and come round again.
        let (mut seen, mut cut) = (0, 0);
        for round in 0..40 {
            for i in 0..100 {
                tx.send_to(payload, rx.local_addr().unwrap()).unwrap();
                if i == 0 {
                    tx.send_to(&long, rx.local_addr().unwrap()).unwrap();
                }
            }
            while let Some(p) = cap.next_packet().unwrap() {
                if p.data.get(36..38) == Some(&port[..]) && p.data.ends_with(payload) {
                    assert!(p.ts_ns > 1_600_000_000_000_000_000);
                    assert_eq!(p.orig_len as usize, p.data.len());
                    seen += 1;
                } else if p.data.get(36..38) == Some(&port[..]) {
                    assert_eq!(p.data.len(), 1024);
                    assert_eq!(p.orig_len, 14 + 20 + 8 + 2000);
                    cut += 1;
                }
                if !cap.ready() {
                    break;
                }
            }
            if seen >= 2000 || round > 30 && seen > 0 {
                break;
            }
        }
        assert!(
            seen >= 1000,
            "only {seen} of our datagrams were captured on lo"
        );
        let st = cap.kernel_stats().unwrap();
        assert!(st.packets >= seen, "{st:?} < {seen}");
        assert!(cap.counters().frames >= seen);
        assert!(
            cut > 0 && cap.counters().snaplen_cut >= cut,
            "{:?}",
            cap.counters()
        );
        assert_eq!(cap.counters().malformed, 0);
    }
}
