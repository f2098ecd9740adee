//! # Live capture through AF_PACKET TPACKET_V3 rings (Linux, no native library)
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
//! Suricata's defaults give for a busy link); polling costs one `poll(2)` per empty look, none while blocks wait.
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

/// The shape of a TPACKET_V3 ring and how the socket is opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RingConfig {
    /// Bytes per block: a multiple of the page size, at least one frame of `snaplen` bytes.
    pub block_size: u32,
    /// Blocks in the ring.
    pub blocks: u32,
    /// Milliseconds after which the kernel hands over a block that is not full (the latency bound of a quiet link).
    pub block_timeout_ms: u32,
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
            block_size: 4 << 20,
            blocks: 16,
            block_timeout_ms: 10,
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
}

impl std::ops::AddAssign for RingCounters {
    fn add_assign(&mut self, o: Self) {
        self.frames += o.frames;
        self.snaplen_cut += o.snaplen_cut;
        self.malformed += o.malformed;
        self.vlan_restored += o.vlan_restored;
    }
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
    if cfg.snaplen == 0 || cfg.snaplen.saturating_add(128) > cfg.block_size {
        return Err(format!(
            "a block of {} bytes cannot hold one frame of snaplen {} (plus its 128-byte header)",
            cfg.block_size, cfg.snaplen
        ));
    }
    if cfg.block_timeout_ms == 0 {
        return Err("block timeout must be at least 1 ms".into());
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

    /// The frames of the block being read: where the next one starts and how many are left.
    #[derive(Clone, Copy, Debug)]
    struct Cursor {
        block: usize,
        offset: usize,
        left: u32,
    }

    /// Block `b` of the ring at `map` of `block_size`-byte blocks, borrowed for a lifetime the caller chooses.
    ///
    /// # Safety
    /// `b` is below the ring's block count, the mapping outlives `'a`, and this process owns the block (its status
    /// read as `TP_STATUS_USER`) for all of `'a`.
    unsafe fn block_at<'a>(map: *mut u8, block_size: usize, b: usize) -> &'a [u8] {
        // SAFETY: the caller's promise.
        unsafe { std::slice::from_raw_parts(map.add(b * block_size), block_size) }
    }

    /// A TPACKET_V3 capture on one interface. See the module documentation.
    pub struct AfPacketCapture {
        fd: OwnedFd,
        /// The ring: `blocks × block_size` bytes mapped from the socket.
        map: *mut u8,
        map_len: usize,
        block_size: usize,
        blocks: usize,
        /// The next block to look at when no block is being read.
        next_block: usize,
        cursor: Option<Cursor>,
        iface: String,
        link_type: LinkType,
        stats: KernelStats,
        counters: RingCounters,
        /// A frame with its VLAN tag put back.
        scratch: Vec<u8>,
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

    impl AfPacketCapture {
        /// Opens a TPACKET_V3 ring on `iface` with `cfg`. Needs root or `CAP_NET_RAW`.
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
            let version = libc::tpacket_versions::TPACKET_V3 as libc::c_int;
            setsockopt(s, libc::SOL_PACKET, libc::PACKET_VERSION, &version)
                .map_err(|_| os_err(iface, "PACKET_VERSION TPACKET_V3"))?;
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
            // Frames are 16-byte aligned within a block; the frame size only matters to the kernel's sanity check.
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
                next_block: 0,
                cursor: None,
                iface: iface.to_string(),
                link_type,
                stats: KernelStats::default(),
                counters: RingCounters::default(),
                scratch: Vec::new(),
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

        /// The status word of block `b`, shared with the kernel.
        fn status(&self, b: usize) -> &AtomicU32 {
            // SAFETY: `b < blocks`, so the word lies in the mapping; blocks start page-aligned, so the u32 at
            // offset 8 is aligned; the kernel and this process both access it atomically (the kernel with its
            // own barriers around `block_status`), and the mapping lives as long as `&self`.
            unsafe {
                &*self
                    .map
                    .add(b * self.block_size + BLOCK_STATUS)
                    .cast::<AtomicU32>()
            }
        }

        /// Block `b`'s bytes. Only while this process owns it (status has `TP_STATUS_USER`).
        fn block(&self, b: usize) -> &[u8] {
            // SAFETY: `b < blocks`, so the range lies in the mapping. The caller only looks at a block whose
            // status it read as `TP_STATUS_USER` (with acquire ordering): the kernel does not write a block it has
            // handed over until this process writes `TP_STATUS_KERNEL` back, which it does only after the last
            // borrow of these bytes (`release_block` takes `&mut self`).
            unsafe { block_at(self.map, self.block_size, b) }
        }

        fn release_block(&mut self, b: usize) {
            self.status(b)
                .store(libc::TP_STATUS_KERNEL, Ordering::Release);
        }

        /// Whether a frame can be read now without waiting. Gives back a block whose frames have all been read.
        pub fn ready(&mut self) -> bool {
            loop {
                if let Some(c) = self.cursor {
                    if c.left > 0 {
                        return true;
                    }
                    self.release_block(c.block);
                    self.cursor = None;
                    self.next_block = (c.block + 1) % self.blocks;
                }
                let b = self.next_block;
                if self.status(b).load(Ordering::Acquire) & libc::TP_STATUS_USER == 0 {
                    return false;
                }
                let blk = self.block(b);
                let (Some(n), Some(first)) =
                    (u32_at(blk, BLOCK_NUM_PKTS), u32_at(blk, BLOCK_FIRST_PKT))
                else {
                    self.counters.malformed += 1;
                    self.cursor = Some(Cursor {
                        block: b,
                        offset: 0,
                        left: 0,
                    });
                    continue;
                };
                self.cursor = Some(Cursor {
                    block: b,
                    offset: first as usize,
                    left: n,
                });
            }
        }

        /// The next frame if one is ready, without waiting.
        pub fn try_next(&mut self) -> Option<PacketRecord<'_>> {
            while self.ready() {
                let c = self.cursor?;
                let Some(Frame {
                    next,
                    sec,
                    nsec,
                    snaplen,
                    len,
                    status,
                    tci,
                    tpid,
                    data: range,
                }) = frame_at(self.block(c.block), c.offset)
                else {
                    // A header outside the block: the rest of the block cannot be walked.
                    self.counters.malformed += u64::from(c.left);
                    self.cursor = Some(Cursor { left: 0, ..c });
                    continue;
                };
                self.cursor = Some(Cursor {
                    block: c.block,
                    offset: if next == 0 {
                        usize::MAX
                    } else {
                        c.offset.saturating_add(next as usize)
                    },
                    left: if next == 0 { 0 } else { c.left - 1 },
                });
                self.counters.frames += 1;
                if snaplen < len {
                    self.counters.snaplen_cut += 1;
                }
                let ts_ns = u64::from(sec) * 1_000_000_000 + u64::from(nsec);
                let mut orig_len = len.max(snaplen);
                let restore_vlan = status & libc::TP_STATUS_VLAN_VALID != 0
                    && self.link_type == LinkType::ETHERNET
                    && range.len() >= 12;
                let data = if restore_vlan {
                    self.counters.vlan_restored += 1;
                    let tpid = if status & libc::TP_STATUS_VLAN_TPID_VALID != 0 && tpid != 0 {
                        tpid
                    } else {
                        0x8100
                    };
                    // SAFETY: as for `block`: this process owns block `c.block` (read as `TP_STATUS_USER`), and the
                    // slice is dropped before this call returns (it is copied into the scratch buffer).
                    let frame = unsafe { block_at(self.map, self.block_size, c.block) };
                    let frame = frame.get(range).unwrap_or(&[]);
                    self.scratch.clear();
                    self.scratch
                        .extend_from_slice(frame.get(..12).unwrap_or(&[]));
                    self.scratch.extend_from_slice(&tpid.to_be_bytes());
                    self.scratch.extend_from_slice(&(tci as u16).to_be_bytes());
                    self.scratch
                        .extend_from_slice(frame.get(12..).unwrap_or(&[]));
                    orig_len = orig_len.saturating_add(4);
                    &self.scratch[..]
                } else {
                    self.block(c.block).get(range).unwrap_or(&[])
                };
                return Some(PacketRecord {
                    ts_ns,
                    orig_len,
                    interface: 0,
                    link_type: self.link_type,
                    data,
                });
            }
            None
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

    /// The link type of the interface's frames, from its hardware type (`SIOCGIFHWADDR`).
    fn hardware_link_type(
        fd: RawFd,
        name: &std::ffi::CStr,
        iface: &str,
    ) -> Result<LinkType, Error> {
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
