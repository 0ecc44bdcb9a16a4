//! Legacy encrypted `.pb` sources: a 12-byte nonce ‖ AES-256-GCM ciphertext ‖
//! 16-byte tag, no additional authenticated data. The plaintext (a serialized
//! `gemini_coder.Trajectory`) is authenticated before any decoding, capped at
//! [`MAX_PLAINTEXT_BYTES`], and only ever held in memory.

use crate::error::{CorruptRule, Error, Result};
use crate::util::hex;
use crate::verdict::{ReasonClass, Refusal};
use aes_gcm::aead::{Aead, KeyInit};
use aes_gcm::{Aes256Gcm, Nonce};
use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::Path;

pub const NONCE_BYTES: usize = 12;
pub const TAG_BYTES: usize = 16;
/// Largest plaintext accepted.
pub const MAX_PLAINTEXT_BYTES: usize = 64 << 20;

/// The fixed format key agy distributes (public-format-facts §3): not an
/// account key or user credential.
pub const FORMAT_KEY: &[u8; 32] = b"safeCodeiumworldKeYsecretBalloon";

/// An AES-256 key for legacy sources.
#[derive(Clone, PartialEq, Eq)]
pub struct LegacyKey([u8; 32]);

impl std::fmt::Debug for LegacyKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LegacyKey(sha256 {})", self.fingerprint())
    }
}

impl Default for LegacyKey {
    fn default() -> Self {
        LegacyKey(*FORMAT_KEY)
    }
}

impl LegacyKey {
    pub fn from_bytes(b: [u8; 32]) -> Self {
        LegacyKey(b)
    }

    pub fn bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// Loads a key file: exactly 32 raw bytes, or 64 hex digits (a trailing newline is allowed).
    pub fn from_file(path: &Path) -> Result<LegacyKey> {
        // a key file is 32 bytes or 64 hex digits: 1 KiB bounds any of them
        let raw =
            crate::util::bounded::read_capped(path, crate::util::bounded::InputKind::Record, 1024)?;
        if let Ok(b) = <[u8; 32]>::try_from(raw.as_slice()) {
            return Ok(LegacyKey(b));
        }
        let text = String::from_utf8_lossy(&raw);
        let t = text.trim_end_matches(['\n', '\r']);
        if t.len() == 64 && t.bytes().all(|c| c.is_ascii_hexdigit()) {
            let mut b = [0u8; 32];
            for (i, chunk) in t.as_bytes().chunks(2).enumerate() {
                let s = std::str::from_utf8(chunk).unwrap_or("00");
                b[i] = u8::from_str_radix(s, 16).unwrap_or(0);
            }
            return Ok(LegacyKey(b));
        }
        Err(Error::corrupt(
            path,
            CorruptRule::KeyFileLength { len: raw.len() },
        ))
    }

    /// Whether this is agy's fixed format key ([`FORMAT_KEY`]), the only key
    /// under which a legacy source can be verified.
    pub fn is_format_key(&self) -> bool {
        &self.0 == FORMAT_KEY
    }

    /// First 12 hex digits of the key's SHA-256 (named in the legacy profile).
    pub fn fingerprint(&self) -> String {
        hex(&Sha256::digest(self.0))[..12].to_string()
    }
}

/// The refusal of every legacy source read under a key other than the
/// format key. "Unknown encryption keys/layouts remain unsupported": such a
/// key may still open a source for offline inspection (`export-offline
/// --allow-unknown`, `scan`), but its verdict is unknown, never verified,
/// whether or not the envelope authenticates under it.
pub fn unsupported_key_refusal(key: &LegacyKey) -> Option<Refusal> {
    (!key.is_format_key()).then(|| {
        Refusal::new(
            ReasonClass::LegacyUnsupportedKey,
            "envelope",
            format!(
                "read with key sha256 {}, not agy's fixed format key: unknown keys remain unsupported, so this source is never verified",
                key.fingerprint()
            ),
        )
    })
}

/// Reads a `.pb` file (capped) as exact bytes.
pub fn read_file(path: &Path) -> Result<Vec<u8>> {
    // A regular file, not a link (a FIFO refused without blocking); one
    // byte past the largest envelope is enough for `decrypt` to refuse it
    // with its size.
    let (file, _) =
        crate::util::bounded::open_plain(path, crate::util::bounded::InputKind::Conversation)
            .map_err(super::sqlite::source_error)?;
    let cap = (MAX_PLAINTEXT_BYTES + NONCE_BYTES + TAG_BYTES) as u64;
    let mut bytes = Vec::new();
    file.take(cap + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io(path, e))?;
    Ok(bytes)
}

