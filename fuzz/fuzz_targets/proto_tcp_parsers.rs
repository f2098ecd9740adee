//! Arbitrary chunk sequences into every built-in protocol's TCP parser (each keeps state across payloads: SSH's version
//! exchange, FTP's control lines, ...): no panic, no unbounded growth. Same entry points as
//! `crates/protocols/tests/no_panic_extra.rs` (`registry::builtin_detectors()` and each detector's `parser`).
//!
//! Input: a sequence of `[flags][len][len bytes]` records; bit 0 of `flags` is the direction, bit 1 asks for a
//! reassembly gap after the chunk.
#![no_main]

use flowbundle_protocols::{AppEvent, AppProto, Direction, Limits, Transport};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // HASSH on: the SSH parser reads the binary packets after the banners too.
    let limits = Limits {
        ssh_hassh: true,
        ..Limits::default()
    };
    let dets = flowbundle_protocols::registry::builtin_detectors();
    for det in &dets {
        let Some(mut parser) = det.parser(Transport::Tcp, &limits) else {
            continue;
        };
        let mut out: Vec<AppEvent> = Vec::new();
        let mut rest = data;
        let mut i = 0u64;
        while let [flags, len, tail @ ..] = rest {
            let n = usize::from(*len).min(tail.len());
            let dir = if flags & 1 == 0 {
                Direction::ToServer
            } else {
                Direction::ToClient
            };
            parser.parse(dir, &tail[..n], i, &mut out);
            if flags & 2 != 0 {
                parser.gap(dir, u64::from(*len));
            }
            rest = &tail[n..];
            i += 1;
        }
        parser.finish(&mut out);
        // Line-based parsers give at most one event per line; files (SMB's, framed by length) are bounded by
        // the messages that open them, so they are left out of this count. The parsers framed by length give at
        // most one event per frame: HTTP/2 one transaction per stream, a stream needing a frame of at least its
        // 9-byte header; DNS over TCP (and mDNS, LLMNR) one per message, at least a 2-byte length and a 12-byte
        // header; Kerberos one per record; DCE/RPC one transaction record per PDU, a PDU at least its 16-byte header;
        // SMB at most 16 transaction records per message (an SMB1 AndX chain of 8 commands), a message at least its
        // 4-byte frame and 32-byte header.
        let events = out
            .iter()
            .filter(|e| !matches!(e, AppEvent::Fileinfo(_)))
            .count();
        let bound = match det.proto() {
            AppProto::Http2 => data.len() / 9,
            AppProto::Dns | AppProto::Mdns | AppProto::Llmnr => data.len() / 14,
            // Kerberos: one event per record, a 4-byte marker and a message of well over 6 bytes.
            AppProto::Kerberos => data.len() / 10,
            AppProto::Dcerpc => data.len() / 16,
            AppProto::Smb | AppProto::Smbv1 => data.len() * 16 / 36,
            _ => data.iter().filter(|&&b| b == b'\n').count(),
        };
        assert!(events <= bound + 1, "more events than lines or frames");
    }
});
