//! Live capture from a network interface, behind the `live` cargo feature.
//!
//! libpcap is a native library, and flowbundle builds and tests on a bare machine by default, so live capture is
//! opt-in: `cargo build --features live` links libpcap through the `pcap` crate. Without the feature the same API
//! exists and [`LiveCapture::open`] returns [`Error::LiveUnavailable`], whose message says how to get it; callers
//! need no `cfg` of their own.
//!
//! Records are the same [`PacketRecord`]s the file readers yield, borrowed from libpcap's buffer until the next
//! call. Timestamps are requested in nanoseconds and fall back to microseconds where the platform lacks them.
//!
//! Unlike a file, a live capture has no end: [`LiveCapture::next_packet`] returns `Ok(None)` when no packet arrived
//! within its wait (at most 100 ms), so a caller can check a stop flag and call again. libpcap's own read timeout
//! cannot promise that (on Linux it may block until the first packet arrives, as pcap(3PCAP) warns), so the capture
//! runs in non-blocking mode and, on Unix, waits with `poll(2)` on libpcap's descriptor only after a read found
//! nothing: a busy link costs no extra system call per packet.

use crate::afpacket::{AfPacketCapture, KernelStats, RingConfig, RingCounters};
use crate::{Error, LinkType, PacketRecord};

#[cfg(feature = "live")]
mod imp {
    use super::*;

    /// How long `next_packet` waits for a packet before returning `Ok(None)`.
    const TIMEOUT_MS: i32 = 100;

    /// A capture on a network interface (libpcap).
    pub struct LiveCapture {
        cap: pcap::Capture<pcap::Active>,
        iface: String,
        link_type: LinkType,
        nanos: bool,
        /// The last read found nothing: wait for the descriptor before the next one.
        idle: bool,
    }

    impl std::fmt::Debug for LiveCapture {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.debug_struct("LiveCapture")
                .field("iface", &self.iface)
                .field("link_type", &self.link_type)
                .field("nanos", &self.nanos)
                .finish_non_exhaustive()
        }
    }

    impl LiveCapture {
        /// Start capturing on `iface` (e.g. "eth0", "any"), keeping `snaplen` bytes per packet, promiscuous or not.
        /// Usually needs root or `CAP_NET_RAW`.
        pub fn open(iface: &str, snaplen: u32, promisc: bool) -> Result<LiveCapture, Error> {
            let live_err = |e: pcap::Error| Error::Live {
                iface: iface.to_string(),
                message: e.to_string(),
            };
            let snaplen = i32::try_from(snaplen.min(crate::MAX_CAPLEN)).unwrap_or(i32::MAX);
            let inactive = || {
                pcap::Capture::from_device(iface).map(|c| {
                    c.snaplen(snaplen)
                        .promisc(promisc)
                        .timeout(TIMEOUT_MS)
                        .immediate_mode(true)
                })
            };
            // Nanosecond timestamps where supported; libpcap refuses the open where they are not.
            let (cap, nanos) = match inactive()
                .map_err(live_err)?
                .precision(pcap::Precision::Nano)
                .open()
            {
                Ok(cap) => (cap, true),
                Err(_) => (
                    inactive().map_err(live_err)?.open().map_err(live_err)?,
                    false,
                ),
            };
            #[cfg(unix)]
            let cap = cap.setnonblock().map_err(live_err)?;
            let link_type = LinkType(cap.get_datalink().0 as u32);
            Ok(LiveCapture {
                cap,
                iface: iface.to_string(),
                link_type,
                nanos,
                idle: false,
            })
        }

        /// The next packet, or `Ok(None)` if none arrived within the wait (at most 100 ms).
        pub fn next_packet(&mut self) -> Result<Option<PacketRecord<'_>>, Error> {
            if self.idle {
                self.wait_readable();
            }
            match self.cap.next_packet() {
                Ok(p) => {
                    self.idle = false;
                    let secs = u64::try_from(p.header.ts.tv_sec).unwrap_or(0);
                    let frac = u64::try_from(p.header.ts.tv_usec).unwrap_or(0);
                    let frac_ns = if self.nanos { frac } else { frac * 1_000 };
                    Ok(Some(PacketRecord {
                        ts_ns: secs.saturating_mul(1_000_000_000).saturating_add(frac_ns),
                        orig_len: p.header.len,
                        interface: 0,
                        link_type: self.link_type,
                        data: p.data,
                    }))
                }
                Err(pcap::Error::TimeoutExpired) => {
                    self.idle = true;
                    Ok(None)
                }
                Err(e) => Err(Error::Live {
                    iface: self.iface.clone(),
                    message: e.to_string(),
                }),
            }
        }

        /// Wait until libpcap's descriptor is readable or the timeout passes. An interrupted or failed wait only
        /// means the next read may find nothing, which `next_packet` reports as `Ok(None)`.
        #[cfg(unix)]
        fn wait_readable(&self) {
            use std::os::unix::io::AsRawFd;
            let mut pfd = libc::pollfd {
                fd: self.cap.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd, owned by this frame, for the duration of the call.
            unsafe {
                libc::poll(&mut pfd, 1, TIMEOUT_MS);
            }
        }

        /// Elsewhere the capture stays in blocking mode with libpcap's read timeout.
        #[cfg(not(unix))]
        fn wait_readable(&self) {}

        /// Link type of the interface.
        pub fn link_type(&self) -> LinkType {
            self.link_type
        }

        /// Packets the kernel received and dropped so far (`pcap_stats`), for the `capture.kernel_drops` counter.
        pub fn kernel_stats(&mut self) -> Result<(u64, u64), Error> {
            let s = self.cap.stats().map_err(|e| Error::Live {
                iface: self.iface.clone(),
                message: e.to_string(),
            })?;
            Ok((u64::from(s.received), u64::from(s.dropped)))
        }
    }
}

