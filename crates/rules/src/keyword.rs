//! The keyword table: every rule option the parser knows, with its aliases, its kind and what it does.
//!
//! One table drives the parser ([`crate::rule`] looks each option up here), the skip report (an option not in the
//! table skips its rule as `keyword NAME`) and `flowbundle inspect --list-keywords`. Adding a keyword is adding a
//! row: a sticky buffer names its [`Buffer`]; anything else names the function that parses its value into the rule
//! being built.

use std::collections::HashMap;
use std::sync::OnceLock;

use crate::rule::{Buffer, Builder, Ctx, PBuf, Step};

/// What a keyword is, as Suricata's documentation groups them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// Identity, message and classification (`sid`, `msg`, `classtype`, ...).
    Meta,
    /// Selects the buffer the payload keywords after it inspect (Suricata's sticky buffers).
    StickyBuffer,
    /// Snort's `http_*`: a sticky buffer in Snort 3, a modifier of the preceding content in legacy syntax.
    BufferModifier,
    /// Modifies the preceding `content` (`nocase`, `depth`, `within`, ...).
    ContentModifier,
    /// Inspects the current buffer (`content`, `pcre`, `byte_test`, `isdataat`, lengths, ...).
    Payload,
    /// Transforms the current sticky buffer before it is inspected (`to_lowercase`, `dotprefix`, ...).
    Transform,
    /// Conditions on the flow and its state (`flow`, `flowbits`, `app-layer-protocol`).
    Flow,
    /// Tests a field of the packet's IP, TCP or ICMP header (`ttl`, `flags`, `itype`, ...).
    Header,
    /// Decides which matches are reported (`threshold`, `detection_filter`).
    Threshold,
    /// Accepted and never changes what matches (`reference`, `metadata`, ...).
    Informational,
}

impl Kind {
    /// The kind as `--list-keywords` prints it.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Meta => "meta",
            Kind::StickyBuffer => "sticky buffer",
            Kind::BufferModifier => "buffer modifier",
            Kind::ContentModifier => "content modifier",
            Kind::Payload => "payload",
            Kind::Transform => "transform",
            Kind::Flow => "flow",
            Kind::Header => "header",
            Kind::Threshold => "threshold",
            Kind::Informational => "informational",
        }
    }
}

/// How the parser applies a keyword.
pub(crate) type ParseFn = fn(&mut Builder, &str, Option<&str>, &mut Ctx<'_, '_>) -> Step<()>;

#[derive(Clone, Copy)]
pub(crate) enum Handler {
    /// A sticky buffer: the payload keywords after it inspect this buffer.
    Sticky(PBuf),
    /// Snort's `http_*` keyword for this buffer.
    HttpModifier(PBuf),
    /// Accepted without effect.
    Ignore,
    /// Parsed by this function.
    Parse(ParseFn),
}

/// One row of the table.
pub struct Keyword {
    /// The name Suricata 8 documents.
    pub name: &'static str,
    /// Other spellings accepted for it (legacy underscore names, Snort's names).
    pub aliases: &'static [&'static str],
    pub kind: Kind,
    pub(crate) handler: Handler,
}

impl Keyword {
    /// The buffer a sticky buffer or `http_*` keyword selects, by its Suricata name.
    pub fn buffer(&self) -> Option<&'static str> {
        match self.handler {
            Handler::Sticky(b) | Handler::HttpModifier(b) => Some(b.name()),
            _ => None,
        }
    }
}

impl std::fmt::Debug for Keyword {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keyword")
            .field("name", &self.name)
            .field("aliases", &self.aliases)
            .field("kind", &self.kind)
            .finish()
    }
}

const fn kw(
    name: &'static str,
    aliases: &'static [&'static str],
    kind: Kind,
    handler: Handler,
) -> Keyword {
    Keyword {
        name,
        aliases,
        kind,
        handler,
    }
}

const fn sticky(name: &'static str, aliases: &'static [&'static str], buf: Buffer) -> Keyword {
    kw(
        name,
        aliases,
        Kind::StickyBuffer,
        Handler::Sticky(PBuf::Fixed(buf)),
    )
}

const fn modifier(name: &'static str, buf: PBuf) -> Keyword {
    kw(name, &[], Kind::BufferModifier, Handler::HttpModifier(buf))
}

const fn parse(
    name: &'static str,
    aliases: &'static [&'static str],
    kind: Kind,
    f: ParseFn,
) -> Keyword {
    kw(name, aliases, kind, Handler::Parse(f))
}

const fn info(name: &'static str) -> Keyword {
    kw(name, &[], Kind::Informational, Handler::Ignore)
}

use Kind::*;

