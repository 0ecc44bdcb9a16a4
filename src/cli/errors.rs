//! How the CLI tells a failed command apart: a usage error (exit 2), and
//! the message of an error chain.
//! A leaf: every command imports it, it imports no command.

/// The error and its causes joined by `: `, each said once: a cause whose
/// words the message already holds (an I/O error under the library's
/// `path: words` error) is not repeated, nor is the `(os error N)` number.
pub fn chain_text(e: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in e.chain() {
        let part = match cause.downcast_ref::<std::io::Error>() {
            Some(io) => crate::util::io_text(io),
            None => cause.to_string(),
        };
        if part.is_empty() || text.contains(&part) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&part);
    }
    text
}

/// A usage error the CLI itself finds past argument parsing: exit 2, like
/// clap's own and the library's (`crate::Error::is_usage`).
#[derive(Debug, thiserror::Error)]
pub(crate) enum Usage {
    /// A flag's value judged here.
    #[error("{0}")]
    Text(String),
    /// A library usage error about a flag's value, named by the flag.
    #[error("{flag} {source}")]
    Flag {
        flag: &'static str,
        #[source]
        source: crate::error::RootError,
    },
    /// A `--schema` that is not pinned, or a malformed pin.
    #[error(transparent)]
    Pin(crate::schema::pin::PinError),
}

/// A usage error raised past argument parsing (a flag's value that only the
/// library or the command can judge): exit 2, like clap's own.
pub(crate) fn usage(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<crate::Error>()
            .is_some_and(crate::Error::is_usage)
            || c.downcast_ref::<agy_engine::Error>()
                .is_some_and(agy_engine::Error::is_usage)
            || c.downcast_ref::<crate::bench::BenchError>()
                .is_some_and(crate::bench::BenchError::is_usage)
            || c.is::<Usage>()
            || matches!(
                c.downcast_ref::<agy_corpus::corpus::CorpusError>(),
                Some(agy_corpus::corpus::CorpusError::Usage(_))
            )
    })
}
