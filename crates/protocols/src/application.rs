//! Applications named from host names: the service behind a flow (`Google`, `YouTube`, `NetFlix`, ...), reported
//! beside the master protocol as nDPI reports `TLS.Google` or `QUIC.YouTube`.
//!
//! ## Where the host name comes from
//! The TLS ClientHello's server name (SNI), the QUIC Initial's SNI, the HTTP `Host` header and the DNS question's
//! name: whichever a flow's parser reports first names the flow's application.
//!
//! ## The table
//! [`HOST_SUFFIXES`] is the project's own list of the public domains well-known services run under (their
//! documented service and content-delivery domains), spelled with nDPI's application names so that results
//! compare with nDPI's at the `MASTER.APP` level. A host matches an entry when it is the suffix itself or ends
//! with `.` + the suffix (so `ads.google.com` matches `google.com`, `notgoogle.com` does not); the longest
//! matching suffix wins, so a specific service (`maps.googleapis.com`: `GoogleMaps`) is named before its company's
//! catch-all (`googleapis.com`: `GoogleServices`). Matching ignores ASCII case and one trailing dot.
//!
//! To add a service, add its domains to the table (kept sorted by suffix: a unit test checks it). A service that
//! shares a content-delivery domain with others and is told apart only by its hosts' first label
//! (`igcdn-photos-*.akamaihd.net`) goes in [`HOST_LABEL_PREFIXES`], consulted when no suffix matches.

pub mod ip_owner;

/// What named a flow's application, strongest first. Stronger evidence is never replaced by weaker: the first
/// name a flow gets from its payload stays, and the address owner is asked only when the payload named nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ApplicationEvidence {
    /// The content itself names the service (an OCSP request's media type, a DCE/RPC interface, STUN attributes).
    Content,
    /// A host name the flow carried: TLS or QUIC SNI, HTTP `Host`, a DNS question ([`HOST_SUFFIXES`]).
    HostName,
    /// The names of the server's TLS certificate, for a flow whose client sent no SNI
    /// ([`application_for_certificate`]).
    Certificate,
    /// The service's registered port, on a flow whose protocol the payload confirmed (TLS on 853 is DNS over TLS), or
    /// the port a service's operator documents on its own addresses (TLS to 5223 of Apple's block is its push
    /// service).
    Port,
    /// Only the organisation that holds the server's address ([`ip_owner`]): the weakest evidence.
    IpOwner,
}

impl ApplicationEvidence {
    /// The name written in EVE and the summary.
    pub fn name(self) -> &'static str {
        match self {
            ApplicationEvidence::Content => "content",
            ApplicationEvidence::HostName => "host_name",
            ApplicationEvidence::Certificate => "certificate",
            ApplicationEvidence::Port => "port",
            ApplicationEvidence::IpOwner => "ip_owner",
        }
    }
}

/// The application a server certificate names: its subject's common name if listed, else the first listed of
/// `names` (its subjectAltName DNS names). A wildcard's `*.` is dropped (`*.waze.com` names `waze.com`'s service).
/// Asked for TLS flows whose client sent no SNI, or one that names no listed service, since TLS 1.2 servers send
/// their certificate in the clear (nDPI names `TLS.Waze` from `*.waze.com` the same way).
pub fn application_for_certificate(
    subject: Option<&str>,
    names: &[String],
) -> Option<&'static str> {
    let unwild = |n: &str| -> Option<&'static str> {
        application_for_host(n.strip_prefix("*.").unwrap_or(n))
    };
    subject
        .and_then(common_name)
        .and_then(unwild)
        .or_else(|| names.iter().find_map(|n| unwild(n)))
}

/// The last `CN=` value of a distinguished name written as `C=US, O=Example, CN=www.example.com`.
fn common_name(dn: &str) -> Option<&str> {
    let at = dn.rfind("CN=")?;
    if at > 0 && !dn[..at].ends_with(", ") {
        return None;
    }
    let v = &dn[at + 3..];
    Some(v.split(", ").next().unwrap_or(v)).filter(|v| !v.is_empty())
}

