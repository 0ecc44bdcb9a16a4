//! Ctrl-C and SIGTERM, the same way for every long command (`audit-sweep`,
//! `demo`, `watch`): the first signal asks the run to drain and stop, a
//! second aborts; the exit code says which signal (130 or 143).

use crate::verdict::exit;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The signal that interrupted the run: 0 none, else its number (SIGINT 2,
/// SIGTERM 15); the exit code is 128 + it.
static SIGNAL: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

/// The exit code of an interrupted run: 130 after Ctrl-C (SIGINT), 143
/// after SIGTERM.
pub fn interrupted_exit() -> i32 {
    match SIGNAL.load(Ordering::SeqCst) {
        0 => exit::INTERRUPTED,
        n => 128 + n,
    }
}

/// Installs the Ctrl-C and SIGTERM handler: the first signal sets `stop`
/// (in-flight fetches are abandoned, the manifest stays resumable), a second
/// aborts at once. SIGTERM (a CI job cancelled, `kill`, a pod stopped) is
/// handled exactly like Ctrl-C.
pub fn interrupt_flag() -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    let on_signal = {
        let flag = stop.clone();
        move |signal: i32| {
            let by = if signal == 15 { " after SIGTERM" } else { "" };
            if flag.swap(true, Ordering::SeqCst) {
                crate::note!("agy-audit: aborted");
                std::process::exit(interrupted_exit());
            }
            SIGNAL.store(signal, Ordering::SeqCst);
            crate::note!("agy-audit: interrupted: draining{by} (in-flight fetches are abandoned; interrupt again to abort)");
        }
    };
    #[cfg(unix)]
    {
        use signal_hook::consts::{SIGINT, SIGTERM};
        if let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) {
            let _ = std::thread::Builder::new()
                .name("agy-audit-signals".into())
                .spawn(move || {
                    for s in signals.forever() {
                        on_signal(s);
                    }
                });
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrlc::set_handler(move || on_signal(2));
    }
    stop
}
