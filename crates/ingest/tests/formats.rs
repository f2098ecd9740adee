//! Hand-made captures for the format features the real files do not all exercise: pcapng sections in both byte
//! orders, power-of-two resolutions and offsets, Simple and obsolete Packet Blocks, skipped and oversized blocks,
//! every error path, gzip detection, the trace builder and the writer.

mod common;

use std::io::{Cursor, Write};

use common::{CUSTOM, DSB, ISB, NRB, Ng, Pcap};
use flowbundle_ingest::testing::read_both;
use flowbundle_ingest::*;

fn stream(bytes: &[u8]) -> CaptureReader {
    CaptureReader::new(Cursor::new(bytes.to_vec())).expect("open")
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(bytes).unwrap();
    gz.finish().unwrap()
}

fn agree(bytes: &[u8]) -> testing::Agreement {
    read_both(bytes).unwrap_or_else(|e| panic!("readers disagree: {e}"))
}

#[test]
fn pcap_both_orders_both_resolutions() {
    for be in [false, true] {
        for nanos in [false, true] {
            let mut p = Pcap::new(be, nanos, 1, 65535);
            p.packet(1_700_000_000_123_456_789, &[1, 2, 3], 60).packet(
                1_700_000_001_000_000_001,
                &[4; 10],
                10,
            );
            let mut r = stream(&p.buf);
            assert_eq!(r.format().container, Container::Pcap);
            assert_eq!(
                r.format().byte_order,
                if be {
                    ByteOrder::Big
                } else {
                    ByteOrder::Little
                }
            );
            assert_eq!(
                r.interfaces()[0].resolution,
                if nanos {
                    TsResolution::NANO
                } else {
                    TsResolution::MICRO
                }
            );
            let a = r.next_packet().unwrap().unwrap();
            assert_eq!(
                a.ts_ns,
                if nanos {
                    1_700_000_000_123_456_789
                } else {
                    1_700_000_000_123_456_000
                }
            );
            assert_eq!(a.data, &[1, 2, 3]);
            assert_eq!(a.orig_len, 60);
            assert!(a.is_truncated());
            assert_eq!(a.link_type, LinkType::ETHERNET);
            let b = r.next_packet().unwrap().unwrap();
            assert_eq!(b.data, &[4; 10]);
            assert!(r.next_packet().unwrap().is_none());
            assert_eq!(r.stats().packets, 2);
            assert_eq!(r.stats().bytes, 13);
            assert_eq!(r.stats().wire_bytes, 70);
            assert_eq!(agree(&p.buf).packets, 2);
        }
    }
}

#[test]
fn pcap_truncated_final_record_is_counted_and_ends_cleanly() {
    let mut p = Pcap::new(false, false, 1, 65535);
    p.packet(1_000_000_000, &[9; 100], 100)
        .packet(2_000_000_000, &[8; 100], 100);
    for cut in [1, 10, 16, 17, 115] {
        let bytes = &p.buf[..p.buf.len() - cut];
        let mut r = stream(bytes);
        assert!(r.next_packet().unwrap().is_some());
        assert!(r.next_packet().unwrap().is_none(), "cut {cut}");
        assert_eq!(r.stats().truncated_records, 1);
        assert_eq!(r.stats().packets, 1);
        let t = Trace::from_vec(bytes.to_vec()).unwrap();
        assert_eq!(t.len(), 1);
        assert_eq!(t.stats().truncated_records, 1);
        agree(bytes);
    }
}

#[test]
fn pcap_absurd_caplen_is_an_error_not_an_allocation() {
    let mut p = Pcap::new(false, false, 1, 65535);
    p.packet(1, &[1], 1);
    // A record header claiming 2 GiB of captured bytes.
    p.u32(0);
    p.u32(0);
    p.u32(0x8000_0000);
    p.u32(0x8000_0000);
    let mut r = stream(&p.buf);
    assert!(r.next_packet().unwrap().is_some());
    match r.next_packet() {
        Err(Error::AbsurdLength {
            what, len, offset, ..
        }) => {
            assert_eq!(what, "captured length");
            assert_eq!(len, 0x8000_0000);
            assert_eq!(offset, 24 + 17);
        }
        other => panic!("{other:?}"),
    }
    // The reader is finished after an error.
    assert!(r.next_packet().unwrap().is_none());
    assert!(matches!(
        Trace::from_vec(p.buf.clone()),
        Err(Error::AbsurdLength { .. })
    ));
    let (t, e) = Trace::from_vec_partial(p.buf.clone()).unwrap();
    assert_eq!(t.len(), 1);
    assert!(matches!(e, Some(Error::AbsurdLength { .. })));
    agree(&p.buf);
}