/// `(domain suffix, application)`, sorted by suffix (lowercase).
pub const HOST_SUFFIXES: &[(&str, &str)] = &[
    ("1kxun.com", "1kxun"),
    ("1kxun.mobi", "1kxun"),
    ("aaplimg.com", "Apple"),
    ("abuse.ch", "Cybersec"),
    ("accuweather.com", "AccuWeather"),
    ("activision.com", "Activision"),
    ("addlive.io", "SnapchatCall"),
    ("adobeconnect.com", "AdobeConnect"),
    ("alexa.amazon.com", "AmazonAlexa"),
    ("alibaba.com", "Alibaba"),
    ("alicdn.com", "Alibaba"),
    ("aliexpress.com", "Alibaba"),
    ("alipay.com", "Alibaba"),
    ("aliyun.com", "Alibaba"),
    ("aliyuncs.com", "Alibaba"),
    ("amazon-adsystem.com", "Amazon"),
    ("amazon.co.jp", "Amazon"),
    ("amazon.co.uk", "Amazon"),
    ("amazon.com", "Amazon"),
    ("amazon.de", "Amazon"),
    ("amazon.it", "Amazon"),
    ("amazonalexa.com", "AmazonAlexa"),
    ("amazonaws.com", "AmazonAWS"),
    ("amazonvideo.com", "AmazonVideo"),
    ("ampproject.org", "Google"),
    ("android.clients.google.com", "PlayStore"),
    ("android.com", "Google"),
    ("app-measurement.com", "Google"),
    ("appcenter.ms", "Microsoft"),
    ("apple-dns.net", "Apple"),
    ("apple.com", "Apple"),
    ("apple.news", "Apple"),
    ("avs-alexa-na.amazon.com", "AmazonAlexa"),
    ("badoo.com", "Badoo"),
    ("bing.com", "Microsoft"),
    ("bloomberg.com", "Bloomberg"),
    ("bsky.app", "Bluesky"),
    ("bsky.network", "Bluesky"),
    ("bsky.social", "Bluesky"),
    ("cdn.whatsapp.net", "WhatsAppFiles"),
    ("cdninstagram.com", "Instagram"),
    ("chat.google.com", "GoogleChat"),
    ("classroom.google.com", "GoogleClassroom"),
    ("cloud.huawei.com", "HuaweiCloud"),
    ("cloud.yandex.com", "YandexCloud"),
    ("cloud.yandex.ru", "YandexCloud"),
    ("cloudflare-dns.com", "DoH_DoT"),
    ("cloudflare.com", "Cloudflare"),
    ("cloudflareclient.com", "CloudflareWarp"),
    ("cloudfront.net", "AmazonAWS"),
    ("cnn.com", "CNN"),
    ("codmwest.com", "CoD_Mobile"),
    ("crossout.net", "GaijinEntertainment"),
    ("datasaver.googleapis.com", "DataSaver"),
    ("dbankcdn.com", "HuaweiCloud"),
    ("deezer.com", "Deezer"),
    ("dingtalk.com", "DingTalk"),
    ("direct.yandex.kz", "YandexDirect"),
    ("direct.yandex.ru", "YandexDirect"),
    ("discord.com", "Discord"),
    ("discord.gg", "Discord"),
    ("discordapp.com", "Discord"),
    ("discordapp.net", "Discord"),
    ("disk.yandex.com", "YandexDisk"),
    ("disk.yandex.kz", "YandexDisk"),
    ("disk.yandex.ru", "YandexDisk"),
    ("disney-plus.net", "DisneyPlus"),
    ("disneyplus.com", "DisneyPlus"),
    ("dns.adguard.com", "DoH_DoT"),
    ("dns.google", "DoH_DoT"),
    ("dns.google.com", "DoH_DoT"),
    ("dota2.com", "Dota2"),
    ("doubleclick.net", "Google"),
    ("drive.google.com", "GoogleDrive"),
    ("dropbox.com", "Dropbox"),
    ("dropboxapi.com", "Dropbox"),
    ("ea.com", "ElectronicArts"),
    ("easebar.com", "NetEaseGames"),
    ("ebay.com", "eBay"),
    ("edge-mqtt.facebook.com", "FacebookMessenger"),
    ("facebook.com", "Facebook"),
    ("facebook.net", "Facebook"),
    ("fbcdn.net", "Facebook"),
    ("fbsbx.com", "Facebook"),
    ("feelinsonice-hrd.appspot.com", "Snapchat"),
    ("feelinsonice.appspot.com", "Snapchat"),
    ("fuze.com", "Fuze"),
    ("g.whatsapp.net", "WhatsApp"),
    ("gaijin.net", "GaijinEntertainment"),
    ("gaijinent.com", "GaijinEntertainment"),
    ("ggpht.com", "YouTube"),
    ("github.com", "Github"),
    ("githubusercontent.com", "Github"),
    ("gitlab.com", "GitLab"),
    ("gmail.com", "GMail"),
    ("google-analytics.com", "Google"),
    ("google.co.uk", "Google"),
    ("google.com", "Google"),
    ("google.de", "Google"),
    ("google.es", "Google"),
    ("google.fr", "Google"),
    ("google.it", "Google"),
    ("googleadservices.com", "Google"),
    ("googleapis.com", "GoogleServices"),
    ("googlesyndication.com", "Google"),
    ("googletagmanager.com", "GoogleServices"),
    ("googletagservices.com", "GoogleServices"),
    ("googleusercontent.com", "Google"),
    ("googlevideo.com", "YouTube"),
    ("googlezip.net", "DataSaver"),
    ("gstatic.com", "Google"),
    ("guzzoni.apple.com", "AppleSiri"),
    ("hulu.com", "Hulu"),
    ("hulustream.com", "Hulu"),
    ("icloud-content.com", "AppleiCloud"),
    ("icloud.com", "AppleiCloud"),
    ("iflix.com", "IFLIX"),
    ("images-amazon.com", "Amazon"),
    ("instagram.com", "Instagram"),
    ("iqiyi.com", "iQIYI"),
    ("iqiyipic.com", "iQIYI"),
    ("itunes.apple.com", "AppleiTunes"),
    ("kakao.com", "KakaoTalk"),
    ("kakaocdn.net", "KakaoTalk"),
    ("last.fm", "LastFM"),
    ("like.video", "Likee"),
    ("likee.video", "Likee"),
    ("likeevideo.com", "Likee"),
    ("line-apps.com", "Line"),
    ("line-scdn.net", "Line"),
    ("line.me", "Line"),
    ("line.naver.jp", "Line"),
    ("linkedin.com", "LinkedIn"),
    ("live.com", "Microsoft"),
    ("mail.google.com", "GMail"),
    ("mail.yandex.com", "YandexMail"),
    ("mail.yandex.kz", "YandexMail"),
    ("mail.yandex.ru", "YandexMail"),
    ("maps.google.com", "GoogleMaps"),
    ("maps.googleapis.com", "GoogleMaps"),
    ("market.yandex.ru", "YandexMarket"),
    ("mastodon.social", "Mastodon"),
    ("media-amazon.com", "Amazon"),
    ("meet.google.com", "GoogleMeet"),
    ("messenger.com", "FacebookMessenger"),
    ("metrika.yandex.kz", "YandexMetrika"),
    ("metrika.yandex.ru", "YandexMetrika"),
    ("microsoft.com", "Microsoft"),
    ("microsoftonline.com", "Microsoft"),
    ("mmg-fna.whatsapp.net", "WhatsAppFiles"),
    ("mmg.whatsapp.net", "WhatsAppFiles"),
    ("mmstat.com", "Alibaba"),
    ("mozilla.com", "Mozilla"),
    ("mozilla.net", "Mozilla"),
    ("mozilla.org", "Mozilla"),
    ("mqtt-mini.facebook.com", "FacebookMessenger"),
    ("msads.net", "Microsoft"),
    ("msedge.net", "Microsoft"),
    ("msn.com", "MSN"),
    ("mtalk.google.com", "GoogleServices"),
    ("mullvad.net", "Mullvad"),
    ("mumble.info", "Mumble"),
    ("music.yandex.kz", "YandexMusic"),
    ("music.yandex.ru", "YandexMusic"),
    ("mzstatic.com", "AppleiTunes"),
    ("netflix.com", "NetFlix"),
    ("netflix.net", "NetFlix"),
    ("newrelic.com", "ADS_Analytic_Track"),
    ("nflxext.com", "NetFlix"),
    ("nflximg.com", "NetFlix"),
    ("nflximg.net", "NetFlix"),
    ("nflxso.net", "NetFlix"),
    ("nflxvideo.net", "NetFlix"),
    ("nintendo.com", "Nintendo"),
    ("nintendo.net", "Nintendo"),
    ("nordcdn.com", "NordVPN"),
    ("nordvpn.com", "NordVPN"),
    ("ntop.org", "ntop"),
    ("nvidiagrid.net", "GeForceNow"),
    ("ocsp.apple.com", "OCSP"),
    ("ocsp.digicert.com", "OCSP"),
    ("ocsp.globalsign.com", "OCSP"),
    ("ocsp.int-x3.letsencrypt.org", "OCSP"),
    ("ocsp.pki.goog", "OCSP"),
    ("ocsp.sectigo.com", "OCSP"),
    ("office.com", "Microsoft"),
    ("office365.com", "Microsoft"),
    ("onedrive.com", "Microsoft"),
    ("onedrive.live.com", "MS_OneDrive"),
    ("origin-a.akamaihd.net", "ElectronicArts"),
    ("outlook.com", "Outlook"),
    ("pandora.com", "Pandora"),
    ("pastebin.com", "Pastebin"),
    ("pinimg.com", "Pinterest"),
    ("pinterest.co.uk", "Pinterest"),
    ("pinterest.com", "Pinterest"),
    ("pinterest.de", "Pinterest"),
    ("pinterest.fr", "Pinterest"),
    ("playstation.com", "Playstation"),
    ("playstation.net", "Playstation"),
    ("pluralsight.com", "Pluralsight"),
    ("polargrizzly.com", "TunnelBear"),
    ("primevideo.com", "AmazonVideo"),
    ("protonvpn.com", "ProtonVPN"),
    ("push.apple.com", "ApplePush"),
    ("qq.com", "QQ"),
    ("qy.net", "iQIYI"),
    ("rbxcdn.com", "Roblox"),
    ("redd.it", "Reddit"),
    ("reddit.com", "Reddit"),
    ("redditmedia.com", "Reddit"),
    ("redditstatic.com", "Reddit"),
    ("roblox.com", "Roblox"),
    ("scdn.co", "Spotify"),
    ("scorecardresearch.com", "ADS_Analytic_Track"),
    ("signal.org", "Signal"),
    ("simplednscrypt.org", "DNScrypt"),
    ("sina.cn", "Sina"),
    ("sina.com", "Sina"),
    ("sina.com.cn", "Sina"),
    ("sinaimg.cn", "Sina"),
    ("sinajs.cn", "Sina"),
    ("skype.com", "Skype_Teams"),
    ("slack-edge.com", "Slack"),
    ("slack.com", "Slack"),
    ("snapchat.com", "Snapchat"),
    ("sndcdn.com", "SoundCloud"),
    ("softether-network.net", "Softether"),
    ("soundcloud.com", "SoundCloud"),
    ("spotify.com", "Spotify"),
    ("spotifycdn.com", "Spotify"),
    ("ssl-images-amazon.com", "Amazon"),
    ("steamcommunity.com", "Steam"),
    ("steampowered.com", "Steam"),
    ("steamserver.net", "Steam"),
    ("steamstatic.com", "Steam"),
    ("surfshark.com", "SurfShark"),
    ("t.me", "Telegram"),
    ("teams.live.com", "Teams"),
    ("teams.microsoft.com", "Teams"),
    ("teams.office.com", "Teams"),
    ("telegram.me", "Telegram"),
    ("telegram.org", "Telegram"),
    ("threads.net", "Threads"),
    ("tiktok.com", "TikTok"),
    ("tiktokcdn.com", "TikTok"),
    ("tiktokv.com", "TikTok"),
    ("truphone.com", "TruPhone"),
    ("tumblr.com", "Tumblr"),
    ("tunnelbear.com", "TunnelBear"),
    ("twimg.com", "Twitter"),
    ("twitch.tv", "Twitch"),
    ("twitter.com", "Twitter"),
    ("ubuntu.com", "UbuntuONE"),
    ("upload.youtube.com", "YouTubeUpload"),
    ("utorrent.com", "BitTorrent"),
    ("vimeo.com", "Vimeo"),
    ("vimeocdn.com", "Vimeo"),
    ("vpn-api.proton.me", "ProtonVPN"),
    ("waze.com", "Waze"),
    ("webex.com", "Webex"),
    ("weibo.cn", "SinaWeibo"),
    ("weibo.com", "SinaWeibo"),
    ("whatsapp.com", "WhatsApp"),
    ("whatsapp.net", "WhatsApp"),
    ("whispersystems.org", "Signal"),
    ("wikimedia.org", "Wikipedia"),
    ("wikipedia.de", "Wikipedia"),
    ("wikipedia.fr", "Wikipedia"),
    ("wikipedia.it", "Wikipedia"),
    ("wikipedia.org", "Wikipedia"),
    ("windowsupdate.com", "WindowsUpdate"),
    ("worldofwarcraft.com", "WorldOfWarcraft"),
    ("x.com", "Twitter"),
    ("xbox.com", "Xbox"),
    ("xboxlive.com", "Xbox"),
    ("xiaomi.com", "Xiaomi"),
    ("xiaomi.net", "Xiaomi"),
    ("yahoo.com", "Yahoo"),
    ("yandex.com", "Yandex"),
    ("yandex.kz", "Yandex"),
    ("yandex.net", "Yandex"),
    ("yandex.ru", "Yandex"),
    ("yastatic.net", "Yandex"),
    ("youtu.be", "YouTube"),
    ("youtube.com", "YouTube"),
    ("ytimg.com", "YouTube"),
    ("zattoo.com", "Zattoo"),
    ("zoom.us", "Zoom"),
];

