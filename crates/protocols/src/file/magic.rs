//! A built-in table of file types, read from a file's first bytes, giving descriptions in the style of libmagic's
//! (`file(1)`), for `file.magic` / `filemagic` and EVE `fileinfo.magic`.
//!
//! Suricata asks libmagic; the engine is pure Rust, so it recognises the common types itself. The descriptions
//! start as libmagic's do (`PE32 executable`, `PDF document`, `Zip archive data`, `gzip compressed data`, `ELF`,
//! `PNG image data`, `JPEG image data`, `GIF image data`, `Composite Document File V2 Document`, `Microsoft Word
//! 2007+`), which is what rules match on (`filemagic:"executable"`, `file.magic; content:"PDF"`), but they are
//! shorter: libmagic appends details (versions, dimensions, architectures) that vary between its versions anyway,
//! and strings may differ from a given libmagic's for the rarer types.

/// The description of the file whose first bytes are `head`, when the table knows its type.
pub fn describe(head: &[u8]) -> Option<&'static str> {
    let starts = |m: &[u8]| head.starts_with(m);
    if starts(b"MZ") {
        return Some(pe(head));
    }
    if starts(b"\x7fELF") {
        return Some(match (head.get(4), head.get(16)) {
            (Some(1), Some(2)) => "ELF 32-bit executable",
            (Some(2), Some(2)) => "ELF 64-bit executable",
            (Some(1), Some(3)) => "ELF 32-bit shared object",
            (Some(2), Some(3)) => "ELF 64-bit shared object",
            (Some(1), Some(1)) => "ELF 32-bit relocatable",
            (Some(2), Some(1)) => "ELF 64-bit relocatable",
            (Some(1), _) => "ELF 32-bit",
            (Some(2), _) => "ELF 64-bit",
            _ => "ELF",
        });
    }
    if starts(b"%PDF-") {
        return Some("PDF document");
    }
    if starts(b"PK\x03\x04") {
        return Some(zip(head));
    }
    if starts(b"PK\x05\x06") {
        return Some("Zip archive data (empty)");
    }
    if starts(b"\x1f\x8b") {
        return Some("gzip compressed data");
    }
    if starts(b"BZh") && head.get(3).is_some_and(|b| (b'1'..=b'9').contains(b)) {
        return Some("bzip2 compressed data");
    }
    if starts(b"\xfd7zXZ\x00") {
        return Some("XZ compressed data");
    }
    if starts(b"7z\xbc\xaf\x27\x1c") {
        return Some("7-zip archive data");
    }
    if starts(b"Rar!\x1a\x07") {
        return Some("RAR archive data");
    }
    if head.get(257..262) == Some(b"ustar") {
        return Some("POSIX tar archive");
    }
    if starts(b"\x89PNG\r\n\x1a\n") {
        return Some("PNG image data");
    }
    if starts(b"\xff\xd8\xff") {
        return Some("JPEG image data");
    }
    if starts(b"GIF87a") || starts(b"GIF89a") {
        return Some("GIF image data");
    }
    if starts(b"BM") && head.len() >= 14 && head.get(6..10) == Some(&[0, 0, 0, 0]) {
        return Some("PC bitmap");
    }
    if starts(b"II*\x00") || starts(b"MM\x00*") {
        return Some("TIFF image data");
    }
    if starts(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1") {
        return Some("Composite Document File V2 Document");
    }
    if starts(b"{\\rtf") {
        return Some("Rich Text Format data");
    }
    if starts(b"\xca\xfe\xba\xbe") {
        return Some("compiled Java class data");
    }
    if starts(b"\xcf\xfa\xed\xfe") || starts(b"\xce\xfa\xed\xfe") {
        return Some("Mach-O executable");
    }
    if starts(b"#!") {
        return Some("script text executable");
    }
    if starts(b"ID3") {
        return Some("Audio file with ID3 version 2");
    }
    if head.get(4..8) == Some(b"ftyp") {
        return Some("ISO Media");
    }
    if starts(b"RIFF") && head.get(8..12) == Some(b"WAVE") {
        return Some("RIFF (little-endian) data, WAVE audio");
    }
    if starts(b"RIFF") && head.get(8..12) == Some(b"AVI ") {
        return Some("RIFF (little-endian) data, AVI");
    }
    if starts(b"FWS") || starts(b"CWS") || starts(b"ZWS") {
        return Some("Macromedia Flash data");
    }
    if starts(b"\x00asm") {
        return Some("WebAssembly (wasm) binary module");
    }
    text(head)
}