#[test]
fn pcap_fcs_bits_are_masked_from_the_link_type() {
    let p = Pcap::new(false, false, 1 | 0x0400_0000 | (2 << 28), 65535);
    let r = stream(&p.buf);
    assert_eq!(r.interfaces()[0].link_type, LinkType::ETHERNET);
    assert_eq!(r.interfaces()[0].fcs_len, Some(4));
}

#[test]
fn empty_and_foreign_inputs_are_typed_errors() {
    assert!(matches!(
        CaptureReader::new(Cursor::new(Vec::new())),
        Err(Error::TruncatedHeader { got: 0, .. })
    ));
    assert!(matches!(
        Trace::from_vec(Vec::new()),
        Err(Error::TruncatedHeader { got: 0, .. })
    ));
    let e =
        CaptureReader::new(Cursor::new(b"snoop\0\0\0\0\0\0\x02\0\0\0\x04".to_vec())).unwrap_err();
    assert_eq!(
        e.to_string(),
        "not a pcap or pcapng capture: the first bytes are [73 6e 6f 6f 70 00 00 00] \
         (a Solaris snoop capture; convert it with `editcap -F pcap`)"
    );
    let e = CaptureReader::open("/nonexistent/flowbundle/x.pcap").unwrap_err();
    assert!(matches!(e, Error::File { .. }));
    assert!(
        e.to_string()
            .starts_with("/nonexistent/flowbundle/x.pcap: ")
    );
    let e = Trace::load("/nonexistent/flowbundle/x.pcap").unwrap_err();
    assert!(
        e.to_string()
            .starts_with("/nonexistent/flowbundle/x.pcap: ")
    );
}

#[test]
fn pcapng_sections_in_both_orders_with_global_interface_numbers() {
    let mut ng = Ng::new();
    ng.shb(false)
        .idb(1, 65535, None, None, None)
        .idb(113, 0, Some(9), None, None)
        .epb(1, 1_700_000_000_000_000_001, &[1, 2, 3, 4, 5], 5)
        .epb(0, 1_700_000_000_000_002, &[6; 7], 1514)
        .shb(true)
        .idb(228, 128, Some(0x80 | 10), Some(100), Some(4))
        .epb(0, 1024 * 3 + 512, &[0x45, 0, 0, 20], 20);
    let mut r = stream(&ng.buf);
    assert_eq!(r.format().container, Container::PcapNg);
    let a = r.next_packet().unwrap().unwrap();
    assert_eq!((a.interface, a.link_type), (1, LinkType::LINUX_SLL));
    assert_eq!(a.ts_ns, 1_700_000_000_000_000_001);
    assert_eq!(a.data, &[1, 2, 3, 4, 5]);
    let b = r.next_packet().unwrap().unwrap();
    assert_eq!((b.interface, b.link_type), (0, LinkType::ETHERNET));
    assert_eq!(b.ts_ns, 1_700_000_000_000_002_000);
    assert_eq!(b.orig_len, 1514);
    let c = r.next_packet().unwrap().unwrap();
    // Interface 0 of the second section is the third interface of the file.
    assert_eq!((c.interface, c.link_type), (2, LinkType::IPV4));
    // 2^-10 s ticks: 3.5 s, plus if_tsoffset 100 s.
    assert_eq!(c.ts_ns, 103_500_000_000);
    assert!(r.next_packet().unwrap().is_none());
    let ifs = r.interfaces();
    assert_eq!(ifs.len(), 3);
    assert_eq!(ifs[2].section, 1);
    assert_eq!(ifs[2].id_in_section, 0);
    assert_eq!(ifs[2].resolution, TsResolution::Binary(10));
    assert_eq!(ifs[2].ts_offset_s, 100);
    assert_eq!(ifs[2].fcs_len, Some(4));
    assert_eq!(ifs[2].snaplen, 128);
    assert_eq!(ifs[1].resolution, TsResolution::NANO);
    assert_eq!(r.stats().sections, 2);
    assert_eq!(agree(&ng.buf).packets, 3);
}

#[test]
fn pcapng_big_endian_first_section() {
    let mut ng = Ng::new();
    ng.shb(true)
        .idb(1, 0, None, Some(-5), None)
        .epb(0, 10_000_000, &[1], 1);
    let mut r = stream(&ng.buf);
    assert_eq!(r.format().byte_order, ByteOrder::Big);
    assert_eq!(r.next_packet().unwrap().unwrap().ts_ns, 5_000_000_000);
}

