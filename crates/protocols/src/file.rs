//! Files the parsers carry (HTTP bodies, mail attachments, FTP data connections, ...): one record type shared by
//! every carrier, Suricata's file container reduced to what the rules and EVE `fileinfo` need.
//!
//! A carrier opens a [`FileRecord`] when a file starts (with its name as the protocol gives it), feeds it every
//! byte of the file as it arrives ([`FileRecord::data`], or [`FileRecord::count`] where the carrier keeps the
//! inspected bytes itself), reports lost bytes ([`FileRecord::gap`]) and closes it once
//! ([`FileRecord::close`]): that hands the file to the rules ([`EventSink::file`]: `file.data`, `file.name`,
//! `file.magic`, `filesize`, `filemd5`/`filesha1`/`filesha256`) and writes its EVE `fileinfo` record.
//!
//! **Hashes are streamed over the whole file**, not only the bytes kept for inspection, and only the ones asked
//! for ([`Limits::file_hashes`]: the rules that use them, or the configuration's `force-hash`): a file whose bytes
//! were not all seen (a capture gap, a body whose decompression stopped at the inspection cap) has none, so a
//! hash is never computed over part of a file.
//!
//! **Magic** is read from the first bytes ([`magic::describe`]), as libmagic reads a buffer.
//!
//! Bounds: a record keeps at most its cap of bytes (the carrier's inspection cap), its name at most
//! [`MAX_NAME`] bytes; the hash states are about 400 bytes, allocated only when hashes are asked for.

pub mod magic;

use md5::Digest as _;

use crate::{AppEvent, AppProto, EventSink, FileData, FileInfo, Limits};

/// Longest file name kept (longer names are cut; Suricata cuts MIME file names at 255 bytes too).
pub const MAX_NAME: usize = 1024;

/// Which hashes of each file are computed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FileHashes {
    pub md5: bool,
    pub sha1: bool,
    pub sha256: bool,
}

impl FileHashes {
    /// Whether any hash is asked for.
    pub fn any(self) -> bool {
        self.md5 || self.sha1 || self.sha256
    }

    /// Both selections.
    pub fn union(self, o: FileHashes) -> FileHashes {
        FileHashes {
            md5: self.md5 || o.md5,
            sha1: self.sha1 || o.sha1,
            sha256: self.sha256 || o.sha256,
        }
    }
}

/// What every file gets beyond its bytes: which hashes, and whether EVE logs its magic.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FileOptions {
    pub hashes: FileHashes,
    pub log_magic: bool,
}

impl Limits {
    /// The file options of [`Limits::file_hashes`] and [`Limits::file_magic`].
    pub fn file_options(&self) -> FileOptions {
        FileOptions {
            hashes: self.file_hashes,
            log_magic: self.file_magic,
        }
    }
}

/// The digests of a whole file, those that were asked for and could be computed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Digests {
    pub md5: Option<[u8; 16]>,
    pub sha1: Option<[u8; 20]>,
    pub sha256: Option<[u8; 32]>,
}

#[derive(Clone, Default)]
struct Hashing {
    md5: Option<md5::Md5>,
    sha1: Option<sha1::Sha1>,
    sha256: Option<sha2::Sha256>,
}

impl Hashing {
    fn new(h: FileHashes) -> Self {
        Hashing {
            md5: h.md5.then(md5::Md5::new),
            sha1: h.sha1.then(sha1::Sha1::new),
            sha256: h.sha256.then(sha2::Sha256::new),
        }
    }

    fn update(&mut self, bytes: &[u8]) {
        if let Some(h) = &mut self.md5 {
            h.update(bytes);
        }
        if let Some(h) = &mut self.sha1 {
            h.update(bytes);
        }
        if let Some(h) = &mut self.sha256 {
            h.update(bytes);
        }
    }

    fn finish(self) -> Digests {
        Digests {
            md5: self.md5.map(|h| h.finalize().into()),
            sha1: self.sha1.map(|h| h.finalize().into()),
            sha256: self.sha256.map(|h| h.finalize().into()),
        }
    }
}

/// How a file ended and where it belongs, given when it is closed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileEnd {
    /// The protocol that carried it (its parser's).
    pub proto: AppProto,
    /// The transaction (per flow, 0-based) it belongs to.
    pub tx_id: u64,
    /// Whether it travelled to the server.
    pub to_server: bool,
    /// It ended as its protocol says a file ends (Suricata's `CLOSED`); otherwise the flow or the message was cut
    /// first (`TRUNCATED`).
    pub complete: bool,
}