/// Every keyword the parser knows.
pub static KEYWORDS: &[Keyword] = &[
    // Meta.
    parse("msg", &[], Meta, |b, _, v, _| b.msg(v)),
    parse("sid", &[], Meta, |b, n, v, _| b.sid(n, v)),
    parse("rev", &[], Meta, |b, n, v, _| b.rev(n, v)),
    parse("gid", &[], Meta, |b, n, v, _| b.gid(n, v)),
    parse("priority", &[], Meta, |b, n, v, _| b.priority(n, v)),
    parse("classtype", &[], Meta, |b, _, v, ctx| b.classtype(v, ctx)),
    parse("service", &[], Meta, |b, _, v, _| b.service(v)),
    info("reference"),
    parse("metadata", &[], Meta, |b, _, v, _| b.metadata(v)),
    parse("target", &[], Meta, |b, _, v, _| b.target(v)),
    // Checked before the rest of the rule is parsed ([`crate::requires`]); a rule that gets this far meets it.
    parse("requires", &[], Meta, |_, _, _, _| Ok(())),
    // Flow and state.
    parse("flow", &[], Flow, |b, _, v, _| b.flow(v)),
    parse("flowbits", &[], Flow, |b, _, v, ctx| b.flowbits(v, ctx)),
    parse("flowint", &[], Flow, |b, _, v, ctx| b.flowint(v, ctx)),
    // Flow and packet variables captured by `pcre` ([`crate::flowvar`]).
    parse("flowvar", &[], Flow, |b, _, v, ctx| {
        b.var_has(crate::flowvar::VarScope::Flow, v, ctx)
    }),
    parse("pktvar", &[], Flow, |b, _, v, ctx| {
        b.var_has(crate::flowvar::VarScope::Packet, v, ctx)
    }),
    parse("xbits", &[], Flow, |b, _, v, ctx| b.xbits(v, ctx)),
    parse("hostbits", &[], Flow, |b, _, v, ctx| b.hostbits(v, ctx)),
    parse("tag", &[], Flow, |b, _, v, _| b.tag(v)),
    parse("dataset", &[], Payload, |b, n, v, ctx| b.dataset(n, v, ctx)),
    parse("datarep", &[], Payload, |b, n, v, ctx| b.dataset(n, v, ctx)),
    parse("noalert", &[], Flow, |b, _, _, _| b.set_noalert()),
    parse("alert", &[], Flow, |b, _, _, _| b.set_alert()),
    parse("app-layer-protocol", &[], Flow, |b, _, v, _| {
        b.app_layer_protocol(v)
    }),
    // Thresholds.
    parse("threshold", &[], Threshold, |b, n, v, _| b.threshold(n, v)),
    parse("detection_filter", &[], Threshold, |b, n, v, _| {
        b.threshold(n, v)
    }),
    // Packet headers.
    parse("ttl", &[], Header, |b, n, v, _| b.header_test(n, v)),
    parse("tos", &[], Header, |b, n, v, _| b.header_test(n, v)),
    parse("id", &[], Header, |b, n, v, _| b.header_test(n, v)),
    parse("ip_proto", &[], Header, |b, n, v, _| b.header_test(n, v)),
    parse("fragbits", &[], Header, |b, n, v, _| b.header_test(n, v)),
    parse("tcp.flags", &["flags"], Header, |b, n, v, _| {
        b.header_test(n, v)
    }),
    parse("tcp.window", &["window"], Header, |b, n, v, _| {
        b.header_test(n, v)
    }),
    parse("tcp.seq", &["seq"], Header, |b, n, v, _| {
        b.header_test(n, v)
    }),
    parse("tcp.ack", &["ack"], Header, |b, n, v, _| {
        b.header_test(n, v)
    }),
    parse("itype", &[], Header, |b, n, v, _| b.header_test(n, v)),
    parse("icode", &[], Header, |b, n, v, _| b.header_test(n, v)),
    parse("icmp_id", &[], Header, |b, n, v, _| b.header_test(n, v)),
    parse("icmp_seq", &[], Header, |b, n, v, _| b.header_test(n, v)),
    parse("fragoffset", &[], Header, |b, n, v, _| b.header_test(n, v)),
    parse("sameip", &[], Header, |b, n, v, _| b.header_test(n, v)),
    parse("ipopts", &[], Header, |b, n, v, _| b.header_test(n, v)),
    parse("tcp.mss", &[], Header, |b, n, v, _| b.header_test(n, v)),
    parse("icmpv6.mtu", &[], Header, |b, n, v, _| b.header_test(n, v)),
    parse("vlan.id", &[], Header, |b, n, v, _| b.header_test(n, v)),
    parse("vlan.layers", &[], Header, |b, n, v, _| b.header_test(n, v)),
    // The flow's counters, checked on every packet as Suricata checks them.
    parse("flow.age", &[], Flow, |b, n, v, _| b.header_test(n, v)),
    parse("flow.pkts", &[], Flow, |b, n, v, _| b.header_test(n, v)),
    parse("flow.pkts_toserver", &[], Flow, |b, n, v, _| {
        b.header_test(n, v)
    }),
    parse("flow.pkts_toclient", &[], Flow, |b, n, v, _| {
        b.header_test(n, v)
    }),
    parse("flow.bytes", &[], Flow, |b, n, v, _| b.header_test(n, v)),
    parse("flow.bytes_toserver", &[], Flow, |b, n, v, _| {
        b.header_test(n, v)
    }),
    parse("flow.bytes_toclient", &[], Flow, |b, n, v, _| {
        b.header_test(n, v)
    }),
    parse("ipv4-csum", &[], Header, |b, n, v, _| b.header_test(n, v)),
    parse("tcpv4-csum", &[], Header, |b, n, v, _| b.header_test(n, v)),
    parse("tcpv6-csum", &[], Header, |b, n, v, _| b.header_test(n, v)),
    parse("udpv4-csum", &[], Header, |b, n, v, _| b.header_test(n, v)),
    parse("udpv6-csum", &[], Header, |b, n, v, _| b.header_test(n, v)),
    parse("icmpv4-csum", &[], Header, |b, n, v, _| b.header_test(n, v)),
    parse("icmpv6-csum", &[], Header, |b, n, v, _| b.header_test(n, v)),
    parse("tcp.wscale", &[], Header, |b, n, v, _| b.header_test(n, v)),
    parse("l3_proto", &[], Header, |b, n, v, _| b.header_test(n, v)),
    parse("stream_size", &[], Flow, |b, _, v, _| b.stream_size(v)),
    parse("decode-event", &[], Header, |b, _, v, _| b.decode_event(v)),
    parse("stream-event", &[], Header, |b, n, v, _| {
        b.engine_event(n, v)
    }),
    parse("engine-event", &[], Header, |b, n, v, _| {
        b.engine_event(n, v)
    }),
    parse("app-layer-event", &[], Flow, |b, _, v, _| {
        b.app_layer_event(v)
    }),
    // Payload.
    parse("content", &[], Payload, |b, n, v, _| b.content(n, v)),
    parse("uricontent", &[], Payload, |b, n, v, _| b.content(n, v)),
    parse("pcre", &[], Payload, |b, _, v, ctx| b.pcre(v, ctx)),
    parse("isdataat", &[], Payload, |b, _, v, _| b.isdataat(v)),
    parse("bsize", &["bufferlen"], Payload, |b, n, v, _| b.bsize(n, v)),
    parse("absent", &[], Payload, |b, _, v, _| b.absent(v)),
    parse("rpc", &[], Payload, |b, _, v, _| b.rpc(v)),
    parse("entropy", &[], Payload, |b, _, v, ctx| b.entropy(v, ctx)),
    parse("dsize", &[], Payload, |b, n, v, _| b.dsize(n, v)),
    parse("byte_test", &[], Payload, |b, n, v, _| b.byte(n, v)),
    parse("byte_jump", &[], Payload, |b, n, v, _| b.byte(n, v)),
    parse("byte_extract", &[], Payload, |b, n, v, _| b.byte(n, v)),
    parse("byte_math", &[], Payload, |b, n, v, _| b.byte(n, v)),
    parse("urilen", &[], Payload, |b, n, v, _| b.urilen(n, v)),
    parse("base64_decode", &[], Payload, |b, _, v, _| {
        b.base64_decode(v)
    }),
    parse("ssl_state", &[], Payload, |b, n, v, _| b.tls_record(n, v)),
    parse("ssl_version", &[], Payload, |b, n, v, _| b.tls_record(n, v)),
    parse("dcerpc.iface", &["dce_iface"], Payload, |b, n, v, _| {
        b.dcerpc(n, v)
    }),
    parse("dcerpc.opnum", &["dce_opnum"], Payload, |b, n, v, _| {
        b.dcerpc(n, v)
    }),
    parse(
        "krb5_msg_type",
        &["krb5.msg_type"],
        Payload,
        |b, _, v, _| b.krb5_msg_type(v),
    ),
    // Kerberos (Suricata 8): the reply's names, the error code, the ticket's encryption type.
    sticky("krb5.cname", &["krb5_cname"], Buffer::Krb5Cname),
    sticky("krb5.sname", &["krb5_sname"], Buffer::Krb5Sname),
    parse(
        "krb5_err_code",
        &["krb5.err_code"],
        Payload,
        |b, _, v, _| b.app_number("krb5_err_code", v),
    ),
    parse("krb5.ticket_encryption", &[], Payload, |b, _, v, _| {
        b.krb5_ticket_encryption(v)
    }),
    parse("tls.version", &[], Payload, |b, _, v, _| b.tls_version(v)),
    parse("ftpbounce", &[], Payload, |b, _, v, _| b.ftpbounce(v)),
    parse("asn1", &[], Payload, |b, _, v, _| b.asn1(v)),
    info("prefilter"),
    info("rawbytes"),
    // Content modifiers.
    parse("nocase", &[], ContentModifier, |b, n, _, _| b.nocase(n)),
    parse("fast_pattern", &[], ContentModifier, |b, n, v, _| {
        b.fast_pattern(n, v)
    }),
    parse("depth", &[], ContentModifier, |b, n, v, _| b.position(n, v)),
    parse("offset", &[], ContentModifier, |b, n, v, _| {
        b.position(n, v)
    }),
    parse("distance", &[], ContentModifier, |b, n, v, _| {
        b.position(n, v)
    }),
    parse("within", &[], ContentModifier, |b, n, v, _| {
        b.position(n, v)
    }),
    parse("startswith", &[], ContentModifier, |b, n, _, _| {
        b.startswith(n)
    }),
    parse("endswith", &[], ContentModifier, |b, n, _, _| b.endswith(n)),
    // Transforms of the current sticky buffer.
    parse("dotprefix", &[], Transform, |b, n, v, _| b.transform(n, v)),
    parse("domain", &[], Transform, |b, n, v, _| b.transform(n, v)),
    parse("tld", &[], Transform, |b, n, v, _| b.transform(n, v)),
    parse("to_lowercase", &[], Transform, |b, n, v, _| {
        b.transform(n, v)
    }),
    parse("to_uppercase", &[], Transform, |b, n, v, _| {
        b.transform(n, v)
    }),
    parse("strip_whitespace", &[], Transform, |b, n, v, _| {
        b.transform(n, v)
    }),
    parse("compress_whitespace", &[], Transform, |b, n, v, _| {
        b.transform(n, v)
    }),
    parse("url_decode", &[], Transform, |b, n, v, _| b.transform(n, v)),
    parse("to_md5", &[], Transform, |b, n, v, _| b.transform(n, v)),
    parse("to_sha1", &[], Transform, |b, n, v, _| b.transform(n, v)),
    parse("to_sha256", &[], Transform, |b, n, v, _| b.transform(n, v)),
    parse("xor", &[], Transform, |b, n, v, _| b.transform(n, v)),
    parse("from_base64", &[], Transform, |b, n, v, _| {
        b.transform(n, v)
    }),
    parse("pcrexform", &[], Transform, |b, n, v, _| b.transform(n, v)),
    parse("header_lowercase", &[], Transform, |b, n, v, _| {
        b.transform(n, v)
    }),
    parse("strip_pseudo_headers", &[], Transform, |b, n, v, _| {
        b.transform(n, v)
    }),
    parse("gunzip", &[], Transform, |b, n, v, _| b.transform(n, v)),
    parse("zlib_deflate", &[], Transform, |b, n, v, _| {
        b.transform(n, v)
    }),
    // Sticky buffers.
    sticky("pkt_data", &["raw_data"], Buffer::Payload),
    kw(
        "base64_data",
        &[],
        StickyBuffer,
        Handler::Sticky(PBuf::Base64Data),
    ),
    kw(
        "file.data",
        &["file_data"],
        StickyBuffer,
        Handler::Sticky(PBuf::FileData),
    ),
    sticky("http.request_header", &[], Buffer::HttpRequestHeaderLine),
    sticky("http.response_header", &[], Buffer::HttpResponseHeaderLine),
    sticky("http.uri", &[], Buffer::HttpUri),
    sticky("http.uri.raw", &[], Buffer::HttpRawUri),
    sticky("http.method", &[], Buffer::HttpMethod),
    kw(
        "http.header",
        &[],
        StickyBuffer,
        Handler::Sticky(PBuf::Header),
    ),
    kw(
        "http.header.raw",
        &[],
        StickyBuffer,
        Handler::Sticky(PBuf::RawHeader),
    ),
    sticky("http.host", &[], Buffer::HttpHost),
    sticky("http.host.raw", &[], Buffer::HttpRawHost),
    sticky("http.user_agent", &[], Buffer::HttpUserAgent),
    sticky("http.cookie", &[], Buffer::HttpCookie),
    sticky(
        "http.request_body",
        &["http.client_body"],
        Buffer::HttpRequestBody,
    ),
    sticky(
        "http.response_body",
        &["http.server_body"],
        Buffer::HttpResponseBody,
    ),
    sticky("http.stat_code", &[], Buffer::HttpStatCode),
    sticky(
        "http.request_line",
        &["http_request_line"],
        Buffer::HttpRequestLine,
    ),
    sticky(
        "http.response_line",
        &["http_response_line"],
        Buffer::HttpResponseLine,
    ),
    sticky("http.protocol", &["http_protocol"], Buffer::HttpProtocol),
    sticky("http.stat_msg", &[], Buffer::HttpStatMsg),
    sticky("http.start", &["http_start"], Buffer::HttpStart),
    sticky(
        "http.header_names",
        &["http_header_names"],
        Buffer::HttpHeaderNames,
    ),
    sticky(
        "http.content_type",
        &["http_content_type"],
        Buffer::HttpContentType,
    ),
    sticky(
        "http.content_len",
        &["http_content_len"],
        Buffer::HttpContentLen,
    ),
    sticky(
        "http.connection",
        &["http_connection"],
        Buffer::HttpConnection,
    ),
    sticky("http.accept", &["http_accept"], Buffer::HttpAccept),
    sticky(
        "http.accept_enc",
        &["http_accept_enc"],
        Buffer::HttpAcceptEnc,
    ),
    sticky(
        "http.accept_lang",
        &["http_accept_lang"],
        Buffer::HttpAcceptLang,
    ),
    sticky("http.referer", &["http_referer"], Buffer::HttpReferer),
    sticky("http.location", &[], Buffer::HttpLocation),
    sticky("http.server", &[], Buffer::HttpServer),
    sticky("dns.query", &["dns_query"], Buffer::DnsQuery),
    sticky("tls.sni", &["tls_sni"], Buffer::TlsSni),
    sticky("ip.src", &[], Buffer::IpSrc),
    sticky("ip.dst", &[], Buffer::IpDst),
    // The packet's headers as on the wire (checked per packet, with the rule's header).
    sticky("ipv4.hdr", &[], Buffer::Ipv4Hdr),
    sticky("ipv6.hdr", &[], Buffer::Ipv6Hdr),
    sticky("tcp.hdr", &[], Buffer::TcpHdr),
    sticky("udp.hdr", &[], Buffer::UdpHdr),
    sticky("icmpv4.hdr", &[], Buffer::Icmpv4Hdr),
    sticky("icmpv6.hdr", &[], Buffer::Icmpv6Hdr),
    sticky(
        "tls.cert_subject",
        &["tls_cert_subject"],
        Buffer::TlsCertSubject,
    ),
    sticky(
        "tls.cert_issuer",
        &["tls_cert_issuer"],
        Buffer::TlsCertIssuer,
    ),
    sticky(
        "tls.cert_serial",
        &["tls_cert_serial"],
        Buffer::TlsCertSerial,
    ),
    sticky(
        "tls.cert_fingerprint",
        &["tls_cert_fingerprint"],
        Buffer::TlsCertFingerprint,
    ),
    sticky("tls.certs", &[], Buffer::TlsCerts),
    sticky("ja3.hash", &["ja3_hash"], Buffer::Ja3Hash),
    sticky("ja3.string", &["ja3_string"], Buffer::Ja3String),
    sticky("ja3s.hash", &["ja3s_hash"], Buffer::Ja3sHash),
    sticky("ja3s.string", &["ja3s_string"], Buffer::Ja3sString),
    sticky("ja4.hash", &[], Buffer::Ja4Hash),
    sticky(
        "ssh.proto",
        &["ssh_proto", "ssh.protoversion"],
        Buffer::SshProto,
    ),
    sticky(
        "ssh.software",
        &["ssh_software", "ssh.softwareversion"],
        Buffer::SshSoftware,
    ),
    // SSH HASSH (the KEXINITs' algorithm lists); the legacy names are Suricata 6's.
    sticky("ssh.hassh", &["hassh"], Buffer::SshHassh),
    sticky(
        "ssh.hassh.string",
        &["hassh.string"],
        Buffer::SshHasshString,
    ),
    sticky(
        "ssh.hassh.server",
        &["hassh.server"],
        Buffer::SshHasshServer,
    ),
    sticky(
        "ssh.hassh.server.string",
        &["hassh.server.string"],
        Buffer::SshHasshServerString,
    ),
    // SMB: TREE_CONNECT paths, SESSION_SETUP's NTLMSSP user and domain, the transaction's version.
    sticky("smb.share", &["smb_share"], Buffer::SmbShare),
    sticky("smb.named_pipe", &["smb_named_pipe"], Buffer::SmbNamedPipe),
    sticky("smb.ntlmssp_user", &[], Buffer::SmbNtlmsspUser),
    sticky("smb.ntlmssp_domain", &[], Buffer::SmbNtlmsspDomain),
    parse("smb.version", &[], Payload, |b, n, v, _| b.app_number(n, v)),
    sticky(
        "dcerpc.stub_data",
        &["dce_stub_data"],
        Buffer::DcerpcStubData,
    ),
    // DNS and multicast DNS.
    sticky("dns.queries.rrname", &[], Buffer::DnsQueriesRrname),
    sticky("dns.answers.rrname", &[], Buffer::DnsAnswersRrname),
    sticky("dns.authorities.rrname", &[], Buffer::DnsAuthoritiesRrname),
    sticky("dns.additionals.rrname", &[], Buffer::DnsAdditionalsRrname),
    sticky("dns.response.rrname", &[], Buffer::DnsResponseRrname),
    // Suricata 8's names for the questions' and the answers' names: the same lists, in both directions.
    sticky("dns.query.name", &[], Buffer::DnsQueriesRrname),
    sticky("dns.answer.name", &[], Buffer::DnsAnswersRrname),
    parse("dns.opcode", &[], Payload, |b, n, v, _| b.app_number(n, v)),
    parse("dns.rcode", &[], Payload, |b, n, v, _| b.app_number(n, v)),
    parse("dns.rrtype", &[], Payload, |b, n, v, _| b.app_number(n, v)),
    sticky("mdns.queries.rrname", &[], Buffer::MdnsQueriesRrname),
    sticky("mdns.answers.rrname", &[], Buffer::MdnsAnswersRrname),
    sticky(
        "mdns.authorities.rrname",
        &[],
        Buffer::MdnsAuthoritiesRrname,
    ),
    sticky(
        "mdns.additionals.rrname",
        &[],
        Buffer::MdnsAdditionalsRrname,
    ),
    sticky("mdns.response.rrname", &[], Buffer::MdnsResponseRrname),
    // TLS.
    sticky("tls.subjectaltname", &[], Buffer::TlsSubjectAltName),
    sticky("tls.alpn", &[], Buffer::TlsAlpn),
    sticky("tls.random", &[], Buffer::TlsRandom),
    sticky("tls.random_time", &[], Buffer::TlsRandomTime),
    sticky("tls.random_bytes", &[], Buffer::TlsRandomBytes),
    parse("tls.cert_chain_len", &[], Payload, |b, n, v, _| {
        b.app_number(n, v)
    }),
    parse("tls.subject", &[], Payload, |b, n, v, _| {
        b.tls_legacy_string(n, v)
    }),
    parse("tls.issuerdn", &[], Payload, |b, n, v, _| {
        b.tls_legacy_string(n, v)
    }),
    parse("tls.fingerprint", &[], Payload, |b, n, v, _| {
        b.tls_legacy_string(n, v)
    }),
    parse("tls_cert_notbefore", &[], Payload, |b, n, v, _| {
        b.tls_validity(n, v)
    }),
    parse("tls_cert_notafter", &[], Payload, |b, n, v, _| {
        b.tls_validity(n, v)
    }),
    parse("tls_cert_expired", &[], Payload, |b, n, v, _| {
        b.tls_validity(n, v)
    }),
    parse("tls_cert_valid", &[], Payload, |b, n, v, _| {
        b.tls_validity(n, v)
    }),
    // Suricata writes the certificate chain to disk after a match; the engine stores no files, so the rule alerts
    // as in Suricata, without the copy (nothing the rule matches depends on the keyword).
    info("tls.store"),
    // SMTP envelope and the message's headers (Suricata 8's `smtp.*` and `email.*`).
    sticky("smtp.helo", &[], Buffer::SmtpHelo),
    sticky("smtp.mail_from", &[], Buffer::SmtpMailFrom),
    sticky("smtp.rcpt_to", &[], Buffer::SmtpRcptTo),
    sticky("email.from", &[], Buffer::EmailFrom),
    sticky("email.subject", &[], Buffer::EmailSubject),
    sticky("email.to", &[], Buffer::EmailTo),
    sticky("email.cc", &[], Buffer::EmailCc),
    sticky("email.date", &[], Buffer::EmailDate),
    sticky("email.message_id", &[], Buffer::EmailMessageId),
    sticky("email.x_mailer", &[], Buffer::EmailXMailer),
    sticky("email.received", &[], Buffer::EmailReceived),
    sticky("email.url", &[], Buffer::EmailUrl),
    // SIP messages and their bodies' session descriptions (Suricata 8's `sip.*` and `sdp.*`).
    sticky("sip.method", &[], Buffer::SipMethod),
    sticky("sip.uri", &[], Buffer::SipUri),
    sticky("sip.request_line", &[], Buffer::SipRequestLine),
    sticky("sip.stat_code", &[], Buffer::SipStatCode),
    sticky("sip.stat_msg", &[], Buffer::SipStatMsg),
    sticky("sip.response_line", &[], Buffer::SipResponseLine),
    sticky("sip.protocol", &[], Buffer::SipProtocol),
    sticky("sip.from", &[], Buffer::SipFrom),
    sticky("sip.to", &[], Buffer::SipTo),
    sticky("sip.via", &[], Buffer::SipVia),
    sticky("sip.user_agent", &[], Buffer::SipUserAgent),
    sticky("sip.content_type", &[], Buffer::SipContentType),
    sticky("sip.content_length", &[], Buffer::SipContentLength),
    sticky("sdp.origin", &[], Buffer::SdpOrigin),
    sticky("sdp.session_name", &[], Buffer::SdpSessionName),
    sticky("sdp.session_info", &[], Buffer::SdpSessionInfo),
    sticky("sdp.uri", &[], Buffer::SdpUri),
    sticky("sdp.email", &[], Buffer::SdpEmail),
    sticky("sdp.phone_number", &[], Buffer::SdpPhoneNumber),
    sticky("sdp.connection_data", &[], Buffer::SdpConnectionData),
    sticky("sdp.bandwidth", &[], Buffer::SdpBandwidth),
    sticky("sdp.time", &[], Buffer::SdpTime),
    sticky("sdp.repeat_time", &[], Buffer::SdpRepeatTime),
    sticky("sdp.timezone", &[], Buffer::SdpTimezone),
    sticky("sdp.encryption_key", &[], Buffer::SdpEncryptionKey),
    sticky("sdp.attribute", &[], Buffer::SdpAttribute),
    sticky("sdp.media.media", &[], Buffer::SdpMediaMedia),
    sticky("sdp.media.media_info", &[], Buffer::SdpMediaMediaInfo),
    sticky(
        "sdp.media.connection_data",
        &[],
        Buffer::SdpMediaConnectionData,
    ),
    sticky(
        "sdp.media.encryption_key",
        &[],
        Buffer::SdpMediaEncryptionKey,
    ),
    // FTP transactions (Suricata 8's `ftp.*`): the command and its argument, the replies and their codes, the
    // announced data port and mode, whether the reply came.
    sticky("ftp.command", &[], Buffer::FtpCommand),
    sticky("ftp.command_data", &[], Buffer::FtpCommandData),
    sticky("ftp.reply", &[], Buffer::FtpReply),
    sticky("ftp.completion_code", &[], Buffer::FtpCompletionCode),
    parse("ftp.dynamic_port", &[], Payload, |b, n, v, _| {
        b.app_number(n, v)
    }),
    parse("ftp.mode", &[], Payload, |b, n, v, _| b.ftp_flag(n, v)),
    parse("ftp.reply_received", &[], Payload, |b, n, v, _| {
        b.ftp_flag(n, v)
    }),
    // QUIC (and `ja3.hash`, `ja3.string`, `ja4.hash` above, which Suricata inspects on QUIC flows too).
    sticky("quic.version", &[], Buffer::QuicVersion),
    sticky("quic.sni", &[], Buffer::QuicSni),
    sticky("quic.ua", &[], Buffer::QuicUa),
    sticky("quic.cyu.hash", &[], Buffer::QuicCyuHash),
    sticky("quic.cyu.string", &[], Buffer::QuicCyuString),
    // HTTP/2 (the `http.*` buffers above are filled from HTTP/2 streams too).
    parse("http2.frametype", &[], Payload, |b, n, v, _| {
        b.app_number(n, v)
    }),
    parse("http2.errorcode", &[], Payload, |b, n, v, _| {
        b.app_number(n, v)
    }),
    parse("http2.priority", &[], Payload, |b, n, v, _| {
        b.app_number(n, v)
    }),
    parse("http2.window", &[], Payload, |b, n, v, _| {
        b.app_number(n, v)
    }),
    parse("http2.size_update", &[], Payload, |b, n, v, _| {
        b.app_number(n, v)
    }),
    parse("http2.settings", &[], Payload, |b, _, v, _| {
        b.http2_settings(v)
    }),
    sticky("http2.header_name", &[], Buffer::Http2HeaderName),
    // Files, on every carrier (HTTP, SMTP, FTP data, SMB, ...).
    sticky("file.name", &[], Buffer::FileName),
    sticky("file.magic", &[], Buffer::FileMagic),
    parse("filename", &[], Payload, |b, n, v, _| b.file_legacy(n, v)),
    parse("fileext", &[], Payload, |b, n, v, _| b.file_legacy(n, v)),
    parse("filemagic", &[], Payload, |b, n, v, _| b.file_legacy(n, v)),
    parse("filesize", &[], Payload, |b, _, v, _| b.filesize(v)),
    parse("filemd5", &[], Payload, |b, n, v, ctx| {
        b.filehash(n, v, ctx)
    }),
    parse("filesha1", &[], Payload, |b, n, v, ctx| {
        b.filehash(n, v, ctx)
    }),
    parse("filesha256", &[], Payload, |b, n, v, ctx| {
        b.filehash(n, v, ctx)
    }),
    parse("filestore", &[], Flow, |b, _, v, _| b.filestore(v)),
    parse("ftpdata_command", &[], Payload, |b, _, v, _| {
        b.ftpdata_command(v)
    }),
    // Snort's `http_*` keywords.
    modifier("http_uri", PBuf::Fixed(Buffer::HttpUri)),
    modifier("http_raw_uri", PBuf::Fixed(Buffer::HttpRawUri)),
    modifier("http_method", PBuf::Fixed(Buffer::HttpMethod)),
    modifier("http_header", PBuf::Header),
    modifier("http_raw_header", PBuf::RawHeader),
    modifier("http_client_body", PBuf::Fixed(Buffer::HttpRequestBody)),
    modifier("http_server_body", PBuf::Fixed(Buffer::HttpResponseBody)),
    modifier("http_cookie", PBuf::Fixed(Buffer::HttpCookie)),
    modifier("http_user_agent", PBuf::Fixed(Buffer::HttpUserAgent)),
    modifier("http_host", PBuf::Fixed(Buffer::HttpHost)),
    modifier("http_raw_host", PBuf::Fixed(Buffer::HttpRawHost)),
    modifier("http_stat_code", PBuf::Fixed(Buffer::HttpStatCode)),
    modifier("http_stat_msg", PBuf::Fixed(Buffer::HttpStatMsg)),
];

