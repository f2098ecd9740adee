//! The extra detectors (every protocol module but the core HTTP, TLS, QUIC and DNS), in the order the
//! registry should probe them: the most specific first (a fixed magic or a strict length check), the ones
//! that need several payloads or loose text matches later, so that a cheap certain answer wins and an unknown
//! flow is rejected by the early, cheap checks.
//!
//! ## Why this order
//! * [`before_tls`] holds the only detectors that must beat a core detector: nDPI names TLS on 465/993/995
//!   `SMTPS`/`POPS`/`IMAPS`, so those look at the port before `TLS` sees the ClientHello.
//! * Everything else follows the core detectors. None of them can be certain on an HTTP request line, a TLS
//!   record, a QUIC long header or a DNS message (checked on every DPI flow of the nDPI captures by
//!   `tests/ground_truth_extra.rs` with `GT_EXTRA_ALL=1`), so their position only matters among themselves: magic numbers
//!   (`SSH-`, `ZBXD`, `GND`, `\x13BitTorrent`, ...) and exact-length structures first, port-assisted checks
//!   next, and last the detectors that wait for a second payload (RTP continuity, the ICE window of STUN, the
//!   command after a mail/FTP greeting).
//!
//! ## What it costs
//! A detector that does not recognise a payload answers from its first one to eight bytes (or a port
//! comparison), so an unknown payload costs about 3 ns per extra detector on top of the core registry:
//! `classifier_cost` in `tests/ground_truth_extra.rs` measures 298 ns per probed payload for the 9 core detectors and
//! 501 ns for the full registry of 120 over every flow of the nDPI captures (test profile, opt-level 1, one run on a
//! loaded machine), while the full registry probes fewer payloads in all (5,697 vs 7,263) because it decides more
//! flows early.

use crate::Detector;
use crate::mail::{Mail, MailDetector};
use crate::sql::{Sql, SqlDetector};

/// The extra detectors that must be probed before TLS: the STARTTLS / implicit-TLS mail flavours, which name a
/// TLS flow on 465/993/995 after the port as nDPI does (`SMTPS`, `IMAPS`, `POPS`).
pub fn before_tls() -> Vec<Box<dyn Detector>> {
    vec![
        Box::new(MailDetector {
            mail: Mail::Smtp,
            tls: true,
        }),
        Box::new(MailDetector {
            mail: Mail::Pop3,
            tls: true,
        }),
        Box::new(MailDetector {
            mail: Mail::Imap,
            tls: true,
        }),
    ]
}