#[test]
fn simple_packet_blocks_take_the_previous_timestamp_and_the_snaplen() {
    let mut ng = Ng::new();
    ng.shb(false).idb(1, 4, None, None, None);
    ng.spb(&[1, 2, 3, 4], 60)
        .epb(0, 42, &[5, 6], 2)
        .spb(&[7, 8, 9, 10], 1500);
    let mut r = stream(&ng.buf);
    let a = r.next_packet().unwrap().unwrap();
    assert_eq!((a.ts_ns, a.data, a.orig_len), (0, &[1, 2, 3, 4][..], 60));
    let _ = r.next_packet().unwrap().unwrap();
    let c = r.next_packet().unwrap().unwrap();
    assert_eq!(
        (c.ts_ns, c.data, c.orig_len),
        (42_000, &[7, 8, 9, 10][..], 1500)
    );
    agree(&ng.buf);

    // A short SPB: the padding is not data.
    let mut ng = Ng::new();
    ng.shb(false).idb(1, 0, None, None, None).spb(&[1, 2, 3], 3);
    let mut r = stream(&ng.buf);
    assert_eq!(r.next_packet().unwrap().unwrap().data, &[1, 2, 3]);
}

#[test]
fn obsolete_packet_blocks_are_read() {
    let mut ng = Ng::new();
    ng.shb(true)
        .idb(101, 0, None, None, None)
        .pb(0, 7, &[0x60, 0, 0], 40);
    let mut r = stream(&ng.buf);
    let p = r.next_packet().unwrap().unwrap();
    assert_eq!(
        (p.ts_ns, p.link_type, p.data.len(), p.orig_len),
        (7_000, LinkType::RAW, 3, 40)
    );
}

#[test]
fn other_blocks_are_skipped_and_counted_by_kind() {
    let mut ng = Ng::new();
    ng.shb(false)
        .block(NRB, &[0; 8])
        .idb(1, 0, None, None, None)
        .block(ISB, &[0; 12])
        .block(DSB, &[0; 16])
        .block(CUSTOM, &[1, 2, 3, 4, 5])
        .block(0x4000_0bad, &[1, 2, 3, 4])
        .block(9, b"journal!")
        .block(0x8000_0001, &[0; 4])
        .epb(0, 1, &[1], 1);
    let mut r = stream(&ng.buf);
    assert!(r.next_packet().unwrap().is_some());
    assert!(r.next_packet().unwrap().is_none());
    let s = r.stats().skipped;
    assert_eq!(
        (
            s.name_resolution,
            s.interface_statistics,
            s.decryption_secrets,
            s.custom,
            s.systemd_journal,
            s.other
        ),
        (1, 1, 1, 2, 1, 1)
    );
    assert_eq!(s.total(), 7);
    agree(&ng.buf);
}

#[test]
fn oversized_blocks_are_skipped_unread_but_oversized_packets_are_errors() {
    let big = vec![0xabu8; MAX_BLOCK_LEN as usize + 100];
    let mut ng = Ng::new();
    ng.shb(false)
        .idb(1, 0, None, None, None)
        .block(CUSTOM, &big)
        .epb(0, 1, &[1, 2], 2);
    let mut r = stream(&ng.buf);
    let p = r.next_packet().unwrap().unwrap();
    assert_eq!(p.data, &[1, 2]);
    assert_eq!(r.stats().oversized_skipped, 1);
    assert_eq!(r.stats().skipped.custom, 1);
    agree(&ng.buf);

    // The same block cut by the end of the file.
    let cut = &ng.buf[..ng.buf.len() - 100 - 48];
    let mut r = stream(cut);
    assert!(r.next_packet().unwrap().is_none());
    assert_eq!(r.stats().truncated_records, 1);
    agree(cut);

    let mut ng = Ng::new();
    ng.shb(false)
        .idb(1, 0, None, None, None)
        .block(common::EPB, &big);
    let mut r = stream(&ng.buf);
    assert!(matches!(
        r.next_packet(),
        Err(Error::AbsurdLength {
            what: "pcapng block length",
            ..
        })
    ));
    agree(&ng.buf);
}

