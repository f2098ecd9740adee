//! Arbitrary mail messages through the SMTP parser and its MIME decoder: no panic, bounded files and URL lists
//! (`email.url`: no URL holds a byte that ends one), and a message split into segments anywhere gives the same
//! files and URLs as the message in one piece (the decoder's streaming promise).
//! Same entry points as the unit tests of `crates/protocols/src/mail/` (`SmtpParser`, `EventSink::file`).
//!
//! Input: `[stride][message bytes]`; the message is sent after `MAIL FROM`/`DATA` and ended by the lone dot.
#![no_main]

use flowbundle_protocols::mail::smtp::{SmtpLimits, SmtpParser};
use flowbundle_protocols::{AppEvent, Direction, EventSink, FileData, Parser};
use libfuzzer_sys::fuzz_target;

#[derive(Default)]
struct Files(Vec<(u64, Vec<u8>, Vec<u8>, u64)>, Vec<String>);

impl EventSink for Files {
    fn event(&mut self, event: AppEvent) {
        if let AppEvent::Smtp(s) = event
            && let Some(e) = s.email
        {
            self.1.extend(e.url);
        }
    }
    fn file(&mut self, f: &FileData<'_>) {
        self.0
            .push((f.tx_id, f.name.to_vec(), f.data.to_vec(), f.size));
    }
}

fn run(session: &[u8], stride: usize, limits: SmtpLimits) -> Files {
    let mut p = SmtpParser::new(limits);
    let mut out = Files::default();
    p.parse(Direction::ToClient, b"220 hi\r\n", 0, &mut out);
    for c in session.chunks(stride.max(1)) {
        p.parse(Direction::ToServer, c, 0, &mut out);
    }
    p.finish(&mut out);
    out
}

fuzz_target!(|data: &[u8]| {
    let Some((&stride, message)) = data.split_first() else {
        return;
    };
    let mut session = b"EHLO x\r\nMAIL FROM:<a@b>\r\nRCPT TO:<c@d>\r\nDATA\r\n".to_vec();
    session.extend_from_slice(message);
    session.extend_from_slice(b"\r\n.\r\nQUIT\r\n");
    let limits = SmtpLimits {
        file_cap: 4096,
        ..SmtpLimits::default()
    };
    let whole = run(&session, usize::MAX, limits);
    for (_, name, kept, size) in &whole.0 {
        assert!(kept.len() <= limits.file_cap && kept.len() as u64 <= *size);
        assert!(name.len() <= 4096);
    }
    assert!(whole.1.len() <= flowbundle_protocols::mail::smtp::MAX_LIST);
    for url in &whole.1 {
        assert!(
            !url.contains([' ', '"', '\'', '<', '>', ']', '\t', '\r', '\n']),
            "{url:?}"
        );
    }
    let split = run(&session, usize::from(stride) + 1, limits);
    assert_eq!(whole.0, split.0, "segments changed the files");
    assert_eq!(whole.1, split.1, "segments changed the URLs");
});
