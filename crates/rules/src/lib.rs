//! # Snort/Suricata content rules: parse, prefilter, verify
//!
//! The rules users bring are what makes deep packet inspection expensive. This crate reads a practical subset of
//! Snort 3 and Suricata rules, compiles them into multi-pattern prefilter tables, and matches them against what the
//! engine hands over: reassembled TCP stream data per direction, other datagrams, and HTTP buffers from the HTTP
//! parser. It knows nothing about packets or flows beyond a [`PacketCtx`]; the engine owns connection tracking,
//! reassembly and HTTP parsing, and calls in.
//!
//! ```no_run
//! use flowbundle_rules::{AlertRecord, Direction, FlowMatchState, PacketCtx, RuleSet, Vars};
//! let (rules, report) = RuleSet::parse(
//!     r#"alert tcp any any -> any 80 (msg:"x"; flow:to_server; content:"GET"; depth:3; sid:1;)"#,
//!     &Vars::new(),
//! )?;
//! println!("{}", report.summary());
//! let mut scanner = rules.scanner();            // one per worker thread
//! let mut flow = FlowMatchState::default();     // one per flow
//! let ctx = PacketCtx { dir: Direction::ToServer, dst_port: 80, ..PacketCtx::default() };
//! let mut alerts: Vec<AlertRecord> = Vec::new();
//! rules.scan_stream(&mut scanner, &mut flow, &ctx, b"GE", 0, &mut alerts);
//! rules.scan_stream(&mut scanner, &mut flow, &ctx, b"T / HTTP/1.1\r\n", 2, &mut alerts);
//! rules.finish_flow(&mut scanner, &mut flow, &mut alerts);
//! assert_eq!(alerts[0].sid, 1);
//! # Ok::<(), flowbundle_rules::Error>(())
//! ```
//!
//! ## The subset
//! Header: action (`alert drop reject sdrop log block pass`; a drop or pass acts on the packet or the whole flow as
//! Suricata's rule types say, [`Rule::flow_scoped`]), protocol (`ip tcp udp icmp`, Suricata's `tcp-pkt` and
//! `tcp-stream`, and application protocols such as `http dns tls`), addresses and ports with lists, negation, ranges
//! and variables ([`Vars`]: Suricata's defaults unless configured; an undefined one skips the rule, naming it, as
//! Suricata refuses it), `->` and `<>`, and Snort 3's two-word service headers (`alert http (...)`).
//! Options are read through one keyword table ([`keyword::KEYWORDS`], listed by `flowbundle inspect
//! --list-keywords`): `msg sid rev gid classtype priority`; `content`/`uricontent` with `nocase offset depth distance
//! within fast_pattern startswith endswith` and negation, in Suricata's `;`-separated and Snort 3's inline form;
//! `pcre` (see [`pcre`]: a linear-time engine, and a bounded backtracking one for back-references and look-around);
//! `isdataat` (absolute, relative, negated); `bsize`/`bufferlen`/`dsize`/`urilen`; `byte_test byte_jump byte_extract
//! byte_math` with rule variables (see [`byte`]); `base64_decode` with `base64_data` ([`rule::Base64`]); `ssl_state`
//! and `ssl_version` on the TLS records that begin a TCP packet ([`tls_record`]); the transforms `dotprefix domain tld
//! to_lowercase to_uppercase strip_whitespace compress_whitespace url_decode to_md5 to_sha1 to_sha256 xor from_base64 pcrexform
//! header_lowercase strip_pseudo_headers gunzip zlib_deflate` (see
//! [`transform`]); `flow`
//! (direction, established state, `only_stream`, `no_stream`); header keywords on the packet ([`header`]: `ttl tos id ip_proto fragbits
//! flags window seq ack itype icode icmp_id icmp_seq ipopts tcp.mss icmpv6.mtu vlan.id vlan.layers`, the flow counters
//! `flow.age flow.pkts flow.bytes`, and `decode-event` on the decoder's anomalies); `requires` (Suricata's version,
//! features and keywords, honoured before the rest of the rule is read: a rule whose requirements are not met is
//! skipped under a `requires ...` reason, see [`requires`]); `threshold` and `detection_filter` ([`threshold`], applied
//! by the engine where alerts meet in input order); `flowbits` (`set unset toggle isset isnotset noalert`, names
//! joined by `|` or `&`) and `noalert`; `xbits` (`set unset toggle isset isnotset noalert`, `track ip_src ip_dst
//! ip_pair`, `expire`: bits per host or address pair across flows, see [`xbits`], applied by the engine where
//! alerts meet in input order); `flowint` (`= + - == != < <= > >= isset notset`, per-flow integers beside the
//! flowbits); `stream_size` on the TCP session's sequence numbers ([`stream_size`]); `tls.version` on the version
//! each TLS side recorded ([`Buffer::TlsVersion`]); `ftpbounce`; `asn1` (a bounded BER walk, [`asn1`]);
//! `app-layer-protocol`; `dataset` and `datarep` on sticky buffers (sets loaded from files or built by rules,
//! see [`dataset`]: lookups run in the workers, changes where alerts meet in input order); sticky
//! buffers ([`Buffer`]): HTTP in full
//! (`http.uri`, `http.uri.raw`, `http.method`, `http.host`, `http.host.raw`, `http.user_agent`, `http.cookie`,
//! `http.header`, `http.header.raw`, `http.request_line`, `http.response_line`, `http.start`, `http.protocol`,
//! `http.stat_code`, `http.stat_msg`, `http.header_names`, `http.content_type`, `http.content_len`,
//! `http.connection`, `http.accept*`, `http.referer`, `http.location`, `http.server`, `http.request_body`,
//! `http.response_body`, `file_data`/`file.data`; `file.data` also on SMTP attachments and on the files of FTP
//! data connections, `alert ftp-data` or Snort 3's `service:ftp-data`/`service:ftp`), `dns.query`, `tls.sni`, `tls.cert_subject`, `tls.cert_issuer`,
//! `tls.cert_serial`, `tls.cert_fingerprint`, `tls.certs`, `ja3.hash`, `ja3.string`, `ja3s.hash`, `ja3s.string`,
//! `ja4.hash`, `ssh.proto`, `ssh.software`, FTP's transactions (`ftp.command`, `ftp.command_data`, `ftp.reply`,
//! `ftp.completion_code`, with `ftp.dynamic_port`, `ftp.mode`, `ftp.reply_received`), Kerberos' (`krb5.cname`,
//! `krb5.sname`, with `krb5_msg_type`, `krb5_err_code`, `krb5.ticket_encryption`), SIP's (`sip.method`, `sip.uri`,
//! `sip.request_line`, `sip.stat_code`, `sip.stat_msg`, `sip.response_line`, `sip.protocol`, the header lists `sip.from`,
//! `sip.to`, `sip.via`, `sip.user_agent`, `sip.content_type`, `sip.content_length`, and the body's session description
//! `sdp.*`), and `pkt_data`, with their legacy names (`dns_query`, `tls_sni`,
//! `ja3_hash`, ...), and Snort's `http_uri`-style form, sticky (Snort 3) or content modifier (Snort 2 / Suricata
//! legacy), see [`rule`]. `http.header` and `file_data` mean the request or the response side as the rule's `flow`
//! (or its other buffers) say; to the server `file_data` is each file of the request (a `POST`/`PUT` body, a
//! multipart form's file parts), to the client the response body; alone, `file_data` inspects both ways (each
//! request file and each response body, one buffer each, as Suricata) and `http.header` both sides' headers. A rule
//! may mix the payload with application-layer buffers: the payload part matches on the stream (or datagrams) of the
//! flow, the rest per transaction, and the rule matches a transaction once both have. Options that never change what
//! matches (`reference metadata prefilter rawbytes service`) are accepted; `target` names the alert's source and
//! target in EVE. Anything else skips the rule,
//! counted under a reason naming the first unsupported keyword ([`LoadReport::skip_reasons`]); malformed rules are
//! errors with file and line ([`LoadReport::errors`]). The Snort 3 community set loads 3,988 of 4,004 rules (99.6%) (the
//! pinned reasons for the rest are in `tests/community.rs`), ET Open 24,827 of 24,827 (`tests/parse.rs`).
//!
//! ## Matching
//! Each rule's content chains are grouped by buffer; each group has a fast pattern (its `fast_pattern` content, or
//! its longest positive one). A packet meets only the rules its header can match (see [`group`], Suricata's
//! "signature group heads"): payload rules written for narrow port sets (`-> any 69`, `$HTTP_PORTS -> any`) whose
//! fast pattern is short (`|00|`, `|00 02|`) get a prefilter table per port set, scanned only for packets to or from
//! those ports, beside the table the other rules share; rules without content are filed by narrow address sets (ET's Tor, DROP, CI Army lists), else by
//! transport and port; a rule with several application-layer groups puts only one of them into the prefilter (its
//! *lead*: the group of its `fast_pattern` content, else of its longest content, `http.method` and `http.stat_code`
//! last, as Suricata picks a rule's fast pattern) and checks the others only once the lead matched in a transaction,
//! against the values of their buffers the flow kept (bounded: [`scan::MAX_STORED_BYTES`]) or as they arrive. The
//! grouping only ever removes rules that could not match: `LoadOptions::rule_groups: false` turns it off, and a
//! test holds both to the same alerts on the nDPI captures with ET Open and the community rules. Where the time
//! goes is measured by the [`profile`] (`flowbundle inspect --rules-profile`).
//!
//! One [`prefilter`] table per inspection point (stream per direction, datagram per direction, TCP packet per
//! direction, each HTTP buffer; per port group for the first three) finds every fast-pattern occurrence in one pass; each
//! occurrence leads to the (rule, group) pairs that use it, whose header, `flow` and flowbit conditions are checked
//! against the [`PacketCtx`] and the flow, and whose whole chain is then verified ([`verify`]). A rule whose only
//! condition is its fast pattern (with offset/depth) is confirmed by the prefilter hit alone — the 10,000-pattern
//! throughput set is entirely such rules. The TCP packet table shared by all ports rides in the stream's shared
//! table (its patterns added under ids of their own, [`group::PortTables`]' `carry_riders`): a TCP payload taken
//! in order in one piece is scanned once for both, and only occurrences wholly inside the payload count for the
//! packet rules (ET Open on the merged nDPI trace: 1,408 M → 1,341 M instructions; `BENCHMARKS.md`).
//! The prefilter is a hashed q-gram filter rather than aho-corasick: on the
//! 10k set aho-corasick ran at a quarter of the speed (see [`prefilter`]); aho-corasick is the test oracle. Its gate
//! is evaluated 64 positions at a time with AVX2 where the CPU has it; on the 10k set over the shared captures the
//! prefilter alone takes 0.9x the time of Hyperscan 5.4 on the same bytes (`scripts/bench-hyperscan`).
//!
//! Alerts: at most one per rule per datagram, per HTTP transaction, and per stream direction (for the flow's life);
//! the alerts one application-layer buffer completes go out in rule order.
//! Flowbits are per flow; within one call, rules with flowbit conditions are evaluated after the others, so a bit
//! set by the same data is seen (Suricata orders setters first). Across calls, order is the order of the calls.
//!
//! ## What the engine calls
//! * once: [`RuleSet::load_files`] (or [`RuleSet::parse_with`] with [`LoadOptions`]); print [`LoadReport::summary`];
//! * per worker: [`RuleSet::scanner`]; per flow: `FlowMatchState::default()`;
//! * per TCP chunk leaving reassembly: [`RuleSet::scan_stream`] with the direction's stream offset;
//! * per packet (every packet, TCP included): [`RuleSet::scan_packet`] with its payload; for a TCP packet whose
//!   payload was, whole, the last chunk handed to `scan_stream` while processing it,
//!   [`RuleSet::scan_streamed_packet`], which takes the single-packet rules' fast-pattern occurrences from that
//!   stream scan instead of scanning the payload a second time;
//! * per HTTP buffer the HTTP parser completes (`flowbundle_protocols::EventSink::http_buffer`):
//!   [`RuleSet::scan_http`], mapping the parser's `HttpBuffer` to [`HttpBuffer`] one to one;
//! * per field of a DNS, TLS or SSH event that a sticky buffer names: [`RuleSet::scan_app`];
//! * at flow end or eviction: [`RuleSet::finish_flow`] (settles stream candidates still waiting for data);
//! * at the end: sum [`Scanner::hit_counts`] and [`Scanner::stats`] across workers for the summary.
//!
//! The suricata-verify harness (`crates/inspect/tests/suricata_verify.rs`, `scripts/suricata-verify`) selects tests
//! whose rule file loads completely and that have checks it can evaluate on the EVE lines (`alert` and `flow`), runs
//! them through the engine and compares; the failures left are explained in
//! `crates/inspect/tests/data/suricata_verify_failures.txt`.
//! `tests/suricata_verify_rules.rs` here runs the rule half over the whole suite.
//!
//! ## Stream semantics
//! A TCP direction is one long buffer starting at stream offset 0: `offset`/`depth` count from the start of the
//! stream, not of a packet, and the result does not depend on how the data was chunked (a property test checks
//! random splits against one chunk and against a brute-force oracle). The prefilter keeps 16 bytes of state and a
//! tail of recent bytes per flow direction, so a pattern straddling chunks is found without re-scanning. A rule is
//! verified *with its fast pattern at the occurrence found* `[s, e)`, against a window `[s - B, e + A)`:
//! * when every other item is tied to the fast pattern by `within` (or the chain is anchored to the stream start by
//!   `depth`), the window covers every possible match exactly, capped at [`LoadOptions::stream_window`];
//! * otherwise (a content with only `distance`, an unanchored second content, a non-relative pcre) `B = A =`
//!   `stream_window` (default 1 KiB): matches whose items lie further apart than that are **missed**;
//! * a rule whose match needs bytes after the hit is confirmed as soon as they arrive if it has no negation and no
//!   end-looking assertion (the usual case); otherwise it waits until the window is complete or the stream ends
//!   ([`RuleSet::finish_flow`]), because a later byte could still veto it (`content:!"x"`, `pcre:"/a$/"`). A
//!   negated content with no `within`/`depth` is checked up to the window's end, not the stream's;
//! * a relative `pcre` sees the stream from the previous match on (`^` anchors there, as in Snort and Suricata);
//!   other pcres see the window, with the bytes around it as look-around context;
//! * after a reassembly gap matching restarts: nothing straddles a gap;
//! * `offset`/`depth` on a stream mean the stream's start only: a rule written for the start of *each* message of
//!   a long-lived connection (Snort and Suricata inspect packets and stream chunks, so their `depth` is relative to
//!   those) fires here only for the first one;
//! * a payload chain with `endswith`, `bsize` or `isdataat:!`, or without a positive content, cannot run on a
//!   stream (it has no end while it is inspected): on TCP it inspects each packet's payload instead (Suricata's
//!   stream chunks end where the packets acknowledged so far end), on every packet its header and flow allow when
//!   it has no content to prefilter; with `flow:only_stream` it skips its rule;
//! * each rule alerts once per stream direction; Suricata may alert again on a later chunk with another occurrence;
//! * flowbit conditions of a stream rule are checked when its fast pattern is found.
//!
//! Memory per flow: [`FlowMatchState`] is 32 bytes until a direction carries data that a stream rule could inspect;
//! then the direction holds a tail of [`RuleSet::stream_retain`] bytes (the longest fast pattern for rule sets like
//! the 10k set, up to `2 × stream_window + 255` for rules with wide windows), at most [`scan::MAX_PENDING`] pending
//! candidates and the fired rules. All caps have counters in [`ScanStats`].