#[test]
fn pcapng_structural_errors() {
    // Packet on an undeclared interface.
    let mut ng = Ng::new();
    ng.shb(false).idb(1, 0, None, None, None).epb(3, 1, &[1], 1);
    let mut r = stream(&ng.buf);
    match r.next_packet() {
        Err(Error::UnknownInterface { id, declared, .. }) => assert_eq!((id, declared), (3, 1)),
        other => panic!("{other:?}"),
    }
    agree(&ng.buf);

    // Interfaces of an earlier section are not visible in the next one.
    let mut ng = Ng::new();
    ng.shb(false)
        .idb(1, 0, None, None, None)
        .shb(false)
        .spb(&[1], 1);
    assert!(matches!(
        stream(&ng.buf).next_packet(),
        Err(Error::UnknownInterface {
            id: 0,
            declared: 0,
            ..
        })
    ));

    // Trailing length differs from the leading one.
    let mut ng = Ng::new();
    ng.shb(false).idb(1, 0, None, None, None);
    let n = ng.buf.len();
    ng.buf[n - 4] ^= 4;
    assert!(matches!(
        stream(&ng.buf).next_packet(),
        Err(Error::Malformed { .. })
    ));
    agree(&ng.buf);

    // Block length not a multiple of 4, and below the minimum.
    for bad in [30u32, 8] {
        let mut ng = Ng::new();
        ng.shb(false);
        ng.buf.extend_from_slice(&1u32.to_le_bytes());
        ng.buf.extend_from_slice(&bad.to_le_bytes());
        ng.buf.extend_from_slice(&[0; 40]);
        assert!(matches!(
            stream(&ng.buf).next_packet(),
            Err(Error::Malformed { offset, .. }) if offset == 48
        ));
        agree(&ng.buf);
    }

    // A section header of version 2.
    let mut ng = Ng::new();
    ng.shb(false);
    ng.buf[12] = 2;
    assert!(matches!(
        stream(&ng.buf).next_packet(),
        Err(Error::UnsupportedVersion { major: 2, .. })
    ));

    // An if_tsresol of 10^-20 s.
    let mut ng = Ng::new();
    ng.shb(false).idb(1, 0, Some(20), None, None);
    assert!(matches!(
        stream(&ng.buf).next_packet(),
        Err(Error::BadTsResolution(20))
    ));

    // Cut inside the first section header: no capture at all.
    let mut ng = Ng::new();
    ng.shb(false);
    let cut = &ng.buf[..20];
    assert!(matches!(
        stream(cut).next_packet(),
        Err(Error::TruncatedHeader { .. })
    ));
    assert!(matches!(
        Trace::from_vec(cut.to_vec()),
        Err(Error::TruncatedHeader { .. })
    ));
    agree(cut);
}

#[test]
fn pcapng_truncated_final_block_is_counted() {
    let mut ng = Ng::new();
    ng.shb(false)
        .idb(1, 0, None, None, None)
        .epb(0, 1, &[1; 50], 50)
        .epb(0, 2, &[2; 50], 50);
    for cut in [1, 4, 30, 80] {
        let bytes = &ng.buf[..ng.buf.len() - cut];
        let mut r = stream(bytes);
        assert!(r.next_packet().unwrap().is_some());
        assert!(r.next_packet().unwrap().is_none());
        assert_eq!(r.stats().truncated_records, 1, "cut {cut}");
        agree(bytes);
    }
}

#[test]
fn gzip_is_detected_by_content_whatever_the_name() {
    let mut ng = Ng::new();
    ng.shb(false)
        .idb(1, 0, None, None, None)
        .epb(0, 1, &[1, 2, 3], 3);
    let gz = gzip(&ng.buf);
    let dir = tempfile::tempdir().unwrap();
    // Named like a plain capture.
    let path = dir.path().join("looks-plain.pcapng");
    std::fs::write(&path, &gz).unwrap();
    let mut r = CaptureReader::open(&path).unwrap();
    assert!(r.format().gzip);
    assert_eq!(r.next_packet().unwrap().unwrap().data, &[1, 2, 3]);
    let t = Trace::load(&path).unwrap();
    assert_eq!(t.get(0).data, &[1, 2, 3]);
    assert!(t.format().unwrap().gzip);
    agree(&gz);

    // Concatenated gzip members are one stream (as `cat a.gz b.gz` and zcat agree).
    let mut two = gzip(&ng.buf[..40]);
    two.extend_from_slice(&gzip(&ng.buf[40..]));
    assert_eq!(agree(&two).packets, 1);

    // A gzip stream cut short: the packets before the damage, then a typed error.
    let mut p = Pcap::new(false, true, 1, 0);
    for i in 0..2000u32 {
        p.packet(u64::from(i), &i.to_le_bytes().repeat(40), 160);
    }
    let gz = gzip(&p.buf);
    let cut = &gz[..gz.len() / 2];
    let mut r = stream(cut);
    let mut n = 0;
    let end = loop {
        match r.next_packet() {
            Ok(Some(_)) => n += 1,
            Ok(None) => break None,
            Err(e) => break Some(e),
        }
    };
    assert!(n > 0);
    assert!(matches!(end, Some(Error::Decompress { .. })), "{end:?}");
    read_both(cut).unwrap();
}

