//! Arbitrary FTP control sessions and data connections: the control parser's transfer commands
//! (`EventSink::ftp_transfer`) and the data connection's file (`ftp::data::FtpDataFile`) never panic, stay within
//! their caps, and a session or a file split into segments anywhere gives the same transfers and the same file as
//! in one piece. Same entry points as the unit tests of `crates/protocols/src/ftp/`.
//!
//! Input: `[stride][split][bytes]`: the first `split` bytes (modulo the length) are the client's control lines
//! after a `PASV` announcement, the rest the data connection's bytes, alternately in each direction at every
//! `stride`-th chunk.
#![no_main]

use flowbundle_protocols::ftp::data::{FtpDataFile, Transfer};
use flowbundle_protocols::ftp::{FtpParser, FtpTransfer};
use flowbundle_protocols::{AppEvent, Direction, EventSink, FileData, Parser};
use libfuzzer_sys::fuzz_target;

#[derive(Default)]
struct Out {
    transfers: Vec<(&'static str, Vec<u8>)>,
    files: Vec<(bool, Vec<u8>, u64)>,
    events: Vec<AppEvent>,
}

impl EventSink for Out {
    fn event(&mut self, event: AppEvent) {
        self.events.push(event);
    }
    fn ftp_transfer(&mut self, t: &FtpTransfer<'_>) {
        self.transfers.push((t.command, t.filename.to_vec()));
    }
    fn file(&mut self, f: &FileData<'_>) {
        self.files.push((f.to_server, f.data.to_vec(), f.size));
    }
}

const CAP: usize = 512;

fn control(lines: &[u8], stride: usize) -> Out {
    let mut p = FtpParser::default();
    let mut out = Out::default();
    p.parse(Direction::ToClient, b"220 hi\r\n", 0, &mut out);
    p.parse(Direction::ToServer, b"PASV\r\n", 0, &mut out);
    p.parse(
        Direction::ToClient,
        b"227 Entering Passive Mode (10,0,0,1,4,1).\r\n",
        0,
        &mut out,
    );
    for c in lines.chunks(stride.max(1)) {
        p.parse(Direction::ToServer, c, 0, &mut out);
    }
    out
}

fn data(bytes: &[u8], stride: usize, transfer: Option<&Transfer>) -> Out {
    // Every hash on, so the file record's hashing runs under the fuzzer too.
    let limits = flowbundle_protocols::Limits {
        ftp_data_file_cap: CAP,
        file_hashes: flowbundle_protocols::file::FileHashes {
            md5: true,
            sha1: true,
            sha256: true,
        },
        file_magic: true,
        ..flowbundle_protocols::Limits::default()
    };
    let mut f = FtpDataFile::new(&limits);
    for (i, c) in bytes.chunks(stride.max(1)).enumerate() {
        // The first chunk's direction carries the file; the rest of the first half too, then a reply.
        let dir = if i > 0 && c.first().is_some_and(|b| b & 1 == 1) {
            Direction::ToClient
        } else {
            Direction::ToServer
        };
        f.data(dir, c);
    }
    let mut out = Out::default();
    f.finish(transfer, true, &mut out);
    out
}

fuzz_target!(|input: &[u8]| {
    let [stride, split, rest @ ..] = input else {
        return;
    };
    let at = usize::from(*split).min(rest.len());
    let (lines, bytes) = rest.split_at(at);
    let whole = control(lines, usize::MAX);
    let parts = control(lines, usize::from(*stride) + 1);
    assert_eq!(
        whole.transfers, parts.transfers,
        "segments changed the transfers"
    );
    for (cmd, name) in &whole.transfers {
        assert!(["STOR", "RETR", "APPE", "STOU"].contains(cmd));
        assert!(name.len() <= flowbundle_protocols::ftp::MAX_LINE);
    }
    let transfer = whole.transfers.first().map(|&(command, ref n)| Transfer {
        command,
        filename: n.clone().into_boxed_slice(),
    });
    // One piece: the whole file to the server.
    let one = data(bytes, usize::MAX, transfer.as_ref());
    if let Some((to_server, kept, size)) = one.files.first() {
        assert!(*to_server);
        assert_eq!(*size, bytes.len() as u64);
        assert_eq!(&kept[..], &bytes[..bytes.len().min(CAP)]);
    } else {
        assert!(bytes.is_empty());
    }
    // Segments: the file is what the server-bound segments held, in order.
    let seg = data(bytes, usize::from(*stride) + 1, transfer.as_ref());
    for (_, kept, size) in &seg.files {
        assert!(kept.len() <= CAP && kept.len() as u64 <= *size);
    }
    assert!(seg.events.len() <= 2);
});