/// A DOS executable, or the PE it carries (the `PE\0\0` signature at the offset in the DOS header).
fn pe(head: &[u8]) -> &'static str {
    let at = head
        .get(0x3c..0x40)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize);
    let Some(at) = at else {
        return "MS-DOS executable";
    };
    if head.get(at..at + 4) != Some(b"PE\0\0") {
        return "MS-DOS executable";
    }
    // The optional header's magic: 0x10b PE32, 0x20b PE32+; the characteristics say DLL.
    let chars = head
        .get(at + 22..at + 24)
        .map_or(0, |b| u16::from_le_bytes([b[0], b[1]]));
    let magic = head
        .get(at + 24..at + 26)
        .map(|b| u16::from_le_bytes([b[0], b[1]]));
    let dll = chars & 0x2000 != 0;
    match (magic, dll) {
        (Some(0x20b), true) => "PE32+ executable (DLL), for MS Windows",
        (Some(0x20b), false) => "PE32+ executable, for MS Windows",
        (_, true) => "PE32 executable (DLL), for MS Windows",
        _ => "PE32 executable, for MS Windows",
    }
}

/// A zip archive, or the Office Open XML / OpenDocument / Java archive it is (read from the first entry's name).
fn zip(head: &[u8]) -> &'static str {
    let name_len = head
        .get(26..28)
        .map_or(0, |b| usize::from(u16::from_le_bytes([b[0], b[1]])));
    let name = head.get(30..30 + name_len).unwrap_or_default();
    let after = head.get(30 + name_len..).unwrap_or_default();
    let contains = |hay: &[u8], n: &[u8]| hay.windows(n.len()).any(|w| w == n);
    if name == b"mimetype" {
        if contains(after, b"opendocument.text") {
            return "OpenDocument Text";
        }
        if contains(after, b"opendocument.spreadsheet") {
            return "OpenDocument Spreadsheet";
        }
        return "OpenDocument";
    }
    if name.starts_with(b"word/") || contains(head, b"word/") {
        return "Microsoft Word 2007+";
    }
    if name.starts_with(b"xl/") || contains(head, b"xl/") {
        return "Microsoft Excel 2007+";
    }
    if name.starts_with(b"ppt/") || contains(head, b"ppt/") {
        return "Microsoft PowerPoint 2007+";
    }
    if name == b"[Content_Types].xml" {
        return "Microsoft OOXML";
    }
    if name.starts_with(b"META-INF/") {
        return "Java archive data (JAR)";
    }
    "Zip archive data"
}