#[test]
fn trace_api_and_builder() {
    let mut b = TraceBuilder::new();
    assert_eq!(b.push(30, LinkType::ETHERNET, &[1; 60], 60), 0);
    assert_eq!(b.push(10, LinkType::RAW, &[0x45; 40], 1500), 1);
    assert_eq!(b.push(50, LinkType::ETHERNET, &[], 0), 2);
    let t = b.build();
    assert_eq!(t.len(), 3);
    assert_eq!(t.bytes(), 100);
    assert_eq!(t.duration_ns(), 40);
    assert_eq!((t.first_ts_ns(), t.last_ts_ns()), (30, 50));
    assert_eq!(t.get(1).link_type, LinkType::RAW);
    assert_eq!(t.get(1).interface, 1);
    assert_eq!(t.get(2).interface, 0);
    assert_eq!(t.get(2).data, &[] as &[u8]);
    assert!(t.try_get(3).is_none());
    assert_eq!(
        t.iter().rev().map(|r| r.ts_ns).collect::<Vec<_>>(),
        [50, 10, 30]
    );
    assert_eq!(t.range(1..9).len(), 2);
    assert_eq!(t.interfaces().len(), 2);
    assert!(t.format().is_none());
    assert_eq!(t.stats().packets, 3);
    assert_eq!(TraceBuilder::new().build().duration_ns(), 0);
}

#[test]
fn writer_round_trip_both_precisions_and_gzip_files() {
    let dir = tempfile::tempdir().unwrap();
    for (name, precision) in [
        ("a.pcap", PcapPrecision::Nano),
        ("b.pcap.gz", PcapPrecision::Micro),
    ] {
        let path = dir.path().join(name);
        let mut w = PcapWriter::create(
            &path,
            WriterOptions::new(LinkType::LINUX_SLL2).precision(precision),
        )
        .unwrap();
        w.write_packet(1_600_000_000_987_654_321, &[7; 100], 120)
            .unwrap();
        let rec = PacketRecord {
            ts_ns: 5,
            orig_len: 1,
            interface: 0,
            link_type: LinkType::LINUX_SLL2,
            data: &[1, 2],
        };
        w.write(&rec).unwrap();
        assert!(matches!(
            w.write(&PacketRecord {
                link_type: LinkType::ETHERNET,
                ..rec
            }),
            Err(Error::Unwritable(_))
        ));
        assert!(matches!(
            w.write_packet(u64::MAX, &[1], 1),
            Err(Error::Unwritable(_))
        ));
        assert_eq!(w.packets(), 2);
        w.close().unwrap();
        let mut r = CaptureReader::open(&path).unwrap();
        assert_eq!(r.format().gzip, name.ends_with(".gz"));
        let a = r.next_packet().unwrap().unwrap();
        let want = match precision {
            PcapPrecision::Nano => 1_600_000_000_987_654_321,
            PcapPrecision::Micro => 1_600_000_000_987_654_000,
        };
        assert_eq!(
            (a.ts_ns, a.data.len(), a.orig_len, a.link_type),
            (want, 100, 120, LinkType::LINUX_SLL2)
        );
        let b = r.next_packet().unwrap().unwrap();
        // orig_len is raised to the captured length.
        assert_eq!((b.data, b.orig_len), (&[1, 2][..], 2));
        assert!(r.next_packet().unwrap().is_none());
    }

    // Snaplen cuts the data.
    let mut w = PcapWriter::new(
        Vec::new(),
        WriterOptions::new(LinkType::ETHERNET).snaplen(4),
    )
    .unwrap();
    w.write_packet(0, &[1, 2, 3, 4, 5, 6], 6).unwrap();
    let bytes = w.finish().unwrap();
    let mut r = stream(&bytes);
    let p = r.next_packet().unwrap().unwrap();
    assert_eq!((p.data, p.orig_len), (&[1, 2, 3, 4][..], 6));
    assert_eq!(r.interfaces()[0].snaplen, 4);
}

#[test]
fn writer_errors_name_the_path() {
    let e = PcapWriter::create("/nonexistent/flowbundle/out.pcap", WriterOptions::default())
        .unwrap_err();
    assert!(
        e.to_string()
            .starts_with("/nonexistent/flowbundle/out.pcap: ")
    );
}

