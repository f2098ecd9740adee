//! The unit ingest hands to the rest of the path.

use crate::LinkType;

/// One captured packet, borrowed from the reader or the preloaded trace.
///
/// `Copy` and 40 bytes: cheap to pass by value through the dispatcher.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketRecord<'a> {
    /// Capture time in nanoseconds since the Unix epoch, whatever the file's own resolution was.
    pub ts_ns: u64,
    /// Length of the packet on the wire; `data.len()` is smaller when the capture was truncated (snaplen).
    pub orig_len: u32,
    /// Which interface captured it: an index into the reader's `interfaces()` (0 for pcap files). For a pcapng
    /// file with one section this is the Interface Description Block's id; with several sections the ids of later
    /// sections follow those of earlier ones, so the number stays unique in the file.
    pub interface: u32,
    /// How to interpret the first byte of `data`.
    pub link_type: LinkType,
    /// The captured bytes.
    pub data: &'a [u8],
}

impl PacketRecord<'_> {
    /// True when the capture kept fewer bytes than the wire carried.
    pub fn is_truncated(&self) -> bool {
        (self.data.len() as u64) < u64::from(self.orig_len)
    }
}