/// Services whose hosts live under a shared content-delivery domain and are told apart by the first label's
/// prefix: `(label prefix, domain, application)`. Instagram's media hosts on Akamai are
/// `igcdn-photos-<shard>.akamaihd.net` and `igcdn-videos-<shard>.akamaihd.net`.
pub const HOST_LABEL_PREFIXES: &[(&str, &str, &str)] = &[
    ("igcdn-photos-", "akamaihd.net", "Instagram"),
    ("igcdn-videos-", "akamaihd.net", "Instagram"),
];

/// The application `host` belongs to, from [`HOST_SUFFIXES`], then [`HOST_LABEL_PREFIXES`]; `None` when no entry
/// matches. No allocation.
pub fn application_for_host(host: &str) -> Option<&'static str> {
    let host = host.strip_suffix('.').unwrap_or(host).as_bytes();
    by_suffix(host).or_else(|| by_label_prefix(host))
}

/// The [`HOST_LABEL_PREFIXES`] entry whose prefix starts `host`'s first label and whose domain is the rest.
fn by_label_prefix(host: &[u8]) -> Option<&'static str> {
    let dot = host.iter().position(|&b| b == b'.')?;
    let (label, domain) = (&host[..dot], &host[dot + 1..]);
    HOST_LABEL_PREFIXES
        .iter()
        .find(|(prefix, d, _)| {
            label.len() > prefix.len()
                && label[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes())
                && domain.eq_ignore_ascii_case(d.as_bytes())
        })
        .map(|e| e.2)
}