/// Text types: HTML, XML, and plain ASCII / UTF-8 text.
fn text(head: &[u8]) -> Option<&'static str> {
    if head.is_empty() {
        return Some("empty");
    }
    let probe = &head[..head.len().min(512)];
    let trimmed = probe.trim_ascii_start();
    let lower: Vec<u8> = trimmed
        .iter()
        .take(16)
        .map(u8::to_ascii_lowercase)
        .collect();
    let printable = |b: &u8| matches!(b, b'\t' | b'\n' | b'\r' | 0x0c | 0x20..=0x7e);
    let ascii = probe.iter().all(printable);
    // UTF-8 without control characters; the probe may end inside a character.
    let utf8 = !ascii && {
        let valid = match std::str::from_utf8(probe) {
            Ok(s) => s,
            Err(e) if probe.len() - e.valid_up_to() < 4 && e.error_len().is_none() => {
                std::str::from_utf8(&probe[..e.valid_up_to()]).unwrap_or_default()
            }
            Err(_) => "",
        };
        !valid.is_empty() && valid.chars().all(|c| !c.is_control() || c.is_whitespace())
    };
    if !(ascii || utf8) {
        return Some("data");
    }
    if lower.starts_with(b"<!doctype html") || lower.starts_with(b"<html") {
        return Some("HTML document, ASCII text");
    }
    if lower.starts_with(b"<?xml") {
        return Some("XML document text");
    }
    Some(if ascii {
        "ASCII text"
    } else {
        "UTF-8 Unicode text"
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pe_file(magic: u16, chars: u16) -> Vec<u8> {
        let mut f = vec![0u8; 0x100];
        f[..2].copy_from_slice(b"MZ");
        f[0x3c..0x40].copy_from_slice(&0x80u32.to_le_bytes());
        f[0x80..0x84].copy_from_slice(b"PE\0\0");
        f[0x80 + 22..0x80 + 24].copy_from_slice(&chars.to_le_bytes());
        f[0x80 + 24..0x80 + 26].copy_from_slice(&magic.to_le_bytes());
        f
    }

    #[test]
    fn common_types() {
        assert_eq!(
            describe(&pe_file(0x10b, 0x102)),
            Some("PE32 executable, for MS Windows")
        );
        assert_eq!(
            describe(&pe_file(0x20b, 0x2022)),
            Some("PE32+ executable (DLL), for MS Windows")
        );
        assert_eq!(describe(b"MZ\x90\x00"), Some("MS-DOS executable"));
        assert_eq!(describe(b"%PDF-1.7\n"), Some("PDF document"));
        assert_eq!(describe(b"\x1f\x8b\x08\x00"), Some("gzip compressed data"));
        assert_eq!(
            describe(b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x02\0"),
            Some("ELF 64-bit executable")
        );
        assert_eq!(describe(b"\x89PNG\r\n\x1a\n...."), Some("PNG image data"));
        assert_eq!(describe(b"\xff\xd8\xff\xe0"), Some("JPEG image data"));
        assert_eq!(describe(b"GIF89a...."), Some("GIF image data"));
        assert_eq!(
            describe(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1\0\0"),
            Some("Composite Document File V2 Document")
        );
        let mut docx = b"PK\x03\x04".to_vec();
        docx.extend_from_slice(&[0; 22]);
        docx.extend_from_slice(&(19u16).to_le_bytes());
        docx.extend_from_slice(&[0, 0]);
        docx.extend_from_slice(b"[Content_Types].xml");
        docx.extend_from_slice(b"....word/document.xml");
        assert_eq!(describe(&docx), Some("Microsoft Word 2007+"));
        let mut zip = b"PK\x03\x04".to_vec();
        zip.extend_from_slice(&[0; 22]);
        zip.extend_from_slice(&(5u16).to_le_bytes());
        zip.extend_from_slice(&[0, 0]);
        zip.extend_from_slice(b"a.txt");
        assert_eq!(describe(&zip), Some("Zip archive data"));
        assert_eq!(
            describe(b"<!DOCTYPE html><html>"),
            Some("HTML document, ASCII text")
        );
        assert_eq!(describe(b"hello world\n"), Some("ASCII text"));
        assert_eq!(describe(b"\x00\x01\x02\x03"), Some("data"));
        assert_eq!(describe(b""), Some("empty"));
    }

    #[test]
    fn never_panics_on_short_or_odd_input() {
        for n in 0..64 {
            let b: Vec<u8> = (0..n).map(|i| (i * 37) as u8).collect();
            let _ = describe(&b);
            let mut mz = b"MZ".to_vec();
            mz.extend_from_slice(&b);
            let _ = describe(&mz);
            let mut pk = b"PK\x03\x04".to_vec();
            pk.extend_from_slice(&[0xff; 30]);
            pk.truncate(4 + n);
            let _ = describe(&pk);
        }
        let mut huge = vec![0u8; 0x40];
        huge[..2].copy_from_slice(b"MZ");
        huge[0x3c..0x40].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(describe(&huge), Some("MS-DOS executable"));
    }
}