/// Every other extra detector, in probing order (after HTTP, TLS, QUIC, DNS).
pub fn detectors() -> Vec<Box<dyn Detector>> {
    vec![
        // Fixed magic numbers or strict structure, one payload.
        Box::new(crate::ssh::SshDetector),
        Box::new(crate::zabbix::ZabbixDetector),
        Box::new(crate::discord::DiscordDetector),
        Box::new(crate::bjnp::BjnpDetector),
        Box::new(crate::fix::FixDetector),
        Box::new(crate::spotify::SpotifyDetector),
        Box::new(crate::tuya::TuyaLpDetector),
        Box::new(crate::ubntac2::Ubntac2Detector),
        Box::new(crate::source_engine::SourceEngineDetector),
        Box::new(crate::avast::AvastDetector),
        Box::new(crate::hpvirtgrp::HpVirtgrpDetector),
        Box::new(crate::oicq::OicqDetector),
        Box::new(crate::whatsapp::WhatsAppDetector),
        Box::new(crate::bitcoin::BitcoinDetector),
        Box::new(crate::teredo::TeredoDetector),
        Box::new(crate::rmcp::RmcpDetector),
        Box::new(crate::wsd::WsdDetector),
        Box::new(crate::syncthing::SyncthingDetector),
        Box::new(crate::munin::MuninDetector),
        Box::new(crate::ethereum::EthereumDetector),
        Box::new(crate::elasticsearch::ElasticsearchDetector),
        Box::new(crate::dcerpc::DcerpcDetector),
        Box::new(crate::ethernetip::EthernetIpDetector),
        Box::new(crate::hislip::HislipDetector),
        Box::new(crate::haproxy::HaProxyDetector),
        Box::new(crate::ripe_atlas::RipeAtlasDetector),
        Box::new(crate::dropbox::DropboxDetector),
        Box::new(crate::someip::SomeIpDetector),
        Box::new(crate::raknet::RakNetDetector),
        Box::new(crate::monero::MoneroDetector),
        Box::new(crate::kcp::KcpDetector),
        Box::new(crate::ptp::PtpDetector),
        Box::new(crate::ldp::LdpDetector),
        Box::new(crate::cassandra::CassandraDetector),
        Box::new(crate::ldap::LdapDetector),
        Box::new(crate::stratum::StratumDetector),
        Box::new(crate::bgp::BgpDetector),
        Box::new(crate::giop::GiopDetector),
        Box::new(crate::gearman::GearmanDetector),
        Box::new(crate::git::GitDetector),
        Box::new(crate::hl7::Hl7Detector),
        Box::new(crate::jrmi::JrmiDetector),
        Box::new(crate::pptp::PptpDetector),
        Box::new(crate::rsync::RsyncDetector),
        Box::new(crate::http2::Http2Detector),
        Box::new(crate::citrix::CitrixDetector),
        Box::new(crate::checkmk::CheckMkDetector),
        Box::new(crate::rtps::RtpsDetector),
        Box::new(crate::tivo::TivoConnectDetector),
        Box::new(crate::teamspeak::TeamSpeakDetector),
        Box::new(crate::nats::NatsDetector),
        Box::new(crate::stomp::StompDetector),
        Box::new(crate::telnet::TelnetDetector),
        Box::new(crate::knxnet::KnxNetIpDetector),
        Box::new(crate::fastcgi::FastCgiDetector),
        Box::new(crate::oracle::OracleTnsDetector),
        Box::new(crate::openflow::OpenFlowDetector),
        Box::new(crate::netflow::NetFlowDetector),
        Box::new(crate::sflow::SFlowDetector),
        Box::new(crate::gnutella::GnutellaDetector),
        Box::new(crate::rtsp::RtspDetector),
        Box::new(crate::dnp3::Dnp3Detector),
        Box::new(crate::kerberos::KerberosDetector),
        Box::new(crate::radius::RadiusDetector),
        Box::new(crate::bacnet::BacnetDetector),
        Box::new(crate::ipsec::IpSecDetector),
        Box::new(crate::wireguard::WireGuardDetector),
        Box::new(crate::ssdp::SsdpDetector),
        Box::new(crate::coap::CoapDetector),
        Box::new(crate::natpmp::NatPmpDetector),
        Box::new(crate::tocaboca::TocaBocaDetector),
        Box::new(crate::telegram::TelegramDetector),
        Box::new(crate::syslog::SyslogDetector),
        Box::new(crate::kafka::KafkaDetector),
        Box::new(crate::jabber::JabberDetector),
        Box::new(crate::openvpn::OpenVpnDetector),
        Box::new(crate::bittorrent::BitTorrentDetector),
        Box::new(crate::smb::SmbDetector { v1: false }),
        Box::new(crate::smb::SmbDetector { v1: true }),
        Box::new(crate::netbios::NetBiosDetector),
        Box::new(crate::dhcp::DhcpDetector { v6: false }),
        Box::new(crate::dhcp::DhcpDetector { v6: true }),
        Box::new(crate::stun::IceMediaDetector { dtls: true }),
        Box::new(crate::stun::IceMediaDetector { dtls: false }),
        Box::new(crate::stun::StunDetector),
        Box::new(crate::snmp::SnmpDetector),
        Box::new(crate::ntp::NtpDetector),
        Box::new(crate::mqtt::MqttDetector),
        Box::new(crate::rdp::RdpDetector),
        Box::new(SqlDetector(Sql::MySql)),
        Box::new(SqlDetector(Sql::Postgres)),
        Box::new(SqlDetector(Sql::Tds)),
        Box::new(crate::redis::RedisDetector),
        Box::new(crate::slp::SlpDetector),
        Box::new(crate::sip::SipDetector),
        Box::new(crate::rtp::RtcpDetector),
        // Several payloads: continuity, a command after a greeting, or an answer that confirms a request.
        Box::new(crate::socks::SocksDetector),
        Box::new(crate::dnscrypt::DnsCryptDetector),
        Box::new(crate::nntp::NntpDetector),
        Box::new(crate::irc::IrcDetector),
        Box::new(crate::modbus::ModbusDetector),
        Box::new(crate::rsh::RshDetector),
        Box::new(crate::rtp::RtpDetector),
        Box::new(crate::ftp::FtpDetector { tls: false }),
        Box::new(crate::ftp::FtpDetector { tls: true }),
        Box::new(MailDetector {
            mail: Mail::Smtp,
            tls: false,
        }),
        Box::new(MailDetector {
            mail: Mail::Smtp,
            tls: true,
        }),
        Box::new(MailDetector {
            mail: Mail::Pop3,
            tls: false,
        }),
        Box::new(MailDetector {
            mail: Mail::Pop3,
            tls: true,
        }),
        Box::new(MailDetector {
            mail: Mail::Imap,
            tls: false,
        }),
        Box::new(MailDetector {
            mail: Mail::Imap,
            tls: true,
        }),
    ]
}
