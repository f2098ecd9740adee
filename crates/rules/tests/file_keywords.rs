//! The file keywords on the buffers every file carrier hands over: `file.name` and the legacy `filename` /
//! `fileext`, `file.magic` / `filemagic`, `filesize`, the hash lists (`filemd5`, `filesha1`, `filesha256`),
//! `filestore` and `ftpdata_command`, with negation and their parse errors.

use flowbundle_rules::file::meta;
use flowbundle_rules::{
    AlertRecord, Buffer, Direction, FlowMatchState, LoadOptions, PacketCtx, RuleSet, Transport,
    Vars,
};

fn opts() -> LoadOptions {
    LoadOptions {
        strict: true,
        vars: Vars::suricata_defaults(),
        ..LoadOptions::default()
    }
}

fn load(text: &str) -> RuleSet {
    match RuleSet::parse_with(&[("<text>", text.as_bytes())], &opts()) {
        Ok((rs, _)) => rs,
        Err(e) => panic!("rules do not load: {e}"),
    }
}

/// A scratch directory with a rule file and the lists beside it.
fn rules_dir(tag: &str, files: &[(&str, &str)]) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "flowbundle-file-keywords-{tag}-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    for (name, text) in files {
        std::fs::write(dir.join(name), text).unwrap();
    }
    dir
}

fn load_file(dir: &std::path::Path, text: &str) -> Result<RuleSet, String> {
    let path = dir.join("file.rules");
    std::fs::write(&path, text).unwrap();
    let name = path.to_string_lossy().into_owned();
    RuleSet::parse_with(&[(name.as_str(), text.as_bytes())], &opts())
        .map(|(rs, _)| rs)
        .map_err(|e| e.to_string())
}

/// One file of `app` (`http`, `smtp`, `ftp-data`, ...) handed to the rules as the engine hands it over.
struct File<'a> {
    app: &'static str,
    dir: Direction,
    name: &'a [u8],
    magic: Option<&'a str>,
    meta: [u8; flowbundle_rules::file::META_LEN],
    extra: &'a [(Buffer, &'a [u8])],
}

fn sids(rs: &RuleSet, f: &File<'_>) -> Vec<u32> {
    let mut sc = rs.scanner();
    let mut flow = FlowMatchState::default();
    let mut out: Vec<AlertRecord> = Vec::new();
    let c = PacketCtx {
        dir: f.dir,
        transport: Transport::Tcp,
        app_proto: Some(f.app),
        ..PacketCtx::default()
    };
    if !f.name.is_empty() {
        rs.scan_app(
            &mut sc,
            &mut flow,
            &c,
            0,
            Buffer::FileName,
            f.name,
            &mut out,
        );
    }
    if let Some(m) = f.magic {
        rs.scan_app(
            &mut sc,
            &mut flow,
            &c,
            0,
            Buffer::FileMagic,
            m.as_bytes(),
            &mut out,
        );
    }
    rs.scan_app(
        &mut sc,
        &mut flow,
        &c,
        0,
        Buffer::FileMeta,
        &f.meta,
        &mut out,
    );
    for &(b, data) in f.extra {
        rs.scan_app(&mut sc, &mut flow, &c, 0, b, data, &mut out);
    }
    let mut s: Vec<u32> = out.iter().map(|a| a.sid).collect();
    s.sort();
    s
}

fn file<'a>(app: &'static str, name: &'a [u8], size: u64) -> File<'a> {
    File {
        app,
        dir: Direction::ToClient,
        name,
        magic: None,
        meta: meta(true, size, None, None, None),
        extra: &[],
    }
}

