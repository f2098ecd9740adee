//! Abandoning a run when one of its threads dies.
//!
//! A streaming run's threads wait for one another: the reader for a packet buffer a worker frees, or for a place in
//! a policy's queue; the workers for packets, or for the reader's end; the calling thread (the collector) for the
//! workers to leave. A thread that panics never does what the others wait for, so before this a worker that panicked
//! hung the run (the reader waited for ever for the buffers it held). Now every thread of a run runs under an
//! [`OnUnwind`] guard: a panic raises the run's [`Abort`] before the thread's stack unwinds further. Every wait of
//! the runtime looks at the flag (the workers between two packets and at least every park timeout, the reader
//! between two packets and in each back-off), and the caller's hook ([`StreamConfig::on_abort`]) ends the waits the
//! feed makes (an arena closed: `flowbundle_ingest::PacketArena::close`). Each of those waits is bounded by a park
//! or sleep of at most a few milliseconds, so the run ends within milliseconds, and the runtime reports which thread
//! died and why ([`Aborted`]).
//!
//! The run's threads set up (a worker builds its engine state, [`Workload::local`]) before they meet at the run's
//! [`Start`]. A `std::sync::Barrier` there could not be abandoned: a thread that panicked while setting up never
//! arrived, and the others waited for it for ever. [`Start::wait`] looks at the flag while it waits, so a thread that
//! dies before the start abandons the run like one that dies later.
//!
//! [`Workload::local`]: flowbundle_types::Workload::local
//!
//! [`StreamConfig::on_abort`]: crate::StreamConfig::on_abort

use std::any::Any;
use std::sync::atomic::{AtomicBool, Ordering::*};
use std::sync::{Condvar, Mutex};

use crate::park::PARK_TIMEOUT;

/// Why a run was abandoned: the thread that died first (`reader`, `worker-N`, `stageG-worker-N`, `collector`) and
/// its panic message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{thread} panicked: {message}")]
pub struct Aborted {
    pub thread: String,
    pub message: String,
}

/// The run's abort flag, who raised it first, and the caller's hook.
pub(crate) struct Abort<'h> {
    raised: AtomicBool,
    first: Mutex<Option<String>>,
    hook: Option<&'h (dyn Fn() + Sync)>,
}

impl<'h> Abort<'h> {
    pub(crate) fn new(hook: Option<&'h (dyn Fn() + Sync)>) -> Self {
        Abort {
            raised: AtomicBool::new(false),
            first: Mutex::new(None),
            hook,
        }
    }

    /// Whether the run is being abandoned.
    #[inline]
    pub(crate) fn is_raised(&self) -> bool {
        self.raised.load(Relaxed)
    }

    /// Abandons the run because `thread` died: the first call notes the thread and calls the hook.
    pub(crate) fn raise(&self, thread: &str) {
        {
            let mut first = self.first.lock().unwrap_or_else(|e| e.into_inner());
            if first.is_none() {
                *first = Some(thread.to_string());
            }
        }
        if !self.raised.swap(true, SeqCst)
            && let Some(h) = self.hook
        {
            h();
        }
    }

    /// The thread that raised the flag first.
    pub(crate) fn first(&self) -> Option<String> {
        self.first.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The report of an abandoned run, from the panics of its threads (name and payload, in any order): the first
    /// thread's, when it is among them.
    pub(crate) fn report(&self, panics: Vec<(String, Box<dyn Any + Send>)>) -> Aborted {
        let first = self.first();
        let mut panics: Vec<(String, String)> = panics
            .into_iter()
            .map(|(t, p)| (t, panic_message(p.as_ref())))
            .collect();
        let at = first
            .as_ref()
            .and_then(|f| panics.iter().position(|(t, _)| t == f))
            .unwrap_or(0);
        match (panics.len() > at).then(|| panics.swap_remove(at)) {
            Some((thread, message)) => Aborted { thread, message },
            None => Aborted {
                thread: first.unwrap_or_else(|| "a thread".into()),
                message: "the run was abandoned".into(),
            },
        }
    }
}

/// The rendezvous that starts a run: no thread goes on before every thread of the run has arrived, unless the run
/// is abandoned meanwhile (see the module documentation).
pub(crate) struct Start {
    parties: usize,
    arrived: Mutex<usize>,
    all_in: Condvar,
}

impl Start {
    /// A start for `parties` threads.
    pub(crate) fn new(parties: usize) -> Self {
        Start {
            parties,
            arrived: Mutex::new(0),
            all_in: Condvar::new(),
        }
    }

    /// Arrives and waits for the others: `true` once all have arrived, `false` when the run is abandoned first (the
    /// thread then leaves without running). The flag is looked at at least every [`PARK_TIMEOUT`], as in every other
    /// wait of the run.
    pub(crate) fn wait(&self, abort: &Abort<'_>) -> bool {
        let mut arrived = self.arrived.lock().unwrap_or_else(|e| e.into_inner());
        *arrived += 1;
        if *arrived >= self.parties {
            self.all_in.notify_all();
            return true;
        }
        loop {
            if *arrived >= self.parties {
                return true;
            }
            if abort.is_raised() {
                return false;
            }
            arrived = self
                .all_in
                .wait_timeout(arrived, PARK_TIMEOUT)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
}

std::thread_local! {
    /// The calling thread belongs to a run that reports its panic as [`Aborted`] (see [`panic_reported_by_run`]).
    static REPORTED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether a panic on the calling thread now is one that the runtime reports itself, in the [`Aborted`] its run
/// returns (the thread's name and the panic's message): a thread of a streaming or staged run (worker, reader), or
/// the collector while the run calls it. A binary's panic hook may then leave the report to the run, so that the user
/// reads one line instead of the default hook's message and backtrace hint before it. Panics in the preloaded run
/// ([`run`](crate::run)) go on in the caller, which reports them, so they are not counted here.
pub fn panic_reported_by_run() -> bool {
    REPORTED.with(std::cell::Cell::get)
}

/// Marks the calling thread as one whose panics the run reports (a thread of a streaming or staged run, for its
/// whole life).
pub(crate) fn reported_by_run() {
    REPORTED.with(|r| r.set(true));
}

/// Calls `f` (the collector) with the calling thread's panics reported by the run meanwhile.
pub(crate) fn reporting<T>(f: impl FnOnce() -> T) -> T {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            REPORTED.with(|r| r.set(self.0));
        }
    }
    let _restore = Restore(REPORTED.with(|r| r.replace(true)));
    f()
}

/// Raises `abort` for `thread` when dropped while the thread panics.
pub(crate) struct OnUnwind<'a, 'h> {
    pub(crate) abort: &'a Abort<'h>,
    pub(crate) thread: &'a str,
}

impl Drop for OnUnwind<'_, '_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.abort.raise(self.thread);
        }
    }
}

/// A panic's message: its payload when that is a string, else a placeholder.
pub(crate) fn panic_message(p: &(dyn Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "(a panic without a message)".into()
    }
}
