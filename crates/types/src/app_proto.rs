//! Application protocol identifiers, named as nDPI names them, with Suricata's `app_proto` names where Suricata has
//! the protocol.
//!
//! The enumeration is generated from one table ([`app_protocols!`]): the variants, [`AppProto::ALL`], the name tables
//! and the stable codes all come from it, so adding a protocol is one row and nothing can drift out of step.

/// Generates [`AppProto`] from rows `Variant => "nDPI name"` with an optional `eve "suricata name"` (default: the
/// nDPI name) and an optional `#insecure` mark (a protocol unsafe by design: credentials or content in the clear,
/// obsolete, or abused; nDPI's `NDPI_UNSAFE_PROTOCOL` risk).
macro_rules! app_protocols {
    ($($variant:ident => $ndpi:literal $(, eve $eve:literal)? $(, #$insecure:ident)?;)*) => {
        /// An application protocol. The string form is nDPI's protocol name, so flowbundle's output compares with
        /// ndpiReader's at the master-protocol level.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
        #[repr(u16)]
        #[non_exhaustive]
        pub enum AppProto {
            $($variant,)*
        }

        impl AppProto {
            /// Every protocol, in declaration order (the order of [`AppProto::index`]).
            pub const ALL: &'static [AppProto] = &[$(AppProto::$variant,)*];

            /// nDPI's name for the protocol.
            pub fn name(self) -> &'static str {
                match self {
                    $(AppProto::$variant => $ndpi,)*
                }
            }

            /// The EVE `app_proto` value Suricata uses where Suricata knows the protocol (lowercase), else nDPI's
            /// name; `failed` for [`AppProto::Unknown`].
            pub fn eve_name(self) -> &'static str {
                match self {
                    $(AppProto::$variant => app_protocols!(@eve $ndpi $(, $eve)?),)*
                }
            }

            /// Whether the protocol is unsafe by design (marked `#insecure` in the table): clear-text logins
            /// (Telnet, FTP, POP3, IMAP, RSH), SMB version 1, and protocols nDPI flags the same way (Gnutella,
            /// cryptocurrency mining).
            pub fn is_insecure(self) -> bool {
                match self {
                    $(AppProto::$variant => app_protocols!(@insecure $($insecure)?),)*
                }
            }
        }
    };
    (@eve $ndpi:literal) => { $ndpi };
    (@eve $ndpi:literal, $eve:literal) => { $eve };
    (@insecure) => { false };
    (@insecure insecure) => { true };
}

