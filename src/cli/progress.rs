//! The sweep's terminal display, one [`SweepSink`]: indicatif bars per stage
//! on a terminal, one line per session otherwise, or only the summary. It
//! never decides anything; a sweep without it (`watch`, a test) audits the
//! same. Printing never fails the run (`crate::note!`).

use crate::manifest::Manifest;
use crate::pipeline::{
    sweep_to, Finish, Flow, Records, SessionResult, SinkError, SinkResult, SweepOptions, SweepSink,
    SweepSummary,
};
use crate::schema::Schema;
use crate::source::legacy::LegacyKey;
use crate::sweep_dir::SweepDir;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgressMode {
    /// indicatif bars, one per stage (a terminal).
    Bars,
    /// One plain line per session (not a terminal).
    Lines,
    /// Only the summary.
    Quiet,
}

/// `312 verified, 41 unknown, 2 incomplete` (zero counts left out).
fn running_counts(c: &crate::manifest::Counts) -> String {
    let parts = [
        (c.verified + c.verified_source_only, "verified"),
        (c.unknown, "unknown"),
        (c.incomplete, "incomplete"),
        (c.not_fetched, "not fetched"),
        (c.error, "error"),
    ];
    parts
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, w)| format!("{n} {w}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The terminal display of a sweep.
pub struct Progress {
    mode: ProgressMode,
    _multi: Option<MultiProgress>,
    decoded: ProgressBar,
    fetched: ProgressBar,
    written: ProgressBar,
}

impl Progress {
    pub fn new(mode: ProgressMode, total: u64) -> Progress {
        if mode != ProgressMode::Bars {
            let hidden =
                || ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::hidden());
            return Progress {
                mode,
                _multi: None,
                decoded: hidden(),
                fetched: hidden(),
                written: hidden(),
            };
        }
        let multi = MultiProgress::new();
        // `{wide_bar}` takes what the line leaves, so the bars fit a narrow
        // terminal; rates are whole numbers, the ETA counts down.
        let style = ProgressStyle::with_template(
            "{prefix:>7} {wide_bar} {pos}/{len} {rate} eta {eta} {msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .with_key(
            "rate",
            |s: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = write!(w, "{:.0}/s", s.per_sec());
            },
        )
        .progress_chars("=> ");
        let bar = |name: &str| {
            let b = multi.add(ProgressBar::new(total));
            b.set_style(style.clone());
            b.set_prefix(name.to_string());
            b
        };
        Progress {
            mode,
            decoded: bar("decoded"),
            fetched: bar("fetched"),
            written: bar("written"),
            _multi: Some(multi),
        }
    }

    /// The running verdict counts, shown beside the `written` bar.
    fn counts(&self, c: &crate::manifest::Counts) {
        if self.mode == ProgressMode::Bars {
            self.written.set_message(running_counts(c));
        }
    }

    fn line(&self, r: &SessionResult) {
        if self.mode == ProgressMode::Lines {
            let r = &r.record;
            let verdict = r.verdict_str();
            match r.reason_text() {
                Some(reason) => crate::note!(
                    "audit-sweep: {verdict} {} ({}): {reason}",
                    r.file_id,
                    crate::util::count(r.steps as u64, "step")
                ),
                None => crate::note!(
                    "audit-sweep: {verdict} {} ({})",
                    r.file_id,
                    crate::util::count(r.steps as u64, "step")
                ),
            }
        }
    }

    fn finish(&self) {
        for b in [&self.decoded, &self.fetched, &self.written] {
            b.finish();
        }
    }
}

impl SweepSink for Progress {
    fn started(&self, total: u64, _manifest: &Manifest) -> SinkResult {
        for b in [&self.decoded, &self.fetched, &self.written] {
            b.set_length(total);
        }
        Ok(Flow::Continue)
    }

    fn skipped(&self, path: &str, reason: &str) {
        if self.mode != ProgressMode::Quiet {
            crate::note!("audit-sweep: skipped {path}: {reason}");
        }
    }

    fn decoded(&self) {
        self.decoded.inc(1);
    }

    fn fetched(&self) {
        self.fetched.inc(1);
    }

    fn recorded(&self, r: &SessionResult, manifest: &Manifest) -> SinkResult {
        self.line(r);
        self.counts(&manifest.counts);
        self.written.inc(1);
        Ok(Flow::Continue)
    }

    fn finished(&self, _end: &mut Finish<'_>) -> Result<(), SinkError> {
        self.finish();
        Ok(())
    }
}

/// How progress is shown: bars on a capable terminal, a line per session
/// on a dumb terminal or when standard error is not a terminal.
pub fn progress_mode(quiet: bool) -> ProgressMode {
    let dumb = std::env::var("TERM").is_ok_and(|t| t == "dumb");
    if quiet {
        ProgressMode::Quiet
    } else if crate::util::term::stderr_is_terminal() && !dumb {
        ProgressMode::Bars
    } else {
        ProgressMode::Lines
    }
}

/// Runs the sweep with the terminal display `mode` asks for, into the
/// sweep's records (the shape listings, the manifest, `sessions.csv`:
/// [`Records`]); `stop` (set by Ctrl-C or SIGTERM) drains in-flight work and
/// leaves a valid `complete: false` manifest. A new sweep output is one
/// more sink in this list.
pub fn sweep(
    schema: &Schema,
    key: &LegacyKey,
    opts: &SweepOptions,
    stop: Arc<AtomicBool>,
    mode: ProgressMode,
) -> crate::Result<SweepSummary> {
    let display = Progress::new(mode, 0);
    let records = Records::new(&SweepDir::new(&opts.out));
    let [shapes, csv, manifest] = records.sinks();
    sweep_to(schema, key, opts, stop, &[&display, shapes, csv, manifest])
}

#[cfg(test)]
mod tests {
    #[test]
    fn running_counts_name_each_nonzero_verdict() {
        let c = crate::manifest::Counts {
            verified: 3,
            verified_source_only: 1,
            unknown: 2,
            not_fetched: 1,
            ..Default::default()
        };
        assert_eq!(
            super::running_counts(&c),
            "4 verified, 2 unknown, 1 not fetched"
        );
    }
}
