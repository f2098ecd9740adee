//! Helpers shared by the integration tests: listing capture files, and a small pcap / pcapng builder for
//! hand-made captures (byte orders, sections, resolutions, odd blocks) that the real files do not all cover.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// Files in `dir` whose extension is one of `exts`, sorted.
pub fn files_with_ext(dir: &Path, exts: &[&str]) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    p.is_file()
                        && p.extension()
                            .and_then(|e| e.to_str())
                            .is_some_and(|e| exts.contains(&e))
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Capture extensions.
pub const CAPTURE_EXTS: &[&str] = &["pcap", "pcapng", "cap", "gz"];

/// Builds classic pcap bytes.
pub struct Pcap {
    pub buf: Vec<u8>,
    be: bool,
    nanos: bool,
}

impl Pcap {
    pub fn new(be: bool, nanos: bool, link: u32, snaplen: u32) -> Pcap {
        let mut p = Pcap {
            buf: Vec::new(),
            be,
            nanos,
        };
        p.u32(if nanos { 0xa1b2_3c4d } else { 0xa1b2_c3d4 });
        p.u16(2);
        p.u16(4);
        p.u32(0);
        p.u32(0);
        p.u32(snaplen);
        p.u32(link);
        p
    }

    pub fn u16(&mut self, v: u16) {
        self.buf.extend_from_slice(&if self.be {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        });
    }

    pub fn u32(&mut self, v: u32) {
        self.buf.extend_from_slice(&if self.be {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        });
    }

    /// A record; `ts_ns` is cut to the file's resolution.
    pub fn packet(&mut self, ts_ns: u64, data: &[u8], orig_len: u32) -> &mut Pcap {
        self.u32((ts_ns / 1_000_000_000) as u32);
        let frac = (ts_ns % 1_000_000_000) as u32;
        self.u32(if self.nanos { frac } else { frac / 1000 });
        self.u32(data.len() as u32);
        self.u32(orig_len);
        self.buf.extend_from_slice(data);
        self
    }
}

/// Builds pcapng bytes, one block at a time, in the byte order of the current section.
#[derive(Default)]
pub struct Ng {
    pub buf: Vec<u8>,
    be: bool,
}

pub const EPB: u32 = 6;
pub const SPB: u32 = 3;
pub const PB: u32 = 2;
pub const NRB: u32 = 4;
pub const ISB: u32 = 5;
pub const DSB: u32 = 0x0a;
pub const CUSTOM: u32 = 0x0bad;

impl Ng {
    pub fn new() -> Ng {
        Ng::default()
    }

    fn b16(&self, v: u16) -> [u8; 2] {
        if self.be {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    }

    fn b32(&self, v: u32) -> [u8; 4] {
        if self.be {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    }

    /// Any block: type, total length, body padded to 4, total length.
    pub fn block(&mut self, block_type: u32, body: &[u8]) -> &mut Ng {
        let padded = body.len().next_multiple_of(4);
        let len = (12 + padded) as u32;
        let (t, l) = (self.b32(block_type), self.b32(len));
        self.buf.extend_from_slice(&t);
        self.buf.extend_from_slice(&l);
        self.buf.extend_from_slice(body);
        self.buf.resize(self.buf.len() + padded - body.len(), 0);
        self.buf.extend_from_slice(&l);
        self
    }

    /// A section header; starts a new section in the given byte order.
    pub fn shb(&mut self, be: bool) -> &mut Ng {
        self.be = be;
        let mut body = Vec::new();
        body.extend_from_slice(&self.b32(0x1a2b_3c4d));
        body.extend_from_slice(&self.b16(1));
        body.extend_from_slice(&self.b16(0));
        body.extend_from_slice(&(-1i64).to_le_bytes());
        // An shb_userappl option, to check options are passed over.
        body.extend_from_slice(&self.b16(4));
        body.extend_from_slice(&self.b16(9));
        body.extend_from_slice(b"flowbundl\0\0\0");
        body.extend_from_slice(&[0; 4]);
        self.block(0x0a0d_0d0a, &body)
    }

    /// An interface description with optional `if_tsresol`, `if_tsoffset` and `if_fcslen`.
    pub fn idb(
        &mut self,
        link: u16,
        snaplen: u32,
        tsresol: Option<u8>,
        tsoffset: Option<i64>,
        fcslen: Option<u8>,
    ) -> &mut Ng {
        let mut body = Vec::new();
        body.extend_from_slice(&self.b16(link));
        body.extend_from_slice(&self.b16(0));
        body.extend_from_slice(&self.b32(snaplen));
        // if_name first, so the options we read are not the first ones.
        body.extend_from_slice(&self.b16(2));
        body.extend_from_slice(&self.b16(4));
        body.extend_from_slice(b"eth0");
        if let Some(r) = tsresol {
            body.extend_from_slice(&self.b16(9));
            body.extend_from_slice(&self.b16(1));
            body.extend_from_slice(&[r, 0, 0, 0]);
        }
        if let Some(f) = fcslen {
            body.extend_from_slice(&self.b16(13));
            body.extend_from_slice(&self.b16(1));
            body.extend_from_slice(&[f, 0, 0, 0]);
        }
        if let Some(o) = tsoffset {
            body.extend_from_slice(&self.b16(14));
            body.extend_from_slice(&self.b16(8));
            body.extend_from_slice(&if self.be {
                o.to_be_bytes()
            } else {
                o.to_le_bytes()
            });
        }
        body.extend_from_slice(&[0; 4]);
        self.block(1, &body)
    }

    /// An Enhanced Packet Block with a comment option (options must be passed over without allocation).
    pub fn epb(&mut self, if_id: u32, ticks: u64, data: &[u8], orig_len: u32) -> &mut Ng {
        let mut body = Vec::new();
        body.extend_from_slice(&self.b32(if_id));
        body.extend_from_slice(&self.b32((ticks >> 32) as u32));
        body.extend_from_slice(&self.b32(ticks as u32));
        body.extend_from_slice(&self.b32(data.len() as u32));
        body.extend_from_slice(&self.b32(orig_len));
        body.extend_from_slice(data);
        body.resize(body.len().next_multiple_of(4), 0);
        body.extend_from_slice(&self.b16(1));
        body.extend_from_slice(&self.b16(5));
        body.extend_from_slice(b"hello\0\0\0");
        body.extend_from_slice(&[0; 4]);
        self.block(EPB, &body)
    }

    /// An obsolete Packet Block.
    pub fn pb(&mut self, if_id: u16, ticks: u64, data: &[u8], orig_len: u32) -> &mut Ng {
        let mut body = Vec::new();
        body.extend_from_slice(&self.b16(if_id));
        body.extend_from_slice(&self.b16(0));
        body.extend_from_slice(&self.b32((ticks >> 32) as u32));
        body.extend_from_slice(&self.b32(ticks as u32));
        body.extend_from_slice(&self.b32(data.len() as u32));
        body.extend_from_slice(&self.b32(orig_len));
        body.extend_from_slice(data);
        self.block(PB, &body)
    }

    /// A Simple Packet Block (interface 0, no timestamp).
    pub fn spb(&mut self, data: &[u8], orig_len: u32) -> &mut Ng {
        let mut body = Vec::new();
        body.extend_from_slice(&self.b32(orig_len));
        body.extend_from_slice(data);
        self.block(SPB, &body)
    }
}