#[test]
fn file_name_and_its_legacy_forms_with_negation() {
    // As suricata-verify's bug-2558 tests write them, on an HTTP file named by its URI path.
    let rs = load(
        r#"alert http any any -> any any (filestore; fileext:!"mp4"; sid:1;)
alert http any any -> any any (filestore; filename:!"2008.mp4"; sid:2;)
alert http any any -> any any (filestore; filename:!"tar.gz"; sid:3;)
alert http any any -> any any (file.name; content:"/a/expl/2008.mp4"; startswith; endswith; sid:4;)
alert http any any -> any any (fileext:"MP4"; sid:5;)
alert http any any -> any any (filename:"EXPL/"; sid:6;)
alert http any any -> any any (file.name; content:"EXPL"; sid:7;)
alert smtp any any -> any any (file.name; content:"2008"; sid:8;)
alert tcp any any -> any any (fileext:"mp4"; sid:9;)
"#,
    );
    assert_eq!(
        sids(&rs, &file("http", b"/a/expl/2008.mp4", 10)),
        [3, 4, 5, 6, 9]
    );
    // The same name on another carrier: the protocol-independent rules only.
    assert_eq!(sids(&rs, &file("smtp", b"/a/expl/2008.mp4", 10)), [8, 9]);
    // `fileext` wants the dot: a name that merely ends in the letters does not match.
    assert_eq!(sids(&rs, &file("http", b"/video/clipmp4", 10)), [1, 2, 3]);
}

#[test]
fn file_magic_and_filemagic() {
    let rs = load(
        r#"alert http any any -> any any (file.magic; content:"PE32"; sid:1;)
alert http any any -> any any (filemagic:"executable for ms windows"; sid:2;)
alert http any any -> any any (filemagic:"executable, for MS Windows"; sid:3;)
alert http any any -> any any (filemagic:!"PDF"; sid:4;)
alert ftp-data any any -> any any (filemagic:"PDF document"; sid:5;)
"#,
    );
    let mut f = file("http", b"/x.exe", 10);
    f.magic = Some("PE32 executable, for MS Windows");
    assert_eq!(sids(&rs, &f), [1, 3, 4]);
    let mut f = file("ftp-data", b"r.pdf", 10);
    f.magic = Some("PDF document");
    assert_eq!(sids(&rs, &f), [5]);
}

#[test]
fn filesize_on_closed_and_cut_files() {
    // suricata-verify's filesize-keyword rules: a 68-byte file.
    let rs = load(
        "alert tcp any any -> any any (filesize:<70; sid:1234;)\n\
         alert tcp any any -> any any (filesize:>50; sid:1235;)\n\
         alert tcp any any -> any any (filesize:68; sid:3;)\n\
         alert tcp any any -> any any (filesize:!68; sid:4;)\n\
         alert tcp any any -> any any (filesize:60<>70; sid:5;)\n\
         alert tcp any any -> any any (filesize:>=1KB; sid:6;)\n",
    );
    assert_eq!(sids(&rs, &file("smb", b"eicar", 68)), [3, 5, 1234, 1235]);
    // Cut short after 68 bytes: only what "bigger than" can tell.
    let mut cut = file("smb", b"eicar", 68);
    cut.meta = meta(false, 68, None, None, None);
    assert_eq!(sids(&rs, &cut), [1235]);
    // A file larger than any inspection cap: the size counts every byte.
    assert_eq!(sids(&rs, &file("http", b"big", 10 << 20)), [4, 6, 1235]);
}