/// Found by the `ingest_reader` fuzz target: a gzip stream whose first 24 decompressed bytes are fine and whose data
/// turns corrupt right after. flate2 drops the output of a call that hits corrupt data, so the preloaded reader,
/// decompressing in larger reads, once saw the damage at byte 0 while the streaming reader saw an unknown magic.
/// Both now open gzip input through the same function.
#[test]
fn fuzz_regression_gzip_damaged_right_after_the_head() {
    let bytes: &[u8] = &[
        0x1f, 0x8b, 0x08, 0x08, 0x35, 0x43, 0x02, 0x6b, 0x00, 0x03, 0x30, 0x36, 0x37, 0x61, 0x34,
        0x65, 0x61, 0x33, 0x35, 0x66, 0x39, 0x32, 0x61, 0x61, 0x38, 0x38, 0x34, 0x33, 0x39, 0x31,
        0x63, 0x32, 0x61, 0x35, 0x38, 0xd4, 0xd4, 0xd4, 0xd4, 0xd4, 0xd4, 0xd4, 0xd4, 0xd4, 0xd4,
        0xd4, 0xd4, 0xd4, 0xd4, 0x41, 0xd4, 0xd4, 0xd4, 0xd4, 0xd4, 0xd4, 0xd4, 0xd4, 0xd4, 0xd4,
        0xd4, 0xd4, 0xd4, 0xd4, 0xd4, 0xd4, 0xd4, 0xd4, 0xd4, 0xd4, 0xd4, 0xd4, 0xd4, 0xd4, 0xd4,
        0xd4, 0xd4, 0xd4, 0xd4, 0xd4, 0x32, 0x30, 0x34, 0x30, 0x32, 0x62, 0x61, 0x38, 0x33, 0x64,
        0x36, 0x36, 0x00, 0x73, 0xe4, 0x7a, 0xc9, 0x30, 0x34, 0x30, 0x32, 0x62, 0x61, 0x38, 0x33,
        0x64, 0x36, 0x36, 0x00, 0x73, 0xe4, 0x7a, 0xc9, 0xf5, 0x12, 0x00, 0xf9, 0x3f, 0x06, 0x49,
        0x05, 0x00, 0x00, 0x00,
    ];
    let a = read_both(bytes).unwrap_or_else(|e| panic!("{e}"));
    assert!(a.error.unwrap().starts_with("not a pcap or pcapng capture"));
}

/// Found by the `ingest_reader` fuzz target: a gzip stream that turns corrupt inside a pcapng block. The streaming
/// reader, reading a large chunk, lost that chunk's output with the error and reported the gzip damage at byte 24;
/// the preloaded reader got the bytes up to the damage and first met a malformed block at byte 796. Both report an
/// error, which is what can be promised for damaged gzip data.
#[test]
fn fuzz_regression_gzip_damage_noticed_at_different_places() {
    let bytes: &[u8] = &[
        0x1f, 0x8b, 0x08, 0x08, 0x03, 0x44, 0x02, 0x6b, 0x00, 0x30, 0x03, 0x30, 0x65, 0x37, 0x64,
        0x61, 0x64, 0x66, 0x35, 0x61, 0x62, 0x64, 0x30, 0x66, 0x38, 0x31, 0x33, 0x30, 0x66, 0x33,
        0x33, 0x62, 0x37, 0x61, 0x38, 0x61, 0x63, 0x37, 0x31, 0x33, 0x66, 0x66, 0x35, 0x38, 0x63,
        0x61, 0x61, 0x61, 0x32, 0x37, 0x00, 0xe3, 0xe2, 0xe5, 0xe5, 0xf2, 0x60, 0x60, 0x60, 0xf0,
        0xb5, 0xd1, 0x96, 0x62, 0x04, 0xd2, 0xff, 0xa1, 0x80, 0x99, 0x41, 0x8c, 0xc1, 0x27, 0x33,
        0x0f, 0x24, 0x04, 0x04, 0x8c, 0xba, 0xa6, 0xe6, 0xba, 0xe9, 0xa9, 0x79, 0xa9, 0x45, 0x99,
        0xc9, 0x0c, 0x0c, 0x2c, 0x0c, 0x1c, 0x0c, 0xb9, 0xa9, 0x45, 0xe9, 0xa9, 0xc9, 0x89, 0x05,
        0x20, 0x59, 0x90, 0x7e, 0xa0, 0x42, 0x01, 0x11, 0x08, 0x0d, 0x34, 0x83, 0x81, 0x01, 0xc4,
        0x56, 0x64, 0x80, 0xd0, 0x50, 0xb1, 0x1b, 0x30, 0x36, 0x98, 0x66, 0x41, 0xa8, 0x63, 0x44,
        0x55, 0x47, 0x58, 0x8c, 0x89, 0x24, 0xbd, 0x8c, 0x20, 0x36, 0x1b, 0x03, 0x03, 0x16, 0x7f,
        0x46, 0xc3, 0xfc, 0x59, 0x5a, 0xa1, 0x60, 0xa2, 0x67, 0xa2, 0x67, 0x40, 0x96, 0x3f, 0x61,
        0xf6, 0x31, 0x63, 0x73, 0x03, 0x25, 0xfe, 0x44, 0x09, 0x37, 0x4d, 0x5a, 0xda, 0x41, 0x85,
        0xb0, 0xfc, 0x4f, 0x95, 0xb0, 0xa4, 0x59, 0x9a, 0xa1, 0xc4, 0x9f, 0xc7, 0xa1, 0xb2, 0x3c,
        0x4d, 0xa7, 0x99, 0xd1, 0x74, 0x34, 0x18, 0xd3, 0x11, 0x0d, 0xfc, 0x39, 0x78, 0xcb, 0x1e,
        0xa6, 0xd1, 0xb0, 0xa4, 0x5a, 0x58, 0x27, 0xbd, 0x74, 0x49, 0x7c, 0xfe, 0x63, 0x64, 0x24,
        0xdb, 0x4f, 0x19, 0x03, 0xef, 0xcf, 0x21, 0x90, 0x66, 0x06, 0x41, 0x1c, 0xd3, 0x34, 0x2d,
        0x0f, 0x50, 0xde, 0x30, 0xd2, 0x53, 0x1b, 0xbe, 0x69, 0x66, 0xc8, 0x94, 0x33, 0x78, 0xdd,
        0x30, 0xda, 0x8e, 0x1a, 0x2e, 0x79, 0x7c, 0x04, 0x97, 0xe3, 0xa3, 0xed, 0xa8, 0xd1, 0xfc,
        0x47, 0x4c, 0xfe, 0xa3, 0xa0, 0x1d, 0x35, 0x08, 0xfc, 0x39, 0x04, 0xd2, 0xcc, 0x20, 0x88,
        0x63, 0x9a, 0xa6, 0xe5, 0x01, 0x4a, 0x33, 0xa3, 0xed, 0xa8, 0xc1, 0x90, 0xff, 0x06, 0x49,
        0x1a, 0x1c, 0xc1, 0xe5, 0x0c, 0x75, 0xeb, 0x79, 0x1c, 0x5e, 0xc5, 0xaa, 0x05, 0xc9, 0xd9,
        0x04, 0xcd, 0xc6, 0x1e, 0x2b, 0x60, 0x69, 0x5e, 0xae, 0x05, 0x40, 0x9b, 0x01, 0x54, 0x45,
        0x25, 0x08, 0x51, 0x18, 0x00, 0x00,
    ];
    let a = read_both(bytes).unwrap_or_else(|e| panic!("{e}"));
    assert!(a.error.is_some());
}