#[cfg(not(feature = "live"))]
mod imp {
    use super::*;

    /// A capture on a network interface. This build lacks the `live` feature, so [`LiveCapture::open`] always
    /// fails with [`Error::LiveUnavailable`] and no value of this type can exist.
    #[derive(Debug)]
    pub struct LiveCapture {
        never: std::convert::Infallible,
    }

    impl LiveCapture {
        /// Always [`Error::LiveUnavailable`]: rebuild with `--features live` (needs libpcap).
        pub fn open(iface: &str, snaplen: u32, promisc: bool) -> Result<LiveCapture, Error> {
            let _ = (iface, snaplen, promisc);
            Err(Error::LiveUnavailable)
        }

        /// Unreachable in this build (no `LiveCapture` can be made).
        pub fn next_packet(&mut self) -> Result<Option<PacketRecord<'_>>, Error> {
            match self.never {}
        }

        /// Unreachable in this build (no `LiveCapture` can be made).
        pub fn link_type(&self) -> LinkType {
            match self.never {}
        }

        /// Unreachable in this build (no `LiveCapture` can be made).
        pub fn kernel_stats(&mut self) -> Result<(u64, u64), Error> {
            match self.never {}
        }
    }
}

pub use imp::LiveCapture;

/// How packets come off an interface.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaptureMethod {
    /// AF_PACKET rings, TPACKET_V3 or V2 ([`AfPacketCapture`]; Linux, the default build).
    AfPacket,
    /// libpcap ([`LiveCapture`]; the `live` feature, the portable fallback).
    Pcap,
}

impl std::str::FromStr for CaptureMethod {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "afpacket" | "af-packet" => Ok(CaptureMethod::AfPacket),
            "pcap" | "libpcap" => Ok(CaptureMethod::Pcap),
            other => Err(format!(
                "unknown capture method {other:?}; one of afpacket, pcap"
            )),
        }
    }
}

/// An interface opened for capture: one libpcap handle, or one AF_PACKET ring, or several rings of one fanout group
/// (one per worker, the kernel spreading the traffic). Frames come tagged with the ring they were read from, which is
/// the kernel's choice of consumer under fanout.
#[derive(Debug)]
pub struct LiveSource {
    input: Input,
    /// The ring looked at first next time (round robin, so that no ring starves another).
    next: usize,
    fds: Vec<i32>,
}

#[derive(Debug)]
enum Input {
    Pcap(LiveCapture),
    Rings(Vec<AfPacketCapture>),
}

impl LiveSource {
    /// Opens `iface` with libpcap (the `live` feature).
    pub fn pcap(iface: &str, snaplen: u32, promisc: bool) -> Result<LiveSource, Error> {
        Ok(LiveSource {
            input: Input::Pcap(LiveCapture::open(iface, snaplen, promisc)?),
            next: 0,
            fds: Vec::new(),
        })
    }

    /// Opens `rings` AF_PACKET rings on `iface` with `cfg`; more than one needs `cfg.fanout` (a group the rings
    /// join, so that the kernel gives each packet to one of them).
    pub fn af_packet(iface: &str, cfg: &RingConfig, rings: usize) -> Result<LiveSource, Error> {
        if rings > 1 && cfg.fanout.is_none() {
            return Err(Error::Live {
                iface: iface.to_string(),
                message: "several rings need a fanout group, else each ring gets every packet"
                    .into(),
            });
        }
        let rings = (0..rings.max(1))
            .map(|_| AfPacketCapture::open(iface, cfg))
            .collect::<Result<Vec<_>, _>>()?;
        let fds = rings.iter().map(AfPacketCapture::raw_fd).collect();
        Ok(LiveSource {
            input: Input::Rings(rings),
            next: 0,
            fds,
        })
    }

    /// Opens one ring on each side of an inline sensor, `sides[0]` first: a frame's ring is then the side it came
    /// in on. The rings ignore the frames this host sends (the sensor's own forwarding).
    pub fn inline(sides: [&str; 2], cfg: &RingConfig) -> Result<LiveSource, Error> {
        let cfg = RingConfig {
            ignore_outgoing: true,
            fanout: None,
            ..*cfg
        };
        let rings = sides
            .iter()
            .map(|iface| AfPacketCapture::open(iface, &cfg))
            .collect::<Result<Vec<_>, _>>()?;
        let fds = rings.iter().map(AfPacketCapture::raw_fd).collect();
        Ok(LiveSource {
            input: Input::Rings(rings),
            next: 0,
            fds,
        })
    }