/// The keyword named `name` (its name or an alias).
pub fn lookup(name: &str) -> Option<&'static Keyword> {
    static INDEX: OnceLock<HashMap<&'static str, &'static Keyword>> = OnceLock::new();
    INDEX
        .get_or_init(|| {
            let mut m = HashMap::new();
            for k in KEYWORDS {
                for n in std::iter::once(&k.name).chain(k.aliases) {
                    m.insert(*n, k);
                }
            }
            m
        })
        .get(name)
        .copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_aliases_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for k in KEYWORDS {
            for n in std::iter::once(&k.name).chain(k.aliases) {
                assert!(seen.insert(*n), "{n} appears twice in the keyword table");
                assert!(std::ptr::eq(lookup(n).unwrap(), k));
            }
        }
        assert!(lookup("no_such_keyword").is_none());
    }

    #[test]
    fn every_buffer_has_its_index_and_a_sticky_keyword() {
        for (i, b) in Buffer::ALL.iter().enumerate() {
            assert_eq!(b.index(), i, "{b:?}");
            if b.is_app() {
                let k = KEYWORDS
                    .iter()
                    .find(|k| matches!(k.handler, Handler::Sticky(PBuf::Fixed(x)) if x == *b))
                    .or_else(|| {
                        // The sided HTTP buffers are named by `http.header`, `http.header.raw`, `file.data`;
                        // the DCE/RPC call header by the conditions that read it.
                        let sided = [
                            (Buffer::DcerpcHeader, "dcerpc.iface"),
                            (Buffer::Krb5MsgType, "krb5_msg_type"),
                            (Buffer::Http2FrameType, "http2.frametype"),
                            (Buffer::Http2ErrorCode, "http2.errorcode"),
                            (Buffer::Http2Priority, "http2.priority"),
                            (Buffer::Http2Window, "http2.window"),
                            (Buffer::Http2SizeUpdate, "http2.size_update"),
                            (Buffer::Http2Settings, "http2.settings"),
                            (Buffer::TlsVersion, "tls.version"),
                            (Buffer::FtpBounce, "ftpbounce"),
                            (Buffer::FtpDynamicPort, "ftp.dynamic_port"),
                            (Buffer::FtpMode, "ftp.mode"),
                            (Buffer::FtpReplyReceived, "ftp.reply_received"),
                            (Buffer::DnsEvents, "app-layer-event"),
                            (Buffer::DnsOpcode, "dns.opcode"),
                            (Buffer::SmbVersion, "smb.version"),
                            (Buffer::DnsRcode, "dns.rcode"),
                            (Buffer::DnsRrtype, "dns.rrtype"),
                            (Buffer::TlsCertValidity, "tls_cert_notbefore"),
                            (Buffer::TlsCertChainLen, "tls.cert_chain_len"),
                            (Buffer::FtpEvents, "app-layer-event"),
                            (Buffer::HttpEvents, "app-layer-event"),
                            (Buffer::SmtpEvents, "app-layer-event"),
                            (Buffer::Krb5Events, "app-layer-event"),
                            (Buffer::Krb5ErrCode, "krb5_err_code"),
                            (Buffer::Krb5TicketEncryption, "krb5.ticket_encryption"),
                            (Buffer::HttpHeader, "http.header"),
                            (Buffer::HttpRawHeader, "http.header.raw"),
                            (Buffer::HttpRequestHeader, "http.header"),
                            (Buffer::HttpResponseHeader, "http.header"),
                            (Buffer::HttpRequestRawHeader, "http.header.raw"),
                            (Buffer::HttpResponseRawHeader, "http.header.raw"),
                            (Buffer::SmtpFileData, "file.data"),
                            (Buffer::FtpDataFileData, "file.data"),
                            (Buffer::SmbFileData, "file.data"),
                            (Buffer::HttpRequestFileData, "file.data"),
                            (Buffer::HttpFileData, "file.data"),
                            (Buffer::FileMeta, "filesize"),
                            (Buffer::FtpDataCommand, "ftpdata_command"),
                        ];
                        sided
                            .iter()
                            .find(|(s, _)| s == b)
                            .and_then(|(_, n)| lookup(n))
                    });
                let k = k.unwrap_or_else(|| panic!("no keyword selects {b:?}"));
                assert!(b.name().starts_with(k.name), "{b:?} named {}", k.name);
            }
        }
    }

    #[test]
    fn sticky_buffers_name_their_buffer() {
        for k in KEYWORDS {
            assert_eq!(
                k.buffer().is_some(),
                matches!(k.kind, Kind::StickyBuffer | Kind::BufferModifier),
                "{}",
                k.name
            );
        }
        assert_eq!(
            lookup("file_data").and_then(Keyword::buffer),
            Some("file.data")
        );
    }
}
