//! The `mutate-source` fault: agy rewrites a conversation while it is being
//! audited (with every answer for it). A `.db` gets one step's payload (and its metadata column)
//! updated through an ordinary SQLite write; a legacy `.pb` is re-sealed with
//! a new nonce (same plaintext, different ciphertext).

use crate::corpus::{legacy, rng, wire};
use crate::schema::Schema;
use std::path::Path;
use std::sync::OnceLock;

/// Why a mutation failed (the sim logs nothing; the test observes the file).
#[derive(Debug, thiserror::Error)]
pub enum MutateError {
    /// SQLite refused.
    #[error("sqlite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// The file could not be read or written.
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
    /// The stored bytes are not what the generator wrote.
    #[error("{0}")]
    Other(String),
}

/// Rewrites the source of `id` in `store` (the `n`-th rewrite).
pub fn mutate_source(store: &Path, id: &str, seed: u64, n: u64) -> Result<(), MutateError> {
    let conv = store.join("conversations");
    let db = conv.join(format!("{id}.db"));
    if db.exists() {
        return mutate_db(&db);
    }
    let pb = conv.join(format!("{id}.pb"));
    let sealed = std::fs::read(&pb)?;
    let plain = legacy::open(&sealed).map_err(|e| MutateError::Other(e.to_string()))?;
    let b = rng::Rng::new(seed, &["mutated-nonce", id, &n.to_string()]).bytes(12);
    let mut nonce = [0u8; 12];
    nonce.copy_from_slice(&b);
    let resealed = legacy::seal(&plain, nonce).map_err(|e| MutateError::Other(e.to_string()))?;
    std::fs::write(&pb, resealed)?;
    Ok(())
}

/// (Step.metadata, CortexStepMetadata.step_generation_version), by name.
fn numbers() -> Result<(u32, u32), MutateError> {
    static NUMS: OnceLock<Option<(u32, u32)>> = OnceLock::new();
    let nums = NUMS.get_or_init(|| {
        let schema = Schema::modeled().ok()?;
        let num = |m: &str, f: &str| {
            schema
                .pool
                .get_message_by_name(m)
                .and_then(|d| d.get_field_by_name(f))
                .map(|f| f.number())
        };
        Some((
            num("gemini_coder.Step", "metadata")?,
            num(
                "exa.cortex_pb.CortexStepMetadata",
                "step_generation_version",
            )?,
        ))
    });
    nums.ok_or_else(|| MutateError::Other("the modeled schema lacks Step.metadata".into()))
}

fn mutate_db(db: &Path) -> Result<(), MutateError> {
    let (meta_num, sgv) = numbers()?;
    let c = rusqlite::Connection::open(db)?;
    c.busy_timeout(std::time::Duration::from_secs(5))?;
    let (idx, payload): (i64, Vec<u8>) = c.query_row(
        "SELECT idx, step_payload FROM steps ORDER BY idx DESC LIMIT 1",
        [],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    let err = |e: wire::WireError| MutateError::Other(e.to_string());
    let meta = wire::first_len(&payload, meta_num)
        .map_err(err)?
        .map(<[u8]>::to_vec)
        .unwrap_or_default();
    let version = wire::last_varint(&meta, sgv).map_err(err)?;
    let new_meta = wire::set_varint_at(&meta, &[], sgv, version + 1).map_err(err)?;
    let new_payload =
        wire::edit_at(&payload, &[(meta_num, 0)], &mut |_| new_meta.clone()).map_err(err)?;
    c.execute(
        "UPDATE steps SET step_payload = ?1, metadata = ?2 WHERE idx = ?3",
        rusqlite::params![new_payload, new_meta, idx],
    )?;
    Ok(())
}