pub mod addr;
pub mod asn1;
pub mod base64;
pub mod byte;
pub mod classify;
pub mod dataset;
pub mod dcerpc;
pub mod entropy;
pub mod file;
pub mod flowvar;
mod gate;
pub mod group;
pub mod header;
pub mod http;
pub mod keyword;
pub mod pcre;
pub mod prefilter;
pub mod profile;
pub mod requires;
pub mod rpc;
pub mod rule;
pub mod ruleset;
pub mod scan;
pub mod split;
pub mod stream_size;
pub mod tag;
#[cfg(feature = "testing")]
pub mod testing;
pub mod text;
pub mod threshold;
pub mod threshold_config;
pub mod tls_record;
pub mod transform;
pub mod vars;
pub mod verify;
pub mod xbits;

pub use addr::{AddrSet, PortSet};
pub use classify::Classifications;
pub use header::{
    Checksums, CsumKind, FlowCounters, HeaderNeeds, HeaderTest, IcmpHeader, PacketHeader,
    RawHeaders, TcpHeader,
};
pub use profile::{PointCost, RuleCost, RulesProfile};
pub use rule::{
    Action, ActionOrder, AlertTarget, Buffer, Content, FlowDir, FlowState, Group, Item, Proto,
    Role, Rule, Side,
};
pub use ruleset::{Error, LoadOptions, LoadReport, RuleError, RuleSet, SkippedRule, rule_files};
pub use scan::{
    Alert, AlertRecord, AlertSink, AlertSource, AlertText, Direction, FlowMatchState, HttpBuffer,
    MAX_QUIET, PacketCtx, ScanStats, Scanner, Transport,
};
pub use stream_size::{StreamSize, StreamSizes};
pub use tag::{HostTagStats, HostTags, Tag, TagList};
pub use threshold::{
    RateFilter, RateTable, Threshold, ThresholdKind, ThresholdStats, ThresholdTable, Track,
    UniqueOn,
};
pub use threshold_config::{ConfigLineError, Suppress, SuppressTrack, ThresholdConfig};
pub use transform::Transform;
pub use vars::{Origin, Var, VarKind, Vars};
pub use xbits::{Xbit, XbitOp, XbitStats, XbitTable, XbitTrack};