/// Authenticates and decrypts a legacy envelope. Too short is a corrupt file;
/// too large or failing authentication is a refusal (an unsupported key or layout).
pub fn decrypt(
    path: &Path,
    file: &[u8],
    key: &LegacyKey,
) -> Result<std::result::Result<Vec<u8>, Refusal>> {
    if file.len() <= NONCE_BYTES + TAG_BYTES {
        return Err(Error::corrupt(
            path,
            CorruptRule::EnvelopeTooShort { len: file.len() },
        ));
    }
    if file.len() - NONCE_BYTES - TAG_BYTES > MAX_PLAINTEXT_BYTES {
        return Ok(Err(Refusal::new(
            ReasonClass::SizeLimit,
            "envelope",
            format!("plaintext larger than {MAX_PLAINTEXT_BYTES} bytes"),
        )));
    }
    // The key is 32 bytes by type, so the cipher cannot refuse it.
    let cipher = Aes256Gcm::new(&key.0.into());
    let (nonce, sealed) = file.split_at(NONCE_BYTES);
    let nonce =
        Nonce::try_from(nonce).map_err(|_| Error::corrupt(path, CorruptRule::NonceLength))?;
    match cipher.decrypt(&nonce, sealed) {
        Ok(p) => Ok(Ok(p)),
        Err(_) => Ok(Err(Refusal::new(
            ReasonClass::LegacyAuthentication,
            "envelope",
            format!(
                "AES-256-GCM authentication failed: the file is damaged (truncated or altered) or sealed with another key or layout than {} (sha256 {}); either way it is not read",
                if key.0 == *FORMAT_KEY { "agy's format key" } else { "the given key" },
                key.fingerprint()
            ),
        ))),
    }
}

/// Seals `plaintext` (for the generator and tests).
pub fn encrypt(plaintext: &[u8], key: &LegacyKey, nonce: [u8; NONCE_BYTES]) -> Vec<u8> {
    let cipher = Aes256Gcm::new(&key.0.into());
    let n = Nonce::from(nonce);
    let sealed = cipher.encrypt(&n, plaintext).unwrap_or_default();
    let mut out = Vec::with_capacity(NONCE_BYTES + sealed.len());
    out.extend_from_slice(&nonce);
    out.extend_from_slice(&sealed);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A key file of another length is corrupt under its own rule, and
    /// says the length it found.
    #[test]
    fn a_key_file_of_another_length_names_its_rule() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("key");
        std::fs::write(&path, b"0123456").unwrap();
        let e = LegacyKey::from_file(&path).unwrap_err();
        assert!(
            matches!(
                e,
                Error::Corrupt {
                    rule: crate::error::CorruptRule::KeyFileLength { len: 7 },
                    ..
                }
            ),
            "{e}"
        );
        assert!(
            e.to_string()
                .ends_with(": corrupt: key file: 7 bytes: a legacy key file holds 32 raw bytes or 64 hex digits"),
            "{e}"
        );
    }

    #[test]
    fn round_trips_and_fails_closed_on_any_flipped_byte() {
        let key = LegacyKey::default();
        let sealed = encrypt(b"\x0a\x03abc", &key, [7; 12]);
        let p = Path::new("x.pb");
        assert_eq!(decrypt(p, &sealed, &key).unwrap().unwrap(), b"\x0a\x03abc");
        for i in [0, 12, sealed.len() - 1] {
            let mut bad = sealed.clone();
            bad[i] ^= 1;
            let r = decrypt(p, &bad, &key).unwrap().unwrap_err();
            assert_eq!(r.class, ReasonClass::LegacyAuthentication, "byte {i}");
        }
        let other = LegacyKey::from_bytes([1; 32]);
        assert!(decrypt(p, &sealed, &other).unwrap().is_err());
        assert!(matches!(
            decrypt(p, &sealed[..28], &key),
            Err(Error::Corrupt {
                rule: crate::error::CorruptRule::EnvelopeTooShort { len: 28 },
                ..
            })
        ));
    }
}