    /// How many rings (1 for libpcap).
    pub fn rings(&self) -> usize {
        match &self.input {
            Input::Pcap(_) => 1,
            Input::Rings(r) => r.len(),
        }
    }

    /// Link type of the frames.
    pub fn link_type(&self) -> LinkType {
        match &self.input {
            Input::Pcap(c) => c.link_type(),
            Input::Rings(r) => r
                .first()
                .map_or(LinkType::ETHERNET, AfPacketCapture::link_type),
        }
    }

    /// The next frame and the ring it came from (also its record's `interface`), or `Ok(None)` when none arrived within the wait (at most 100 ms).
    pub fn next_packet(&mut self) -> Result<Option<(usize, PacketRecord<'_>)>, Error> {
        match &mut self.input {
            Input::Pcap(c) => Ok(c.next_packet()?.map(|p| (0, p))),
            Input::Rings(rings) => {
                let n = rings.len();
                let mut found = None;
                for pass in 0..2 {
                    found = (0..n)
                        .map(|k| (self.next + k) % n)
                        .find(|&i| rings.get_mut(i).is_some_and(AfPacketCapture::ready));
                    if found.is_some() || pass == 1 {
                        break;
                    }
                    crate::afpacket::wait_any(&self.fds, 100);
                }
                let Some(i) = found else { return Ok(None) };
                self.next = (i + 1) % n;
                Ok(rings.get_mut(i).and_then(|r| r.try_next()).map(|p| {
                    (
                        i,
                        PacketRecord {
                            interface: i as u32,
                            ..p
                        },
                    )
                }))
            }
        }
    }

    /// The kernel's counters, summed over the rings.
    pub fn kernel_stats(&mut self) -> Result<KernelStats, Error> {
        match &mut self.input {
            Input::Pcap(c) => {
                let (packets, drops) = c.kernel_stats()?;
                Ok(KernelStats {
                    packets,
                    drops,
                    freeze_q_count: 0,
                })
            }
            Input::Rings(rings) => {
                let mut total = KernelStats::default();
                for r in rings {
                    total += r.kernel_stats()?;
                }
                Ok(total)
            }
        }
    }

    /// What the ring readers found odd, summed (nothing for libpcap, which does not say).
    pub fn counters(&self) -> RingCounters {
        let mut total = RingCounters::default();
        if let Input::Rings(rings) = &self.input {
            for r in rings {
                total += r.counters();
            }
        }
        total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(not(feature = "live"))]
    #[test]
    fn without_the_feature_open_says_how_to_get_it() {
        let e = LiveCapture::open("eth0", 65535, false).unwrap_err();
        assert!(matches!(e, Error::LiveUnavailable));
        assert_eq!(
            e.to_string(),
            "flowbundle was built without the `live` feature; rebuild with `--features live` (needs libpcap)"
        );
    }

    #[cfg(feature = "live")]
    #[test]
    fn live_open_on_a_missing_interface_is_a_typed_error() {
        match LiveCapture::open("flowbundle-no-such-if0", 65535, false) {
            Err(Error::Live { iface, message }) => {
                assert_eq!(iface, "flowbundle-no-such-if0");
                assert!(!message.is_empty());
            }
            Err(other) => panic!("unexpected error {other}"),
            Ok(_) => eprintln!("skipping: an interface with that name exists here"),
        }
    }

    #[cfg(feature = "live")]
    #[test]
    fn live_capture_on_loopback_when_permitted() {
        use std::net::UdpSocket;
        let mut cap = match LiveCapture::open("lo", 65535, false) {
            Ok(cap) => cap,
            Err(e) => {
                eprintln!(
                    "skipping live capture test (needs root or CAP_NET_RAW and a loopback): {e}"
                );
                return;
            }
        };
        assert_eq!(cap.link_type(), LinkType::ETHERNET);
        // Nothing may be flowing: the wait is bounded, so this returns.
        let _ = cap.next_packet().expect("read from lo");
        let _ = cap.next_packet().expect("read from lo");
        // Send ourselves datagrams and find one of them.
        let rx = UdpSocket::bind("127.0.0.1:0").expect("bind");
        let port = rx.local_addr().expect("addr").port().to_be_bytes();
        let tx = UdpSocket::bind("127.0.0.1:0").expect("bind");
        let payload = b"flowbundle-live-test";
        let mut found = false;
        for _ in 0..100 {
            tx.send_to(payload, rx.local_addr().expect("addr"))
                .expect("send");
            // Ethernet 14 + IPv4 20: the UDP destination port is at 36..38.
            while let Some(p) = cap.next_packet().expect("read from lo") {
                if p.data.get(36..38) == Some(&port[..]) && p.data.ends_with(payload) {
                    assert!(p.ts_ns > 1_600_000_000_000_000_000);
                    found = true;
                    break;
                }
            }
            if found {
                break;
            }
        }
        assert!(found, "our datagram was not captured on lo");
        let (received, _dropped) = cap.kernel_stats().expect("stats");
        assert!(received > 0);
    }
}