app_protocols! {
    Unknown => "Unknown", eve "failed";
    Http => "HTTP", eve "http";
    Tls => "TLS", eve "tls";
    Quic => "QUIC", eve "quic";
    Dns => "DNS", eve "dns";
    Mdns => "MDNS";
    Llmnr => "LLMNR";
    Dtls => "DTLS";
    HttpProxy => "HTTP_Proxy", eve "http";
    HttpConnect => "HTTP_Connect", eve "http";
    Ssh => "SSH", eve "ssh";
    Smtp => "SMTP", eve "smtp";
    Pop3 => "POP3", eve "pop3", #insecure;
    Imap => "IMAP", eve "imap", #insecure;
    Ftp => "FTP_CONTROL", eve "ftp", #insecure;
    FtpData => "FTP_DATA", eve "ftp-data";
    Smb => "SMBv23", eve "smb";
    Ntp => "NTP", eve "ntp";
    Dhcp => "DHCP", eve "dhcp";
    Sip => "SIP", eve "sip";
    Rtp => "RTP";
    Rtcp => "RTCP";
    BitTorrent => "BitTorrent", eve "bittorrent-dht";
    Mqtt => "MQTT", eve "mqtt";
    Rdp => "RDP", eve "rdp";
    Redis => "RESP";
    Mysql => "MySQL";
    Postgres => "PostgreSQL", eve "pgsql";
    NetBios => "NetBIOS";
    Snmp => "SNMP", eve "snmp";
    Stun => "STUN";
    Smbv1 => "SMBv1", eve "smb", #insecure;
    Srtp => "SRTP";
    Ftps => "FTPS";
    Smtps => "SMTPS";
    Pops => "POPS";
    Imaps => "IMAPS";
    Dhcpv6 => "DHCPV6";
    Slp => "Service_Location_Protocol";
    Gnutella => "Gnutella", #insecure;
    Ssdp => "SSDP";
    Radius => "Radius";
    Kerberos => "Kerberos", eve "krb5";
    Syslog => "Syslog";
    IpSec => "IPSec", eve "ike";
    OpenVpn => "OpenVPN";
    WireGuard => "WireGuard";
    Jabber => "Jabber";
    Rtsp => "RTSP", eve "rtsp";
    MsSqlTds => "MsSQL-TDS";
    Zabbix => "Zabbix";
    Kafka => "Kafka";
    Coap => "COAP";
    Dnp3 => "DNP3", eve "dnp3";
    Bacnet => "BACnet";
    NatPmp => "NAT-PMP";
    Discord => "Discord";
    Bjnp => "BJNP";
    Fix => "FIX";
    Spotify => "Spotify";
    TuyaLp => "TuyaLP";
    Ubntac2 => "UBNTAC2";
    SourceEngine => "Source_Engine";
    Avast => "AVAST";
    HpVirtgrp => "HP_VIRTGRP";
    Oicq => "OICQ";
    WhatsApp => "WhatsApp";
    Bitcoin => "BITCOIN";
    Teredo => "Teredo";
    Rmcp => "RMCP";
    Wsd => "WSD";
    Syncthing => "Syncthing";
    Munin => "Munin";
    Ethereum => "ETHEREUM";
    Elasticsearch => "Elasticsearch";
    Dcerpc => "DCERPC", eve "dcerpc";
    EthernetIp => "EthernetIP", eve "enip";
    Hislip => "HiSLIP";
    Dropbox => "Dropbox";
    Socks => "SOCKS";
    SomeIp => "SOMEIP";
    DnsCrypt => "DNScrypt";
    HaProxy => "HAProxy";
    RipeAtlas => "RipeAtlas";
    Kcp => "KCP";
    Mining => "Mining", #insecure;
    Monero => "Monero";
    Cassandra => "Cassandra";
    Ldp => "LDP";
    PtpV2 => "PTPv2";
    RakNet => "RakNet";
    Usenet => "Usenet";
    Ldap => "LDAP", eve "ldap";
    Bgp => "BGP";
    Corba => "Corba";
    KnxNetIp => "KNXnet_IP";
    Gearman => "Gearman";
    Git => "Git";
    Hl7 => "HL7";
    Jrmi => "JRMI";
    Pptp => "PPTP";
    Rsync => "RSYNC";
    Stomp => "STOMP";
    Telnet => "Telnet", eve "telnet", #insecure;
    TeamSpeak => "TeamSpeak";
    Nats => "Nats";
    FastCgi => "FastCGI";
    CheckMk => "CHECKMK";
    Citrix => "Citrix";
    OpenFlow => "OpenFlow";
    Http2 => "HTTP2", eve "http2";
    Oracle => "Oracle";
    Modbus => "Modbus", eve "modbus";
    NetFlow => "NetFlow";
    SFlow => "sFlow";
    Rtps => "RTPS";
    TivoConnect => "TiVoConnect";
    Irc => "IRC";
    Rsh => "RSH", #insecure;
    TocaBoca => "TocaBoca";
    Telegram => "Telegram";
}

impl AppProto {
    /// The position in [`AppProto::ALL`]: a small stable number per protocol (cost-file codes are this plus one).
    #[inline]
    pub fn index(self) -> usize {
        self as usize
    }

    /// The protocol at `index` in [`AppProto::ALL`].
    pub fn from_index(index: usize) -> Option<AppProto> {
        AppProto::ALL.get(index).copied()
    }

    /// The protocol nDPI calls `name` (exact spelling).
    pub fn from_name(name: &str) -> Option<AppProto> {
        AppProto::ALL.iter().copied().find(|p| p.name() == name)
    }
}

impl std::fmt::Display for AppProto {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_the_enumeration() {
        for (i, &p) in AppProto::ALL.iter().enumerate() {
            assert_eq!(p.index(), i);
            assert_eq!(AppProto::from_index(i), Some(p));
            assert_eq!(
                AppProto::from_name(p.name()),
                Some(p),
                "{p:?}: names are unique"
            );
        }
        assert_eq!(AppProto::ALL[0], AppProto::Unknown);
    }

    #[test]
    fn eve_names_follow_suricata_where_it_has_the_protocol() {
        assert_eq!(AppProto::Unknown.eve_name(), "failed");
        assert_eq!(AppProto::Http.eve_name(), "http");
        assert_eq!(AppProto::HttpProxy.eve_name(), "http");
        assert_eq!(AppProto::Kerberos.eve_name(), "krb5");
        assert_eq!(AppProto::Dcerpc.eve_name(), "dcerpc");
        assert_eq!(AppProto::Postgres.eve_name(), "pgsql");
        assert_eq!(AppProto::EthernetIp.eve_name(), "enip");
        assert_eq!(AppProto::Zabbix.eve_name(), "Zabbix");
    }

    #[test]
    fn insecure_marks_follow_the_table() {
        assert!(
            AppProto::Telnet.is_insecure()
                && AppProto::Ftp.is_insecure()
                && AppProto::Smbv1.is_insecure()
        );
        assert!(
            !AppProto::Ssh.is_insecure()
                && !AppProto::Smb.is_insecure()
                && !AppProto::Unknown.is_insecure()
        );
    }
}