#[test]
fn hash_lists_relative_to_the_rule_file_with_negation() {
    let md5 = [
        0x09, 0x0f, 0xe6, 0x07, 0xa5, 0xbe, 0x12, 0x28, 0x36, 0x26, 0x14, 0xcc, 0xaa, 0x08, 0x85,
        0x77,
    ];
    let sha1 = [0x11u8; 20];
    let sha256 = [0xabu8; 32];
    let dir = rules_dir(
        "lists",
        &[
            (
                "md5.list",
                "090fe607a5be1228362614ccaa088577 eicar\n# a comment\n\n",
            ),
            ("sha1.list", &"11".repeat(20)),
            ("sha256.list", &"AB".repeat(32)),
        ],
    );
    let rs = load_file(
        &dir,
        "alert http any any -> any any (filemd5:md5.list; sid:1;)\n\
         alert http any any -> any any (filemd5:!md5.list; sid:2;)\n\
         alert http any any -> any any (filesha1:sha1.list; sid:3;)\n\
         alert http any any -> any any (filesha256:sha256.list; filename:\"eicar\"; sid:4;)\n\
         alert http any any -> any any (filesha256:!sha256.list; sid:5;)\n",
    )
    .unwrap();
    let needs = rs.file_needs();
    assert!(needs.md5 && needs.sha1 && needs.sha256 && !needs.magic);
    let mut f = file("http", b"/eicar.com", 68);
    f.meta = meta(true, 68, Some(&md5), Some(&sha1), Some(&sha256));
    assert_eq!(sids(&rs, &f), [1, 3, 4]);
    f.meta = meta(true, 68, Some(&[0; 16]), Some(&[0; 20]), Some(&[0; 32]));
    assert_eq!(sids(&rs, &f), [2, 5]);
    // A cut file has no hashes: neither the list nor its negation matches.
    f.meta = meta(false, 68, Some(&md5), Some(&sha1), Some(&sha256));
    assert!(sids(&rs, &f).is_empty());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn ftpdata_command_with_file_data() {
    let rs = load(
        r#"alert ftp-data any any -> any any (ftpdata_command:stor; sid:1;)
alert ftp-data any any -> any any (ftpdata_command:retr; file.data; content:"%PDF"; sid:2;)
alert ftp-data any any -> any any (ftpdata_command:retr; filename:"report"; sid:3;)
"#,
    );
    let retr = [
        (Buffer::FtpDataCommand, b"RETR".as_slice()),
        (Buffer::FtpDataFileData, b"%PDF-1.4".as_slice()),
    ];
    let mut f = file("ftp-data", b"report.pdf", 8);
    f.extra = &retr;
    assert_eq!(sids(&rs, &f), [2, 3]);
    let stor = [(Buffer::FtpDataCommand, b"STOR".as_slice())];
    let mut f = file("ftp-data", b"up.bin", 8);
    f.dir = Direction::ToServer;
    f.extra = &stor;
    assert_eq!(sids(&rs, &f), [1]);
}

#[test]
fn parse_errors_name_the_file_and_line() {
    let dir = rules_dir(
        "errors",
        &[("bad.list", "090fe607a5be1228362614ccaa088577\nabc\n")],
    );
    for (rule, want) in [
        ("filesize:abc;", "filesize: invalid number `abc`"),
        ("filesize:10<>5;", "filesize: range `10<>5`"),
        ("filemd5:missing.list;", "cannot read hash list"),
        (
            "filemd5:bad.list;",
            "bad.list:2: filemd5 hash has 3 hex digits, expected 32",
        ),
        (
            "filestore:sideways;",
            "filestore: invalid direction `sideways`",
        ),
        (
            "filestore:both,forever;",
            "filestore: invalid scope `forever`",
        ),
        (
            "ftpdata_command:list;",
            "ftpdata_command: expected retr or stor",
        ),
        ("filename;", "filename needs a value"),
        ("fileext:\"\";", "fileext: empty content"),
    ] {
        let text = format!("alert http any any -> any any (msg:\"x\"; {rule} sid:1;)\n");
        let e = load_file(&dir, &text).unwrap_err();
        assert!(e.contains(want), "{rule}: {e}");
        assert!(e.contains("file.rules:1"), "{rule}: {e}");
    }
    // Accepted forms of filestore.
    for ok in [
        "filestore;",
        "filestore:request,file;",
        "filestore:to_client,flow;",
    ] {
        let text = format!("alert http any any -> any any ({ok} sid:1;)\n");
        assert!(load_file(&dir, &text).is_ok(), "{ok}");
    }
    std::fs::remove_dir_all(&dir).ok();
}