/// One file of one transaction while it is carried (see the module documentation).
#[derive(Clone)]
pub struct FileRecord {
    name: Vec<u8>,
    kept: Vec<u8>,
    cap: usize,
    size: u64,
    gaps: bool,
    /// Some bytes were not hashed (a gap, or the carrier could not see them): no digest is given.
    unhashed: bool,
    hashing: Option<Box<Hashing>>,
    log_magic: bool,
}

impl std::fmt::Debug for FileRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileRecord")
            .field("name", &String::from_utf8_lossy(&self.name))
            .field("kept", &self.kept.len())
            .field("size", &self.size)
            .field("gaps", &self.gaps)
            .finish()
    }
}

impl FileRecord {
    /// A file named `name` whose first `cap` bytes are kept for inspection, hashed as `opts` asks.
    pub fn new(name: &[u8], cap: usize, opts: FileOptions) -> Self {
        FileRecord {
            name: name[..name.len().min(MAX_NAME)].to_vec(),
            kept: Vec::new(),
            cap,
            size: 0,
            gaps: false,
            unhashed: false,
            hashing: opts
                .hashes
                .any()
                .then(|| Box::new(Hashing::new(opts.hashes))),
            log_magic: opts.log_magic,
        }
    }

    /// Bytes of the file, in order: counted, hashed, and kept up to the cap.
    pub fn data(&mut self, bytes: &[u8]) {
        self.count(bytes);
        let room = self.cap.saturating_sub(self.kept.len());
        self.kept.extend_from_slice(&bytes[..bytes.len().min(room)]);
    }

    /// Bytes of the file, in order, that the carrier keeps for inspection itself: counted and hashed only.
    pub fn count(&mut self, bytes: &[u8]) {
        self.size += bytes.len() as u64;
        if !self.unhashed
            && let Some(h) = &mut self.hashing
        {
            h.update(bytes);
        }
    }

    /// `len` bytes of the file were lost (a capture gap): counted, and the file has no hashes.
    pub fn gap(&mut self, len: u64) {
        self.size += len;
        self.gaps = true;
        self.unhashed = true;
    }

    /// `len` bytes of the file went by that the carrier neither kept nor hashed (past its inspection cap): counted,
    /// and the file has no hashes.
    pub fn skipped(&mut self, len: u64) {
        if len > 0 {
            self.size += len;
            self.unhashed = true;
        }
    }

    /// Bytes of the file went by that the carrier could not hand over (a body whose decompression stopped at
    /// the inspection cap): the file has no hashes.
    pub fn unhashable(&mut self) {
        self.unhashed = true;
    }

    /// Names (or renames) the file.
    pub fn set_name(&mut self, name: &[u8]) {
        self.name.clear();
        self.name
            .extend_from_slice(&name[..name.len().min(MAX_NAME)]);
    }

    /// The file's name so far.
    pub fn name(&self) -> &[u8] {
        &self.name
    }