/// The [`HOST_SUFFIXES`] entry with the longest suffix of `host` at a label boundary.
fn by_suffix(host: &[u8]) -> Option<&'static str> {
    // Candidate suffixes, longest first: the whole host, then after each dot.
    let mut start = 0usize;
    loop {
        let suffix = host.get(start..)?;
        if let Ok(i) = HOST_SUFFIXES.binary_search_by(|(s, _)| cmp_ci(s.as_bytes(), suffix)) {
            return HOST_SUFFIXES.get(i).map(|e| e.1);
        }
        let dot = suffix.iter().position(|&b| b == b'.')?;
        start += dot + 1;
    }
}

/// `a` against `b` with `b` lowercased (table entries are lowercase already).
fn cmp_ci(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    a.iter()
        .copied()
        .cmp(b.iter().map(|c| c.to_ascii_lowercase()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn certificates_name_by_common_name_then_alternative_names() {
        let san = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            application_for_certificate(
                Some("C=US, ST=California, L=Mountain View, O=Google Inc, CN=*.waze.com"),
                &san(&["*.waze.com"])
            ),
            Some("Waze")
        );
        // The subject names no listed service: the first alternative name that does.
        assert_eq!(
            application_for_certificate(
                Some("O=Example, CN=edge.example.net"),
                &san(&["www.webex.com.au", "www.webex.com"])
            ),
            Some("Webex")
        );
        assert_eq!(
            application_for_certificate(None, &san(&["*.facebook.com", "*.fbcdn.net"])),
            Some("Facebook")
        );
        assert_eq!(
            application_for_certificate(Some("CN=localhost"), &san(&["localhost"])),
            None
        );
        // `CN=` inside another attribute's value is not the common name.
        assert_eq!(
            application_for_certificate(Some("O=XCN=google.com"), &[]),
            None
        );
        assert_eq!(application_for_certificate(Some("CN="), &[]), None);
    }

    #[test]
    fn label_prefixes_under_a_shared_domain() {
        assert_eq!(
            application_for_host("igcdn-photos-g-a.akamaihd.net"),
            Some("Instagram")
        );
        assert_eq!(
            application_for_host("IGCDN-VIDEOS-A-1.akamaihd.net."),
            Some("Instagram")
        );
        assert_eq!(application_for_host("other-a.akamaihd.net"), None);
        assert_eq!(application_for_host("igcdn-photos-a.example.net"), None);
        assert_eq!(application_for_host("igcdn-photos-.akamaihd.net"), None);
        assert_eq!(application_for_host("x.igcdn-photos-a.akamaihd.net"), None);
    }

    #[test]
    fn the_table_is_sorted_lowercase_and_unique() {
        for w in HOST_SUFFIXES.windows(2) {
            assert!(w[0].0 < w[1].0, "{} before {}", w[0].0, w[1].0);
        }
        for (s, a) in HOST_SUFFIXES {
            assert_eq!(*s, s.to_ascii_lowercase());
            assert!(!s.starts_with('.') && !s.ends_with('.') && !a.is_empty());
        }
    }

    #[test]
    fn the_longest_suffix_at_a_label_boundary_wins() {
        assert_eq!(application_for_host("www.google.com"), Some("Google"));
        assert_eq!(application_for_host("google.com"), Some("Google"));
        assert_eq!(application_for_host("WWW.Google.COM."), Some("Google"));
        assert_eq!(application_for_host("notgoogle.com"), None);
        assert_eq!(
            application_for_host("maps.googleapis.com"),
            Some("GoogleMaps")
        );
        assert_eq!(application_for_host("mail.google.com"), Some("GMail"));
        assert_eq!(
            application_for_host("fonts.googleapis.com"),
            Some("GoogleServices")
        );
        assert_eq!(
            application_for_host("r3---sn-4g5e6nsz.googlevideo.com"),
            Some("YouTube")
        );
        assert_eq!(application_for_host("example.org"), None);
        assert_eq!(application_for_host(""), None);
        assert_eq!(application_for_host("."), None);
    }
}
