//! Diagnostics of the library crates (`tracing` events) on standard error.
//!
//! Warnings are on by default; `RUST_LOG` chooses otherwise with `tracing-subscriber`'s `EnvFilter` syntax
//! (`RUST_LOG=info`, `RUST_LOG=flowbundle_scheduler=debug`, `RUST_LOG=off`). An unreadable `RUST_LOG` falls back to
//! the readable part of it, as `EnvFilter` does, rather than stopping the command. One line per event, without a
//! timestamp or module path: `WARN FBQ table has fewer than 100 entries per worker: ... fbq_table=64 workers=2`.
//! Colour only on a terminal, and never when `NO_COLOR` is set.

use std::io::IsTerminal;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::filter::LevelFilter;

/// The level shown when `RUST_LOG` does not say.
const DEFAULT_LEVEL: LevelFilter = LevelFilter::WARN;

/// The event filter for a `RUST_LOG` value (`None`: unset).
pub fn filter(rust_log: Option<&str>) -> EnvFilter {
    EnvFilter::builder()
        .with_default_directive(DEFAULT_LEVEL.into())
        .parse_lossy(rust_log.unwrap_or(""))
}

/// Installs the subscriber for the process. Called once, first thing in `main`.
pub fn init() {
    let rust_log = std::env::var("RUST_LOG").ok();
    let ansi = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    // Only fails when a subscriber is already installed, which leaves that one in charge.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter(rust_log.as_deref()))
        .with_writer(std::io::stderr)
        .with_ansi(ansi)
        .without_time()
        .with_target(false)
        .compact()
        .try_init();
}

#[cfg(test)]
mod tests {
    use super::filter;
    use tracing::Level;
    use tracing_subscriber::layer::SubscriberExt;

    /// Whether an event at `level` passes the filter built from `rust_log`.
    fn shown(rust_log: Option<&str>, level: Level) -> bool {
        let seen = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = seen.clone();
        let subscriber = tracing_subscriber::registry()
            .with(filter(rust_log))
            .with(Probe(flag));
        tracing::subscriber::with_default(subscriber, || match level {
            Level::ERROR => tracing::error!("probe"),
            Level::WARN => tracing::warn!("probe"),
            Level::INFO => tracing::info!("probe"),
            Level::DEBUG => tracing::debug!("probe"),
            Level::TRACE => tracing::trace!("probe"),
        });
        seen.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// A layer that records whether any event reached it.
    struct Probe(std::sync::Arc<std::sync::atomic::AtomicBool>);

    impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Probe {
        fn on_event(
            &self,
            _event: &tracing::Event<'_>,
            _ctx: tracing_subscriber::layer::Context<'_, S>,
        ) {
            self.0.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    }

    #[test]
    fn warnings_are_shown_by_default_and_info_is_not() {
        assert!(shown(None, Level::ERROR));
        assert!(shown(None, Level::WARN));
        assert!(!shown(None, Level::INFO));
        assert!(!shown(None, Level::DEBUG));
    }

    #[test]
    fn rust_log_chooses_the_level() {
        assert!(shown(Some("info"), Level::INFO));
        assert!(!shown(Some("info"), Level::DEBUG));
        assert!(!shown(Some("error"), Level::WARN));
        assert!(!shown(Some("off"), Level::ERROR));
        assert!(shown(Some("trace"), Level::TRACE));
    }

    #[test]
    fn an_unreadable_rust_log_keeps_the_default() {
        assert!(shown(Some("=garbage=["), Level::WARN));
        assert!(!shown(Some("=garbage=["), Level::INFO));
    }
}