    /// Bytes of the file seen so far (gaps included).
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The bytes kept so far (the file's first bytes, up to the cap).
    pub fn kept(&self) -> &[u8] {
        &self.kept
    }

    /// Whether bytes were lost to a gap.
    pub fn gaps(&self) -> bool {
        self.gaps
    }

    /// The file ended: hands it to the rules (with the bytes it kept) and writes its EVE `fileinfo`.
    pub fn close(mut self, end: FileEnd, out: &mut dyn EventSink) {
        let kept = std::mem::take(&mut self.kept);
        self.close_with(end, &kept, out);
    }

    /// The file ended: hands it to the rules with `data` as its inspected bytes (a carrier that kept them itself)
    /// and writes its EVE `fileinfo`.
    pub fn close_with(self, end: FileEnd, data: &[u8], out: &mut dyn EventSink) {
        let complete = end.complete && !self.gaps;
        // A file cut short has no hashes (as Suricata finalises them only for a file that closed).
        let digests = match self.hashing {
            Some(h) if complete && !self.unhashed => h.finish(),
            _ => Digests::default(),
        };
        let magic = magic::describe(data);
        out.file(&FileData {
            proto: end.proto,
            tx_id: end.tx_id,
            to_server: end.to_server,
            name: &self.name,
            data,
            size: self.size,
            complete,
            gaps: self.gaps,
            magic,
            digests,
        });
        out.event(AppEvent::Fileinfo(FileInfo {
            filename: String::from_utf8_lossy(&self.name).into_owned(),
            magic: magic.filter(|_| self.log_magic),
            gaps: self.gaps,
            state: if complete { "CLOSED" } else { "TRUNCATED" },
            md5: digests.md5.map(|d| hex(&d)),
            sha1: digests.sha1.map(|d| hex(&d)),
            sha256: digests.sha256.map(|d| hex(&d)),
            stored: false,
            size: self.size,
            tx_id: end.tx_id,
            to_client: !end.to_server,
        }));
    }
}

/// Lower-case hex, as EVE writes digests.
pub fn hex(bytes: &[u8]) -> String {
    const D: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        s.push(char::from(D[usize::from(b >> 4)]));
        s.push(char::from(D[usize::from(b & 15)]));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file as the rules get it: name, bytes, size, complete, digests, magic.
    type Seen = (Vec<u8>, Vec<u8>, u64, bool, Digests, Option<&'static str>);

    #[derive(Default)]
    struct Out {
        events: Vec<AppEvent>,
        files: Vec<Seen>,
    }

    impl EventSink for Out {
        fn event(&mut self, event: AppEvent) {
            self.events.push(event);
        }
        fn file(&mut self, f: &FileData<'_>) {
            self.files.push((
                f.name.to_vec(),
                f.data.to_vec(),
                f.size,
                f.complete,
                f.digests,
                f.magic,
            ));
        }
    }

    fn end(complete: bool) -> FileEnd {
        FileEnd {
            proto: AppProto::FtpData,
            tx_id: 3,
            to_server: true,
            complete,
        }
    }

    fn hashing() -> Limits {
        Limits {
            file_hashes: FileHashes {
                md5: true,
                sha1: true,
                sha256: true,
            },
            file_magic: true,
            ..Limits::default()
        }
    }

    #[test]
    fn hashes_cover_the_whole_file_past_the_inspection_cap() {
        let body: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        let mut f = FileRecord::new(b"a.bin", 100, hashing().file_options());
        for c in body.chunks(7) {
            f.data(c);
        }
        let mut out = Out::default();
        f.close(end(true), &mut out);
        let (name, kept, size, complete, d, _) = &out.files[0];
        assert_eq!(name, b"a.bin");
        assert_eq!(kept.as_slice(), &body[..100]);
        assert_eq!(*size, 10_000);
        assert!(*complete);
        assert_eq!(d.md5, Some(<[u8; 16]>::from(md5::Md5::digest(&body))));
        assert_eq!(d.sha1, Some(<[u8; 20]>::from(sha1::Sha1::digest(&body))));
        assert_eq!(
            d.sha256,
            Some(<[u8; 32]>::from(sha2::Sha256::digest(&body)))
        );
        let v = serde_json::to_value(&out.events[0]).unwrap();
        assert_eq!(v["fileinfo"]["md5"], hex(&md5::Md5::digest(&body)));
        assert_eq!(v["fileinfo"]["state"], "CLOSED");
        assert_eq!(v["fileinfo"]["size"], 10_000);
    }

    #[test]
    fn a_gap_truncates_the_file_and_drops_its_hashes() {
        let mut f = FileRecord::new(b"x", 100, hashing().file_options());
        f.data(b"MZ\x90\x00");
        f.gap(10);
        f.data(b"tail");
        let mut out = Out::default();
        f.close(end(true), &mut out);
        let (_, _, size, complete, d, magic) = &out.files[0];
        assert_eq!(*size, 18);
        assert!(!*complete);
        assert_eq!(*d, Digests::default());
        assert!(magic.is_some_and(|m| m.contains("MS-DOS")), "{magic:?}");
        let v = serde_json::to_value(&out.events[0]).unwrap();
        assert_eq!(v["fileinfo"]["state"], "TRUNCATED");
        assert_eq!(v["fileinfo"]["gaps"], true);
        assert!(v["fileinfo"].get("md5").is_none());
    }

    #[test]
    fn no_hashes_unless_asked() {
        let mut f = FileRecord::new(b"x", 16, FileOptions::default());
        f.data(b"%PDF-1.4 ...");
        let mut out = Out::default();
        f.close(end(false), &mut out);
        assert_eq!(out.files[0].4, Digests::default());
        assert_eq!(out.files[0].5, Some("PDF document"));
        let v = serde_json::to_value(&out.events[0]).unwrap();
        assert!(
            v["fileinfo"].get("magic").is_none(),
            "magic is logged only when asked"
        );
        assert!(v["fileinfo"].get("sha256").is_none());
    }
}
