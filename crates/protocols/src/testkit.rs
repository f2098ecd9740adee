//! Test helpers for the protocol detectors: build a [`ProbeCtx`] around real payload bytes, run a parser.

use crate::{AppEvent, Direction, Parser, ProbeCtx, Transport};

/// A TCP probe context whose stream prefix is `data` itself (the first payload of its direction).
pub(crate) fn ctx_tcp(dir: Direction, data: &[u8]) -> ProbeCtx<'_> {
    ctx(Transport::Tcp, dir, data, &[])
}

/// A UDP probe context for one datagram, with the previous datagram of its direction in `prev`.
pub(crate) fn ctx_udp<'a>(dir: Direction, data: &'a [u8], prev: &'a [u8]) -> ProbeCtx<'a> {
    ctx(Transport::Udp, dir, data, prev)
}

/// A probe context with ports 40000 (client) and 0 (server): detectors must not rely on ports unless told.
pub(crate) fn ctx<'a>(
    transport: Transport,
    dir: Direction,
    data: &'a [u8],
    prev: &'a [u8],
) -> ProbeCtx<'a> {
    ProbeCtx {
        transport,
        client_port: 40000,
        server_port: 0,
        dir,
        payload_index: 0,
        dir_index: 0,
        prefix: data,
        data,
        prev,
        peer: &[],
    }
}

/// Same as [`ctx`] with explicit ports.
pub(crate) fn ctx_ports<'a>(
    transport: Transport,
    dir: Direction,
    data: &'a [u8],
    client_port: u16,
    server_port: u16,
) -> ProbeCtx<'a> {
    ProbeCtx {
        client_port,
        server_port,
        ..ctx(transport, dir, data, &[])
    }
}

/// Feeds `chunks` to `parser` in order, then `finish`, and returns the events.
pub(crate) fn run_parser(parser: &mut dyn Parser, chunks: &[(Direction, &[u8])]) -> Vec<AppEvent> {
    let mut out: Vec<AppEvent> = Vec::new();
    for (i, (dir, data)) in chunks.iter().enumerate() {
        parser.parse(*dir, data, i as u64, &mut out);
    }
    parser.finish(&mut out);
    out
}
