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
//! Unlike a file, a live capture has no end: [`LiveCapture::next_packet`] returns `Ok(None)` when its read timeout
//! (100 ms) passes without a packet, so a caller can check a stop flag and call again.

use crate::{Error, LinkType, PacketRecord};

#[cfg(feature = "live")]
mod imp {
    use super::*;

    /// Read timeout: how long `next_packet` waits before returning `Ok(None)`.
    const TIMEOUT_MS: i32 = 100;

    /// A capture on a network interface (libpcap).
    pub struct LiveCapture {
        cap: pcap::Capture<pcap::Active>,
        iface: String,
        link_type: LinkType,
        nanos: bool,
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
            let link_type = LinkType(cap.get_datalink().0 as u32);
            Ok(LiveCapture {
                cap,
                iface: iface.to_string(),
                link_type,
                nanos,
            })
        }

        /// The next packet, or `Ok(None)` if none arrived within the read timeout.
        pub fn next_packet(&mut self) -> Result<Option<PacketRecord<'_>>, Error> {
            match self.cap.next_packet() {
                Ok(p) => {
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
                Err(pcap::Error::TimeoutExpired) => Ok(None),
                Err(e) => Err(Error::Live {
                    iface: self.iface.clone(),
                    message: e.to_string(),
                }),
            }
        }

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
        match LiveCapture::open("lo", 65535, false) {
            Ok(mut cap) => {
                // Whether a packet arrives within the timeout depends on the machine; both answers are fine.
                let got = cap.next_packet().expect("read from lo");
                if let Some(p) = got {
                    assert!(p.data.len() as u32 <= p.orig_len.max(p.data.len() as u32));
                }
            }
            Err(e) => eprintln!("skipping live capture test (needs root or CAP_NET_RAW): {e}"),
        }
    }
}