#[test]
fn readers_and_traces_cross_threads() {
    fn send<T: Send>() {}
    fn sync<T: Sync>() {}
    send::<CaptureReader>();
    send::<Trace>();
    sync::<Trace>();
    send::<TraceBuilder>();
    send::<PcapWriter<FileSink>>();
    send::<Error>();
    sync::<Error>();
    assert_eq!(std::mem::size_of::<PacketRecord<'_>>(), 40);
}

/// Packet `i` of [`varied_capture`]: 100 to 1,099 bytes, each a function of `i`.
fn varied_payload(i: usize) -> Vec<u8> {
    (0..100 + (i * 37) % 1000).map(|j| (i + j) as u8).collect()
}

/// 2,000 Ethernet packets of [`varied_payload`] sizes, one a nanosecond.
fn varied_capture() -> Vec<u8> {
    let mut w = PcapWriter::new(Vec::new(), WriterOptions::new(LinkType::ETHERNET)).unwrap();
    for i in 0..2000 {
        w.write_packet(i as u64, &varied_payload(i), 0).unwrap();
    }
    w.finish().unwrap()
}

#[test]
fn kept_records_recycle_their_buffers_and_stay_valid_until_then() {
    // 2,000 packets of 100 to 1,099 bytes, read keeping records in 4 KiB buffers: the reader leaves a buffer every
    // few packets. Records are released eight behind the reader: the pool stays at a handful of buffers, and the last
    // eight records' bytes are intact after each further read.
    let payload = varied_payload;
    let bytes = varied_capture();
    let mut r = stream(&bytes);
    r.keep_records(KeptBuffers::new(4096));
    let mut last: Vec<(usize, *const u8, usize)> = Vec::new();
    let mut n = 0usize;
    loop {
        let k = r.kept_buffers().unwrap();
        k.set_tag(n as u64);
        k.recycle(n.saturating_sub(8) as u64);
        let Some(p) = r.next_packet().unwrap() else {
            break;
        };
        assert_eq!(p.data, &payload(n)[..]);
        last.push((n, p.data.as_ptr(), p.data.len()));
        if last.len() > 8 {
            last.remove(0);
        }
        for &(i, ptr, len) in &last {
            // SAFETY: the last eight records were not recycled (recycling stops eight behind) and the pool is alive.
            let b = unsafe { std::slice::from_raw_parts(ptr, len) };
            assert_eq!(b, &payload(i)[..], "record {i} changed while kept");
        }
        n += 1;
    }
    assert_eq!(n, 2000);
    let k = r.into_kept_buffers().unwrap();
    assert!(
        k.allocated() <= 5,
        "{} buffers for eight records in use",
        k.allocated()
    );
}

#[test]
fn a_retired_buffer_taken_out_holds_every_record_handed_out_before_it() {
    // 2,000 packets of 100 to 1,099 bytes in 4 KiB buffers, each retired buffer taken out of the pool as soon as it
    // is retired and kept: each one holds exactly the records handed out since the one before, and given back, the
    // buffers are read into again.
    let payload = varied_payload;
    let bytes = varied_capture();
    let mut r = stream(&bytes);
    r.keep_records(KeptBuffers::new(4096));
    // Records not yet in a buffer taken out: their number, address and length.
    let mut pending: Vec<(usize, usize, usize)> = Vec::new();
    let mut n = 0usize;
    let check = |buf: Vec<u8>, pending: &mut Vec<(usize, usize, usize)>, last: bool| {
        // Every pending record but the one just read (in the buffer read into now) lies in `buf`.
        let keep = if last { 0 } else { 1 };
        let base = buf.as_ptr() as usize;
        for (i, addr, len) in pending.drain(..pending.len() - keep) {
            let at = addr - base;
            assert_eq!(&buf[at..at + len], &payload(i)[..], "record {i}");
        }
        buf
    };
    let mut given = 0;
    while let Some(p) = r.next_packet().unwrap() {
        assert_eq!(p.data, &payload(n)[..]);
        pending.push((n, p.data.as_ptr() as usize, p.data.len()));
        n += 1;
        let k = r.kept_buffers().unwrap();
        if let Some(buf) = k.take_retired() {
            let buf = check(buf, &mut pending, false);
            assert!(k.take_retired().is_none(), "one buffer left at a time");
            k.give(buf);
            given += 1;
        }
    }
    assert_eq!(n, 2000);
    let mut k = r.into_kept_buffers().unwrap();
    let buf = k
        .take_retired()
        .expect("the last buffer, with the last records");
    check(buf, &mut pending, true);
    assert!(pending.is_empty());
    assert!(given > 100, "{given} buffers left");
    assert!(k.allocated() <= 3, "{} buffers allocated", k.allocated());
}

/// A probe holds an input that can be read only once (here two named pipes) in the handle it returns, with the bytes
/// it read: each handle opens its own input whole, in whatever order, and a regular file's handle opens the file
/// afresh. Nothing is kept for the path in the process (two runs in one process each read their own probes).
#[cfg(unix)]
#[test]
fn a_probe_hands_its_input_to_the_caller() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let capture = |packets: u64| {
        let mut p = Pcap::new(false, false, 1, 65535);
        for i in 0..packets {
            p.packet(1_700_000_000_000_000_000 + i, &[i as u8; 60], 60);
        }
        p.buf
    };
    let mut writers = Vec::new();
    let mut fifos = Vec::new();
    for (name, packets) in [("a", 5u64), ("b", 3)] {
        let path = dir.join(name);
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
        let (p, bytes) = (path.clone(), capture(packets));
        // Opening a pipe for writing waits for its reader (the probe).
        writers.push(std::thread::spawn(move || {
            std::fs::write(&p, bytes).unwrap();
        }));
        fifos.push(path);
    }
    let a = CaptureReader::probe(&fifos[0]).expect("a probes");
    let b = CaptureReader::probe(&fifos[1]).expect("b probes");
    assert!(!a.rereadable() && !b.rereadable());
    assert_eq!(a.path(), fifos[0].as_path());
    let count = |mut r: CaptureReader| {
        let mut n = 0;
        while r.next_packet().unwrap().is_some() {
            n += 1;
        }
        n
    };
    assert_eq!(count(b.open().unwrap()), 3);
    assert_eq!(count(a.open().unwrap()), 5);
    for w in writers {
        w.join().unwrap();
    }
    let file = dir.join("c.pcap");
    std::fs::write(&file, capture(4)).unwrap();
    let c = CaptureReader::probe(&file).unwrap();
    assert!(c.rereadable());
    assert_eq!(count(c.open().unwrap()), 4);
    assert!(CaptureReader::probe(dir.join("missing.pcap")).is_err());
}
